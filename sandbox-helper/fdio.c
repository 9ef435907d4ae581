/*
 * A descriptor read to the end of the room given, or written whole
 * (vsb_fdio.h): for the helper's bounded readers of whole files (state
 * records, cgroup files, blobs, manifests, profile and image metadata,
 * workspace files) and its writers (state records, workspace files,
 * image layers, snapshot copies, workers' and confined children's
 * reports, the ruleset piped to nft).
 */
#include <errno.h>
#include <unistd.h>

#include "vsb_fdio.h"


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
