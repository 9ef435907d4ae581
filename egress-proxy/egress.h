/*
 * The egress proxy's core types: the event loop's handles, sandboxes,
 * listeners and connections.  Each concern has its own file and header;
 * this one holds what they all share.
 */
#ifndef EGRESS_H
#define EGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "eg_addr.h"
#include "eg_allow.h"
#include "eg_config.h"
#include "eg_cred.h"
#include "eg_limits.h"
#include "vsb_loop.h"          /* the loop the helper shares */

#define EG_SANDBOX_ID_MAX   64
#define EG_TENANT_MAX       128       /* = the helper's VSB_MAX_ID_LEN */
#define EG_MAX_LISTENERS    8         /* sockets handed over per sandbox */

typedef enum {
    EG_L_HTTP = 0,                  /* explicit HTTP proxy and CONNECT */
    EG_L_TRANSPARENT,               /* redirected TCP 80/443 */
    EG_L_DNS_UDP,
    EG_L_DNS_TCP,
    EG_L_KINDS
} eg_listen_kind_t;

typedef struct eg_sandbox_s  eg_sandbox_t;
typedef struct eg_tenant_s   eg_tenant_t;
typedef struct eg_conn_s     eg_conn_t;
typedef struct eg_dnsconn_s  eg_dnsconn_t;

typedef struct {
    vsb_event_t        h;
    eg_listen_kind_t   kind;
    eg_sandbox_t      *sb;
    int                paused;      /* out of descriptors: retry later */
} eg_listener_t;

/* A tenant as the proxy knows it: the sandboxes the helper registered
 * for it, and the connections they hold (fair shares, limits.c). */
struct eg_tenant_s {
    char               id[EG_TENANT_MAX + 1];
    unsigned           nsandboxes;  /* registered: the tenant lives while > 0 */
    unsigned           active;      /* of them, with a connection open */
    unsigned           connections; /* open now, all its sandboxes */
    eg_tenant_t       *next;
};

struct eg_sandbox_s {
    char               id[EG_SANDBOX_ID_MAX + 1];
    eg_tenant_t       *tenant;
    unsigned           heads;       /* connections still sending their head */
    eg_allow_entry_t  *allow;
    size_t             nallow;
    eg_allow_entry_t  *ask;
    size_t             nask;
    eg_limits_t        limits;
    eg_usage_t         usage;
    eg_cred_att_t      creds[EG_CRED_PER_SANDBOX];  /* attached */
    size_t             ncreds;
    /* the last EG_CRED_PER_SANDBOX detached (the oldest goes first):
     * their placeholders are refused, and recorded, wherever they are
     * sent (until the proxy restarts; they carry nothing either way) */
    eg_cred_att_t      detached[EG_CRED_PER_SANDBOX];
    size_t             ndetached;
    /* agents' own secrets (eg_cred_t.agent), each referred to by creds or
     * detached; a value not in creds is wiped at once (eg_ctl_own_gc) */
    eg_cred_t         *own[EG_CRED_OWN_MAX];
    size_t             nown;
    uint64_t           injections;          /* credential headers added */
    uint64_t           placeholders_refused;/* sent where not bound */

    eg_listener_t      listeners[EG_MAX_LISTENERS];
    unsigned           nlisteners;

    eg_conn_t         *conns;       /* proxied connections */
    eg_dnsconn_t      *dnsconns;    /* DNS over TCP */
    eg_sandbox_t      *next;
};

/* The proxy's whole state (one process, one thread). */
typedef struct {
    eg_config_t        cf;
    eg_sandbox_t      *sandboxes;
    unsigned           nsandboxes;
    unsigned           nconns;      /* all proxied connections */
    eg_tenant_t       *tenants;
    unsigned           active_tenants;  /* with a connection open */
    volatile sig_atomic_t  quit;    /* vsb_loop_run() returns */
    eg_addr_t         *local_addrs; /* the host's own addresses */
    size_t             nlocal;
    uint64_t           local_refreshed_ms;
} eg_proxy_t;

extern eg_proxy_t  eg_proxy;

/* loop.c: the proxy's part of the shared loop (vsb_loop.h) */
int eg_loop_init(void);
/* Frees p after the current turn (the caller, or a later handler of the
 * turn, may still hold it; its events are deleted from the loop first). */
void eg_loop_defer_free(void *p);
uint64_t eg_wall_ms(void);
int eg_loop_run(void);
void eg_loop_cleanup(void);

/* sandbox.c */
eg_sandbox_t *eg_sandbox_find(const char *id);
void eg_sandbox_unlink_free(eg_sandbox_t *sb, unsigned *closed_conns,
    unsigned *closed_listeners);
eg_tenant_t *eg_tenant_get(const char *id);     /* find or create */
void eg_tenant_put(eg_tenant_t *t);             /* a sandbox is gone */
int eg_sandbox_may_dial(const eg_addr_t *a, const char **why);
/* Is host:port in sb's allowlist, or bound to a credential it holds?
 * (port 0: any port, as the DNS stub asks) */
/* sb's agents' secrets (own): a value no attachment holds is wiped, a
 * secret neither attached nor detached is freed; all: every one. */
void eg_sandbox_own_gc(eg_sandbox_t *sb, int all);
int eg_sandbox_allows(const eg_sandbox_t *sb, const char *host,
    uint16_t port);
void eg_sandbox_refresh_local(void);

#endif
