/*
 * Per-sandbox limits and usage: concurrent connections, bytes each way
 * (totals over the sandbox's life), connect and idle timeouts.  The
 * proxy's config holds ceilings; a sandbox's limits can only be lower.
 */
#ifndef EG_LIMITS_H
#define EG_LIMITS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t   max_connections;
    uint64_t   max_bytes_out;       /* sandbox -> world */
    uint64_t   max_bytes_in;        /* world -> sandbox */
    uint32_t   connect_timeout_ms;
    uint32_t   idle_timeout_ms;
} eg_limits_t;

typedef struct {
    uint32_t   connections;         /* open now */
    uint64_t   bytes_out;
    uint64_t   bytes_in;
    uint64_t   attempts;
    uint64_t   refused;
} eg_usage_t;

typedef enum {
    EG_DIR_OUT = 0,
    EG_DIR_IN
} eg_dir_t;

/* How many of want bytes the sandbox may still move in dir (0: none). */
uint64_t eg_limits_allow_bytes(const eg_limits_t *l, const eg_usage_t *u,
    eg_dir_t dir, uint64_t want);
void eg_limits_account(eg_usage_t *u, eg_dir_t dir, uint64_t n);
void eg_limits_conn_release(eg_usage_t *u);

/*
 * Fair shares of the proxy's connections (docs/egress.md: Fair shares).
 * reserve = pool * reserve_percent / 100.  Every tenant with a
 * connection open (the asking one counted) is guaranteed share =
 * max(tenant_floor, (pool - reserve) / tenants); beyond it a tenant may
 * borrow only while more than reserve connections are free, so the
 * reserve is always there for a tenant below its share (one that just
 * arrived).  Within a tenant the same rule again between its active
 * sandboxes, over the tenant's share.
 */
typedef struct {
    unsigned   pool;                /* max_connections */
    unsigned   used;                /* open, every tenant */
    unsigned   tenants;             /* active, the asking one counted */
    unsigned   tenant_used;
    unsigned   sandboxes;           /* the tenant's active, asker counted */
    unsigned   sandbox_used;
    unsigned   tenant_floor;
    unsigned   sandbox_floor;
    unsigned   reserve_percent;
} eg_share_t;

/* 0: one more connection may open; -1: refused, the reason in why. */
int eg_share_admit(const eg_share_t *s, char *why, size_t len);

#endif
