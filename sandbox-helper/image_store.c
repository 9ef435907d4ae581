/*
 * The image store (vsb_image_store.h): its directories, import with the
 * adoption of what the confined child made, and the seam the helper uses
 * to hold, list and remove images.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_image_layer.h"
#include "vsb_image_meta.h"
#include "vsb_image_store.h"
#include "vsb_image_unpack.h"

typedef struct {
    vsb_owner_rec_t  *recs;
    size_t            n;
    uid_t             uid;
    uint64_t          entries;
    uint64_t          bytes;
    uint64_t          max_entries;
} vsb_adopt_t;



static int
vsb_store_mkdir(const char *path, char *err, size_t errlen)
{
    struct stat  st;

    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "mkdir \"%s\": %s", path, strerror(errno));
        return -1;
    }

    if (lstat(path, &st) != 0) {
        snprintf(err, errlen, "stat \"%s\": %s", path, strerror(errno));
        return -1;
    }

    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
        snprintf(err, errlen, "\"%s\" must be a directory owned by root "
                 "with mode 0700 (it is %04o, uid %u)", path,
                 (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid);
        return -1;
    }

    return 0;
}


int
vsb_image_store_init(vsb_image_store_t *s, const char *dir, uid_t unpack_uid,
    char *err, size_t errlen)
{
    char  path[PATH_MAX];

    if (dir[0] != '/' || strlen(dir) >= sizeof(s->dir)) {
        snprintf(err, errlen, "store \"%.200s\": an absolute path shorter "
                 "than %zu bytes is needed", dir, sizeof(s->dir));
        return -1;
    }

    if (unpack_uid <= VSB_IMAGE_ID_MAX || unpack_uid == (uid_t) -1) {
        snprintf(err, errlen, "unpack uid %u: must be above %d, outside "
                 "every image's ids", (unsigned) unpack_uid,
                 VSB_IMAGE_ID_MAX);
        return -1;
    }

    snprintf(s->dir, sizeof(s->dir), "%s", dir);
    s->unpack_uid = unpack_uid;

    if (vsb_store_mkdir(s->dir, err, errlen) != 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/staging", s->dir);
    if (vsb_store_mkdir(path, err, errlen) != 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/sha256", s->dir);
    return vsb_store_mkdir(path, err, errlen);
}


static int
vsb_store_lock(const vsb_image_store_t *s, char *err, size_t errlen)
{
    char  path[PATH_MAX];
    int   fd;

    snprintf(path, sizeof(path), "%s/.lock", s->dir);

    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd == -1) {
        snprintf(err, errlen, "open \"%s\": %s", path, strerror(errno));
        return -1;
    }

    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "lock \"%s\": %s", path, strerror(errno));
            close(fd);
            return -1;
        }
    }

    return fd;
}


/* Removes everything left in staging/ by an earlier run that died. */
static int
vsb_store_sweep(const vsb_image_store_t *s, char *err, size_t errlen)
{
    char            path[PATH_MAX];
    DIR            *d;
    struct dirent  *de;
    int             fd, rc = 0;

    snprintf(path, sizeof(path), "%s/staging", s->dir);

    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1 || (d = fdopendir(fd)) == NULL) {
        snprintf(err, errlen, "open \"%s\": %s", path, strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        rc = vsb_layer_remove(dirfd(d), de->d_name, 0, err, errlen);
        rewinddir(d);
    }

    closedir(d);
    return rc;
}


/* ---- adoption: owners and modes applied, the tree checked ---- */

static int
vsb_adopt_cmp(const void *a, const void *b)
{
    const vsb_owner_rec_t  *x = a, *y = b;

    if (x->ino != y->ino) {
        return x->ino < y->ino ? -1 : 1;
    }

    return x->reserved < y->reserved ? -1 : (x->reserved > y->reserved);
}


