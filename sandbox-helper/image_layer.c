/*
 * Layers applied to a tree, in the unpacking child (vsb_image_layer.h).
 *
 * Paths are made canonical first ("..", over-long and over-deep paths
 * refused); every parent directory is resolved with RESOLVE_IN_ROOT, so
 * a symlink in the image (absolute or not) resolves inside the tree as
 * it will in a sandbox, never above it; the last component is created
 * with *at() calls that do not follow it.  Whiteouts of a layer are
 * applied before any of its entries is created, so their order inside
 * the layer does not matter and they only ever hide lower layers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_image_layer.h"
#include "vsb_image_tar.h"

#define VSB_WH          ".wh."
#define VSB_WH_OPAQUE   ".wh..wh..opq"
#define VSB_WH_META     ".wh..wh."
#define VSB_TRAILER_MAX (1 << 20)   /* bytes after the end-of-archive */
#define VSB_COPY_BUF    65536


/* ---- the tree ---- */

static int
vsb_layer_openat2(int dirfd, const char *path, uint64_t flags)
{
    return vsb_openat2(dirfd, path, flags, 0,
                       RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS
                       | RESOLVE_NO_XDEV);
}


int
vsb_layer_open_dir(vsb_layer_t *l, const char *path, int create, char *err,
    size_t errlen)
{
    char    prefix[VSB_IMAGE_PATH_MAX + 1];
    char   *slash;
    int     fd, pfd;
    size_t  n;

    fd = vsb_layer_openat2(l->rootfd, path[0] ? path : ".",
                           O_PATH | O_DIRECTORY);
    if (fd != -1) {
        return fd;
    }

    if (errno != ENOENT || !create) {
        snprintf(err, errlen, "directory \"%.200s\": %s", path,
                 errno == ENOTDIR ? "a non-directory is in the way"
                 : strerror(errno));
        return -1;
    }

    /* create the missing components one by one, each below the last */
    n = strlen(path);
    memcpy(prefix, path, n + 1);
    slash = prefix;

    for ( ;; ) {
        slash = strchr(slash, '/');
        if (slash != NULL) {
            *slash = '\0';
        }

        fd = vsb_layer_openat2(l->rootfd, prefix, O_PATH | O_DIRECTORY);

        if (fd == -1 && errno == ENOENT) {
            char  *base = strrchr(prefix, '/');

            if (base != NULL) {
                *base = '\0';
                pfd = vsb_layer_openat2(l->rootfd, prefix,
                                        O_PATH | O_DIRECTORY);
                *base = '/';
                base++;
            } else {
                pfd = vsb_layer_openat2(l->rootfd, ".", O_PATH | O_DIRECTORY);
                base = prefix;
            }

            if (pfd == -1) {
                snprintf(err, errlen, "directory \"%.200s\": %s", prefix,
                         strerror(errno));
                return -1;
            }

            if (mkdirat(pfd, base, 0700) != 0) {
                snprintf(err, errlen, "mkdir \"%.200s\": %s", prefix,
                         errno == EEXIST ? "a dangling symlink is in the way"
                         : strerror(errno));
                close(pfd);
                return -1;
            }

            close(pfd);
            fd = vsb_layer_openat2(l->rootfd, prefix, O_PATH | O_DIRECTORY);
        }

        if (fd == -1) {
            snprintf(err, errlen, "directory \"%.200s\": %s", prefix,
                     errno == ENOTDIR ? "a non-directory is in the way"
                     : strerror(errno));
            return -1;
        }

        if (slash == NULL) {
            return fd;
        }

        close(fd);
        *slash++ = '/';
    }
}


