/*
 * Per-sandbox network namespaces.  The helper is single-threaded, so it
 * can step into a sandbox's namespace (unshare or setns), do its work
 * and step back without another thread ever seeing the wrong one; the
 * helper's own sockets are unix sockets, which no network namespace
 * affects.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vsb_log.h"
#include "vsb_net.h"
#include "vsb_netns.h"
#include "vsb_request.h"
#include "vsb_storage.h"

#define VSB_NETNS_SELF        "/proc/thread-self/ns/net"
#define VSB_NETNS_PORT_START  "/proc/sys/net/ipv4/ip_unprivileged_port_start"

static int   vsb_host_netns = -1;
static char  vsb_netns_dir[PATH_MAX];


int
vsb_netns_init(char *err, size_t errlen)
{
    if (vsb_storage_state_subdir("netns", 0700, vsb_netns_dir,
                                 sizeof(vsb_netns_dir), err, errlen) != 0)
    {
        return -1;
    }

    vsb_host_netns = open(VSB_NETNS_SELF, O_RDONLY | O_CLOEXEC);
    if (vsb_host_netns == -1) {
        snprintf(err, errlen, "open(\"%s\"): %s", VSB_NETNS_SELF,
                 strerror(errno));
        return -1;
    }

    return 0;
}


static int
vsb_netns_path(char *buf, size_t len, const char *id)
{
    int  n;

    n = snprintf(buf, len, "%s/%s", vsb_netns_dir, id);
    return (n < 0 || (size_t) n >= len) ? -1 : 0;
}


void
vsb_netns_leave(void)
{
    if (setns(vsb_host_netns, CLONE_NEWNET) != 0) {
        /* every later sandbox would share this one's network */
        vsb_log_errno(VSB_LOG_ERR, "setns(back to the helper's network "
                      "namespace)");
        abort();
    }
}


int
vsb_netns_enter(const vsb_sandbox_t *sb, char *err, size_t errlen)
{
    if (sb->netns_fd == -1) {
        snprintf(err, errlen, "netns: sandbox %s has no network namespace",
                 sb->id);
        return -1;
    }

    if (setns(sb->netns_fd, CLONE_NEWNET) != 0) {
        snprintf(err, errlen, "netns: setns(sandbox %s): %s", sb->id,
                 strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_netns_run(const vsb_sandbox_t *sb, vsb_netns_fn_pt fn, void *data,
    char *err, size_t errlen)
{
    int  rc;

    if (vsb_netns_enter(sb, err, errlen) != 0) {
        return -1;
    }

    rc = fn(data, err, errlen);

    vsb_netns_leave();
    return rc;
}


/* Inside the new namespace: loopback up; ports below 1024 open to the
 * workload's uid (nothing else listens in there). */
static int
vsb_netns_setup(void *data, char *err, size_t errlen)
{
    int      fd;
    ssize_t  n;

    if (vsb_net_loopback_up(err, errlen) != 0) {
        return -1;
    }

    fd = open(VSB_NETNS_PORT_START, O_WRONLY | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "netns: open(\"%s\"): %s", VSB_NETNS_PORT_START,
                 strerror(errno));
        return -1;
    }

    n = write(fd, "0", 1);
    if (n != 1) {
        snprintf(err, errlen, "netns: write(\"%s\"): %s", VSB_NETNS_PORT_START,
                 n == -1 ? strerror(errno) : "short write");
        close(fd);
        return -1;
    }

    if (close(fd) != 0) {
        snprintf(err, errlen, "netns: close(\"%s\"): %s", VSB_NETNS_PORT_START,
                 strerror(errno));
        return -1;
    }

    return 0;
}


/* A fresh, unconfigured namespace's descriptor; the helper stays in its
 * own namespace. */
static int
vsb_netns_new(char *err, size_t errlen)
{
    int  fd, saved;

    if (unshare(CLONE_NEWNET) != 0) {
        snprintf(err, errlen, "netns: unshare(CLONE_NEWNET): %s",
                 strerror(errno));
        return -1;
    }

    fd = open(VSB_NETNS_SELF, O_RDONLY | O_CLOEXEC);
    saved = errno;

    vsb_netns_leave();

    if (fd == -1) {
        snprintf(err, errlen, "netns: open(\"%s\"): %s", VSB_NETNS_SELF,
                 strerror(saved));
    }

    return fd;
}


/* The pin: an empty file with the namespace bind-mounted on it. */
static int
vsb_netns_pin(int fd, const char *path, char *err, size_t errlen)
{
    int   pfd;
    char  src[64];

    pfd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
               0);
    if (pfd == -1) {
        snprintf(err, errlen, "netns: create \"%s\": %s", path,
                 strerror(errno));
        return -1;
    }
    close(pfd);

    snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);

    if (mount(src, path, NULL, MS_BIND, NULL) != 0) {
        snprintf(err, errlen, "netns: bind mount on \"%s\": %s", path,
                 strerror(errno));
        (void) unlink(path);
        return -1;
    }

    return 0;
}