static int
vsb_adopt_load(vsb_adopt_t *a, int sfd, char *err, size_t errlen)
{
    struct stat  st;
    uint64_t     max;
    size_t       i, o, len, off = 0;
    ssize_t      n;
    int          fd;

    fd = openat(sfd, "owners", O_RDONLY | O_NOFOLLOW | O_NONBLOCK
                | O_CLOEXEC);
    if (fd == -1 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "unpacker left no owners file");
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    max = (a->max_entries + 64) * sizeof(vsb_owner_rec_t);
    if ((uint64_t) st.st_size > max
        || st.st_size % (off_t) sizeof(vsb_owner_rec_t) != 0)
    {
        snprintf(err, errlen, "unpacker's owners file has a bad size");
        close(fd);
        return -1;
    }

    len = (size_t) st.st_size;
    a->recs = malloc(len ? len : 1);
    if (a->recs == NULL) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return -1;
    }

    while (off < len) {
        n = read(fd, (char *) a->recs + off, len - off);
        if (n <= 0) {
            snprintf(err, errlen, "read owners: %s",
                     n == 0 ? "short" : strerror(errno));
            close(fd);
            return -1;
        }
        off += (size_t) n;
    }

    close(fd);

    a->n = len / sizeof(vsb_owner_rec_t);

    /* the last record of an inode wins: sort by (inode, order) */
    for (i = 0; i < a->n; i++) {
        a->recs[i].reserved = (uint32_t) i;
    }

    qsort(a->recs, a->n, sizeof(vsb_owner_rec_t), vsb_adopt_cmp);

    for (i = 0, o = 0; i < a->n; i++) {
        if (i + 1 < a->n && a->recs[i + 1].ino == a->recs[i].ino) {
            continue;
        }
        a->recs[o++] = a->recs[i];
    }

    a->n = o;
    return 0;
}


static const vsb_owner_rec_t *
vsb_adopt_find(const vsb_adopt_t *a, uint64_t ino)
{
    size_t  lo = 0, hi = a->n, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (a->recs[mid].ino == ino) {
            return &a->recs[mid];
        }
        if (a->recs[mid].ino < ino) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return NULL;
}


static int
vsb_adopt_walk(vsb_adopt_t *a, int dfd, const char *name, unsigned depth,
    char *err, size_t errlen)
{
    const vsb_owner_rec_t  *r;
    struct stat             st;
    struct dirent          *de;
    DIR                    *d;
    uint32_t                uid = 0, gid = 0, mode;
    int                     fd;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(err, errlen, "adopt: stat \"%.200s\": %s", name,
                 strerror(errno));
        return -1;
    }

    if (++a->entries > a->max_entries + 64) {
        snprintf(err, errlen, "adopt: more entries than the bound");
        return -1;
    }

    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    {
        snprintf(err, errlen, "adopt: \"%.200s\" is a special file (the "
                 "unpacker never makes one)", name);
        return -1;
    }

    if (st.st_uid != a->uid) {
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            return 0;            /* another name of an adopted file */
        }
        snprintf(err, errlen, "adopt: \"%.200s\" is owned by uid %u, not "
                 "by the unpacker", name, (unsigned) st.st_uid);
        return -1;
    }

    r = vsb_adopt_find(a, st.st_ino);
    mode = S_ISDIR(st.st_mode) ? 0755 : 0644;
    if (r != NULL) {
        uid = r->uid;
        gid = r->gid;
        mode = r->mode;
    }

    if (uid > VSB_IMAGE_ID_MAX || gid > VSB_IMAGE_ID_MAX) {
        uid = gid = VSB_IMAGE_NOBODY;
    }

    if (S_ISLNK(st.st_mode)) {
        if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(err, errlen, "adopt: chown \"%.200s\": %s", name,
                     strerror(errno));
            return -1;
        }
        return 0;
    }

    if (S_ISREG(st.st_mode)) {
        a->bytes += (uint64_t) st.st_size;

        if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0
            || fchmodat(dfd, name, mode & 0777, 0) != 0)
        {
            snprintf(err, errlen, "adopt: chown \"%.200s\": %s", name,
                     strerror(errno));
            return -1;
        }
        return 0;
    }

    if (depth > VSB_IMAGE_DEPTH_MAX + 2) {
        snprintf(err, errlen, "adopt: tree deeper than %d",
                 VSB_IMAGE_DEPTH_MAX);
        return -1;
    }

    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1 || (d = fdopendir(fd)) == NULL) {
        snprintf(err, errlen, "adopt: open \"%.200s\": %s", name,
                 strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        if (vsb_adopt_walk(a, dirfd(d), de->d_name, depth + 1, err, errlen)
            != 0)
        {
            closedir(d);
            return -1;
        }
    }

    if (fchown(dirfd(d), uid, gid) != 0
        || fchmod(dirfd(d), mode & 01777) != 0)
    {
        snprintf(err, errlen, "adopt: chown \"%.200s\": %s", name,
                 strerror(errno));
        closedir(d);
        return -1;
    }

    closedir(d);
    return 0;
}


