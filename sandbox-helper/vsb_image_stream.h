/*
 * A blob read as a stream: plain or gzip, the uncompressed bytes hashed
 * as they are read (a layer's diff_id), and walked as a tar.  Used by the
 * unpacking child for layers and for a tarball source.
 */
#ifndef VSB_IMAGE_STREAM_H
#define VSB_IMAGE_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "vsb_image_oci.h"
#include "vsb_image_tar.h"

typedef struct {
    int                     fd;
    vsb_oci_compression_t   comp;
    z_stream                z;
    int                     zinit;
    int                     zend;       /* input exhausted */
    int                     zmember;    /* inside a gzip member */
    EVP_MD_CTX             *md;         /* of the uncompressed bytes */
    uint64_t                out;        /* uncompressed bytes so far */
    unsigned char           in[65536];
} vsb_stream_t;

int vsb_stream_open(vsb_stream_t *s, int fd, vsb_oci_compression_t comp,
    char *err, size_t errlen);
/* the vsb_tar_read_pt callback */
ssize_t vsb_stream_read(void *ctx, void *buf, size_t len, char *err,
    size_t errlen);
/* reads what is left (at most max bytes), then the digest */
int vsb_stream_finish(vsb_stream_t *s, uint64_t max, char *digest,
    char *err, size_t errlen);
void vsb_stream_close(vsb_stream_t *s);

/* A blob's tar entries read through its stream: what each pass over a
 * layer (check, extract) and over a source tarball opens.  Allocated (the
 * stream's buffer and the tar's extension record come to ~140 KiB). */
typedef struct {
    vsb_stream_t      s;
    vsb_tar_t         t;
    vsb_tar_entry_t   e;
    /* the walker's scratch: an entry's path made canonical, and its
     * directory or a hard link's target */
    char              path[VSB_IMAGE_PATH_MAX + 1];
    char              dir[VSB_IMAGE_PATH_MAX + 1];
} vsb_tar_walk_t;

/* NULL with err: out of memory, or the stream could not be opened. */
vsb_tar_walk_t *vsb_tar_walk_open(int fd, vsb_oci_compression_t comp,
    char *err, size_t errlen);
/* The next entry in *e (its data in w->t): 1; 0 at the archive's end;
 * -1 with the tar's error in err, after prefix. */
int vsb_tar_walk_next(vsb_tar_walk_t *w, vsb_tar_entry_t **e,
    const char *prefix, char *err, size_t errlen);
/* Closes the stream and frees w (NULL is allowed). */
void vsb_tar_walk_close(vsb_tar_walk_t *w);

#endif
