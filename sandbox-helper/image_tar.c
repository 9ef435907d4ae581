/*
 * A strict tar reader for OCI layers (see vsb_image_tar.h).  Every field
 * is parsed with its bounds; what tar formats allow but layers never need
 * (sparse files, multi-volume, dump directories) is refused by name.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "vsb_image_tar.h"

/* ustar header fields: offset, length */
#define H_NAME      0, 100
#define H_MODE      100, 8
#define H_UID       108, 8
#define H_GID       116, 8
#define H_SIZE      124, 12
#define H_MTIME     136, 12
#define H_CHKSUM    148, 8
#define H_TYPE      156
#define H_LINK      157, 100
#define H_MAGIC     257
#define H_PREFIX    345, 155

#define VSB_TAR_META_MAX  16    /* extended headers before one entry */

#define FIELD_(h, o, l)  (h) + (o), (l)
#define FIELD(h, f)      FIELD_(h, f)

typedef struct {
    int       have_path, have_link, have_size, have_uid, have_gid;
    int       have_mtime;
    char      path[VSB_IMAGE_PATH_MAX + 1];
    char      link[VSB_IMAGE_PATH_MAX + 1];
    uint64_t  size, uid, gid;
    int64_t   mtime;
    unsigned  xattrs;
} vsb_tar_pending_t;


void
vsb_tar_init(vsb_tar_t *t, vsb_tar_read_pt read, void *ctx)
{
    memset(t, 0, sizeof(*t));
    t->read = read;
    t->ctx = ctx;
}


static int vsb_tar_fail(vsb_tar_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
vsb_tar_fail(vsb_tar_t *t, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(t->err, sizeof(t->err), fmt, ap);
    va_end(ap);
    return -1;
}


/* Exactly len bytes, or an error naming a truncated archive. */
static int
vsb_tar_read_exact(vsb_tar_t *t, void *buf, size_t len, int *eof)
{
    ssize_t  n;

    n = t->read(t->ctx, buf, len, t->err, sizeof(t->err));
    if (n < 0) {
        return -1;
    }

    if (n == 0) {
        if (eof != NULL) {
            *eof = 1;
            return 0;
        }
        return vsb_tar_fail(t, "%s", "tar: archive truncated inside an entry");
    }

    if ((size_t) n != len) {
        return vsb_tar_fail(t, "%s", "tar: archive truncated");
    }

    t->offset += (uint64_t) len;
    return 0;
}


int
vsb_tar_number(const unsigned char *f, size_t len, uint64_t *out)
{
    uint64_t  v = 0;
    size_t    i = 0;

    if (len == 0) {
        return -1;
    }

    /* GNU base-256: high bit set; 0xff would be negative */
    if (f[0] & 0x80) {
        if (f[0] != 0x80) {
            return -1;
        }
        for (i = 1; i < len; i++) {
            if (v > (UINT64_MAX >> 8)) {
                return -1;
            }
            v = (v << 8) | f[i];
        }
        *out = v;
        return 0;
    }

    while (i < len && (f[i] == ' ' || f[i] == '0')) {
        i++;
    }

    for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
        if (v > (UINT64_MAX >> 3)) {
            return -1;
        }
        v = (v << 3) | (uint64_t) (f[i] - '0');
    }

    /* only spaces and NULs may end the field */
    for (; i < len; i++) {
        if (f[i] != ' ' && f[i] != '\0') {
            return -1;
        }
    }

    *out = v;
    return 0;
}


int
vsb_tar_checksum_ok(const unsigned char *h)
{
    uint64_t  want;
    uint32_t  usum = 0;
    int32_t   ssum = 0;
    size_t    i;

    if (vsb_tar_number(FIELD(h, H_CHKSUM), &want) != 0) {
        return 0;
    }

    for (i = 0; i < VSB_TAR_BLOCK; i++) {
        unsigned char  c = (i >= 148 && i < 156) ? ' ' : h[i];

        usum += c;
        ssum += (signed char) c;
    }

    return want == usum || (int64_t) want == (int64_t) ssum;
}


