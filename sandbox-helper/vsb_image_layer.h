/*
 * Applying layers to a tree: runs only in the unpacking child (no
 * capabilities, its own namespaces, seccomp; see vsb_image_confine.h).
 *
 * The child owns every file it creates (it cannot chown: it has no
 * capabilities), so the owner and mode an entry asks for are written to
 * an owners file as fixed-size records keyed by inode; the privileged
 * side applies them after the child is gone (vsb_image_adopt()).
 */
#ifndef VSB_IMAGE_LAYER_H
#define VSB_IMAGE_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_image.h"
#include "vsb_image_oci.h"
#include "vsb_image_stream.h"

/* one owners-file record; the last record of an inode wins */
typedef struct {
    uint64_t  ino;
    uint32_t  uid;
    uint32_t  gid;
    uint32_t  mode;       /* permission bits, setuid/setgid already off */
    uint32_t  reserved;
} vsb_owner_rec_t;

#define VSB_OWNER_BUF  1024

typedef struct {
    int                        rootfd;     /* the tree, O_PATH */
    int                        ownersfd;   /* records, append */
    const vsb_image_limits_t  *lim;
    vsb_image_stats_t         *st;
    uint64_t                   declared;   /* bytes declared so far */
    size_t                     nrec;
    vsb_owner_rec_t            rec[VSB_OWNER_BUF];
} vsb_layer_t;

/*
 * Checks every entry of the layer against the bounds and the path
 * rules, applies its whiteouts and opaque directories to what the lower
 * layers left, and checks the uncompressed content against diff_id.
 * blobfd must already be verified against the layer's digest.
 */
int vsb_layer_prepare(vsb_layer_t *l, int blobfd, const vsb_oci_layer_t *ly,
    char *err, size_t errlen);

/* Creates the layer's entries (a second read of the same blob). */
int vsb_layer_extract(vsb_layer_t *l, int blobfd, const vsb_oci_layer_t *ly,
    char *err, size_t errlen);

/* Records an owner and mode for an inode (mount points, the root). */
int vsb_layer_record(vsb_layer_t *l, uint64_t ino, uint32_t uid,
    uint32_t gid, uint32_t mode, char *err, size_t errlen);
int vsb_layer_flush(vsb_layer_t *l, char *err, size_t errlen);

/* A directory of the tree, symlinks resolved inside it; O_PATH. */
int vsb_layer_open_dir(vsb_layer_t *l, const char *path, int create,
    char *err, size_t errlen);

/* Removes name below dirfd, recursively, never following a symlink. */
int vsb_layer_remove(int dirfd, const char *name, unsigned depth,
    char *err, size_t errlen);

#endif