/* The mount points once more, as root, now that the child is gone. */
static int
vsb_adopt_check(int rootfd, char *err, size_t errlen)
{
    struct stat  st;
    size_t       i;

    for (i = 0; vsb_image_no_symlink[i] != NULL; i++) {
        if (fstatat(rootfd, vsb_image_no_symlink[i], &st,
                    AT_SYMLINK_NOFOLLOW) != 0)
        {
            snprintf(err, errlen, "adopt: /%s missing: %s",
                     vsb_image_no_symlink[i], strerror(errno));
            return -1;
        }

        if (S_ISLNK(st.st_mode)) {
            snprintf(err, errlen, "image refused: /%s is a symlink",
                     vsb_image_no_symlink[i]);
            return -1;
        }
    }

    return 0;
}


static json_t *
vsb_store_load_json(int dfd, const char *name, char *err, size_t errlen)
{
    struct stat    st;
    json_t        *j;
    json_error_t   je;
    char          *buf;
    ssize_t        n;
    size_t         off = 0;
    int            fd;

    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd == -1 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
        || st.st_size > VSB_IMAGE_META_MAX)
    {
        snprintf(err, errlen, "%s: missing, not a file, or over %d bytes",
                 name, VSB_IMAGE_META_MAX);
        if (fd != -1) {
            close(fd);
        }
        return NULL;
    }

    buf = malloc((size_t) st.st_size + 1);
    if (buf == NULL) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    n = vsb_read_full(fd, buf, (size_t) st.st_size);
    close(fd);
    if (n == -1) {
        snprintf(err, errlen, "%s: read: %s", name, strerror(errno));
        free(buf);
        return NULL;
    }
    off = (size_t) n;

    j = json_loadb(buf, off, JSON_REJECT_DUPLICATES, &je);
    free(buf);

    if (j == NULL) {
        snprintf(err, errlen, "%s: %s", name, je.text);
        return NULL;
    }

    return j;
}


static int
vsb_store_write_json(int dfd, const char *name, json_t *j, char *err,
    size_t errlen)
{
    char  *s;
    int    fd;
    size_t len;

    s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (s == NULL) {
        snprintf(err, errlen, "%s: cannot serialise", name);
        return -1;
    }

    len = strlen(s);
    fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                | O_CLOEXEC, 0644);
    if (fd == -1 || write(fd, s, len) != (ssize_t) len
        || write(fd, "\n", 1) != 1)
    {
        snprintf(err, errlen, "write %s: %s", name, strerror(errno));
        free(s);
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    free(s);
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(err, errlen, "close %s: %s", name, strerror(errno));
        return -1;
    }

    return 0;
}


