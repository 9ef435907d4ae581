/*
 * Layers and manifests (vsb_snap_tree.h): the bounded walk that reads a
 * sandbox's layer (and copies it into the snapshot store), the merge of a
 * fork's layer over its base, and the manifest's JSON form.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "vsb_config.h"
#include "vsb_fdio.h"
#include "vsb_hex.h"
#include "vsb_snap_tree.h"

#define VSB_MF_OPAQUE_XATTR  "trusted.overlay.opaque"
#define VSB_MF_BUF           (128 * 1024)

typedef struct {
    const vsb_mf_bounds_t  *b;
    vsb_mf_t               *m;
    vsb_error_t            *e;
    dev_t                   dev;
    unsigned char          *buf;
    char                    path[VSB_MAX_PATH + VSB_MAX_NAME + 2];
} vsb_mf_walk_t;


void
vsb_mf_free(vsb_mf_t *m)
{
    size_t  i;

    for (i = 0; i < m->n; i++) {
        free(m->e[i].path);
        free(m->e[i].target);
    }

    free(m->e);
    memset(m, 0, sizeof(*m));
}


static int
vsb_mf_cmp(const void *a, const void *b)
{
    return strcmp(((const vsb_mf_ent_t *) a)->path,
                  ((const vsb_mf_ent_t *) b)->path);
}


void
vsb_mf_sort(vsb_mf_t *m)
{
    if (m->n > 1) {
        qsort(m->e, m->n, sizeof(m->e[0]), vsb_mf_cmp);
    }
}


size_t
vsb_mf_lower(const vsb_mf_t *m, const char *key)
{
    size_t  lo = 0, hi = m->n, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (strcmp(m->e[mid].path, key) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return lo;
}


const vsb_mf_ent_t *
vsb_mf_find(const vsb_mf_t *m, const char *path)
{
    size_t  i;

    if (m == NULL) {
        return NULL;
    }

    i = vsb_mf_lower(m, path);
    return (i < m->n && strcmp(m->e[i].path, path) == 0) ? &m->e[i] : NULL;
}


int
vsb_mf_hides(const vsb_mf_t *layer, const char *path)
{
    char                 buf[VSB_MAX_PATH + 1];
    char                *slash;
    const vsb_mf_ent_t  *a;

    if (vsb_mf_find(layer, path) != NULL) {
        return 1;
    }

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int) sizeof(buf)) {
        return 1;
    }

    while ((slash = strrchr(buf, '/')) != NULL) {
        *slash = '\0';
        a = vsb_mf_find(layer, buf);
        if (a != NULL && (a->type != VSB_MF_DIR || a->opaque)) {
            return 1;
        }
    }

    return 0;
}


static vsb_mf_ent_t *
vsb_mf_add(vsb_mf_t *m, const char *path)
{
    vsb_mf_ent_t  *n;
    size_t         cap;

    if (m->n == m->cap) {
        cap = m->cap ? m->cap * 2 : 256;
        n = realloc(m->e, cap * sizeof(*n));
        if (n == NULL) {
            return NULL;
        }
        m->e = n;
        m->cap = cap;
    }

    n = &m->e[m->n];
    memset(n, 0, sizeof(*n));
    n->path = strdup(path);
    if (n->path == NULL) {
        return NULL;
    }

    m->n++;
    return n;
}


int
vsb_mf_open(int rootfd, const char *path, int flags)
{
    return vsb_openat2(rootfd, path, (uint64_t) flags | O_NOFOLLOW, 0,
                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
                       | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
}


/* The parent directory of path below rootfd, and path's last name. */
static int
vsb_mf_parent(int rootfd, const char *path, const char **leaf)
{
    char         buf[VSB_MAX_PATH + 1];
    const char  *slash;

    slash = strrchr(path, '/');
    if (slash == NULL) {
        *leaf = path;
        return fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
    }

    if ((size_t) (slash - path) >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }

    memcpy(buf, path, (size_t) (slash - path));
    buf[slash - path] = '\0';
    *leaf = slash + 1;

    return vsb_mf_open(rootfd, buf, O_RDONLY | O_DIRECTORY);
}


