/*
 * What the helper adds on top of an image's tree (vsb_rootfs.h): done as
 * root through the sandbox's overlay, so every change copies up into the
 * sandbox's own upper layer.  The tree is the image author's: every path
 * is resolved inside the overlay (openat2 RESOLVE_IN_ROOT, never
 * crossing a mount), the last component is never followed, and files
 * are replaced by new ones rather than written through.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_rootfs.h"

/* an image's passwd or group larger than this is replaced, not kept */
#define VSB_ROOTFS_IMAGE_DB_MAX  (1 << 20)

/* /etc files the sandbox's setting decides, not the image */
static const char  *vsb_rootfs_image_replaced[] = {
    "hosts", "hostname", "resolv.conf", "nsswitch.conf",
};

/* the sandbox's user, added to the image's own */
static const struct {
    const char  *name;
    const char  *line;
} vsb_rootfs_image_appended[] = {
    { "passwd", "sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n" },
    { "group", "sandbox:x:1000:\n" },
};


/* path below the overlay root, resolved inside it, not across mounts;
 * the last component is not followed */
static int
vsb_rootfs_image_open(int rfd, const char *path, int flags)
{
    return vsb_openat2(rfd, path, (uint64_t) (flags | O_NOFOLLOW), 0,
                       RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS
                       | RESOLVE_NO_XDEV);
}


