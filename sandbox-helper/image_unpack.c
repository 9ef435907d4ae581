/*
 * The unpacking child's work, after its confinement (vsb_image_unpack.h):
 * every blob is checked against its digest before a byte of it is
 * parsed, the manifest against the digest the operator gave, layers are
 * applied in order, and the tree gets the mount points a read-only root
 * needs.  Images whose /dev, /proc, /sys, /etc, /tmp or the files the
 * sandbox binds over (/etc/resolv.conf, hosts, hostname) are symlinks
 * are refused: a bind mount there would land wherever the image points.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "vsb_fdio.h"
#include "vsb_fdpass.h"
#include "vsb_image_layer.h"
#include "vsb_image_meta.h"
#include "vsb_image_oci.h"
#include "vsb_image_tar.h"
#include "vsb_image_unpack.h"

#define VSB_DB_MAX   (64 << 20)     /* dpkg status, apk installed */
#define VSB_OSR_MAX  (64 << 10)     /* os-release */

typedef struct {
    int                        broker;    /* -1: blobs under /layout */
    int                        layoutfd;
    const vsb_image_limits_t  *lim;
} vsb_unpack_t;

typedef struct {
    const char  *path;
    mode_t       mode;
    int          dir;
} vsb_mount_point_t;

/* what must not be a symlink: the sandbox mounts on or binds over them */
const char *const  vsb_image_no_symlink[] = {
    "dev", "proc", "sys", "etc", "tmp", "run", "workspace",
    "etc/resolv.conf", "etc/hosts", "etc/hostname",
    NULL
};

static const vsb_mount_point_t  vsb_unpack_mount_points[] = {
    { "dev", 0755, 1 },
    { "proc", 0555, 1 },
    { "sys", 0555, 1 },
    { "etc", 0755, 1 },
    { "tmp", 01777, 1 },
    { "run", 0755, 1 },
    { "var", 0755, 1 },
    { "var/tmp", 01777, 1 },
    { "home", 0755, 1 },
    { "workspace", 0755, 1 },
    { "etc/resolv.conf", 0644, 0 },
    { "etc/hosts", 0644, 0 },
    { "etc/hostname", 0644, 0 },
};


static int
vsb_unpack_beneath(int dirfd, const char *path, uint64_t flags)
{
    return vsb_openat2(dirfd, path, flags, 0600,
                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
                       | RESOLVE_NO_MAGICLINKS);
}


/* A blob's fd: from the privileged side's broker, or the local layout. */
static int
vsb_unpack_blob(vsb_unpack_t *u, const char *digest, char *err,
    size_t errlen)
{
    char     path[96];
    int      code = 0, fd = -1;
    ssize_t  n;

    if (u->broker == -1) {
        snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
        fd = vsb_unpack_beneath(u->layoutfd, path, O_RDONLY | O_NOFOLLOW);
        if (fd == -1) {
            snprintf(err, errlen, "blob %s: %s in the layout", digest,
                     errno == ENOENT ? "missing" : strerror(errno));
        }
        return fd;
    }

    if (send(u->broker, digest, strlen(digest), 0)
        != (ssize_t) strlen(digest))
    {
        snprintf(err, errlen, "ask for blob %s: %s", digest, strerror(errno));
        return -1;
    }

    n = vsb_fd_recv(u->broker, &code, sizeof(code), 0, &fd);
    if (n != (ssize_t) sizeof(code)) {
        if (fd != -1) {
            close(fd);
        }
        snprintf(err, errlen, "blob %s: no answer from the store", digest);
        return -1;
    }

    if (code == 0 && fd != -1) {
        return fd;
    }
    if (fd != -1) {
        close(fd);
    }

    snprintf(err, errlen, "blob %s: %s in the layout directory (is it an "
             "OCI image layout?)", digest,
             code == ENOENT ? "missing" : strerror(code ? code : EPROTO));
    return -1;
}


