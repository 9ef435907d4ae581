/*
 * A descriptor read to the end of the room given, or written whole
 * (vsb_fdio.h): for the helper's bounded readers of whole files (state
 * records, cgroup files, blobs, manifests, profile and image metadata,
 * workspace files) and its writers (state records, workspace files,
 * image layers, snapshot copies, workers' and confined children's
 * reports, the ruleset piped to nft); and the one openat2(2) of every
 * path the helper resolves inside a tree it does not trust.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_fdio.h"


/* how many times an openat2(2) answered EAGAIN is tried in all */
#define VSB_OPENAT2_TRIES  64


ssize_t
vsb_read_full(int fd, void *buf, size_t len)
{
    unsigned char  *p = buf;
    size_t          got = 0;
    ssize_t         n;

    while (got < len) {
        n = read(fd, p + got, len - got);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (n == 0) {
            break;
        }
        got += (size_t) n;
    }

    return (ssize_t) got;
}


int
vsb_write_full(int fd, const void *buf, size_t len)
{
    const unsigned char  *p = buf;
    size_t                off = 0;
    ssize_t               n;

    while (off < len) {
        n = write(fd, p + off, len - off);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        off += (size_t) n;
    }

    return 0;
}


int
vsb_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode,
    uint64_t resolve)
{
    int              fd, tries;
    struct open_how  how;

    memset(&how, 0, sizeof(how));
    how.flags = flags | O_CLOEXEC;
    how.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
               ? mode : 0;
    how.resolve = resolve;

    for (tries = 0; tries < VSB_OPENAT2_TRIES; tries++) {
        fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

        /* EAGAIN: with RESOLVE_IN_ROOT or RESOLVE_BENEATH, a rename or
         * a mount anywhere on the host raced a ".." the kernel resolved
         * (a symlink "../usr/lib/os-release" does), and it cannot tell
         * that from an escape: openat2(2) says to try again */
        if (fd != -1 || (errno != EAGAIN && errno != EINTR)) {
            return fd;
        }
    }

    return -1;
}