static int
vsb_store_adopt(vsb_image_store_t *s, const vsb_image_import_t *req,
    const char *stage, json_t **meta_out, char *err, size_t errlen)
{
    vsb_adopt_t  a;
    json_t      *meta = NULL;
    char         why[512];
    int          sfd, rootfd = -1, rc = -1;

    memset(&a, 0, sizeof(a));
    a.uid = s->unpack_uid;
    a.max_entries = req->lim.max_entries;

    sfd = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd == -1) {
        snprintf(err, errlen, "open \"%s\": %s", stage, strerror(errno));
        return -1;
    }

    /* first of all: nobody but root may enter any more */
    if (fchown(sfd, 0, 0) != 0 || fchmod(sfd, 0700) != 0) {
        snprintf(err, errlen, "chown \"%s\": %s", stage, strerror(errno));
        goto done;
    }

    if (vsb_adopt_load(&a, sfd, err, errlen) != 0
        || vsb_adopt_walk(&a, sfd, "rootfs", 0, err, errlen) != 0)
    {
        goto done;
    }

    rootfd = openat(sfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                    | O_CLOEXEC);
    if (rootfd == -1 || vsb_adopt_check(rootfd, err, errlen) != 0) {
        if (rootfd == -1) {
            snprintf(err, errlen, "open rootfs: %s", strerror(errno));
        }
        goto done;
    }

    meta = vsb_store_load_json(sfd, "meta.json", why, sizeof(why));
    if (meta == NULL || vsb_meta_check(meta, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "unpacker report refused: %s", why);
        goto done;
    }

    if (strcmp(json_string_value(json_object_get(meta, "digest")),
               req->digest) != 0)
    {
        snprintf(err, errlen, "unpacker report names another digest");
        goto done;
    }

    json_object_set_new(meta, "imported_at", json_integer(time(NULL)));
    json_object_set_new(meta, "unpacked_bytes", json_integer(
                        (json_int_t) a.bytes));
    json_object_set_new(json_object_get(meta, "stats"), "tree_entries",
                        json_integer((json_int_t) a.entries));
    if (req->description != NULL) {
        json_object_set_new(meta, "description",
                            json_stringn(req->description,
                                         strnlen(req->description,
                                                 VSB_IMAGE_DESC_MAX)));
    }

    if (unlinkat(sfd, "meta.json", 0) != 0
        || unlinkat(sfd, "owners", 0) != 0
        || vsb_layer_remove(sfd, "layout", 0, err, errlen) != 0
        || vsb_store_write_json(sfd, "image.json", meta, err, errlen) != 0)
    {
        if (err[0] == '\0') {
            snprintf(err, errlen, "clean the staging directory: %s",
                     strerror(errno));
        }
        goto done;
    }

    if (fchmod(sfd, 0755) != 0 || syncfs(sfd) != 0) {
        snprintf(err, errlen, "sync the store: %s", strerror(errno));
        goto done;
    }

    *meta_out = meta;
    meta = NULL;
    rc = 0;

done:

    json_decref(meta);
    free(a.recs);
    if (rootfd != -1) {
        close(rootfd);
    }
    close(sfd);
    return rc;
}