/* A NUL-terminated copy of a fixed-size field. */
static void
vsb_tar_str(const unsigned char *f, size_t len, char *out)
{
    size_t  n = strnlen((const char *) f, len);

    memcpy(out, f, n);
    out[n] = '\0';
}


int
vsb_tar_clean_path(const char *in, char *out, char *err, size_t errlen)
{
    const char  *p = in, *c;
    size_t       o = 0, n, depth = 0;

    for ( ;; ) {
        while (*p == '/') {
            p++;
        }

        if (*p == '\0') {
            break;
        }

        c = p;
        while (*p != '\0' && *p != '/') {
            p++;
        }
        n = (size_t) (p - c);

        if (n == 1 && c[0] == '.') {
            continue;
        }

        if (n == 2 && c[0] == '.' && c[1] == '.') {
            snprintf(err, errlen, "path \"%.200s\" has a \"..\" component",
                     in);
            return -1;
        }

        if (n > VSB_IMAGE_NAME_MAX) {
            snprintf(err, errlen, "path \"%.200s\" has a component longer "
                     "than %d bytes", in, VSB_IMAGE_NAME_MAX);
            return -1;
        }

        if (++depth > VSB_IMAGE_DEPTH_MAX) {
            snprintf(err, errlen, "path \"%.200s\" is deeper than %d "
                     "components", in, VSB_IMAGE_DEPTH_MAX);
            return -1;
        }

        if (o + (o ? 1 : 0) + n > VSB_IMAGE_PATH_MAX) {
            snprintf(err, errlen, "path \"%.200s\" is longer than %d bytes",
                     in, VSB_IMAGE_PATH_MAX);
            return -1;
        }

        if (o) {
            out[o++] = '/';
        }
        memcpy(out + o, c, n);
        o += n;
    }

    out[o] = '\0';
    return 0;
}


/* A decimal PAX value; mtime may carry a fraction and a sign. */
static int
vsb_tar_pax_u64(const char *v, size_t len, int fraction, uint64_t *out)
{
    uint64_t  x = 0;
    size_t    i;

    if (len == 0) {
        return -1;
    }

    for (i = 0; i < len; i++) {
        if (fraction && v[i] == '.') {
            break;
        }
        if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10) {
            return -1;
        }
        x = x * 10 + (uint64_t) (v[i] - '0');
    }

    *out = x;
    return 0;
}


static int
vsb_tar_pax_string(vsb_tar_t *t, const char *key, const char *v, size_t len,
    char *out)
{
    if (len > VSB_IMAGE_PATH_MAX || memchr(v, '\0', len) != NULL) {
        return vsb_tar_fail(t, "tar: PAX \"%s\" is too long or has a NUL",
                            key);
    }

    memcpy(out, v, len);
    out[len] = '\0';
    return 0;
}


