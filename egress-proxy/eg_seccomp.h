/*
 * The proxy's own seccomp filter: an allowlist of what an epoll proxy
 * with c-ares needs once started (sockets of the inet families and
 * netlink route, no file opens, no exec, no process creation).
 * Anything else fails with EPERM; exec kills the process.
 */
#ifndef EG_SECCOMP_H
#define EG_SECCOMP_H

#include <stddef.h>

int eg_seccomp_install(char *err, size_t errlen);

#endif
