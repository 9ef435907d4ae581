/*
 * One descriptor passed with a few bytes over a Unix socket
 * (fdpass.c): the seccomp listener a workload's init hands to the
 * helper's supervisor, and a blob the image store hands to the confined
 * unpacking child.  Frames carrying several descriptors (the egress
 * proxy's control link) are egress_ctl.c's and egress_link.c's.
 */
#ifndef VSB_FDPASS_H
#define VSB_FDPASS_H

#include <sys/types.h>

/* Sends len bytes of data and, unless fd is -1, the descriptor fd with
 * them (SCM_RIGHTS) in one sendmsg (MSG_NOSIGNAL; EINTR tried again).
 * What sendmsg returned (a short count is the caller's to refuse), or
 * -1 with errno. */
ssize_t vsb_fd_send(int sock, const void *data, size_t len, int fd);

/* Receives up to len bytes into data and at most one descriptor
 * (close-on-exec) in one recvmsg with flags (EINTR tried again).  *fd is
 * that descriptor, or -1 when none came whole (a truncated or other
 * control message: anything that did come is closed).  What recvmsg
 * returned, or -1 with errno (*fd is -1 then). */
ssize_t vsb_fd_recv(int sock, void *data, size_t len, int flags, int *fd);

#endif
