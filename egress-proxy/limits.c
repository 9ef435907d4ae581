/*
 * Limit accounting.  Byte budgets are checked before a read is
 * forwarded, so a sandbox never moves more than its budget plus nothing:
 * the relay reads at most what is left.
 */
#include <stdio.h>

#include "eg_limits.h"


uint64_t
eg_limits_allow_bytes(const eg_limits_t *l, const eg_usage_t *u,
    eg_dir_t dir, uint64_t want)
{
    uint64_t  max = dir == EG_DIR_OUT ? l->max_bytes_out : l->max_bytes_in;
    uint64_t  used = dir == EG_DIR_OUT ? u->bytes_out : u->bytes_in;

    if (used >= max) {
        return 0;
    }
    return max - used < want ? max - used : want;
}


void
eg_limits_account(eg_usage_t *u, eg_dir_t dir, uint64_t n)
{
    if (dir == EG_DIR_OUT) {
        u->bytes_out += n;
    } else {
        u->bytes_in += n;
    }
}


void
eg_limits_conn_release(eg_usage_t *u)
{
    if (u->connections > 0) {
        u->connections--;
    }
}


/* The guaranteed share of one of n members of a pool of cap, reserve
 * held back: max(floor, (cap - reserve) / n). */
static unsigned
eg_share_of(unsigned cap, unsigned reserve, unsigned n, unsigned floor)
{
    unsigned  share = (cap > reserve ? cap - reserve : 0) / (n ? n : 1);

    return share < floor ? floor : share;
}


int
eg_share_admit(const eg_share_t *s, char *why, size_t len)
{
    unsigned  share, reserve, sshare, sreserve, room;

    if (s->used >= s->pool) {
        snprintf(why, len, "the proxy's connection pool is full "
                 "(max_connections %u)", s->pool);
        return -1;
    }

    reserve = (unsigned) ((uint64_t) s->pool * s->reserve_percent / 100);
    share = eg_share_of(s->pool, reserve, s->tenants, s->tenant_floor);

    if (s->tenant_used >= share && s->pool - s->used <= reserve) {
        snprintf(why, len, "tenant share exhausted: the tenant holds %u "
                 "connections, its fair share is %u (%u tenants active) and "
                 "the last %u of the proxy's %u are kept for tenants below "
                 "theirs", s->tenant_used, share, s->tenants, reserve,
                 s->pool);
        return -1;
    }

    if (s->sandboxes > 1) {
        sreserve = (unsigned) ((uint64_t) share * s->reserve_percent / 100);
        sshare = eg_share_of(share, sreserve, s->sandboxes, s->sandbox_floor);
        room = share > s->tenant_used ? share - s->tenant_used : 0;
        if (s->sandbox_used >= sshare && room <= sreserve) {
            snprintf(why, len, "sandbox share exhausted: the sandbox holds "
                     "%u of its tenant's %u connections, its share is %u "
                     "(%u sandboxes of the tenant active)", s->sandbox_used,
                     s->tenant_used, sshare, s->sandboxes);
            return -1;
        }
    }
    return 0;
}
