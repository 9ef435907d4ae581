/*
 * The helper's side of network egress (allowlist mode), for the helper's
 * create/destroy ops to call:
 *
 *   1. vsb_egress_netns_setup(): inside the sandbox's network namespace
 *      (which has loopback only, and keeps it: no veth, no link out),
 *      add default routes through lo, load the nftables ruleset (TCP to
 *      80/443 redirected to the proxy's transparent socket; everything
 *      else that is not loopback rejected at once), and create the
 *      listening sockets the proxy will serve there.
 *   2. vsb_egress_add(): hand those sockets (SCM_RIGHTS), the allowlist,
 *      the askable list and the limits to the egress proxy.  The helper
 *      (egress.c) keeps its copies for the sandbox's life, to hand them
 *      to a restarted proxy, and closes them at destroy.
 *   3. Give the workload vsb_egress_env() and vsb_egress_resolv_conf().
 *   4. At the end of each exec: vsb_egress_stats() (a reply is a barrier:
 *      every record the proxy made before it has arrived), then
 *      vsb_egress_take_events() for the exec's "network" field.
 *   5. On destroy: vsb_egress_remove() (closes every socket and
 *      connection of the sandbox in the proxy, confirmed by its reply);
 *      the namespace's removal takes routes and rules with it.
 *   6. On helper start: vsb_egress_sync() with the live sandboxes.
 *
 * Calls on a link block for at most the link's timeout: for tools and
 * tests (egress-linkctl).  The helper itself speaks the same protocol
 * without blocking (egress_ctl.c).  See docs/egress.md.
 */
#ifndef VSB_EGRESS_LINK_H
#define VSB_EGRESS_LINK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "vsb_egress_protocol.h"

#define VSB_EGRESS_NFT_PATH        "/usr/sbin/nft"
#define VSB_EGRESS_MAX_EVENT_BYTES (1024 * 1024)   /* kept in the link */

typedef struct {
    int   http_fd;            /* 127.0.0.1:3128  explicit proxy */
    int   transparent_fd;     /* 127.0.0.1:3129  redirected 80/443 */
    int   transparent6_fd;    /* [::1]:3129, -1 without IPv6 */
    int   dns_udp_fd;         /* 127.0.0.53:53 */
    int   dns_tcp_fd;         /* 127.0.0.53:53 */
} vsb_egress_socks_t;

typedef struct {
    uint32_t   max_connections;       /* 0: the proxy's default */
    uint64_t   max_bytes_out;
    uint64_t   max_bytes_in;
    uint32_t   connect_timeout_ms;
    uint32_t   idle_timeout_ms;
} vsb_egress_limits_t;

typedef struct {
    const char         *sandbox;
    const char         *tenant;       /* add: the proxy's fair shares */
    const char *const  *allow;        /* "host[:port]", "*.suffix[:port]" */
    size_t              nallow;
    const char *const  *ask;          /* askable, not allowed */
    size_t              nask;
    vsb_egress_limits_t limits;
    const char *const  *creds;        /* "name=placeholder"; NULL: none */
    size_t              ncreds;
} vsb_egress_policy_t;

typedef struct vsb_egress_link_s  vsb_egress_link_t;

/* Namespace side.  The calling thread enters netns_fd and returns to its
 * own namespace before this returns.  nft_path NULL: VSB_EGRESS_NFT_PATH.
 * On failure every socket is closed; the namespace may hold part of the
 * configuration (the caller destroys it). */
int vsb_egress_netns_setup(int netns_fd, const char *nft_path,
    vsb_egress_socks_t *socks, char *err, size_t errlen);
void vsb_egress_socks_init(vsb_egress_socks_t *socks);
void vsb_egress_socks_close(vsb_egress_socks_t *socks);

/* The ruleset loaded by vsb_egress_netns_setup() (for docs and tests). */
const char *vsb_egress_nft_ruleset(void);
/* NULL-terminated "NAME=value" strings for the workload's environment. */
const char *const *vsb_egress_env(void);
/* The sandbox's /etc/resolv.conf. */
const char *vsb_egress_resolv_conf(void);

/* Proxy side.  Each call returns 0 on an ok reply, -1 otherwise (err says
 * why: I/O, timeout, or the proxy's error name and detail).  *reply (when
 * reply is non-NULL) gets the reply object, ok or not, caller decrefs. */
vsb_egress_link_t *vsb_egress_connect(const char *path, int timeout_ms,
    char *err, size_t errlen);
void vsb_egress_close(vsb_egress_link_t *l);
int vsb_egress_fd(const vsb_egress_link_t *l);

/* Whether the proxy takes this as a sandbox's tenant (1 .. 128 bytes of
 * printable ASCII without spaces, VSB_EGRESS_MAX_TENANT). */
int vsb_egress_tenant_ok(const char *tenant);
int vsb_egress_ping(vsb_egress_link_t *l, json_t **reply, char *err,
    size_t errlen);
int vsb_egress_add(vsb_egress_link_t *l, const vsb_egress_policy_t *p,
    const vsb_egress_socks_t *socks, json_t **reply, char *err,
    size_t errlen);
int vsb_egress_update(vsb_egress_link_t *l, const vsb_egress_policy_t *p,
    json_t **reply, char *err, size_t errlen);
int vsb_egress_remove(vsb_egress_link_t *l, const char *sandbox,
    json_t **reply, char *err, size_t errlen);
int vsb_egress_sync(vsb_egress_link_t *l, const char *const *sandboxes,
    size_t n, json_t **reply, char *err, size_t errlen);
int vsb_egress_stats(vsb_egress_link_t *l, const char *sandbox,
    json_t **reply, char *err, size_t errlen);

/* Sends any request object (tests, future ops); fds may be NULL. */
int vsb_egress_request(vsb_egress_link_t *l, json_t *req, const int *fds,
    size_t nfds, json_t **reply, char *err, size_t errlen);

/* Reads events for up to timeout_ms (0: only what is already there). */
int vsb_egress_poll_events(vsb_egress_link_t *l, int timeout_ms, char *err,
    size_t errlen);
/* The events received so far (array, caller decrefs); the link's store
 * is emptied.  *dropped: events the link dropped (store over
 * VSB_EGRESS_MAX_EVENT_BYTES) plus those the proxy reported dropped. */
json_t *vsb_egress_take_events(vsb_egress_link_t *l, uint64_t *dropped);

#endif
