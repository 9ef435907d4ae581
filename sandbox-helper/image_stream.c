/*
 * A blob read as a stream (vsb_image_stream.h): plain or gzip (several
 * members allowed), the uncompressed bytes hashed as they pass, so a
 * layer's content is checked against its diff_id in the same read; and
 * the walk of its tar entries.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vsb_image_stream.h"


int
vsb_stream_open(vsb_stream_t *s, int fd, vsb_oci_compression_t comp,
    char *err, size_t errlen)
{
    memset(s, 0, offsetof(vsb_stream_t, in));
    s->fd = fd;
    s->comp = comp;

    if (lseek(fd, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "seek to the start of a blob: %s",
                 strerror(errno));
        return -1;
    }

    s->md = EVP_MD_CTX_new();
    if (s->md == NULL || EVP_DigestInit_ex(s->md, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "sha256: cannot initialise");
        vsb_stream_close(s);
        return -1;
    }

    if (comp == VSB_OCI_GZIP) {
        if (inflateInit2(&s->z, 15 + 16) != Z_OK) {
            snprintf(err, errlen, "gzip: cannot initialise");
            vsb_stream_close(s);
            return -1;
        }
        s->zinit = 1;
    }

    return 0;
}


void
vsb_stream_close(vsb_stream_t *s)
{
    if (s->zinit) {
        inflateEnd(&s->z);
        s->zinit = 0;
    }

    EVP_MD_CTX_free(s->md);
    s->md = NULL;
}


static ssize_t
vsb_stream_fill(vsb_stream_t *s, char *err, size_t errlen)
{
    ssize_t  n;

    do {
        n = read(s->fd, s->in, sizeof(s->in));
    } while (n == -1 && errno == EINTR);

    if (n == -1) {
        snprintf(err, errlen, "read a blob: %s", strerror(errno));
    }

    return n;
}


/* Up to len uncompressed bytes; 0 only at the end of the stream. */
static ssize_t
vsb_stream_some(vsb_stream_t *s, unsigned char *buf, size_t len, char *err,
    size_t errlen)
{
    ssize_t  n;
    int      zrc;

    if (s->comp == VSB_OCI_PLAIN) {
        do {
            n = read(s->fd, buf, len);
        } while (n == -1 && errno == EINTR);

        if (n == -1) {
            snprintf(err, errlen, "read a layer: %s", strerror(errno));
        }
        return n;
    }

    for ( ;; ) {
        if (s->z.avail_in == 0 && !s->zend) {
            n = vsb_stream_fill(s, err, errlen);
            if (n < 0) {
                return -1;
            }
            if (n == 0) {
                s->zend = 1;
            }
            s->z.next_in = s->in;
            s->z.avail_in = (uInt) n;
        }

        if (s->zend && s->z.avail_in == 0) {
            if (s->zmember) {
                snprintf(err, errlen, "gzip: layer truncated");
                return -1;
            }
            return 0;
        }

        s->z.next_out = buf;
        s->z.avail_out = (uInt) (len > 1 << 30 ? 1 << 30 : len);
        n = (ssize_t) s->z.avail_out;

        zrc = inflate(&s->z, Z_NO_FLUSH);
        n -= (ssize_t) s->z.avail_out;

        if (zrc == Z_STREAM_END) {
            /* gzip members may follow each other */
            s->zmember = 0;
            if (inflateReset(&s->z) != Z_OK) {
                snprintf(err, errlen, "gzip: cannot reset");
                return -1;
            }
        } else if (zrc == Z_OK || zrc == Z_BUF_ERROR) {
            s->zmember = 1;
        } else {
            snprintf(err, errlen, "gzip: %s",
                     s->z.msg != NULL ? s->z.msg : "corrupt data");
            return -1;
        }

        if (n > 0) {
            return n;
        }
    }
}


ssize_t
vsb_stream_read(void *ctx, void *buf, size_t len, char *err, size_t errlen)
{
    vsb_stream_t  *s = ctx;
    size_t         got = 0;
    ssize_t        n;

    while (got < len) {
        n = vsb_stream_some(s, (unsigned char *) buf + got, len - got, err,
                            errlen);
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }

        if (EVP_DigestUpdate(s->md, (unsigned char *) buf + got, (size_t) n)
            != 1)
        {
            snprintf(err, errlen, "sha256: update failed");
            return -1;
        }

        got += (size_t) n;
        s->out += (uint64_t) n;
    }

    if (got != 0 && got != len) {
        snprintf(err, errlen, "layer truncated");
        return -1;
    }

    return (ssize_t) got;
}


int
vsb_stream_finish(vsb_stream_t *s, uint64_t max, char *digest, char *err,
    size_t errlen)
{
    unsigned char  buf[8192], md[EVP_MAX_MD_SIZE];
    unsigned int   mdlen = 0;
    uint64_t       extra = 0;
    ssize_t        n;

    for ( ;; ) {
        n = vsb_stream_some(s, buf, sizeof(buf), err, errlen);
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }

        extra += (uint64_t) n;
        if (extra > max) {
            snprintf(err, errlen, "more than %llu bytes after the end of "
                     "the archive", (unsigned long long) max);
            return -1;
        }

        if (EVP_DigestUpdate(s->md, buf, (size_t) n) != 1) {
            snprintf(err, errlen, "sha256: update failed");
            return -1;
        }
    }

    if (EVP_DigestFinal_ex(s->md, md, &mdlen) != 1
        || vsb_image_digest_md(md, mdlen, digest) != 0)
    {
        snprintf(err, errlen, "sha256: final failed");
        return -1;
    }

    return 0;
}


vsb_tar_walk_t *
vsb_tar_walk_open(int fd, vsb_oci_compression_t comp, char *err,
    size_t errlen)
{
    vsb_tar_walk_t  *w;

    w = malloc(sizeof(*w));
    if (w == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (vsb_stream_open(&w->s, fd, comp, err, errlen) != 0) {
        free(w);
        return NULL;
    }
    vsb_tar_init(&w->t, vsb_stream_read, &w->s);
    return w;
}


int
vsb_tar_walk_next(vsb_tar_walk_t *w, vsb_tar_entry_t **e, const char *prefix,
    char *err, size_t errlen)
{
    switch (vsb_tar_next(&w->t, &w->e)) {
    case VSB_TAR_OK:
        *e = &w->e;
        return 1;
    case VSB_TAR_END:
        return 0;
    default:
        snprintf(err, errlen, "%s%s", prefix, w->t.err);
        return -1;
    }
}


void
vsb_tar_walk_close(vsb_tar_walk_t *w)
{
    if (w != NULL) {
        vsb_stream_close(&w->s);
        free(w);
    }
}
