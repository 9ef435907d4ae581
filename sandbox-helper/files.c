/*
 * Workspace file I/O for a root helper facing a hostile workload: never
 * follow a link, never leave the workspace, never act with more rights
 * than the workload user has.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "vsb_fdio.h"
#include "vsb_files.h"
#include "vsb_hex.h"
#include "vsb_log.h"

#define VSB_RESOLVE  (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS                \
                      | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)


int
vsb_sha256_hex(const unsigned char *data, size_t len,
    char out[VSB_SHA256_HEX_LEN + 1])
{
    unsigned char  md[EVP_MAX_MD_SIZE];
    unsigned int   mdlen;

    if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1) {
        return -1;
    }

    return vsb_sha256_md_hex(md, mdlen, out);
}


static int
vsb_files_open(int dirfd, const char *path, uint64_t flags, uint64_t mode)
{
    return vsb_openat2(dirfd, path, flags, mode, VSB_RESOLVE);
}


/* Maps a failed lookup's errno to a protocol error. */
static int
vsb_files_lookup_error(vsb_error_t *e, const char *step, const char *path)
{
    int  err = errno;

    switch (err) {
    case ELOOP:
        return vsb_error_set(e, VSB_E_BAD_PATH, "path",
                             "%s \"%.200s\": a symlink was refused", step,
                             path);
    case EXDEV:
        return vsb_error_set(e, VSB_E_BAD_PATH, "path",
                             "%s \"%.200s\": the path leaves the workspace",
                             step, path);
    case ENOTDIR:
        return vsb_error_set(e, VSB_E_BAD_PATH, "path",
                             "%s \"%.200s\": a parent is not a directory",
                             step, path);
    case ENOENT:
        return vsb_error_set(e, VSB_E_NOT_FOUND, "path",
                             "%s \"%.200s\": no such file", step, path);
    case ENOSPC:
    case EDQUOT:
        return vsb_error_set(e, VSB_E_NO_SPACE, "path",
                             "%s \"%.200s\": %s", step, path, strerror(err));
    case EISDIR:
        return vsb_error_set(e, VSB_E_NOT_A_FILE, "path",
                             "%s \"%.200s\": is a directory", step, path);
    case ENXIO:
        /* open(2) of a unix socket */
        return vsb_error_set(e, VSB_E_NOT_A_FILE, "path",
                             "%s \"%.200s\": is not a regular file", step,
                             path);
    default:
        return vsb_error_set(e, VSB_E_IO, "path", "%s \"%.200s\": %s", step,
                             path, strerror(err));
    }
}


