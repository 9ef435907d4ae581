/*
 * The proxy's own name resolution: c-ares (the standard asynchronous
 * resolver) driven by the epoll loop, so a slow or dead DNS server never
 * blocks the proxy.  Servers: the host's /etc/resolv.conf, or the
 * "resolver" config key.  /etc/hosts and search domains are not used:
 * a sandbox's name means exactly that name in DNS.
 */
#ifndef EG_RESOLVE_H
#define EG_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "eg_addr.h"

#define EG_RESOLVE_MAX_ADDRS  16

typedef struct eg_resolve_req_s  eg_resolve_req_t;

/* err is NULL on success (n >= 1), else what failed. */
typedef void (*eg_resolve_cb)(void *arg, const eg_addr_t *addrs, size_t n,
    const char *err);

int eg_resolve_init(const char *servers, uint32_t timeout_ms, char *err,
    size_t errlen);
void eg_resolve_shutdown(void);

/* Starts a lookup of A and AAAA.  cb runs from the loop, or before this
 * returns when c-ares answers at once; then *out is NULL.  -1 when out
 * of memory (cb does not run). */
int eg_resolve_start(const char *name, eg_resolve_cb cb, void *arg,
    eg_resolve_req_t **out);
/* The callback will not run; the request is freed when c-ares is done. */
void eg_resolve_cancel(eg_resolve_req_t *r);

/* For the loop: ms until c-ares needs a timeout check (-1: none). */
int eg_resolve_next_timeout_ms(void);
void eg_resolve_process_timeouts(void);

#endif
