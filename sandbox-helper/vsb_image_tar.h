/*
 * A strict reader of the tar streams OCI layers are made of: ustar, GNU
 * (long names, base-256 numbers) and PAX (path, linkpath, size, uid, gid,
 * mtime).  It pulls bytes through a callback, keeps no more than one
 * header and one bounded extension record, and refuses what it does not
 * understand (sparse files, volume headers, bad checksums) rather than
 * guess.  Pure: no file system access, fuzzed.
 */
#ifndef VSB_IMAGE_TAR_H
#define VSB_IMAGE_TAR_H

#include <stddef.h>
#include <stdint.h>

#include "vsb_image.h"

#define VSB_TAR_BLOCK     512
#define VSB_TAR_EXT_MAX   (64 << 10)   /* one PAX or GNU long-name record */

typedef enum {
    VSB_TAR_REG = 0,
    VSB_TAR_HARDLINK,
    VSB_TAR_SYMLINK,
    VSB_TAR_CHR,
    VSB_TAR_BLK,
    VSB_TAR_DIR,
    VSB_TAR_FIFO,
} vsb_tar_type_t;

typedef struct {
    vsb_tar_type_t  type;
    char            path[VSB_IMAGE_PATH_MAX + 1];  /* as in the archive */
    char            link[VSB_IMAGE_PATH_MAX + 1];  /* symlink/hardlink */
    uint64_t        size;      /* data bytes that follow the header */
    uint32_t        mode;      /* 07777 bits only */
    uint64_t        uid;
    uint64_t        gid;
    int64_t         mtime;
    unsigned        xattrs;    /* xattr records seen (and dropped) */
} vsb_tar_entry_t;

/* Reads exactly len bytes: returns len, 0 at a clean end of input, or
 * -1 with the reason in the reader's err. */
typedef ssize_t (*vsb_tar_read_pt)(void *ctx, void *buf, size_t len,
    char *err, size_t errlen);

typedef enum {
    VSB_TAR_OK = 0,     /* an entry; its data must be read or skipped */
    VSB_TAR_END,        /* end-of-archive blocks, or end of input */
    VSB_TAR_ERROR,      /* err says why */
} vsb_tar_rc_t;

typedef struct {
    vsb_tar_read_pt  read;
    void            *ctx;
    uint64_t         left;       /* data bytes of the current entry */
    uint64_t         pad;        /* padding after them */
    uint64_t         offset;     /* bytes consumed so far */
    int              eof;        /* input ended where padding was due */
    char             ext[VSB_TAR_EXT_MAX + 1];
    char             err[320];
} vsb_tar_t;

void vsb_tar_init(vsb_tar_t *t, vsb_tar_read_pt read, void *ctx);

/* The next entry (skipping what is left of the current one). */
vsb_tar_rc_t vsb_tar_next(vsb_tar_t *t, vsb_tar_entry_t *e);

/* Up to len bytes of the current entry's data; 0 when none is left. */
ssize_t vsb_tar_data(vsb_tar_t *t, void *buf, size_t len);

/* Skips the rest of the current entry's data and padding. */
int vsb_tar_skip(vsb_tar_t *t);

/* Pure helpers, exported for the unit tests. */
int vsb_tar_number(const unsigned char *f, size_t len, uint64_t *out);
int vsb_tar_checksum_ok(const unsigned char *h);

/*
 * A layer path made canonical: no leading "/" or "./", no empty or "."
 * components; ".." anywhere, a component over VSB_IMAGE_NAME_MAX, more
 * than VSB_IMAGE_DEPTH_MAX components or a NUL is refused.  The root
 * itself becomes "".  out has VSB_IMAGE_PATH_MAX + 1 bytes.
 */
int vsb_tar_clean_path(const char *in, char *out, char *err, size_t errlen);

#endif