/* One extended header's records: "LEN KEY=VALUE\n" each. */
static int
vsb_tar_pax(vsb_tar_t *t, size_t n, int global, vsb_tar_pending_t *pd)
{
    const char  *p = t->ext, *end = t->ext + n, *key, *eq, *v;
    uint64_t     rlen, x;
    size_t       klen, vlen, i;
    char         kbuf[64];

    while (p < end) {
        if (*p == '\0') {
            break;               /* some writers pad with NULs */
        }

        rlen = 0;
        for (i = 0; p + i < end && p[i] >= '0' && p[i] <= '9'; i++) {
            if (rlen > VSB_TAR_EXT_MAX) {
                return vsb_tar_fail(t, "%s", "tar: PAX record length too "
                                    "large");
            }
            rlen = rlen * 10 + (uint64_t) (p[i] - '0');
        }

        if (i == 0 || p + i >= end || p[i] != ' ' || rlen < i + 4
            || rlen > (uint64_t) (end - p) || p[rlen - 1] != '\n')
        {
            return vsb_tar_fail(t, "%s", "tar: malformed PAX record");
        }

        key = p + i + 1;
        eq = memchr(key, '=', (size_t) (p + rlen - 1 - key));
        if (eq == NULL || eq == key) {
            return vsb_tar_fail(t, "%s", "tar: PAX record without a key");
        }

        klen = (size_t) (eq - key);
        v = eq + 1;
        vlen = (size_t) (p + rlen - 1 - v);
        snprintf(kbuf, sizeof(kbuf), "%.*s", (int) (klen < 63 ? klen : 63),
                 key);

        p += rlen;

        if (klen >= 11 && memcmp(key, "GNU.sparse.", 11) == 0) {
            return vsb_tar_fail(t, "tar: sparse file (PAX \"%s\"): sparse "
                                "entries are refused", kbuf);
        }

        if ((klen > 13 && memcmp(key, "SCHILY.xattr.", 13) == 0)
            || (klen > 17 && memcmp(key, "LIBARCHIVE.xattr.", 17) == 0))
        {
            pd->xattrs++;
            continue;
        }

        if (strcmp(kbuf, "path") == 0 || strcmp(kbuf, "linkpath") == 0
            || strcmp(kbuf, "size") == 0 || strcmp(kbuf, "uid") == 0
            || strcmp(kbuf, "gid") == 0)
        {
            if (global) {
                return vsb_tar_fail(t, "tar: a global PAX header sets "
                                    "\"%s\": refused", kbuf);
            }
        } else if (strcmp(kbuf, "mtime") != 0 || global) {
            continue;            /* uname, gname, atime, comment, ... */
        }

        if (strcmp(kbuf, "path") == 0) {
            if (vsb_tar_pax_string(t, "path", v, vlen, pd->path) != 0) {
                return -1;
            }
            pd->have_path = 1;

        } else if (strcmp(kbuf, "linkpath") == 0) {
            if (vsb_tar_pax_string(t, "linkpath", v, vlen, pd->link) != 0) {
                return -1;
            }
            pd->have_link = 1;

        } else if (strcmp(kbuf, "mtime") == 0) {
            /* negative or odd times are harmless: the epoch */
            if (vsb_tar_pax_u64(v, vlen, 1, &x) != 0 || x > INT64_MAX) {
                x = 0;
            }
            pd->mtime = (int64_t) x;
            pd->have_mtime = 1;

        } else {
            if (vsb_tar_pax_u64(v, vlen, 0, &x) != 0) {
                return vsb_tar_fail(t, "tar: PAX \"%s\" is not a number",
                                    kbuf);
            }
            if (strcmp(kbuf, "size") == 0) {
                pd->size = x;
                pd->have_size = 1;
            } else if (strcmp(kbuf, "uid") == 0) {
                pd->uid = x;
                pd->have_uid = 1;
            } else {
                pd->gid = x;
                pd->have_gid = 1;
            }
        }
    }

    return 0;
}


/* Reads an extension entry's data (PAX or GNU long name) into t->ext. */
static int
vsb_tar_read_ext(vsb_tar_t *t, uint64_t size, size_t *n)
{
    uint64_t  padded;

    if (size > VSB_TAR_EXT_MAX) {
        return vsb_tar_fail(t, "%s", "tar: extended header larger than "
                            "64 KiB");
    }

    padded = (size + VSB_TAR_BLOCK - 1) & ~(uint64_t) (VSB_TAR_BLOCK - 1);

    if (vsb_tar_read_exact(t, t->ext, (size_t) size, NULL) != 0) {
        return -1;
    }
    t->ext[size] = '\0';

    t->left = 0;
    t->pad = padded - size;
    if (vsb_tar_skip(t) != 0) {
        return -1;
    }

    *n = (size_t) size;
    return 0;
}


static int
vsb_tar_is_zero(const unsigned char *b)
{
    size_t  i;

    for (i = 0; i < VSB_TAR_BLOCK; i++) {
        if (b[i] != 0) {
            return 0;
        }
    }

    return 1;
}


int
vsb_tar_skip(vsb_tar_t *t)
{
    unsigned char  buf[4096];
    uint64_t       want;

    while (t->left + t->pad > 0) {
        /* data first, then padding: each may be where the input ends */
        want = t->left ? t->left : t->pad;
        if (want > sizeof(buf)) {
            want = sizeof(buf);
        }

        if (t->left == 0) {
            /* some writers (umoci insert) end the stream right after the
             * last entry's data: no padding, no end blocks */
            int  eof = 0;

            if (vsb_tar_read_exact(t, buf, (size_t) want, &eof) != 0) {
                return -1;
            }
            if (eof) {
                t->pad = 0;
                t->eof = 1;
                return 0;
            }
            t->pad -= want;
            continue;
        }

        if (vsb_tar_read_exact(t, buf, (size_t) want, NULL) != 0) {
            return -1;
        }

        t->left -= want;
    }

    return 0;
}