static uint32_t
vsb_mf_inside(uid_t id, uid_t host)
{
    if (id >= host && (uint64_t) id < (uint64_t) host + VSB_UID_RANGE) {
        return (uint32_t) (id - host);
    }

    return 65534;
}


/* Sets owner and mode on what was made at dfd/name; not for symlinks'
 * modes. */
static int
vsb_mf_own(int dfd, const char *name, const vsb_mf_ent_t *x)
{
    if (fchownat(dfd, name, x->uid, x->gid, AT_SYMLINK_NOFOLLOW) != 0) {
        return -1;
    }

    if (x->type != VSB_MF_LINK
        && fchmodat(dfd, name, x->mode, 0) != 0)
    {
        return -1;
    }

    return 0;
}


static int
vsb_mf_io(vsb_mf_walk_t *w, const char *what)
{
    return vsb_error_set(w->e, VSB_E_IO, "path", "%s \"%.200s\": %s", what,
                         w->path, strerror(errno));
}


/* A regular file: read (bounded), hashed, copied when dfd is not -1. */
static int
vsb_mf_file(vsb_mf_walk_t *w, int sfd, int dfd, const char *name,
    const struct stat *st, vsb_mf_ent_t *x)
{
    int            fd, out = -1, rc = -1;
    struct stat    fst;
    EVP_MD_CTX    *md;
    unsigned char  h[32];
    unsigned int   hl;
    ssize_t        n;
    uint64_t       total = 0, room;

    fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
                | O_CLOEXEC);
    if (fd == -1) {
        return vsb_mf_io(w, "open");
    }

    if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)
        || fst.st_ino != st->st_ino)
    {
        close(fd);
        return vsb_error_set(w->e, VSB_E_IO, "path", "\"%.200s\" changed "
                             "while it was read (pause the sandbox first)",
                             w->path);
    }

    x->uid = vsb_mf_inside(fst.st_uid, w->b->host_uid);
    x->gid = vsb_mf_inside(fst.st_gid, w->b->host_uid);
    x->mode = (uint16_t) (fst.st_mode & 07777);

    md = EVP_MD_CTX_new();
    if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        vsb_error_set(w->e, VSB_E_INTERNAL, NULL, "sha256 context");
        goto done;
    }

    if (dfd != -1) {
        out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                     | O_CLOEXEC, 0600);
        if (out == -1) {
            vsb_mf_io(w, "create the copy of");
            goto done;
        }
    }

    room = w->b->max_bytes - w->m->bytes;

    for ( ;; ) {
        n = read(fd, w->buf, VSB_MF_BUF);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n == -1) {
            vsb_mf_io(w, "read");
            goto done;
        }
        if (n == 0) {
            break;
        }
        total += (uint64_t) n;
        if (total > room) {
            vsb_error_set(w->e, VSB_E_OVER_CEILING, NULL, "the files come "
                          "to more than %llu bytes",
                          (unsigned long long) w->b->max_bytes);
            w->e->limit = "snapshot_bytes";
            goto done;
        }
        if (EVP_DigestUpdate(md, w->buf, (size_t) n) != 1) {
            vsb_error_set(w->e, VSB_E_INTERNAL, NULL, "sha256");
            goto done;
        }
        if (out != -1 && vsb_write_full(out, w->buf, (size_t) n) != 0) {
            if (errno == ENOSPC || errno == EDQUOT) {
                vsb_error_set(w->e, VSB_E_NO_SPACE, NULL, "the snapshot "
                              "store is full");
            } else {
                vsb_mf_io(w, "write the copy of");
            }
            goto done;
        }
    }

    if (EVP_DigestFinal_ex(md, h, &hl) != 1
        || vsb_sha256_md_hex(h, hl, x->sha256) != 0)
    {
        vsb_error_set(w->e, VSB_E_INTERNAL, NULL, "sha256");
        goto done;
    }

    x->size = total;
    w->m->bytes += total;

    if (out != -1) {
        if (fchown(out, x->uid, x->gid) != 0 || fchmod(out, x->mode) != 0) {
            vsb_mf_io(w, "chown the copy of");
            goto done;
        }
    }

    rc = 0;

done:

    if (out != -1) {
        close(out);
    }
    EVP_MD_CTX_free(md);
    close(fd);
    return rc;
}


static int vsb_mf_dir(vsb_mf_walk_t *w, int sfd, int dfd, size_t plen,
    int depth);


