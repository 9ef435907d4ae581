/*
 * A descriptor and a few bytes over a Unix socket (vsb_fdpass.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vsb_fdpass.h"

typedef union {
    char            buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr  align;
} vsb_fd_cmsg_t;


ssize_t
vsb_fd_send(int sock, const void *data, size_t len, int fd)
{
    struct iovec     iov;
    struct msghdr    msg;
    struct cmsghdr  *cm;
    vsb_fd_cmsg_t    u;
    ssize_t          n;

    iov.iov_base = (void *) data;
    iov.iov_len = len;

    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;

    if (fd != -1) {
        memset(&u, 0, sizeof(u));
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof(u.buf);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }

    do {
        n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (n == -1 && errno == EINTR);

    return n;
}


ssize_t
vsb_fd_recv(int sock, void *data, size_t len, int flags, int *fd)
{
    struct iovec     iov;
    struct msghdr    msg;
    struct cmsghdr  *cm;
    vsb_fd_cmsg_t    u;
    ssize_t          n;
    int              got;

    *fd = -1;

    iov.iov_base = data;
    iov.iov_len = len;

    memset(&msg, 0, sizeof(msg));
    memset(&u, 0, sizeof(u));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof(u.buf);

    do {
        n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
    } while (n == -1 && errno == EINTR);

    if (n == -1) {
        return -1;
    }

    cm = CMSG_FIRSTHDR(&msg);
    if (cm == NULL || cm->cmsg_level != SOL_SOCKET
        || cm->cmsg_type != SCM_RIGHTS
        || cm->cmsg_len != CMSG_LEN(sizeof(int)))
    {
        return n;
    }

    memcpy(&got, CMSG_DATA(cm), sizeof(int));
    if (msg.msg_flags & MSG_CTRUNC) {
        close(got);                 /* more came than one: none is taken */
    } else {
        *fd = got;
    }

    return n;
}