ssize_t
vsb_tar_data(vsb_tar_t *t, void *buf, size_t len)
{
    if (t->left == 0) {
        return 0;
    }

    if (len > t->left) {
        len = (size_t) t->left;
    }

    if (vsb_tar_read_exact(t, buf, len, NULL) != 0) {
        return -1;
    }

    t->left -= len;
    return (ssize_t) len;
}


static int
vsb_tar_type(vsb_tar_t *t, unsigned char c, vsb_tar_type_t *type)
{
    char  s[2] = { (char) c, '\0' };

    switch (c) {
    case '0': case '\0': case '7':
        *type = VSB_TAR_REG;
        return 0;
    case '1':
        *type = VSB_TAR_HARDLINK;
        return 0;
    case '2':
        *type = VSB_TAR_SYMLINK;
        return 0;
    case '3':
        *type = VSB_TAR_CHR;
        return 0;
    case '4':
        *type = VSB_TAR_BLK;
        return 0;
    case '5':
        *type = VSB_TAR_DIR;
        return 0;
    case '6':
        *type = VSB_TAR_FIFO;
        return 0;
    case 'S':
        return vsb_tar_fail(t, "%s", "tar: GNU sparse file: sparse entries "
                            "are refused");
    }

    if (c < 0x20 || c > 0x7e) {
        return vsb_tar_fail(t, "%s", "tar: entry type is not printable");
    }

    return vsb_tar_fail(t, "tar: entry type '%s' is not supported", s);
}