static int
vsb_mf_entry(vsb_mf_walk_t *w, int sfd, int dfd, const char *name,
    size_t plen, int depth)
{
    struct stat    st;
    vsb_mf_ent_t  *x;
    char           target[PATH_MAX + 1], opq[2];
    ssize_t        n;
    int            csfd, cdfd, rc;
    size_t         nlen = strlen(name);

    if (plen + nlen + 1 > VSB_MAX_PATH) {
        errno = ENAMETOOLONG;
        return vsb_mf_io(w, "path too long at");
    }

    if (plen > 0) {
        w->path[plen] = '/';
        memcpy(w->path + plen + 1, name, nlen + 1);
        plen += nlen + 1;
    } else {
        memcpy(w->path, name, nlen + 1);
        plen = nlen;
    }

    if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            return 0;           /* gone since readdir: not there */
        }
        return vsb_mf_io(w, "stat");
    }

    if (st.st_dev != w->dev || S_ISSOCK(st.st_mode)) {
        return 0;               /* a mount point, a socket: not state */
    }

    if ((S_ISCHR(st.st_mode) && st.st_rdev != makedev(0, 0))
        || S_ISBLK(st.st_mode))
    {
        return vsb_error_set(w->e, VSB_E_UNSUPPORTED_FILE, "path",
                             "\"%.200s\" is a device node", w->path);
    }

    if (w->m->n >= w->b->max_files) {
        vsb_error_set(w->e, VSB_E_OVER_CEILING, NULL, "more than %llu "
                      "files", (unsigned long long) w->b->max_files);
        w->e->limit = "snapshot_files";
        return -1;
    }

    x = vsb_mf_add(w->m, w->path);
    if (x == NULL) {
        return vsb_error_set(w->e, VSB_E_INTERNAL, NULL, "out of memory");
    }

    x->uid = vsb_mf_inside(st.st_uid, w->b->host_uid);
    x->gid = vsb_mf_inside(st.st_gid, w->b->host_uid);
    x->mode = (uint16_t) (st.st_mode & 07777);

    if (S_ISREG(st.st_mode) && w->b->names_only && dfd == -1) {
        x->type = VSB_MF_FILE;
        x->size = (uint64_t) st.st_size;
        return 0;
    }

    if (S_ISREG(st.st_mode)) {
        x->type = VSB_MF_FILE;
        /* x may move when the manifest grows: fill a copy */
        {
            vsb_mf_ent_t  t = *x;
            size_t        i = (size_t) (x - w->m->e);

            rc = vsb_mf_file(w, sfd, dfd, name, &st, &t);
            w->m->e[i] = t;
            return rc;
        }
    }

    if (S_ISLNK(st.st_mode)) {
        x->type = VSB_MF_LINK;
        n = readlinkat(sfd, name, target, sizeof(target) - 1);
        if (n < 0) {
            return vsb_mf_io(w, "readlink");
        }
        target[n] = '\0';
        x->target = strdup(target);
        if (x->target == NULL) {
            return vsb_error_set(w->e, VSB_E_INTERNAL, NULL, "out of memory");
        }
        x->size = (uint64_t) n;
        if (dfd != -1 && (symlinkat(target, dfd, name) != 0
                          || vsb_mf_own(dfd, name, x) != 0))
        {
            return vsb_mf_io(w, "copy the symlink");
        }
        return 0;
    }

    if (S_ISCHR(st.st_mode)) {
        x->type = VSB_MF_WHITEOUT;
        x->mode = 0;
        if (dfd != -1 && w->b->overlay
            && (mknodat(dfd, name, S_IFCHR | 0000, makedev(0, 0)) != 0
                || fchownat(dfd, name, x->uid, x->gid, AT_SYMLINK_NOFOLLOW)
                   != 0))
        {
            return vsb_mf_io(w, "copy the whiteout");
        }
        return 0;
    }

    if (S_ISFIFO(st.st_mode)) {
        x->type = VSB_MF_FIFO;
        if (dfd != -1 && (mkfifoat(dfd, name, 0600) != 0
                          || vsb_mf_own(dfd, name, x) != 0))
        {
            return vsb_mf_io(w, "copy the fifo");
        }
        return 0;
    }

    if (!S_ISDIR(st.st_mode)) {
        return vsb_error_set(w->e, VSB_E_UNSUPPORTED_FILE, "path",
                             "\"%.200s\": unsupported file type", w->path);
    }

    x->type = VSB_MF_DIR;

    if (depth >= VSB_MF_MAX_DEPTH) {
        vsb_error_set(w->e, VSB_E_OVER_CEILING, NULL, "directories nested "
                      "deeper than %d at \"%.200s\"", VSB_MF_MAX_DEPTH,
                      w->path);
        w->e->limit = "snapshot_depth";
        return -1;
    }

    csfd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                  | O_CLOEXEC);
    if (csfd == -1) {
        return vsb_mf_io(w, "open the directory");
    }

    {
        struct stat  fst;

        if (fstat(csfd, &fst) != 0 || fst.st_ino != st.st_ino
            || fst.st_dev != st.st_dev)
        {
            close(csfd);
            return vsb_error_set(w->e, VSB_E_IO, "path", "\"%.200s\" changed "
                                 "while it was read (pause the sandbox "
                                 "first)", w->path);
        }
    }

    if (fgetxattr(csfd, VSB_MF_OPAQUE_XATTR, opq, sizeof(opq)) == 1
        && opq[0] == 'y')
    {
        x->opaque = 1;
    }

    cdfd = -1;
    if (dfd != -1) {
        if (mkdirat(dfd, name, 0700) != 0) {
            close(csfd);
            return vsb_mf_io(w, "copy the directory");
        }
        cdfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                      | O_CLOEXEC);
        if (cdfd == -1) {
            close(csfd);
            return vsb_mf_io(w, "open the copy of");
        }
        if (x->opaque && w->b->overlay
            && fsetxattr(cdfd, VSB_MF_OPAQUE_XATTR, "y", 1, 0) != 0)
        {
            close(csfd);
            close(cdfd);
            return vsb_mf_io(w, "mark opaque the copy of");
        }
    }

    {
        vsb_mf_ent_t  keep = *x;    /* x may move while the walk adds */

        rc = vsb_mf_dir(w, csfd, cdfd, plen, depth + 1);
        if (rc == 0 && cdfd != -1
            && (fchown(cdfd, keep.uid, keep.gid) != 0
                || fchmod(cdfd, keep.mode) != 0))
        {
            w->path[plen] = '\0';
            rc = vsb_mf_io(w, "chown the copy of");
        }
    }

    close(csfd);
    if (cdfd != -1) {
        close(cdfd);
    }

    return rc;
}