int
vsb_image_import(vsb_image_store_t *s, const vsb_image_import_t *req,
    json_t **meta, char *err, size_t errlen)
{
    vsb_unpack_args_t  ua;
    struct stat        st;
    char               hex[VSB_IMAGE_HEX_LEN + 1], stage[PATH_MAX];
    char               final[PATH_MAX], name[128];
    int                lock, src = -1, sdir = -1, rc = -1;

    *meta = NULL;
    err[0] = '\0';

    if (vsb_image_digest_parse(req->digest, hex, err, errlen) != 0) {
        return -1;
    }

    lock = vsb_store_lock(s, err, errlen);
    if (lock == -1) {
        return -1;
    }

    snprintf(final, sizeof(final), "%s/sha256/%s", s->dir, hex);
    if (lstat(final, &st) == 0) {
        *meta = NULL;
        rc = 1;
        goto done;
    }

    if (vsb_store_sweep(s, err, errlen) != 0) {
        goto done;
    }

    src = open(req->source, O_RDONLY | O_CLOEXEC);
    if (src == -1 || fstat(src, &st) != 0) {
        snprintf(err, errlen, "source \"%.200s\": %s", req->source,
                 strerror(errno));
        goto done;
    }

    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "source \"%.200s\": neither an OCI layout "
                 "directory nor a tarball", req->source);
        goto done;
    }

    snprintf(name, sizeof(name), "%s.%d", hex, (int) getpid());
    snprintf(stage, sizeof(stage), "%s/staging/%s", s->dir, name);

    if (mkdir(stage, 0700) != 0) {
        snprintf(err, errlen, "mkdir \"%s\": %s", stage, strerror(errno));
        goto done;
    }

    sdir = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sdir == -1 || fchown(sdir, s->unpack_uid, s->unpack_uid) != 0) {
        snprintf(err, errlen, "chown \"%s\": %s", stage, strerror(errno));
        goto failed;
    }

    ua.staging = stage;
    ua.uid = s->unpack_uid;
    ua.tar_fd = S_ISREG(st.st_mode) ? src : -1;
    ua.layout_fd = S_ISDIR(st.st_mode) ? src : -1;
    ua.digest = req->digest;
    ua.lim = &req->lim;

    if (vsb_image_unpack_confined(&ua, err, errlen) != 0
        || vsb_store_adopt(s, req, stage, meta, err, errlen) != 0)
    {
        goto failed;
    }

    if (rename(stage, final) != 0) {
        snprintf(err, errlen, "rename into \"%s\": %s", final,
                 strerror(errno));
        json_decref(*meta);
        *meta = NULL;
        goto failed;
    }

    rc = 0;
    goto done;

failed:

    {
        char  why[256];
        int   st_fd;

        snprintf(final, sizeof(final), "%s/staging", s->dir);
        st_fd = open(final, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (st_fd == -1
            || vsb_layer_remove(st_fd, name, 0, why, sizeof(why)) != 0)
        {
            snprintf(err + strlen(err), errlen - strlen(err),
                     "; and the staging directory %s could not be removed",
                     stage);
        }
        if (st_fd != -1) {
            close(st_fd);
        }
    }

done:

    if (sdir != -1) {
        close(sdir);
    }
    if (src != -1) {
        close(src);
    }
    close(lock);
    return rc;
}


/* ---- the seam: hold, list, remove ---- */

int
vsb_image_acquire(const vsb_image_store_t *s, const char *digest,
    vsb_image_ref_t *ref, char *err, size_t errlen)
{
    char         hex[VSB_IMAGE_HEX_LEN + 1], path[2048 + 128];
    struct stat  a, b;

    ref->fd = -1;

    if (vsb_image_digest_parse(digest, hex, err, errlen) != 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/sha256/%s", s->dir, hex);

    ref->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ref->fd == -1) {
        snprintf(err, errlen, "image %s: %s", digest,
                 errno == ENOENT ? "not in the store" : strerror(errno));
        return -1;
    }

    if (flock(ref->fd, LOCK_SH | LOCK_NB) != 0) {
        snprintf(err, errlen, "image %s: %s", digest,
                 errno == EWOULDBLOCK ? "being removed" : strerror(errno));
        goto failed;
    }

    /* a removal that won the race renamed it away before our lock */
    if (fstat(ref->fd, &a) != 0 || stat(path, &b) != 0
        || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
    {
        snprintf(err, errlen, "image %s: removed", digest);
        goto failed;
    }

    snprintf(ref->digest, sizeof(ref->digest), "%s", digest);
    snprintf(ref->rootfs, sizeof(ref->rootfs), "%s/rootfs", path);
    return 0;

failed:

    close(ref->fd);
    ref->fd = -1;
    return -1;
}


void
vsb_image_release(vsb_image_ref_t *ref)
{
    if (ref->fd != -1) {
        close(ref->fd);
        ref->fd = -1;
    }
}


int
vsb_image_meta(const vsb_image_store_t *s, const char *digest, json_t **meta,
    char *err, size_t errlen)
{
    char  hex[VSB_IMAGE_HEX_LEN + 1], path[PATH_MAX], why[256];
    int   fd;

    if (vsb_image_digest_parse(digest, hex, err, errlen) != 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/sha256/%s", s->dir, hex);

    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "image %s: %s", digest,
                 errno == ENOENT ? "not in the store" : strerror(errno));
        return -1;
    }

    *meta = vsb_store_load_json(fd, "image.json", why, sizeof(why));
    close(fd);

    if (*meta == NULL || !json_is_object(*meta)) {
        snprintf(err, errlen, "image %s: %s", digest, why);
        json_decref(*meta);
        *meta = NULL;
        return -1;
    }

    return 0;
}


