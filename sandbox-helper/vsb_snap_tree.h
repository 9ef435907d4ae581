/*
 * A sandbox's file system as a layer, and its manifest.
 *
 * A layer is a directory tree read without following any link: the
 * writable root of a directory profile's sandbox (sb->dir/root), or the
 * overlay's upper layer of an image profile's or a fork's (sb->dir/upper).
 * Its entries are regular files, directories, symlinks, fifos and
 * overlayfs whiteouts (a character device 0:0: "deleted below"); a
 * directory may be opaque (trusted.overlay.opaque "y": "nothing below
 * shows through").  Sockets are skipped; any other device node is
 * refused (unsupported_file).  Owners are kept as the sandbox sees them
 * (inside uid and gid: host_uid + N is N; one outside the sandbox's range
 * is 65534), modes with their 07777 bits.
 *
 * A manifest lists a layer's entries sorted by path (bytewise), each with
 * type, mode, uid, gid, size and, for files, the sha256 of its content
 * (for symlinks, the target).  Paths are relative ("workspace/a.c").
 *
 * Walking is bounded (files, bytes, depth, path length) and never leaves
 * the layer's file system (mount points are skipped); every file is
 * opened O_NOFOLLOW and checked against what the directory said it was,
 * so a workload that swaps an entry while it is read gets an error, never
 * a link followed.  The hash is of the bytes read (and copied), so what a
 * manifest says is what the copy holds.
 */
#ifndef VSB_SNAP_TREE_H
#define VSB_SNAP_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_request.h"

#define VSB_MF_FILE      'f'
#define VSB_MF_DIR       'd'
#define VSB_MF_LINK      'l'
#define VSB_MF_FIFO      'p'
#define VSB_MF_WHITEOUT  'w'

#define VSB_MF_MAX_DEPTH 128

typedef struct {
    char       *path;
    char       *target;       /* symlinks */
    uint64_t    size;         /* files: bytes; symlinks: target length */
    uint32_t    uid, gid;     /* inside the sandbox */
    uint16_t    mode;         /* 07777 bits */
    char        type;         /* VSB_MF_* */
    unsigned    opaque:1;     /* directories */
    char        sha256[65];   /* files; "" otherwise */
} vsb_mf_ent_t;

typedef struct {
    vsb_mf_ent_t  *e;
    size_t         n, cap;
    uint64_t       bytes;     /* sum of files' sizes */
} vsb_mf_t;

typedef struct {
    uint64_t   max_files;     /* entries */
    uint64_t   max_bytes;     /* file content */
    uid_t      host_uid;      /* the layer's inside uid 0 on the host */
    unsigned   overlay:1;     /* keep whiteouts and opaque marks in the
                                 copy (an image profile's layer) */
    unsigned   names_only:1;  /* no copy: files are not read (no sha256,
                                 size from stat): a listing of paths */
} vsb_mf_bounds_t;

void vsb_mf_free(vsb_mf_t *m);
void vsb_mf_sort(vsb_mf_t *m);
/* The entry of path in a sorted manifest, NULL if none. */
const vsb_mf_ent_t *vsb_mf_find(const vsb_mf_t *m, const char *path);
/* First index whose path is >= key (sorted manifest). */
size_t vsb_mf_lower(const vsb_mf_t *m, const char *key);

/*
 * Reads the layer at srcfd into m (unsorted) and, when dstfd is not -1,
 * copies it below dstfd with canonical owners (inside ids).  Fails with e
 * set: over_ceiling (limit "snapshot_files" or "snapshot_bytes"),
 * unsupported_file (a device node, field "path"), io_error (an entry
 * changed while it was read, or a read failed).
 */
int vsb_mf_walk(int srcfd, int dstfd, const vsb_mf_bounds_t *b, vsb_mf_t *m,
    vsb_error_t *e);

/*
 * A fork's snapshot: the layer (sorted, copied already below dstfd) over
 * its base (the snapshot it was forked from, whose tree is basefd).  The
 * base's entries the layer does not hide are linked (files) or made
 * (the rest) below dstfd, and out is the merged manifest, sorted.  With
 * b->overlay unset (a directory profile, nothing beneath the base) the
 * layer's whiteouts are removed from the copy and left out of out.
 */
int vsb_mf_merge(const vsb_mf_t *base, int basefd, vsb_mf_t *layer,
    int dstfd, const vsb_mf_bounds_t *b, vsb_mf_t *out, vsb_error_t *e);

/* 1 if a sorted layer hides path of what is beneath it: path itself, or
 * an ancestor that is a whiteout, an opaque directory or not a
 * directory. */
int vsb_mf_hides(const vsb_mf_t *layer, const char *path);

/* The manifest as JSON text (malloc'd, *len bytes) and its digest
 * ("sha256:" + hex of that text). */
char *vsb_mf_dump(const vsb_mf_t *m, size_t *len, char digest[72]);
/* Parses what vsb_mf_dump() wrote; strict.  -1 with why. */
int vsb_mf_load(const char *text, size_t len, vsb_mf_t *m, char *why,
    size_t wlen);
int vsb_mf_load_file(int dirfd, const char *name, size_t max, vsb_mf_t *m,
    char *why, size_t wlen);

/* Opens path (relative, several components) below rootfd without
 * following any symlink and without leaving rootfd. */
int vsb_mf_open(int rootfd, const char *path, int flags);
/* A snapshot's tree is removed with vsb_rm_tree() (vsb_rmtree.h) to this
 * depth: its manifest's bound and the two levels of the store's layout. */
#define VSB_MF_RM_DEPTH  (VSB_MF_MAX_DEPTH + 2)

#endif