static int
vsb_mf_dir(vsb_mf_walk_t *w, int sfd, int dfd, size_t plen, int depth)
{
    DIR            *d;
    struct dirent  *de;
    int             fd, rc = 0;

    fd = fcntl(sfd, F_DUPFD_CLOEXEC, 0);
    if (fd == -1) {
        return vsb_mf_io(w, "dup");
    }

    d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return vsb_mf_io(w, "read the directory");
    }

    /* the descriptor shares its offset with sfd's: from the start */
    rewinddir(d);

    for ( ;; ) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                rc = vsb_mf_io(w, "read the directory");
            }
            break;
        }

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }

        rc = vsb_mf_entry(w, sfd, dfd, de->d_name, plen, depth);
        w->path[plen] = '\0';
        if (rc != 0) {
            break;
        }
    }

    closedir(d);
    return rc;
}


int
vsb_mf_walk(int srcfd, int dstfd, const vsb_mf_bounds_t *b, vsb_mf_t *m,
    vsb_error_t *e)
{
    vsb_mf_walk_t  w;
    struct stat    st;
    int            rc;

    memset(&w, 0, sizeof(w));
    w.b = b;
    w.m = m;
    w.e = e;

    if (fstat(srcfd, &st) != 0) {
        return vsb_error_set(e, VSB_E_IO, NULL, "stat the layer: %s",
                             strerror(errno));
    }

    w.dev = st.st_dev;
    w.buf = malloc(VSB_MF_BUF);
    if (w.buf == NULL) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
    }

    rc = vsb_mf_dir(&w, srcfd, dstfd, 0, 0);
    free(w.buf);
    return rc;
}