int
vsb_image_list(const vsb_image_store_t *s, json_t **list, char *err,
    size_t errlen)
{
    char            path[PATH_MAX], digest[VSB_IMAGE_DIGEST_LEN + 8];
    char            why[256];
    DIR            *d;
    struct dirent  *de;
    json_t         *meta, *one;
    int             fd;

    snprintf(path, sizeof(path), "%s/sha256", s->dir);

    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1 || (d = fdopendir(fd)) == NULL) {
        snprintf(err, errlen, "open \"%s\": %s", path, strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    *list = json_array();

    while ((de = readdir(d)) != NULL) {
        snprintf(digest, sizeof(digest), "sha256:%.64s", de->d_name);
        if (strlen(de->d_name) != VSB_IMAGE_HEX_LEN
            || vsb_image_digest_parse(digest, NULL, why, sizeof(why)) != 0
            || vsb_image_meta(s, digest, &meta, why, sizeof(why)) != 0)
        {
            continue;
        }

        one = json_pack("{ss}", "digest", digest);
        if (one != NULL) {
            static const char  *keys[] = {
                "description", "os_release", "tools", "imported_at",
                "unpacked_bytes", "manifest_digest",
            };
            size_t              i;

            for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                json_t  *v = json_object_get(meta, keys[i]);

                if (v != NULL) {
                    json_object_set(one, keys[i], v);
                }
            }
            json_array_append_new(*list, one);
        }

        json_decref(meta);
    }

    closedir(d);
    return 0;
}


int
vsb_image_remove(vsb_image_store_t *s, const char *digest, char *err,
    size_t errlen)
{
    char         hex[VSB_IMAGE_HEX_LEN + 1], path[PATH_MAX], gone[PATH_MAX];
    char         name[128];
    struct stat  st;
    int          lock, fd = -1, sfd = -1, rc = -1;

    err[0] = '\0';

    if (vsb_image_digest_parse(digest, hex, err, errlen) != 0) {
        return -1;
    }

    lock = vsb_store_lock(s, err, errlen);
    if (lock == -1) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/sha256/%s", s->dir, hex);

    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "image %s: %s", digest,
                 errno == ENOENT ? "not in the store" : strerror(errno));
        goto done;
    }

    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errlen, "image %s is in use by a sandbox: destroy the "
                 "sandboxes of its profiles first", digest);
        goto done;
    }

    /* out of sight at once, then deleted */
    snprintf(name, sizeof(name), "removing.%s.%d", hex, (int) getpid());
    snprintf(gone, sizeof(gone), "%s/staging/%s", s->dir, name);

    if (rename(path, gone) != 0) {
        snprintf(err, errlen, "rename \"%s\": %s", path, strerror(errno));
        goto done;
    }

    snprintf(gone, sizeof(gone), "%s/staging", s->dir);
    sfd = open(gone, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd == -1 || vsb_layer_remove(sfd, name, 0, err, errlen) != 0) {
        if (sfd == -1) {
            snprintf(err, errlen, "open \"%s\": %s", gone, strerror(errno));
        }
        goto done;
    }

    if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT
        || lstat(path, &st) == 0)
    {
        snprintf(err, errlen, "image %s: still present after removal",
                 digest);
        goto done;
    }

    rc = 0;

done:

    if (sfd != -1) {
        close(sfd);
    }
    if (fd != -1) {
        close(fd);
    }
    close(lock);
    return rc;
}