int
vsb_layer_remove(int dfd, const char *name, unsigned depth, char *err,
    size_t errlen)
{
    struct stat     st;
    struct dirent  *de;
    DIR            *d;
    int             fd, removed;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "stat \"%.200s\": %s", name, strerror(errno));
        return -1;
    }

    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(dfd, name, 0) != 0) {
            snprintf(err, errlen, "unlink \"%.200s\": %s", name,
                     strerror(errno));
            return -1;
        }
        return 0;
    }

    if (depth > VSB_IMAGE_DEPTH_MAX + 8) {
        snprintf(err, errlen, "remove \"%.200s\": too deep", name);
        return -1;
    }

    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "open \"%.200s\": %s", name, strerror(errno));
        return -1;
    }

    /* the child owns every directory it made; make sure it can empty it */
    if (fchmod(fd, 0700) != 0 && errno != EPERM) {
        snprintf(err, errlen, "chmod \"%.200s\": %s", name, strerror(errno));
        close(fd);
        return -1;
    }

    d = fdopendir(fd);
    if (d == NULL) {
        snprintf(err, errlen, "opendir \"%.200s\": %s", name,
                 strerror(errno));
        close(fd);
        return -1;
    }

    do {
        removed = 0;
        rewinddir(d);

        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            {
                continue;
            }
            if (vsb_layer_remove(dirfd(d), de->d_name, depth + 1, err,
                                 errlen) != 0)
            {
                closedir(d);
                return -1;
            }
            removed = 1;
        }
    } while (removed);

    closedir(d);

    if (unlinkat(dfd, name, AT_REMOVEDIR) != 0) {
        snprintf(err, errlen, "rmdir \"%.200s\": %s", name, strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_layer_flush(vsb_layer_t *l, char *err, size_t errlen)
{
    if (vsb_write_full(l->ownersfd, l->rec,
                       l->nrec * sizeof(vsb_owner_rec_t)) != 0)
    {
        snprintf(err, errlen, "write the owners file: %s", strerror(errno));
        return -1;
    }

    l->nrec = 0;
    return 0;
}


int
vsb_layer_record(vsb_layer_t *l, uint64_t ino, uint32_t uid, uint32_t gid,
    uint32_t mode, char *err, size_t errlen)
{
    vsb_owner_rec_t  *r;

    if (l->nrec == VSB_OWNER_BUF && vsb_layer_flush(l, err, errlen) != 0) {
        return -1;
    }

    r = &l->rec[l->nrec++];
    r->ino = ino;
    r->uid = uid;
    r->gid = gid;
    r->mode = mode;
    r->reserved = 0;
    return 0;
}


/* Splits a canonical path into its directory and last component. */
static const char *
vsb_layer_split(const char *path, char *dir)
{
    const char  *slash = strrchr(path, '/');

    if (slash == NULL) {
        dir[0] = '\0';
        return path;
    }

    memcpy(dir, path, (size_t) (slash - path));
    dir[slash - path] = '\0';
    return slash + 1;
}


/* The owner and mode an entry will have: ids over 65535 squashed,
 * setuid/setgid dropped, counted. */
static void
vsb_layer_ids(vsb_layer_t *l, const vsb_tar_entry_t *e, uint32_t *uid,
    uint32_t *gid, uint32_t *mode)
{
    *uid = (uint32_t) e->uid;
    *gid = (uint32_t) e->gid;

    if (e->uid > VSB_IMAGE_ID_MAX || e->gid > VSB_IMAGE_ID_MAX) {
        l->st->ids_squashed++;
        if (e->uid > VSB_IMAGE_ID_MAX) {
            *uid = VSB_IMAGE_NOBODY;
        }
        if (e->gid > VSB_IMAGE_ID_MAX) {
            *gid = VSB_IMAGE_NOBODY;
        }
    }

    *mode = e->mode & (e->type == VSB_TAR_DIR ? 01777 : 0777);

    if (e->mode & (S_ISUID | S_ISGID)) {
        l->st->setid_dropped++;
    }
}


/* ---- pass one: bounds, paths, whiteouts, diff_id ---- */

static int
vsb_layer_whiteout(vsb_layer_t *l, const char *dir, const char *base,
    char *err, size_t errlen)
{
    const char     *target;
    int             dfd, rc;
    DIR            *d;
    struct dirent  *de;

    if (strncmp(base, VSB_WH_META, strlen(VSB_WH_META)) == 0
        && strcmp(base, VSB_WH_OPAQUE) != 0)
    {
        return 0;               /* aufs bookkeeping: nothing to hide */
    }

    dfd = vsb_layer_openat2(l->rootfd, dir[0] ? dir : ".",
                            O_RDONLY | O_DIRECTORY);
    if (dfd == -1) {
        if (errno == ENOENT || errno == ENOTDIR) {
            return 0;           /* nothing below to hide */
        }
        snprintf(err, errlen, "whiteout in \"%.200s\": %s", dir,
                 strerror(errno));
        return -1;
    }

    if (strcmp(base, VSB_WH_OPAQUE) == 0) {
        d = fdopendir(dfd);
        if (d == NULL) {
            snprintf(err, errlen, "opaque \"%.200s\": %s", dir,
                     strerror(errno));
            close(dfd);
            return -1;
        }

        rc = 0;
        while (rc == 0 && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            {
                continue;
            }
            rc = vsb_layer_remove(dirfd(d), de->d_name, 0, err, errlen);
            rewinddir(d);
        }

        closedir(d);
        l->st->opaque_dirs++;
        return rc;
    }

    target = base + strlen(VSB_WH);

    if (target[0] == '\0' || strcmp(target, ".") == 0
        || strcmp(target, "..") == 0)
    {
        snprintf(err, errlen, "whiteout \"%.200s/%.200s\" names no file",
                 dir, base);
        close(dfd);
        return -1;
    }

    rc = vsb_layer_remove(dfd, target, 0, err, errlen);
    close(dfd);

    if (rc == 0) {
        l->st->whiteouts++;
    }

    return rc;
}


int
vsb_layer_prepare(vsb_layer_t *l, int blobfd, const vsb_oci_layer_t *ly,
    char *err, size_t errlen)
{
    vsb_tar_walk_t   *w;
    vsb_tar_entry_t  *e;
    char             *path, *dir, why[256], digest[VSB_IMAGE_DIGEST_LEN + 1];
    const char       *base;
    int               rc, ret = -1;

    w = vsb_tar_walk_open(blobfd, ly->compression, err, errlen);
    if (w == NULL) {
        return -1;
    }
    path = w->path;
    dir = w->dir;

    while ((rc = vsb_tar_walk_next(w, &e, "", err, errlen)) == 1) {
        if (++l->st->entries > l->lim->max_entries) {
            snprintf(err, errlen, "more than %llu entries (the entry bound; "
                     "--max-entries)",
                     (unsigned long long) l->lim->max_entries);
            goto out;
        }

        if (vsb_tar_clean_path(e->path, path, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "entry refused: %s", why);
            goto out;
        }

        if (e->type == VSB_TAR_HARDLINK
            && vsb_tar_clean_path(e->link, dir, why, sizeof(why)) != 0)
        {
            snprintf(err, errlen, "hard link \"%.200s\" refused: %s", path,
                     why);
            goto out;
        }

        if (e->size > l->lim->max_file_bytes) {
            snprintf(err, errlen, "entry \"%.200s\" declares %llu bytes, "
                     "more than the per-file bound of %llu (--max-file-bytes)",
                     path, (unsigned long long) e->size,
                     (unsigned long long) l->lim->max_file_bytes);
            goto out;
        }

        l->declared += e->size;
        if (l->declared > l->lim->max_bytes) {
            snprintf(err, errlen, "the layers declare more than %llu bytes "
                     "(the size bound; --max-bytes), at \"%.200s\"",
                     (unsigned long long) l->lim->max_bytes, path);
            goto out;
        }

        base = vsb_layer_split(path, dir);

        if (strncmp(base, VSB_WH, strlen(VSB_WH)) == 0) {
            if (vsb_layer_whiteout(l, dir, base, err, errlen) != 0) {
                goto out;
            }
        }
    }
    if (rc != 0) {
        goto out;
    }

    if (vsb_stream_finish(&w->s, VSB_TRAILER_MAX, digest, err, errlen) != 0)
    {
        goto out;
    }

    if (strcmp(digest, ly->diff_id) != 0) {
        snprintf(err, errlen, "layer %s: its content is %s, not the diff_id "
                 "%s its config names", ly->digest, digest, ly->diff_id);
        goto out;
    }

    ret = 0;

out:

    vsb_tar_walk_close(w);
    return ret;
}


/* ---- pass two: create ---- */

static int
vsb_layer_copy(vsb_layer_t *l, vsb_tar_t *t, int fd, const char *path,
    uint64_t size, char *err, size_t errlen)
{
    unsigned char  *buf;
    ssize_t         n;
    size_t          i;
    int             holes = 0, ret = -1;

    buf = malloc(VSB_COPY_BUF);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    for ( ;; ) {
        n = vsb_tar_data(t, buf, VSB_COPY_BUF);
        if (n < 0) {
            snprintf(err, errlen, "\"%.200s\": %s", path, t->err);
            goto done;
        }
        if (n == 0) {
            break;
        }

        /* runs of zeros become holes: a mostly empty file stays small */
        for (i = 0; i < (size_t) n && buf[i] == 0; i++) {
            /* scan */
        }

        if (i == (size_t) n) {
            if (lseek(fd, n, SEEK_CUR) == -1) {
                snprintf(err, errlen, "seek in \"%.200s\": %s", path,
                         strerror(errno));
                goto done;
            }
            holes = 1;
            continue;
        }

        if (vsb_write_full(fd, buf, (size_t) n) != 0) {
            snprintf(err, errlen, "write \"%.200s\": %s", path,
                     strerror(errno));
            goto done;
        }
    }

    if (holes && ftruncate(fd, (off_t) size) != 0) {
        snprintf(err, errlen, "truncate \"%.200s\": %s", path,
                 strerror(errno));
        goto done;
    }

    (void) l;
    ret = 0;

done:

    free(buf);
    return ret;
}


static int
vsb_layer_hardlink(vsb_layer_t *l, int pfd, const char *base,
    const char *path, const char *target, char *err, size_t errlen)
{
    char         sdir[VSB_IMAGE_PATH_MAX + 1];
    const char  *sbase;
    int          sfd, rc;
    struct stat  a, b;

    sbase = vsb_layer_split(target, sdir);
    if (sbase[0] == '\0') {
        snprintf(err, errlen, "hard link \"%.200s\" to the root", path);
        return -1;
    }

    sfd = vsb_layer_open_dir(l, sdir, 0, err, errlen);
    if (sfd == -1) {
        snprintf(err, errlen, "hard link \"%.200s\": target \"%.200s\" is "
                 "missing", path, target);
        return -1;
    }

    if (fstatat(sfd, sbase, &a, AT_SYMLINK_NOFOLLOW) != 0
        || S_ISDIR(a.st_mode))
    {
        snprintf(err, errlen, "hard link \"%.200s\": target \"%.200s\" %s",
                 path, target, errno == ENOENT ? "is missing"
                 : "is not a file");
        close(sfd);
        return -1;
    }

    if (fstatat(pfd, base, &b, AT_SYMLINK_NOFOLLOW) == 0
        && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
    {
        close(sfd);
        return 0;               /* already that file */
    }

    if (vsb_layer_remove(pfd, base, 0, err, errlen) != 0) {
        close(sfd);
        return -1;
    }

    rc = linkat(sfd, sbase, pfd, base, 0);
    if (rc != 0) {
        snprintf(err, errlen, "hard link \"%.200s\" to \"%.200s\": %s", path,
                 target, strerror(errno));
    } else {
        l->st->hardlinks++;
    }

    close(sfd);
    return rc;
}


static int
vsb_layer_entry(vsb_layer_t *l, vsb_tar_t *t, vsb_tar_entry_t *e,
    const char *path, char *dir, char *err, size_t errlen)
{
    const char       *base;
    int               pfd, fd = -1, rc = -1;
    uint32_t          uid, gid, mode;
    struct stat       st;
    struct timespec   ts[2];
    char              target[VSB_IMAGE_PATH_MAX + 1], why[256];

    base = vsb_layer_split(path, dir);

    if (strncmp(base, VSB_WH, strlen(VSB_WH)) == 0) {
        return 0;                /* applied in the first pass */
    }

    vsb_layer_ids(l, e, &uid, &gid, &mode);
    l->st->xattrs_dropped += e->xattrs;

    if (path[0] == '\0') {
        /* "./" itself: the root's owner and mode */
        if (e->type != VSB_TAR_DIR) {
            snprintf(err, errlen, "the root entry is not a directory");
            return -1;
        }
        if (fstat(l->rootfd, &st) != 0) {
            snprintf(err, errlen, "stat the root: %s", strerror(errno));
            return -1;
        }
        return vsb_layer_record(l, st.st_ino, uid, gid, mode, err, errlen);
    }

    pfd = vsb_layer_open_dir(l, dir, 1, err, errlen);
    if (pfd == -1) {
        return -1;
    }

    ts[0].tv_sec = ts[1].tv_sec = (time_t) e->mtime;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;

    switch (e->type) {

    case VSB_TAR_DIR:
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0
            || !S_ISDIR(st.st_mode))
        {
            if (vsb_layer_remove(pfd, base, 0, err, errlen) != 0) {
                goto done;
            }
            if (mkdirat(pfd, base, 0700) != 0) {
                snprintf(err, errlen, "mkdir \"%.200s\": %s", path,
                         strerror(errno));
                goto done;
            }
        }
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(err, errlen, "stat \"%.200s\": %s", path,
                     strerror(errno));
            goto done;
        }
        rc = vsb_layer_record(l, st.st_ino, uid, gid, mode, err, errlen);
        goto done;

    case VSB_TAR_REG:
        if (vsb_layer_remove(pfd, base, 0, err, errlen) != 0) {
            goto done;
        }
        fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                    | O_CLOEXEC, 0600);
        if (fd == -1) {
            snprintf(err, errlen, "create \"%.200s\": %s", path,
                     strerror(errno));
            goto done;
        }
        if (vsb_layer_copy(l, t, fd, path, e->size, err, errlen) != 0) {
            goto done;
        }
        if (futimens(fd, ts) != 0 || fstat(fd, &st) != 0) {
            snprintf(err, errlen, "\"%.200s\": %s", path, strerror(errno));
            goto done;
        }
        l->st->bytes += e->size;
        rc = vsb_layer_record(l, st.st_ino, uid, gid, mode, err, errlen);
        goto done;

    case VSB_TAR_SYMLINK:
        if (strlen(e->link) > VSB_IMAGE_PATH_MAX) {
            snprintf(err, errlen, "symlink \"%.200s\": target too long", path);
            goto done;
        }
        if (vsb_layer_remove(pfd, base, 0, err, errlen) != 0) {
            goto done;
        }
        if (symlinkat(e->link, pfd, base) != 0) {
            snprintf(err, errlen, "symlink \"%.200s\": %s", path,
                     strerror(errno));
            goto done;
        }
        if (utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) != 0
            || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        {
            snprintf(err, errlen, "symlink \"%.200s\": %s", path,
                     strerror(errno));
            goto done;
        }
        rc = vsb_layer_record(l, st.st_ino, uid, gid, 0777, err, errlen);
        goto done;

    case VSB_TAR_HARDLINK:
        if (vsb_tar_clean_path(e->link, target, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "hard link \"%.200s\": %s", path, why);
            goto done;
        }
        rc = vsb_layer_hardlink(l, pfd, base, path, target, err, errlen);
        goto done;

    case VSB_TAR_CHR:
    case VSB_TAR_BLK:
    case VSB_TAR_FIFO:
        /* never created; whatever a lower layer had there is gone too */
        l->st->specials_dropped++;
        rc = vsb_layer_remove(pfd, base, 0, err, errlen);
        goto done;
    }

    snprintf(err, errlen, "\"%.200s\": unknown entry type", path);

done:

    if (fd != -1) {
        close(fd);
    }
    close(pfd);
    return rc;
}