vsb_tar_rc_t
vsb_tar_next(vsb_tar_t *t, vsb_tar_entry_t *e)
{
    unsigned char       h[VSB_TAR_BLOCK];
    unsigned char       tf;
    int                 eof, gnu, posix, zeros = 0, meta = 0;
    uint64_t            v;
    size_t              n, pl;
    vsb_tar_pending_t   pd;
    char                name[101], prefix[156];

    memset(&pd, 0, sizeof(pd));

    if (vsb_tar_skip(t) != 0) {
        return VSB_TAR_ERROR;
    }

    for ( ;; ) {
        eof = t->eof;
        if (!eof && vsb_tar_read_exact(t, h, sizeof(h), &eof) != 0) {
            return VSB_TAR_ERROR;
        }

        if (eof) {
            if (pd.have_path || pd.have_link || pd.have_size) {
                vsb_tar_fail(t, "%s", "tar: archive ends after an extended "
                             "header");
                return VSB_TAR_ERROR;
            }
            return VSB_TAR_END;
        }

        if (vsb_tar_is_zero(h)) {
            if (++zeros == 2) {
                return VSB_TAR_END;
            }
            continue;
        }

        if (zeros) {
            vsb_tar_fail(t, "%s", "tar: a zero block inside the archive");
            return VSB_TAR_ERROR;
        }

        posix = memcmp(h + H_MAGIC, "ustar\0" "00", 8) == 0;
        gnu = memcmp(h + H_MAGIC, "ustar  \0", 8) == 0;

        if (!posix && !gnu) {
            vsb_tar_fail(t, "%s", "tar: not a ustar, GNU or PAX header");
            return VSB_TAR_ERROR;
        }

        if (!vsb_tar_checksum_ok(h)) {
            vsb_tar_fail(t, "%s", "tar: header checksum mismatch");
            return VSB_TAR_ERROR;
        }

        if (vsb_tar_number(FIELD(h, H_SIZE), &v) != 0) {
            vsb_tar_fail(t, "%s", "tar: bad size field");
            return VSB_TAR_ERROR;
        }

        tf = h[H_TYPE];

        if ((tf == 'x' || tf == 'g' || tf == 'L' || tf == 'K')
            && ++meta > VSB_TAR_META_MAX)
        {
            vsb_tar_fail(t, "tar: more than %d extended headers before an "
                         "entry", VSB_TAR_META_MAX);
            return VSB_TAR_ERROR;
        }

        if (tf == 'x' || tf == 'g') {
            if (vsb_tar_read_ext(t, v, &n) != 0
                || vsb_tar_pax(t, n, tf == 'g', &pd) != 0)
            {
                return VSB_TAR_ERROR;
            }
            continue;
        }

        if (tf == 'L' || tf == 'K') {
            if (v > VSB_IMAGE_PATH_MAX + 1) {
                vsb_tar_fail(t, "%s", "tar: GNU long name longer than the "
                             "path bound");
                return VSB_TAR_ERROR;
            }
            if (vsb_tar_read_ext(t, v, &n) != 0) {
                return VSB_TAR_ERROR;
            }
            n = strnlen(t->ext, n);
            if (tf == 'L' && !pd.have_path) {
                memcpy(pd.path, t->ext, n);
                pd.path[n] = '\0';
                pd.have_path = 2;
            } else if (tf == 'K' && !pd.have_link) {
                memcpy(pd.link, t->ext, n);
                pd.link[n] = '\0';
                pd.have_link = 2;
            }
            continue;
        }

        break;
    }

    memset(e, 0, sizeof(*e));

    if (vsb_tar_type(t, tf, &e->type) != 0) {
        return VSB_TAR_ERROR;
    }

    e->size = pd.have_size ? pd.size : v;

    if (vsb_tar_number(FIELD(h, H_MODE), &v) != 0) {
        vsb_tar_fail(t, "%s", "tar: bad mode field");
        return VSB_TAR_ERROR;
    }
    e->mode = (uint32_t) (v & 07777);

    if (pd.have_uid) {
        e->uid = pd.uid;
    } else if (vsb_tar_number(FIELD(h, H_UID), &e->uid) != 0) {
        vsb_tar_fail(t, "%s", "tar: bad uid field");
        return VSB_TAR_ERROR;
    }

    if (pd.have_gid) {
        e->gid = pd.gid;
    } else if (vsb_tar_number(FIELD(h, H_GID), &e->gid) != 0) {
        vsb_tar_fail(t, "%s", "tar: bad gid field");
        return VSB_TAR_ERROR;
    }

    if (pd.have_mtime) {
        e->mtime = pd.mtime;
    } else if (vsb_tar_number(FIELD(h, H_MTIME), &v) == 0 && v <= INT64_MAX) {
        e->mtime = (int64_t) v;
    }

    if (pd.have_path) {
        memcpy(e->path, pd.path, strlen(pd.path) + 1);
    } else {
        vsb_tar_str(FIELD(h, H_NAME), name);
        prefix[0] = '\0';
        if (posix) {
            vsb_tar_str(FIELD(h, H_PREFIX), prefix);
        }
        pl = strlen(prefix);
        if (pl) {
            snprintf(e->path, sizeof(e->path), "%s/%s", prefix, name);
        } else {
            memcpy(e->path, name, strlen(name) + 1);
        }
    }

    if (pd.have_link) {
        memcpy(e->link, pd.link, strlen(pd.link) + 1);
    } else {
        vsb_tar_str(FIELD(h, H_LINK), name);
        memcpy(e->link, name, strlen(name) + 1);
    }

    e->xattrs = pd.xattrs;

    if (e->path[0] == '\0') {
        vsb_tar_fail(t, "%s", "tar: entry with an empty name");
        return VSB_TAR_ERROR;
    }

    if ((e->type == VSB_TAR_HARDLINK || e->type == VSB_TAR_SYMLINK)
        && e->link[0] == '\0')
    {
        vsb_tar_fail(t, "tar: link \"%.200s\" has an empty target", e->path);
        return VSB_TAR_ERROR;
    }

    if (e->size > UINT64_MAX - VSB_TAR_BLOCK) {
        vsb_tar_fail(t, "%s", "tar: entry size out of range");
        return VSB_TAR_ERROR;
    }

    t->left = e->size;
    t->pad = ((e->size + VSB_TAR_BLOCK - 1) & ~(uint64_t) (VSB_TAR_BLOCK - 1))
             - e->size;

    return VSB_TAR_OK;
}
