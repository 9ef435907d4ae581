/*
 * A listening Unix socket's first steps (unixsock.c), for the helper's
 * socket (server.c) and the egress proxy's control socket
 * (egress-proxy/control.c; the proxy compiles this file in): a stale
 * socket at the path is replaced, anything else there is refused.  Its
 * owner, mode and backlog are each caller's own.
 */
#ifndef VSB_UNIXSOCK_H
#define VSB_UNIXSOCK_H

#include <stddef.h>

/* A SOCK_STREAM socket (non-blocking, close-on-exec) bound at path, a
 * socket found there unlinked first.  The descriptor, or -1 with err
 * naming the step (path not a socket, too long, lstat, unlink, socket,
 * bind); nothing is left at path then. */
int vsb_unix_bind(const char *path, char *err, size_t errlen);

#endif