/* A directory the sandbox needs: owner and mode set (copied up). */
static int
vsb_rootfs_image_dir(int rfd, const char *path, uid_t uid, int own,
    mode_t mode, char *err, size_t errlen)
{
    int  fd;

    fd = vsb_rootfs_image_open(rfd, path, O_RDONLY | O_DIRECTORY);
    if (fd == -1) {
        snprintf(err, errlen, "rootfs: the image's /%s: %s%s", path,
                 strerror(errno), errno == ELOOP || errno == ENOTDIR
                 ? " (not a directory)" : "");
        return -1;
    }

    if ((own && fchown(fd, uid, uid) != 0) || fchmod(fd, mode) != 0) {
        snprintf(err, errlen, "rootfs: chown /%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }

    close(fd);
    return 0;
}


/* /home/sandbox: made, or whatever the image had there replaced */
static int
vsb_rootfs_image_home(int rfd, uid_t uid, char *err, size_t errlen)
{
    int  hfd, fd;

    hfd = vsb_rootfs_image_open(rfd, "home", O_RDONLY | O_DIRECTORY);
    if (hfd == -1) {
        snprintf(err, errlen, "rootfs: the image's /home: %s",
                 strerror(errno));
        return -1;
    }

    if (mkdirat(hfd, "sandbox", 0750) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "rootfs: mkdir /home/sandbox: %s",
                 strerror(errno));
        close(hfd);
        return -1;
    }

    fd = openat(hfd, "sandbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                | O_CLOEXEC);
    if (fd == -1 && (errno == ELOOP || errno == ENOTDIR)) {
        if (unlinkat(hfd, "sandbox", 0) == 0
            && mkdirat(hfd, "sandbox", 0750) == 0)
        {
            fd = openat(hfd, "sandbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                        | O_CLOEXEC);
        }
    }

    close(hfd);

    if (fd == -1 || fchown(fd, uid, uid) != 0 || fchmod(fd, 0750) != 0) {
        snprintf(err, errlen, "rootfs: /home/sandbox: %s", strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    close(fd);
    return 0;
}


/* etc/name as a new file of ours (the image's, of any type, removed) */
static int
vsb_rootfs_image_new(int efd, const char *name, const char *content,
    uid_t uid, char *err, size_t errlen)
{
    int      fd;
    size_t   len = strlen(content);
    ssize_t  n;

    if (unlinkat(efd, name, 0) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "rootfs: replace /etc/%s: %s%s", name,
                 strerror(errno), errno == EISDIR ? " (the image has a "
                 "directory there)" : "");
        return -1;
    }

    fd = openat(efd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                | O_CLOEXEC, 0644);
    if (fd == -1) {
        snprintf(err, errlen, "rootfs: create /etc/%s: %s", name,
                 strerror(errno));
        return -1;
    }

    n = write(fd, content, len);
    if (n != (ssize_t) len || fchown(fd, uid, uid) != 0
        || fchmod(fd, 0644) != 0)
    {
        snprintf(err, errlen, "rootfs: write /etc/%s: %s", name,
                 n == -1 || n == (ssize_t) len ? strerror(errno)
                 : "short write");
        close(fd);
        return -1;
    }

    if (close(fd) != 0) {
        snprintf(err, errlen, "rootfs: close /etc/%s: %s", name,
                 strerror(errno));
        return -1;
    }

    return 0;
}


/*
 * The sandbox user appended to the image's passwd or group (its own
 * users keep their names; the first entry of uid 1000 names it).  An
 * image without one, or with one that is not a plain, modest file, gets
 * ours.  Only the last byte is read: nothing of the image is parsed.
 */
static int
vsb_rootfs_image_append(int efd, const char *name, const char *line,
    uid_t uid, char *err, size_t errlen)
{
    char         last = '\n', full[16];
    struct stat  st;
    size_t       len;
    ssize_t      n;
    int          fd;

    fd = openat(efd, name, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK
                | O_CLOEXEC);
    if (fd == -1 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
        || st.st_size > VSB_ROOTFS_IMAGE_DB_MAX)
    {
        if (fd != -1) {
            close(fd);
        }
        snprintf(full, sizeof(full), "etc/%s", name);
        return vsb_rootfs_image_new(efd, name, vsb_rootfs_etc_content(full),
                                    uid, err, errlen);
    }

    if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1) {
        snprintf(err, errlen, "rootfs: read /etc/%s: %s", name,
                 strerror(errno));
        close(fd);
        return -1;
    }

    len = strlen(line);
    n = 0;
    if (last != '\n') {
        n = write(fd, "\n", 1) - 1;
    }
    if (n == 0) {
        n = write(fd, line, len) == (ssize_t) len ? 0 : -1;
    }

    if (n != 0 || close(fd) != 0) {
        snprintf(err, errlen, "rootfs: append to /etc/%s: %s", name,
                 strerror(errno));
        if (n != 0) {
            close(fd);
        }
        return -1;
    }

    return 0;
}


int
vsb_rootfs_prepare_image(vsb_sandbox_t *sb, char *err, size_t errlen)
{
    char    path[PATH_MAX + 16], full[32];
    uid_t   root, user;
    size_t  i;
    int     rfd, efd = -1, rc = -1;

    root = vsb_sandbox_host_uid(sb, 0);
    user = vsb_sandbox_host_uid(sb, VSB_WORKLOAD_UID);

    snprintf(path, sizeof(path), "%s/root", sb->dir);
    rfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd == -1) {
        snprintf(err, errlen, "rootfs: open %.300s: %s", path, strerror(errno));
        return -1;
    }

    /* mount points (the store made them; checked again, as dirs) */
    if (vsb_rootfs_image_dir(rfd, "proc", 0, 0, 0555, err, errlen) != 0
        || vsb_rootfs_image_dir(rfd, "dev", 0, 0, 0755, err, errlen) != 0
        || vsb_rootfs_image_dir(rfd, "tmp", 0, 0, 01777, err, errlen) != 0
        || vsb_rootfs_image_dir(rfd, "var/tmp", 0, 0, 01777, err, errlen)
           != 0
        || vsb_rootfs_image_dir(rfd, "workspace", user, 1, 0755, err,
                                errlen) != 0
        || vsb_rootfs_image_home(rfd, user, err, errlen) != 0)
    {
        goto done;
    }

    efd = vsb_rootfs_image_open(rfd, "etc", O_RDONLY | O_DIRECTORY);
    if (efd == -1) {
        snprintf(err, errlen, "rootfs: the image's /etc: %s",
                 strerror(errno));
        goto done;
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_image_replaced)
             / sizeof(vsb_rootfs_image_replaced[0]);
         i++)
    {
        snprintf(full, sizeof(full), "etc/%s", vsb_rootfs_image_replaced[i]);
        if (vsb_rootfs_image_new(efd, vsb_rootfs_image_replaced[i],
                                 vsb_rootfs_etc_content(full), root, err,
                                 errlen) != 0)
        {
            goto done;
        }
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_image_appended)
             / sizeof(vsb_rootfs_image_appended[0]);
         i++)
    {
        if (vsb_rootfs_image_append(efd, vsb_rootfs_image_appended[i].name,
                                    vsb_rootfs_image_appended[i].line, root,
                                    err, errlen) != 0)
        {
            goto done;
        }
    }

    rc = 0;

done:

    if (efd != -1) {
        close(efd);
    }
    close(rfd);
    return rc;
}