/* Same opening as vsb_layer_prepare(): the walk itself is one
 * (vsb_tar_walk, image_stream.c); the two passes decide different things
 * of each entry (check and count, then write). */
int
vsb_layer_extract(vsb_layer_t *l, int blobfd, const vsb_oci_layer_t *ly,
    char *err, size_t errlen)
{
    vsb_tar_walk_t   *w;
    vsb_tar_entry_t  *e;
    char             *path, *dir, why[256];
    int               rc, ret = -1;

    w = vsb_tar_walk_open(blobfd, ly->compression, err, errlen);
    if (w == NULL) {
        return -1;
    }
    path = w->path;
    dir = w->dir;

    while ((rc = vsb_tar_walk_next(w, &e, "", err, errlen)) == 1) {
        /* checked in the first pass; the blob cannot have changed */
        if (vsb_tar_clean_path(e->path, path, why, sizeof(why)) != 0
            || e->size > l->lim->max_file_bytes)
        {
            snprintf(err, errlen, "layer changed between passes at "
                     "\"%.200s\"", e->path);
            goto out;
        }

        if (vsb_layer_entry(l, &w->t, e, path, dir, err, errlen) != 0) {
            goto out;
        }
    }
    if (rc != 0) {
        goto out;
    }

    ret = vsb_layer_flush(l, err, errlen);

out:

    vsb_tar_walk_close(w);
    return ret;
}