/* The sandbox's workspace, opened by the helper as root. */
static int
vsb_files_workspace(const vsb_sandbox_t *sb, vsb_error_t *e)
{
    int  dfd, wfd;

    /* root/ may be a mount of its own (an image profile's overlay): it is
     * entered by name, the workspace then resolved without crossing */
    wfd = open(sb->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    dfd = wfd == -1 ? -1 : openat(wfd, "root", O_PATH | O_DIRECTORY
                                  | O_NOFOLLOW | O_CLOEXEC);
    if (dfd == -1) {
        vsb_error_set(e, VSB_E_IO, NULL, "open(\"%s/root\"): %s", sb->dir,
                      strerror(errno));
        if (wfd != -1) {
            close(wfd);
        }
        return -1;
    }

    close(wfd);

    wfd = vsb_files_open(dfd, "workspace", O_PATH | O_DIRECTORY, 0);
    if (wfd == -1) {
        vsb_error_set(e, VSB_E_IO, NULL, "open(\"%s/root/workspace\"): %s",
                      sb->dir, strerror(errno));
        close(dfd);
        return -1;
    }

    close(dfd);
    return wfd;
}


/* Runs the caller's file system work as the workload user. */
static int
vsb_files_become(const vsb_sandbox_t *sb, vsb_error_t *e)
{
    uid_t  uid = vsb_sandbox_host_uid(sb, VSB_WORKLOAD_UID);
    gid_t  gid = (gid_t) vsb_sandbox_host_uid(sb, VSB_WORKLOAD_GID);

    (void) setfsgid(gid);
    if ((gid_t) setfsgid((gid_t) -1) != gid) {
        (void) setfsgid(0);
        return vsb_error_set(e, VSB_E_INTERNAL, NULL,
                             "setfsgid(%u) did not take effect",
                             (unsigned) gid);
    }

    (void) setfsuid(uid);
    if ((uid_t) setfsuid((uid_t) -1) != uid) {
        (void) setfsuid(0);
        (void) setfsgid(0);
        return vsb_error_set(e, VSB_E_INTERNAL, NULL,
                             "setfsuid(%u) did not take effect",
                             (unsigned) uid);
    }

    /* Modes given by the client are exact, not filtered by our 077. */
    umask(0);
    return 0;
}


static void
vsb_files_restore(void)
{
    umask(077);

    (void) setfsuid(0);
    (void) setfsgid(0);

    /* Continuing as root with a foreign fs identity would be unsafe. */
    if (setfsuid((uid_t) -1) != 0 || setfsgid((gid_t) -1) != 0) {
        vsb_log(VSB_LOG_ERR, "cannot restore fs credentials to root");
        abort();
    }
}


/* The workspace fd, with the fs identity switched to the workload user;
 * vsb_files_leave() undoes both. */
static int
vsb_files_enter(const vsb_sandbox_t *sb, vsb_error_t *e)
{
    int  wfd;

    wfd = vsb_files_workspace(sb, e);
    if (wfd == -1) {
        return -1;
    }

    if (vsb_files_become(sb, e) != 0) {
        close(wfd);
        return -1;
    }

    return wfd;
}


static void
vsb_files_leave(int wfd)
{
    vsb_files_restore();
    close(wfd);
}


/* One directory of a walk down the workspace: comp under cur, made first
 * when create says so.  Its fd, or -1 with e set: a symlink is ELOOP, and
 * a name that is no directory is not_a_directory when it is the last one
 * asked for (last), else ENOTDIR. */
static int
vsb_files_step(int cur, const char *comp, int create, int last,
    const char *path, vsb_error_t *e)
{
    struct stat  st;
    int          next;

    next = vsb_files_open(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);

    if (next == -1 && errno == ENOENT && create) {
        if (mkdirat(cur, comp, 0755) == -1 && errno != EEXIST) {
            vsb_files_lookup_error(e, "mkdir", path);
            return -1;
        }
        next = vsb_files_open(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
    }

    if (next == -1 && errno == ENOTDIR) {
        /* O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR: be precise. */
        if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISLNK(st.st_mode))
        {
            errno = ELOOP;
        } else if (last) {
            return vsb_error_set(e, VSB_E_NOT_A_DIRECTORY, "path",
                                 "\"%.200s\" is not a directory", path);
        } else {
            errno = ENOTDIR;
        }
    }

    if (next == -1) {
        vsb_files_lookup_error(e, "open", path);
    }
    return next;
}


/* Opens (creating if asked) each directory of path but the last name;
 * returns its fd and points *name at the last component. */
static int
vsb_files_parent(int wfd, const char *path, int create, const char **name,
    vsb_error_t *e)
{
    char         comp[VSB_MAX_NAME + 1];
    const char  *p, *slash;
    int          cur, next;
    size_t       n;

    cur = dup(wfd);
    if (cur == -1) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "dup(): %s",
                             strerror(errno));
    }

    for (p = path; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
        n = (size_t) (slash - p);
        memcpy(comp, p, n);
        comp[n] = '\0';

        next = vsb_files_step(cur, comp, create, 0, path, e);
        if (next == -1) {
            close(cur);
            return -1;
        }

        close(cur);
        cur = next;
    }

    *name = p;
    return cur;
}


static int
vsb_files_write_in(int wfd, const char *path, unsigned mode,
    const unsigned char *data, size_t len, vsb_error_t *e)
{
    const char     *name = NULL;
    char            tmp[64];
    char            rnd[2 * 8 + 1];
    struct stat     st;
    int             dfd, fd, rc = -1;

    dfd = vsb_files_parent(wfd, path, 1, &name, e);
    if (dfd == -1) {
        return -1;
    }

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
            vsb_error_set(e, VSB_E_BAD_PATH, "path",
                          "\"%.200s\": a symlink was refused", path);
            goto out;
        }
        if (!S_ISREG(st.st_mode)) {
            vsb_error_set(e, VSB_E_NOT_A_FILE, "path",
                          "\"%.200s\" exists and is not a regular file",
                          path);
            goto out;
        }
    }

    if (vsb_random_hex(rnd, 8) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "getrandom(): %s",
                      strerror(errno));
        goto out;
    }
    snprintf(tmp, sizeof(tmp), ".vsb-%s.tmp", rnd);

    fd = vsb_files_open(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
                     mode);
    if (fd == -1) {
        vsb_files_lookup_error(e, "create", path);
        goto out;
    }

    if (vsb_write_full(fd, data, len) != 0) {
        vsb_files_lookup_error(e, "write", path);
        close(fd);
        (void) unlinkat(dfd, tmp, 0);
        goto out;
    }

    if (close(fd) == -1) {
        vsb_files_lookup_error(e, "close", path);
        (void) unlinkat(dfd, tmp, 0);
        goto out;
    }

    if (renameat(dfd, tmp, dfd, name) == -1) {
        vsb_files_lookup_error(e, "rename", path);
        (void) unlinkat(dfd, tmp, 0);
        goto out;
    }

    rc = 0;

out:
    close(dfd);
    return rc;
}


