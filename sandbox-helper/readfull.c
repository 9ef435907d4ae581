/*
 * A descriptor read to the end of the room given (vsb_readfull.h), for
 * the helper's bounded readers of whole files (state records, cgroup
 * files, blobs, manifests, profile and image metadata, workspace files).
 */
#include <errno.h>
#include <unistd.h>

#include "vsb_readfull.h"


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