/* Hashes a whole blob; its size and digest must be what was named. */
static int
vsb_unpack_verify(int fd, const char *want, uint64_t size, char *err,
    size_t errlen)
{
    unsigned char   buf[65536], md[EVP_MAX_MD_SIZE];
    unsigned int    mdlen = 0;
    char            got[VSB_IMAGE_DIGEST_LEN + 1];
    EVP_MD_CTX     *ctx;
    struct stat     st;
    uint64_t        total = 0;
    ssize_t         n;
    int             rc = -1;

    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "blob %s is not a regular file", want);
        return -1;
    }

    if ((uint64_t) st.st_size != size) {
        snprintf(err, errlen, "blob %s has %lld bytes, its descriptor says "
                 "%llu", want, (long long) st.st_size,
                 (unsigned long long) size);
        return -1;
    }

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "sha256: cannot initialise");
        EVP_MD_CTX_free(ctx);
        return -1;
    }

    for ( ;; ) {
        n = pread(fd, buf, sizeof(buf), (off_t) total);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n == -1) {
            snprintf(err, errlen, "read blob %s: %s", want, strerror(errno));
            goto done;
        }
        if (n == 0) {
            break;
        }
        total += (uint64_t) n;
        if (total > size || EVP_DigestUpdate(ctx, buf, (size_t) n) != 1) {
            snprintf(err, errlen, "blob %s grew while read", want);
            goto done;
        }
    }

    if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1
        || vsb_image_digest_md(md, mdlen, got) != 0)
    {
        snprintf(err, errlen, "sha256: final failed");
        goto done;
    }

    if (strcmp(got, want) != 0) {
        snprintf(err, errlen, "blob %s does not match its digest: its "
                 "content is %s", want, got);
        goto done;
    }

    rc = 0;

done:

    EVP_MD_CTX_free(ctx);
    return rc;
}


/* A JSON blob into memory, verified; size 0: not known (the top one). */
static char *
vsb_unpack_json_blob(vsb_unpack_t *u, const char *digest, uint64_t size,
    size_t *len, char *err, size_t errlen)
{
    char         *buf, got[VSB_IMAGE_DIGEST_LEN + 1];
    struct stat   st;
    ssize_t       n;
    size_t        off = 0;
    int           fd;

    fd = vsb_unpack_blob(u, digest, err, errlen);
    if (fd == -1) {
        return NULL;
    }

    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0
        || (uint64_t) st.st_size > VSB_IMAGE_JSON_MAX
        || (size != 0 && (uint64_t) st.st_size != size))
    {
        snprintf(err, errlen, "blob %s: not a regular file of %s bytes",
                 digest, size ? "the declared" : "at most 4 MiB of");
        close(fd);
        return NULL;
    }

    buf = malloc((size_t) st.st_size + 1);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return NULL;
    }

    n = vsb_read_full(fd, buf, (size_t) st.st_size);
    if (n != (ssize_t) st.st_size) {
        snprintf(err, errlen, "read blob %s: %s", digest,
                 n == -1 ? strerror(errno) : "short");
        goto failed;
    }
    off = (size_t) n;

    if (vsb_image_sha256_buf(buf, off, got) != 0) {
        snprintf(err, errlen, "sha256 failed");
        goto failed;
    }

    if (strcmp(got, digest) != 0) {
        snprintf(err, errlen, "blob %s does not match its digest: its "
                 "content is %s", digest, got);
        goto failed;
    }

    close(fd);
    buf[off] = '\0';
    *len = off;
    return buf;

failed:

    close(fd);
    free(buf);
    return NULL;
}


/* ---- a tarball source: its layout, extracted into /layout ---- */

static int
vsb_unpack_layout_name(const char *p)
{
    size_t  i;

    if (strcmp(p, "oci-layout") == 0 || strcmp(p, "index.json") == 0) {
        return 1;
    }

    if (strncmp(p, "blobs/sha256/", 13) != 0
        || strlen(p) != 13 + VSB_IMAGE_HEX_LEN)
    {
        return 0;
    }

    for (i = 13; p[i]; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) {
            return 0;
        }
    }

    return 1;
}


