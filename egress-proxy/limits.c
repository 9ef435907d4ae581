/*
 * Limit accounting.  Byte budgets are checked before a read is
 * forwarded, so a sandbox never moves more than its budget plus nothing:
 * the relay reads at most what is left.
 */
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


int
eg_limits_conn_take(const eg_limits_t *l, eg_usage_t *u)
{
    if (u->connections >= l->max_connections) {
        return -1;
    }
    u->connections++;
    return 0;
}


void
eg_limits_conn_release(eg_usage_t *u)
{
    if (u->connections > 0) {
        u->connections--;
    }
}