/* Makes base entry x below dstfd (its parent exists). */
static int
vsb_mf_make(const vsb_mf_ent_t *x, int basefd, int dstfd,
    const vsb_mf_bounds_t *b, vsb_error_t *e)
{
    int          pfd, sfd = -1, rc = -1;
    const char  *leaf, *sleaf;

    pfd = vsb_mf_parent(dstfd, x->path, &leaf);
    if (pfd == -1) {
        return vsb_error_set(e, VSB_E_IO, "path", "open the parent of "
                             "\"%.200s\": %s", x->path, strerror(errno));
    }

    switch (x->type) {

    case VSB_MF_FILE:
        /* the store's files never change: the new snapshot shares them */
        sfd = vsb_mf_parent(basefd, x->path, &sleaf);
        if (sfd == -1 || linkat(sfd, sleaf, pfd, leaf, 0) != 0) {
            break;
        }
        rc = 0;
        break;

    case VSB_MF_DIR:
        if (mkdirat(pfd, leaf, 0700) != 0 || vsb_mf_own(pfd, leaf, x) != 0) {
            break;
        }
        if (x->opaque && b->overlay) {
            sfd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                         | O_CLOEXEC);
            if (sfd == -1
                || fsetxattr(sfd, VSB_MF_OPAQUE_XATTR, "y", 1, 0) != 0)
            {
                break;
            }
        }
        rc = 0;
        break;

    case VSB_MF_LINK:
        if (symlinkat(x->target, pfd, leaf) == 0
            && vsb_mf_own(pfd, leaf, x) == 0)
        {
            rc = 0;
        }
        break;

    case VSB_MF_FIFO:
        if (mkfifoat(pfd, leaf, 0600) == 0 && vsb_mf_own(pfd, leaf, x) == 0) {
            rc = 0;
        }
        break;

    case VSB_MF_WHITEOUT:
        if (mknodat(pfd, leaf, S_IFCHR | 0000, makedev(0, 0)) == 0
            && fchownat(pfd, leaf, x->uid, x->gid, AT_SYMLINK_NOFOLLOW) == 0)
        {
            rc = 0;
        }
        break;

    default:
        errno = EINVAL;
    }

    if (rc != 0) {
        vsb_error_set(e, VSB_E_IO, "path", "make \"%.200s\" of the base: %s",
                      x->path, strerror(errno));
    }

    if (sfd != -1) {
        close(sfd);
    }
    close(pfd);
    return rc;
}


static int
vsb_mf_copy_ent(vsb_mf_t *out, const vsb_mf_ent_t *x)
{
    vsb_mf_ent_t  *n;

    n = vsb_mf_add(out, x->path);
    if (n == NULL) {
        return -1;
    }

    {
        char  *p = n->path;

        *n = *x;
        n->path = p;
    }

    n->target = NULL;
    if (x->target != NULL) {
        n->target = strdup(x->target);
        if (n->target == NULL) {
            return -1;
        }
    }

    if (x->type == VSB_MF_FILE) {
        out->bytes += x->size;
    }

    return 0;
}


int
vsb_mf_merge(const vsb_mf_t *base, int basefd, vsb_mf_t *layer, int dstfd,
    const vsb_mf_bounds_t *b, vsb_mf_t *out, vsb_error_t *e)
{
    size_t               i;
    const vsb_mf_ent_t  *x;
    const char          *leaf;
    int                  pfd;

    vsb_mf_sort(layer);

    for (i = 0; i < layer->n; i++) {
        x = &layer->e[i];

        if (x->type == VSB_MF_WHITEOUT && !b->overlay) {
            continue;           /* deleted from the base: left out */
        }

        if (vsb_mf_copy_ent(out, x) != 0) {
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        }

        if (!b->overlay && x->opaque) {
            out->e[out->n - 1].opaque = 0;
        }
    }

    /* the layer's whiteouts are not for a directory profile's copy */
    if (!b->overlay) {
        for (i = layer->n; i > 0; i--) {
            x = &layer->e[i - 1];
            if (x->type != VSB_MF_WHITEOUT) {
                continue;
            }
            pfd = vsb_mf_parent(dstfd, x->path, &leaf);
            if (pfd == -1 || (unlinkat(pfd, leaf, 0) != 0 && errno != ENOENT))
            {
                if (pfd != -1) {
                    close(pfd);
                }
                return vsb_error_set(e, VSB_E_IO, "path", "remove the "
                                     "whiteout \"%.200s\": %s", x->path,
                                     strerror(errno));
            }
            close(pfd);
        }
    }

    for (i = 0; base != NULL && i < base->n; i++) {
        x = &base->e[i];

        if (vsb_mf_hides(layer, x->path)) {
            continue;
        }

        if (out->n >= b->max_files) {
            vsb_error_set(e, VSB_E_OVER_CEILING, NULL, "more than %llu files",
                          (unsigned long long) b->max_files);
            e->limit = "snapshot_files";
            return -1;
        }

        if (x->type == VSB_MF_FILE && out->bytes + x->size > b->max_bytes) {
            vsb_error_set(e, VSB_E_OVER_CEILING, NULL, "the files come to "
                          "more than %llu bytes",
                          (unsigned long long) b->max_bytes);
            e->limit = "snapshot_bytes";
            return -1;
        }

        if (vsb_mf_make(x, basefd, dstfd, b, e) != 0) {
            return -1;
        }

        if (vsb_mf_copy_ent(out, x) != 0) {
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        }
    }

    vsb_mf_sort(out);
    return 0;
}