static int
vsb_unpack_tarball(vsb_unpack_t *u, int tar_fd, char *err, size_t errlen)
{
    vsb_tar_walk_t   *tw = NULL;
    vsb_tar_entry_t  *e;
    unsigned char     magic[2], *buf;
    char              path[VSB_IMAGE_PATH_MAX + 1], why[256];
    uint64_t          entries = 0, bytes = 0;
    ssize_t           n;
    int               fd, rc, ret = -1;

    if (mkdir("layout", 0700) != 0 || mkdir("layout/blobs", 0700) != 0
        || mkdir("layout/blobs/sha256", 0700) != 0)
    {
        snprintf(err, errlen, "mkdir layout: %s", strerror(errno));
        return -1;
    }

    u->layoutfd = open("layout", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (u->layoutfd == -1) {
        snprintf(err, errlen, "open layout: %s", strerror(errno));
        return -1;
    }

    n = pread(tar_fd, magic, 2, 0);
    if (n != 2) {
        snprintf(err, errlen, "the source tarball is empty or unreadable");
        return -1;
    }

    buf = malloc(65536);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }

    tw = vsb_tar_walk_open(tar_fd, magic[0] == 0x1f && magic[1] == 0x8b
                           ? VSB_OCI_GZIP : VSB_OCI_PLAIN, err, errlen);
    if (tw == NULL) {
        goto out;
    }

    while ((rc = vsb_tar_walk_next(tw, &e, "source tarball: ", err, errlen))
           == 1)
    {
        if (++entries > u->lim->max_entries) {
            snprintf(err, errlen, "source tarball: more than %llu entries",
                     (unsigned long long) u->lim->max_entries);
            goto out;
        }

        if (vsb_tar_clean_path(e->path, path, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "source tarball: %s", why);
            goto out;
        }

        if (e->type != VSB_TAR_REG || !vsb_unpack_layout_name(path)) {
            continue;            /* not part of an OCI layout */
        }

        bytes += e->size;
        if (bytes > u->lim->max_bytes) {
            snprintf(err, errlen, "source tarball: more than %llu bytes of "
                     "blobs (--max-bytes)",
                     (unsigned long long) u->lim->max_bytes);
            goto out;
        }

        fd = vsb_unpack_beneath(u->layoutfd, path, O_WRONLY | O_CREAT
                                | O_EXCL | O_NOFOLLOW);
        if (fd == -1) {
            snprintf(err, errlen, "source tarball: \"%.200s\": %s", path,
                     errno == EEXIST ? "appears twice" : strerror(errno));
            goto out;
        }

        for ( ;; ) {
            n = vsb_tar_data(&tw->t, buf, 65536);
            if (n < 0) {
                snprintf(err, errlen, "source tarball: %s", tw->t.err);
                close(fd);
                goto out;
            }
            if (n == 0) {
                break;
            }
            if (vsb_write_full(fd, buf, (size_t) n) != 0) {
                snprintf(err, errlen, "write \"%.200s\": %s", path,
                         strerror(errno));
                close(fd);
                goto out;
            }
        }

        if (close(fd) != 0) {
            snprintf(err, errlen, "close \"%.200s\": %s", path,
                     strerror(errno));
            goto out;
        }
    }
    if (rc != 0) {
        goto out;
    }

    ret = 0;

out:

    vsb_tar_walk_close(tw);
    free(buf);
    return ret;
}


/* ---- the tree's final shape ---- */

