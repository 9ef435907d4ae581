/*
 * Records on disk that survive a crash whole or not at all: write a
 * temporary file, rename it over the record; a reader sees the old
 * record or the new one, never a part.  Done when the rename returns: a
 * helper crash loses nothing (the page cache is the kernel's).  For a
 * host crash the record and its directory are fsynced by durable.c's
 * child, off the loop; a record the crash cut short or emptied is
 * refused by its reader (not JSON, not a record).  A removal is not
 * fsynced: a record that comes back after a host crash is one its
 * reader already handles (an ENDED record past its retention; a run
 * record whose sandbox has its ENDED record, recover.c).  Only root can
 * write these directories (0700, checked by vsb_storage_state_subdir()),
 * and every open refuses to follow a link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vsb_durable.h"
#include "vsb_fdio.h"
#include "vsb_log.h"
#include "vsb_statefile.h"
#include "vsb_storage.h"

#define VSB_STATEFILE_TMP  ".tmp"


int
vsb_statefile_dir(const char *name, char *out, size_t len, char *err,
    size_t errlen)
{
    return vsb_storage_state_subdir(name, 0700, out, len, err, errlen);
}


static int
vsb_statefile_sync_dir(const char *dir, char *err, size_t errlen)
{
    int  fd;

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "open(\"%s\"): %s", dir, strerror(errno));
        return -1;
    }

    if (fsync(fd) != 0) {
        snprintf(err, errlen, "fsync(\"%s\"): %s", dir, strerror(errno));
        close(fd);
        return -1;
    }

    close(fd);
    return 0;
}


static int
vsb_statefile_path(char *out, size_t len, const char *dir, const char *name,
    const char *suffix, char *err, size_t errlen)
{
    int  n;

    if (strchr(name, '/') != NULL || name[0] == '.' || name[0] == '\0') {
        snprintf(err, errlen, "bad record name \"%.64s\"", name);
        return -1;
    }

    n = snprintf(out, len, "%s/%s%s%s", dir, suffix[0] ? "." : "", name,
                 suffix);
    if (n < 0 || (size_t) n >= len) {
        snprintf(err, errlen, "path of record %.64s too long", name);
        return -1;
    }

    return 0;
}


int
vsb_statefile_write(const char *dir, const char *name, const char *data,
    size_t len, char *err, size_t errlen)
{
    char  tmp[PATH_MAX], path[PATH_MAX];
    int   fd;

    if (len > VSB_STATEFILE_MAX) {
        snprintf(err, errlen, "record %.64s: %zu bytes, more than %d", name,
                 len, VSB_STATEFILE_MAX);
        return -1;
    }

    if (vsb_statefile_path(path, sizeof(path), dir, name, "", err, errlen)
        != 0
        || vsb_statefile_path(tmp, sizeof(tmp), dir, name, VSB_STATEFILE_TMP,
                              err, errlen) != 0)
    {
        return -1;
    }

    /* a temporary file of an earlier, interrupted write is stale */
    if (unlink(tmp) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "unlink(\"%s\"): %s", tmp, strerror(errno));
        return -1;
    }

    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd == -1) {
        snprintf(err, errlen, "open(\"%s\"): %s", tmp, strerror(errno));
        return -1;
    }

    if (vsb_write_full(fd, data, len) != 0) {
        snprintf(err, errlen, "write(\"%s\"): %s", tmp, strerror(errno));
        goto failed;
    }

    if (close(fd) != 0) {
        fd = -1;
        snprintf(err, errlen, "close(\"%s\"): %s", tmp, strerror(errno));
        goto failed;
    }
    fd = -1;

    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "rename(\"%s\", \"%s\"): %s", tmp, path,
                 strerror(errno));
        goto failed;
    }

    if (vsb_durable_sync(dir, name) == 0) {
        return 0;
    }

    /* not queued (no memory): on disk now, here */
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1 || fsync(fd) != 0) {
        snprintf(err, errlen, "%s(\"%s\"): %s", fd == -1 ? "open" : "fsync",
                 path, strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }
    close(fd);

    return vsb_statefile_sync_dir(dir, err, errlen);

failed:

    if (fd != -1) {
        close(fd);
    }
    (void) unlink(tmp);
    return -1;
}


int
vsb_statefile_remove(const char *dir, const char *name, char *err,
    size_t errlen)
{
    char  path[PATH_MAX];

    if (vsb_statefile_path(path, sizeof(path), dir, name, "", err, errlen)
        != 0)
    {
        return -1;
    }

    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "unlink(\"%s\"): %s", path, strerror(errno));
        return -1;
    }

    if (access(path, F_OK) == 0 || errno != ENOENT) {
        snprintf(err, errlen, "\"%s\" still exists after its removal", path);
        return -1;
    }

    return 0;
}


ssize_t
vsb_statefile_read(const char *dir, const char *name, char *buf, size_t size,
    char *err, size_t errlen)
{
    char         path[PATH_MAX];
    int          fd;
    size_t       got;
    ssize_t      n;
    struct stat  st;

    if (vsb_statefile_path(path, sizeof(path), dir, name, "", err, errlen)
        != 0)
    {
        return -1;
    }

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        snprintf(err, errlen, "open(\"%s\"): %s", path, strerror(errno));
        return -1;
    }

    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
        snprintf(err, errlen, "\"%s\" is not a regular file of root's",
                 path);
        close(fd);
        return -1;
    }

    if (st.st_size < 0 || (size_t) st.st_size >= size
        || (size_t) st.st_size > VSB_STATEFILE_MAX)
    {
        snprintf(err, errlen, "\"%s\" has %lld bytes, more than a record "
                 "may", path, (long long) st.st_size);
        close(fd);
        return -1;
    }

    n = vsb_read_full(fd, buf, size - 1);
    if (n == -1) {
        snprintf(err, errlen, "read(\"%s\"): %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    got = (size_t) n;

    close(fd);

    if (got > VSB_STATEFILE_MAX) {
        snprintf(err, errlen, "\"%s\" grew past %d bytes", path,
                 VSB_STATEFILE_MAX);
        return -1;
    }

    buf[got] = '\0';
    return (ssize_t) got;
}


int
vsb_statefile_each(const char *dir, int (*fn)(const char *name, void *data),
    void *data)
{
    DIR            *d;
    struct dirent  *de;
    size_t          len;
    int             rc = 0;

    d = opendir(dir);
    if (d == NULL) {
        vsb_log_errno(VSB_LOG_ERR, "opendir(\"%s\")", dir);
        return -1;
    }

    for ( ;; ) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                vsb_log_errno(VSB_LOG_ERR, "readdir(\"%s\")", dir);
                rc = -1;
            }
            break;
        }

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }

        len = strlen(de->d_name);

        if (de->d_name[0] == '.' && len > sizeof(VSB_STATEFILE_TMP)
            && strcmp(de->d_name + len - (sizeof(VSB_STATEFILE_TMP) - 1),
                      VSB_STATEFILE_TMP) == 0)
        {
            /* an interrupted write: the record before it still holds */
            if (unlinkat(dirfd(d), de->d_name, 0) != 0) {
                vsb_log_errno(VSB_LOG_WARN, "unlink(\"%s/%s\")", dir,
                              de->d_name);
            }
            continue;
        }

        if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0) {
            vsb_log(VSB_LOG_WARN, "ignoring \"%s/%s\": not a record", dir,
                    de->d_name);
            continue;
        }

        if (fn(de->d_name, data) != 0) {
            rc = -1;
            break;
        }
    }

    closedir(d);
    return rc;
}
