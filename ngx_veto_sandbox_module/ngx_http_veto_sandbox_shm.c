/*
 * A shared memory zone's data, made once: what the zone init handlers of
 * the token cache, the MCP sessions, the metrics table and the webhook
 * counters share.  A reload's previous data stays each caller's to take
 * or refuse (its layout is the caller's to judge).
 */

#include "ngx_http_veto_sandbox_base.h"


void *
ngx_http_veto_sandbox_shm_data(ngx_shm_zone_t *shm_zone, size_t size,
    const char *directive, ngx_uint_t *fresh)
{
    size_t            len;
    void             *data;
    ngx_slab_pool_t  *shpool;

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    *fresh = 0;

    if (shm_zone->shm.exists) {
        /* a new binary (USR2) found the running one's zone */
        return shpool->data;
    }

    data = ngx_slab_calloc(shpool, size);
    if (data == NULL) {
        return NULL;
    }

    shpool->data = data;

    len = sizeof(" in  zone \"\"") + ngx_strlen(directive)
          + shm_zone->shm.name.len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NULL;
    }

    ngx_sprintf(shpool->log_ctx, " in %s zone \"%V\"%Z", directive,
                &shm_zone->shm.name);

    /* each owner says what a full zone means (an eviction, a 503) */
    shpool->log_nomem = 0;

    *fresh = 1;

    return data;
}