static int
vsb_unpack_at(vsb_layer_t *l, const char *path, int *pfd, const char **base,
    char *dir, char *err, size_t errlen)
{
    const char  *slash = strrchr(path, '/');

    if (slash == NULL) {
        dir[0] = '\0';
        *base = path;
    } else {
        memcpy(dir, path, (size_t) (slash - path));
        dir[slash - path] = '\0';
        *base = slash + 1;
    }

    *pfd = vsb_layer_open_dir(l, dir, 0, err, errlen);
    return *pfd == -1 ? -1 : 0;
}


static int
vsb_unpack_finish(vsb_layer_t *l, char *err, size_t errlen)
{
    const vsb_mount_point_t  *mp;
    const char               *base;
    char                      dir[64], target[256];
    struct stat               st;
    ssize_t                   n;
    size_t                    i;
    int                       pfd, fd;

    for (i = 0; vsb_image_no_symlink[i] != NULL; i++) {
        if (vsb_unpack_at(l, vsb_image_no_symlink[i], &pfd, &base, dir,
                          err, errlen) != 0)
        {
            continue;            /* its directory is missing: made below */
        }

        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISLNK(st.st_mode))
        {
            n = readlinkat(pfd, base, target, sizeof(target) - 1);
            target[n > 0 ? n : 0] = '\0';
            snprintf(err, errlen, "image refused: /%s is a symlink (to "
                     "\"%.100s\"); the sandbox mounts or binds there",
                     vsb_image_no_symlink[i], target);
            close(pfd);
            return -1;
        }

        close(pfd);
    }

    for (i = 0;
         i < sizeof(vsb_unpack_mount_points)
             / sizeof(vsb_unpack_mount_points[0]);
         i++)
    {
        mp = &vsb_unpack_mount_points[i];

        if (vsb_unpack_at(l, mp->path, &pfd, &base, dir, err, errlen) != 0) {
            return -1;
        }

        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if ((mp->dir && !S_ISDIR(st.st_mode))
                || (!mp->dir && !S_ISREG(st.st_mode)))
            {
                snprintf(err, errlen, "image refused: /%s is not a %s",
                         mp->path, mp->dir ? "directory" : "regular file");
                close(pfd);
                return -1;
            }
            close(pfd);
            continue;
        }

        if (mp->dir) {
            if (mkdirat(pfd, base, 0700) != 0) {
                snprintf(err, errlen, "mkdir /%s: %s", mp->path,
                         strerror(errno));
                close(pfd);
                return -1;
            }
        } else {
            fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                        | O_CLOEXEC, 0600);
            if (fd == -1) {
                snprintf(err, errlen, "create /%s: %s", mp->path,
                         strerror(errno));
                close(pfd);
                return -1;
            }
            close(fd);
        }

        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0
            || vsb_layer_record(l, st.st_ino, 0, 0, mp->mode, err, errlen)
               != 0)
        {
            snprintf(err, errlen, "stat /%s: %s", mp->path, strerror(errno));
            close(pfd);
            return -1;
        }

        l->st->mount_points++;
        close(pfd);
    }

    return vsb_layer_flush(l, err, errlen);
}


/* A bounded file of the tree, symlinks resolved inside it. */
static char *
vsb_unpack_read_tree(int rootfd, const char *path, size_t max, size_t *len)
{
    struct stat      st;
    char            *buf;
    ssize_t          n;
    int              fd;

    fd = vsb_openat2(rootfd, path, O_RDONLY | O_NONBLOCK, 0,
                     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS
                     | RESOLVE_NO_XDEV);
    if (fd == -1) {
        return NULL;
    }

    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }

    if ((uint64_t) st.st_size < max) {
        max = (size_t) st.st_size;
    }

    buf = malloc(max + 1);
    if (buf == NULL) {
        close(fd);
        return NULL;
    }

    n = vsb_read_full(fd, buf, max);
    close(fd);
    if (n == -1) {
        free(buf);
        return NULL;
    }

    buf[n] = '\0';
    *len = (size_t) n;
    return buf;
}