int
vsb_netns_create(vsb_sandbox_t *sb, char *err, size_t errlen)
{
    int   fd;
    char  path[PATH_MAX];

    if (vsb_netns_path(path, sizeof(path), sb->id) != 0) {
        snprintf(err, errlen, "netns: path too long");
        return -1;
    }

    fd = vsb_netns_new(err, errlen);
    if (fd == -1) {
        return -1;
    }

    sb->netns_fd = fd;

    if (vsb_netns_run(sb, vsb_netns_setup, NULL, err, errlen) != 0
        || vsb_netns_pin(fd, path, err, errlen) != 0)
    {
        vsb_netns_release(sb);
        return -1;
    }

    return 0;
}


void
vsb_netns_release(vsb_sandbox_t *sb)
{
    if (sb->netns_fd != -1) {
        if (close(sb->netns_fd) != 0) {
            vsb_log_errno(VSB_LOG_WARN, "sandbox %s: close(netns)", sb->id);
        }
        sb->netns_fd = -1;
    }
}


/* 1 if a namespace is mounted on path (its device is not its
 * directory's), 0 if not or if path does not exist, -1 on error. */
static int
vsb_netns_pinned(const char *path)
{
    struct stat  a, b;

    if (lstat(path, &a) == -1) {
        return errno == ENOENT ? 0 : -1;
    }

    if (stat(vsb_netns_dir, &b) == -1) {
        return -1;
    }

    return a.st_dev != b.st_dev;
}


/* Unmount (a pin has nothing stacked on it and nothing open in it: never
 * busy), unlink, verify. */
static int
vsb_netns_unpin(const char *path, char *err, size_t errlen)
{
    int  i, m;

    for (i = 0; i < 4; i++) {
        m = vsb_netns_pinned(path);
        if (m == 0) {
            break;
        }

        if (m == -1) {
            snprintf(err, errlen, "netns: stat(\"%s\"): %s", path,
                     strerror(errno));
            return -1;
        }

        if (umount2(path, UMOUNT_NOFOLLOW) != 0) {
            snprintf(err, errlen, "netns: umount(\"%s\"): %s", path,
                     strerror(errno));
            return -1;
        }
    }

    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "netns: unlink(\"%s\"): %s", path,
                 strerror(errno));
        return -1;
    }

    if (access(path, F_OK) == 0 || errno != ENOENT) {
        snprintf(err, errlen, "netns: \"%s\" still exists", path);
        return -1;
    }

    return 0;
}


int
vsb_netns_remove(const vsb_sandbox_t *sb, char *err, size_t errlen)
{
    char  path[PATH_MAX];

    if (vsb_netns_path(path, sizeof(path), sb->id) != 0) {
        snprintf(err, errlen, "netns: path too long");
        return -1;
    }

    return vsb_netns_unpin(path, err, errlen);
}


int
vsb_netns_cleanup_stale(void)
{
    char            path[PATH_MAX + 300], err[512];
    DIR            *d;
    struct dirent  *de;
    int             removed = 0, failed = 0;

    d = opendir(vsb_netns_dir);
    if (d == NULL) {
        vsb_log_errno(VSB_LOG_ERR, "opendir(\"%s\")", vsb_netns_dir);
        return -1;
    }

    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }

        snprintf(path, sizeof(path), "%s/%s", vsb_netns_dir, de->d_name);

        if (!vsb_req_id_ok(de->d_name)) {
            vsb_log(VSB_LOG_WARN, "netns cleanup: ignoring \"%s\"", path);
            continue;
        }

        if (vsb_netns_unpin(path, err, sizeof(err)) != 0) {
            vsb_log(VSB_LOG_ERR, "netns cleanup of %s failed: %s",
                    de->d_name, err);
            failed++;
            continue;
        }

        vsb_log(VSB_LOG_INFO, "cleaned up stale network namespace of %s",
                de->d_name);
        removed++;
    }

    closedir(d);
    return failed ? -1 : removed;
}