static const char *
vsb_mf_type_name(char t)
{
    switch (t) {
    case VSB_MF_FILE:
        return "file";
    case VSB_MF_DIR:
        return "dir";
    case VSB_MF_LINK:
        return "symlink";
    case VSB_MF_FIFO:
        return "fifo";
    case VSB_MF_WHITEOUT:
        return "whiteout";
    }
    return "unknown";
}


static char
vsb_mf_type_of(const char *s)
{
    if (strcmp(s, "file") == 0) {
        return VSB_MF_FILE;
    }
    if (strcmp(s, "dir") == 0) {
        return VSB_MF_DIR;
    }
    if (strcmp(s, "symlink") == 0) {
        return VSB_MF_LINK;
    }
    if (strcmp(s, "fifo") == 0) {
        return VSB_MF_FIFO;
    }
    if (strcmp(s, "whiteout") == 0) {
        return VSB_MF_WHITEOUT;
    }
    return 0;
}


/* Public so op_snapshot.c names types the same way. */
const char *vsb_mf_type_str(char t);

const char *
vsb_mf_type_str(char t)
{
    return vsb_mf_type_name(t);
}


char *
vsb_mf_dump(const vsb_mf_t *m, size_t *len, char digest[72])
{
    json_t         *root, *arr, *o;
    size_t          i;
    char           *s;
    unsigned char   h[32];
    unsigned int    hl;

    arr = json_array();
    root = json_pack("{s:i, s:o}", "version", 1, "entries", arr);
    if (root == NULL) {
        return NULL;
    }

    for (i = 0; i < m->n; i++) {
        const vsb_mf_ent_t  *x = &m->e[i];

        o = json_pack("{s:s, s:s, s:i, s:I, s:I, s:I}",
                      "path", x->path, "type", vsb_mf_type_name(x->type),
                      "mode", (int) x->mode, "uid", (json_int_t) x->uid,
                      "gid", (json_int_t) x->gid,
                      "size", (json_int_t) x->size);
        if (o == NULL) {
            json_decref(root);
            return NULL;
        }
        if (x->type == VSB_MF_FILE) {
            json_object_set_new(o, "sha256", json_string(x->sha256));
        }
        if (x->target != NULL) {
            /* a target is bytes: kept when it is UTF-8 */
            json_t  *t = json_string(x->target);

            if (t == NULL) {
                json_decref(o);
                json_decref(root);
                errno = EILSEQ;
                return NULL;
            }
            json_object_set_new(o, "target", t);
        }
        if (x->opaque) {
            json_object_set_new(o, "opaque", json_true());
        }
        if (json_array_append_new(arr, o) != 0) {
            json_decref(root);
            return NULL;
        }
    }

    s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (s == NULL) {
        return NULL;
    }

    *len = strlen(s);

    memcpy(digest, "sha256:", 7);
    if (EVP_Digest(s, *len, h, &hl, EVP_sha256(), NULL) != 1
        || vsb_sha256_md_hex(h, hl, digest + 7) != 0)
    {
        free(s);
        return NULL;
    }

    return s;
}