static json_t *
vsb_unpack_stats(const vsb_image_stats_t *st)
{
    return json_pack("{sIsIsIsIsIsIsIsIsIsI}",
                     "entries", (json_int_t) st->entries,
                     "bytes", (json_int_t) st->bytes,
                     "setid_dropped", (json_int_t) st->setid_dropped,
                     "specials_dropped", (json_int_t) st->specials_dropped,
                     "ids_squashed", (json_int_t) st->ids_squashed,
                     "xattrs_dropped", (json_int_t) st->xattrs_dropped,
                     "whiteouts", (json_int_t) st->whiteouts,
                     "opaque_dirs", (json_int_t) st->opaque_dirs,
                     "hardlinks", (json_int_t) st->hardlinks,
                     "mount_points", (json_int_t) st->mount_points);
}


static int
vsb_unpack_meta(vsb_layer_t *l, const char *digest, const char *manifest,
    const vsb_oci_manifest_t *m, json_t *summary, char *err, size_t errlen)
{
    json_t  *meta, *layers, *osr, *tools;
    char    *buf;
    size_t   len, i;
    int      fd, rc;

    layers = json_array();
    osr = json_object();
    tools = json_object();

    for (i = 0; i < m->n_layers && layers != NULL; i++) {
        json_array_append_new(layers, json_pack("{sssI}",
                              "digest", m->layers[i].digest,
                              "size", (json_int_t) m->layers[i].size));
    }

    buf = vsb_unpack_read_tree(l->rootfd, "etc/os-release", VSB_OSR_MAX,
                               &len);
    if (buf != NULL && osr != NULL) {
        vsb_meta_os_release(buf, len, osr);
    }
    free(buf);

    buf = vsb_unpack_read_tree(l->rootfd, "var/lib/dpkg/status", VSB_DB_MAX,
                               &len);
    if (buf != NULL && tools != NULL) {
        vsb_meta_dpkg_status(buf, len, tools);
    }
    free(buf);

    buf = vsb_unpack_read_tree(l->rootfd, "lib/apk/db/installed",
                               VSB_DB_MAX, &len);
    if (buf != NULL && tools != NULL) {
        vsb_meta_apk_installed(buf, len, tools);
    }
    free(buf);

    meta = json_pack("{sssssssosososo}",
                     "digest", digest,
                     "manifest_digest", manifest,
                     "config_digest", m->config_digest,
                     "layers", layers,
                     "config", summary,
                     "os_release", osr,
                     "tools", tools);
    if (meta == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    json_object_set_new(meta, "stats", vsb_unpack_stats(l->st));

    fd = open("meta.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd == -1) {
        snprintf(err, errlen, "create meta.json: %s", strerror(errno));
        json_decref(meta);
        return -1;
    }

    rc = json_dumpfd(meta, fd, JSON_COMPACT);
    json_decref(meta);

    if (rc != 0 || close(fd) != 0) {
        snprintf(err, errlen, "write meta.json failed");
        return -1;
    }

    return 0;
}


int
vsb_image_unpack_run(int broker_fd, int tar_fd, const char *digest,
    const vsb_image_limits_t *lim, char *err, size_t errlen)
{
    vsb_unpack_t         u;
    vsb_layer_t         *l = NULL;
    vsb_oci_manifest_t  *m = NULL;
    vsb_oci_kind_t       kind;
    vsb_image_stats_t    st;
    json_t              *summary = NULL;
    char                *buf = NULL, mdigest[VSB_IMAGE_DIGEST_LEN + 1];
    uint64_t             msize = 0;
    size_t               len, i;
    int                  fd, rc = -1;

    err[0] = '\0';
    memset(&u, 0, sizeof(u));
    memset(&st, 0, sizeof(st));
    u.broker = broker_fd;
    u.layoutfd = -1;
    u.lim = lim;

    if (tar_fd != -1) {
        u.broker = -1;
        if (vsb_unpack_tarball(&u, tar_fd, err, errlen) != 0) {
            return -1;
        }
    }

    m = malloc(sizeof(*m));
    l = malloc(sizeof(*l));
    if (m == NULL || l == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }

    memset(l, 0, sizeof(*l));
    l->lim = lim;
    l->st = &st;
    l->ownersfd = -1;

    buf = vsb_unpack_json_blob(&u, digest, 0, &len, err, errlen);
    if (buf == NULL || vsb_oci_kind(buf, len, &kind, err, errlen) != 0) {
        goto done;
    }

    snprintf(mdigest, sizeof(mdigest), "%s", digest);

    if (kind == VSB_OCI_INDEX) {
        if (vsb_oci_index_select(buf, len, vsb_oci_host_arch(), mdigest,
                                 &msize, err, errlen) != 0)
        {
            goto done;
        }
        free(buf);
        buf = vsb_unpack_json_blob(&u, mdigest, msize, &len, err, errlen);
        if (buf == NULL || vsb_oci_kind(buf, len, &kind, err, errlen) != 0) {
            goto done;
        }
        if (kind != VSB_OCI_MANIFEST) {
            snprintf(err, errlen, "index entry %s is not an image manifest",
                     mdigest);
            goto done;
        }
    }

    if (vsb_oci_manifest_parse(buf, len, (size_t) lim->max_layers, m, err,
                               errlen) != 0)
    {
        goto done;
    }

    free(buf);
    buf = vsb_unpack_json_blob(&u, m->config_digest, m->config_size, &len,
                               err, errlen);
    if (buf == NULL
        || vsb_oci_config_parse(buf, len, vsb_oci_host_arch(), m, &summary,
                                err, errlen) != 0)
    {
        goto done;
    }

    if (mkdir("rootfs", 0700) != 0) {
        snprintf(err, errlen, "mkdir rootfs: %s", strerror(errno));
        goto done;
    }

    l->rootfd = open("rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC);
    l->ownersfd = open("owners", O_WRONLY | O_CREAT | O_EXCL | O_APPEND
                       | O_CLOEXEC, 0600);
    if (l->rootfd == -1 || l->ownersfd == -1) {
        snprintf(err, errlen, "open rootfs or owners: %s", strerror(errno));
        goto done;
    }

    for (i = 0; i < m->n_layers; i++) {
        const vsb_oci_layer_t  *ly = &m->layers[i];
        char                    why[480];

        if (ly->size > lim->max_bytes) {
            snprintf(err, errlen, "layer %zu (%s) is %llu bytes, over the "
                     "size bound (--max-bytes)", i, ly->digest,
                     (unsigned long long) ly->size);
            goto done;
        }

        fd = vsb_unpack_blob(&u, ly->digest, err, errlen);
        if (fd == -1) {
            goto done;
        }

        if (vsb_unpack_verify(fd, ly->digest, ly->size, err, errlen) != 0
            || vsb_layer_prepare(l, fd, ly, why, sizeof(why)) != 0
            || vsb_layer_extract(l, fd, ly, why, sizeof(why)) != 0)
        {
            if (err[0] == '\0') {
                snprintf(err, errlen, "layer %zu: %s", i, why);
            }
            close(fd);
            goto done;
        }

        close(fd);
    }

    if (vsb_unpack_finish(l, err, errlen) != 0) {
        goto done;
    }

    /* takes summary, whatever it returns */
    fd = vsb_unpack_meta(l, digest, mdigest, m, summary, err, errlen);
    summary = NULL;
    if (fd != 0) {
        goto done;
    }

    if (close(l->ownersfd) != 0) {
        l->ownersfd = -1;
        snprintf(err, errlen, "close owners: %s", strerror(errno));
        goto done;
    }
    l->ownersfd = -1;

    rc = 0;

done:

    if (l != NULL) {
        if (l->ownersfd != -1) {
            close(l->ownersfd);
        }
    }
    json_decref(summary);
    free(buf);
    free(m);
    free(l);
    return rc;
}