int
vsb_files_write(const vsb_sandbox_t *sb, const char *path, unsigned mode,
    const unsigned char *data, size_t len, char sha256[VSB_SHA256_HEX_LEN + 1],
    vsb_error_t *e)
{
    int  wfd, rc;

    if (vsb_sha256_hex(data, len, sha256) != 0) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "SHA-256 failed");
    }

    wfd = vsb_files_enter(sb, e);
    if (wfd == -1) {
        return -1;
    }

    rc = vsb_files_write_in(wfd, path, mode & 0777, data, len, e);

    vsb_files_leave(wfd);
    return rc;
}


static int
vsb_files_read_in(int wfd, const char *path, uint64_t max,
    unsigned char **data, size_t *len, vsb_error_t *e)
{
    struct stat     st;
    unsigned char  *buf, *nb;
    size_t          cap, have;
    ssize_t         n;
    int             fd;

    fd = vsb_files_open(wfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd == -1) {
        return vsb_files_lookup_error(e, "open", path);
    }

    if (fstat(fd, &st) == -1) {
        vsb_files_lookup_error(e, "fstat", path);
        close(fd);
        return -1;
    }

    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return vsb_error_set(e, VSB_E_NOT_A_FILE, "path",
                             "\"%.200s\" is not a regular file", path);
    }

    if ((uint64_t) st.st_size > max) {
        close(fd);
        return vsb_error_set(e, VSB_E_FILE_TOO_LARGE, "path",
                             "\"%.200s\" has %lld bytes, more than %llu",
                             path, (long long) st.st_size,
                             (unsigned long long) max);
    }

    /* One byte more than allowed tells us if it grew meanwhile. */
    cap = (size_t) max + 1;
    if ((uint64_t) st.st_size + 1 < cap) {
        cap = (size_t) st.st_size + 1;
    }

    buf = malloc(cap);
    if (buf == NULL) {
        close(fd);
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
    }

    have = 0;
    for ( ;; ) {
        n = vsb_read_full(fd, buf + have, cap - have);
        if (n == -1) {
            vsb_files_lookup_error(e, "read", path);
            free(buf);
            close(fd);
            return -1;
        }
        have += (size_t) n;

        if (have < cap || cap > max) {
            break;              /* its end, or a byte past max */
        }

        /* It grew: allow up to max + 1. */
        cap = cap * 2 > max + 1 ? (size_t) max + 1 : cap * 2;
        nb = realloc(buf, cap);
        if (nb == NULL) {
            free(buf);
            close(fd);
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        }
        buf = nb;
    }

    close(fd);

    if (have > max) {
        free(buf);
        return vsb_error_set(e, VSB_E_FILE_TOO_LARGE, "path",
                             "\"%.200s\" grew beyond %llu bytes", path,
                             (unsigned long long) max);
    }

    *data = buf;
    *len = have;
    return 0;
}


int
vsb_files_read(const vsb_sandbox_t *sb, const char *path, uint64_t max,
    unsigned char **data, size_t *len, char sha256[VSB_SHA256_HEX_LEN + 1],
    vsb_error_t *e)
{
    int  wfd, rc;

    *data = NULL;
    *len = 0;

    wfd = vsb_files_enter(sb, e);
    if (wfd == -1) {
        return -1;
    }

    rc = vsb_files_read_in(wfd, path, max, data, len, e);

    vsb_files_leave(wfd);

    if (rc == 0 && vsb_sha256_hex(*data, *len, sha256) != 0) {
        free(*data);
        *data = NULL;
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "SHA-256 failed");
    }

    return rc;
}


static int
vsb_files_dir_in(int wfd, const char *path, int create, vsb_error_t *e)
{
    char         comp[VSB_MAX_NAME + 1];
    const char  *p, *end;
    int          cur, next;
    size_t       n;

    cur = dup(wfd);
    if (cur == -1) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "dup(): %s",
                             strerror(errno));
    }

    for (p = path; *p != '\0'; p = *end ? end + 1 : end) {
        end = strchr(p, '/');
        if (end == NULL) {
            end = p + strlen(p);
        }
        n = (size_t) (end - p);
        memcpy(comp, p, n);
        comp[n] = '\0';

        next = vsb_files_step(cur, comp, create, *end == '\0', path, e);
        if (next == -1) {
            close(cur);
            return -1;
        }

        close(cur);
        cur = next;
    }

    close(cur);
    return 0;
}


int
vsb_files_dir(const vsb_sandbox_t *sb, const char *path, int create,
    vsb_error_t *e)
{
    int  wfd, rc;

    wfd = vsb_files_enter(sb, e);
    if (wfd == -1) {
        return -1;
    }

    rc = vsb_files_dir_in(wfd, path, create, e);

    vsb_files_leave(wfd);
    return rc;
}
