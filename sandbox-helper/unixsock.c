/*
 * A Unix socket bound where a stale one may lie (vsb_unixsock.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "vsb_unixsock.h"


int
vsb_unix_bind(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un  sa;
    struct stat         st;
    int                 fd;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "\"%.200s\": longer than a socket path may be "
                 "(%zu bytes)", path, sizeof(sa.sun_path) - 1);
        return -1;
    }

    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "\"%s\" exists and is not a socket", path);
            return -1;
        }
        if (unlink(path) == -1) {
            snprintf(err, errlen, "unlink(\"%s\"): %s", path,
                     strerror(errno));
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "lstat(\"%s\"): %s", path, strerror(errno));
        return -1;
    }

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        snprintf(err, errlen, "socket(AF_UNIX): %s", strerror(errno));
        return -1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path) + 1);

    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == -1) {
        snprintf(err, errlen, "bind(\"%s\"): %s", path, strerror(errno));
        close(fd);
        return -1;
    }

    return fd;
}