int
vsb_mf_load(const char *text, size_t len, vsb_mf_t *m, char *why,
    size_t wlen)
{
    json_t         *root, *arr, *o, *v;
    json_error_t    jerr;
    size_t          i;
    vsb_mf_ent_t   *x;
    const char     *path, *type, *sha, *target;
    json_int_t      mode, uid, gid, size;
    int             opaque;

    memset(m, 0, sizeof(*m));

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        snprintf(why, wlen, "manifest: %s", jerr.text);
        return -1;
    }

    arr = json_object_get(root, "entries");
    v = json_object_get(root, "version");
    if (!json_is_array(arr) || !json_is_integer(v)
        || json_integer_value(v) != 1)
    {
        snprintf(why, wlen, "manifest: not version 1 with entries");
        json_decref(root);
        return -1;
    }

    json_array_foreach(arr, i, o) {
        path = type = sha = target = NULL;
        opaque = 0;
        if (json_unpack(o, "{s:s, s:s, s:I, s:I, s:I, s:I, s?s, s?s, s?b !}",
                        "path", &path, "type", &type, "mode", &mode,
                        "uid", &uid, "gid", &gid, "size", &size,
                        "sha256", &sha, "target", &target,
                        "opaque", &opaque) != 0
            || vsb_mf_type_of(type) == 0 || mode < 0 || mode > 07777
            || uid < 0 || uid >= VSB_UID_RANGE || gid < 0
            || gid >= VSB_UID_RANGE || size < 0 || path[0] == '\0'
            || strlen(path) > VSB_MAX_PATH
            || (sha != NULL) != (vsb_mf_type_of(type) == VSB_MF_FILE)
            || (sha != NULL && (strlen(sha) != 64
                                || strspn(sha, "0123456789abcdef") != 64))
            || (target != NULL) != (vsb_mf_type_of(type) == VSB_MF_LINK)
            || (opaque && vsb_mf_type_of(type) != VSB_MF_DIR))
        {
            snprintf(why, wlen, "manifest: entry %zu is malformed", i);
            json_decref(root);
            vsb_mf_free(m);
            return -1;
        }

        x = vsb_mf_add(m, path);
        if (x == NULL) {
            snprintf(why, wlen, "manifest: out of memory");
            json_decref(root);
            vsb_mf_free(m);
            return -1;
        }

        x->type = vsb_mf_type_of(type);
        x->mode = (uint16_t) mode;
        x->uid = (uint32_t) uid;
        x->gid = (uint32_t) gid;
        x->size = (uint64_t) size;
        x->opaque = opaque ? 1 : 0;
        if (sha != NULL) {
            memcpy(x->sha256, sha, 65);
        }
        if (target != NULL) {
            x->target = strdup(target);
            if (x->target == NULL) {
                snprintf(why, wlen, "manifest: out of memory");
                json_decref(root);
                vsb_mf_free(m);
                return -1;
            }
        }
        if (x->type == VSB_MF_FILE) {
            m->bytes += x->size;
        }
    }

    json_decref(root);
    vsb_mf_sort(m);
    return 0;
}


int
vsb_mf_load_file(int dirfd, const char *name, size_t max, vsb_mf_t *m,
    char *why, size_t wlen)
{
    int          fd;
    struct stat  st;
    char        *buf;
    ssize_t      n;
    int          rc;

    fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1 || fstat(fd, &st) != 0) {
        snprintf(why, wlen, "open %s: %s", name, strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size > max) {
        snprintf(why, wlen, "%s: not a file of at most %zu bytes", name, max);
        close(fd);
        return -1;
    }

    buf = malloc((size_t) st.st_size + 1);
    if (buf == NULL) {
        snprintf(why, wlen, "out of memory");
        close(fd);
        return -1;
    }

    n = vsb_read_full(fd, buf, (size_t) st.st_size);
    if (n != (ssize_t) st.st_size) {
        snprintf(why, wlen, "read %s: %s", name,
                 n == -1 ? strerror(errno) : "short");
        free(buf);
        close(fd);
        return -1;
    }

    close(fd);
    rc = vsb_mf_load(buf, (size_t) n, m, why, wlen);
    free(buf);
    return rc;
}
