/*
 * A shared memory cache of verified tokens ("veto_sandbox_jwt_cache
 * zone=name:size"), so that an agent sending the same token again does
 * not pay for a signature check.  Keyed by the SHA-256 of the whole token;
 * an entry holds the identity the token carried and lives until the
 * token's exp plus leeway.  Entries remember the configuration epoch they
 * were verified under: after a reload (new keys, issuer, audience) they
 * no longer match.  Least recently used entries go first when full.
 */

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_metrics.h"


typedef struct {
    ngx_http_veto_sandbox_shm_entry_t  entry;   /* key: hash */
    u_char                       hash[32];
    uint32_t                     epoch;
    time_t                       until;
    ngx_uint_t                   scopes;
    time_t                       iat;        /* revocation by agent */
    u_short                      agent_len;
    u_short                      tenant_len;
    u_short                      jti_len;
    u_char                       data[1];    /* agent, tenant, jti */
} ngx_http_veto_sandbox_cache_node_t;

_Static_assert(offsetof(ngx_http_veto_sandbox_cache_node_t, hash)
               == sizeof(ngx_http_veto_sandbox_shm_entry_t),
               "the hash is the entry's key, right after it");


static ngx_int_t ngx_http_veto_sandbox_cache_init(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_veto_sandbox_cache_lookup(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx);


static ngx_str_t  ngx_http_veto_sandbox_cache_directive =
    ngx_string("veto_sandbox_jwt_cache");


char *
ngx_http_veto_sandbox_cache_zone(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *value)
{
    ngx_shm_zone_t                     *zone;
    ngx_http_veto_sandbox_shm_table_t  *cache;

    if (ngx_strncmp(value->data, "zone=", 5) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_cache\": expected "
                           "\"zone=name:size\" or \"off\", not \"%V\"",
                           value);
        return NGX_CONF_ERROR;
    }

    cache = ngx_pcalloc(cf->pool, sizeof(ngx_http_veto_sandbox_shm_table_t));
    if (cache == NULL) {
        return NGX_CONF_ERROR;
    }

    zone = ngx_http_veto_sandbox_shm_zone(cf,
                                          &ngx_http_veto_sandbox_cache_directive,
                                          value,
                                          ngx_http_veto_sandbox_cache_init,
                                          cache);
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    vscf->cache_zone = zone;

    return NGX_CONF_OK;
}


/* a full cache is normal: old entries are evicted, nothing logged */
static ngx_int_t
ngx_http_veto_sandbox_cache_init(ngx_shm_zone_t *shm_zone, void *data)
{
    return ngx_http_veto_sandbox_shm_table_init(shm_zone, data,
                                                "veto_sandbox_jwt_cache");
}


static ngx_http_veto_sandbox_cache_node_t *
ngx_http_veto_sandbox_cache_find(ngx_http_veto_sandbox_shm_table_t *cache,
    u_char *hash)
{
    return (ngx_http_veto_sandbox_cache_node_t *)
               ngx_http_veto_sandbox_shm_find(cache, hash, 32);
}


/* Drops up to two expired entries from the cold end; with force, the
 * coldest entry whatever its age. */
static void
ngx_http_veto_sandbox_cache_expire(ngx_http_veto_sandbox_shm_table_t *cache,
    ngx_uint_t force)
{
    time_t                               now;
    ngx_uint_t                           i;
    ngx_http_veto_sandbox_cache_node_t  *n;

    now = ngx_time();

    for (i = 0; i < 2; i++) {

        n = (ngx_http_veto_sandbox_cache_node_t *)
                ngx_http_veto_sandbox_shm_coldest(cache);

        if (n == NULL || (!force && n->until > now)) {
            return;
        }

        force = 0;

        ngx_http_veto_sandbox_shm_delete(cache, &n->entry);
    }
}


/* a lookup, counted as a hit or a miss (metrics) */
ngx_int_t
ngx_http_veto_sandbox_cache_get(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t  rc;

    rc = ngx_http_veto_sandbox_cache_lookup(r, vscf, hash, ctx);

    ngx_http_veto_sandbox_metrics_jwt_cache(rc == NGX_OK);

    return rc;
}


static ngx_int_t
ngx_http_veto_sandbox_cache_lookup(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                              *p;
    ngx_http_veto_sandbox_shm_table_t   *cache;
    ngx_http_veto_sandbox_cache_node_t  *n;

    cache = vscf->cache_zone->data;

    /* room for the strings before taking the lock */
    p = ngx_pnalloc(r->pool, 3 * VSB_MAX_ID_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_shmtx_lock(&cache->shpool->mutex);

    n = ngx_http_veto_sandbox_cache_find(cache, hash);

    if (n == NULL) {
        ngx_shmtx_unlock(&cache->shpool->mutex);
        return NGX_DECLINED;
    }

    if (n->epoch != vscf->epoch || n->until <= ngx_time()) {
        ngx_http_veto_sandbox_shm_delete(cache, &n->entry);
        ngx_shmtx_unlock(&cache->shpool->mutex);
        return NGX_DECLINED;
    }

    ngx_http_veto_sandbox_shm_used(cache, &n->entry);

    ctx->agent.data = p;
    ctx->agent.len = n->agent_len;
    ctx->tenant.data = p + VSB_MAX_ID_LEN;
    ctx->tenant.len = n->tenant_len;
    ctx->jti.data = p + 2 * VSB_MAX_ID_LEN;
    ctx->jti.len = n->jti_len;
    ctx->scopes = n->scopes;
    ctx->iat = n->iat;

    ngx_memcpy(ctx->agent.data, n->data, n->agent_len);
    ngx_memcpy(ctx->tenant.data, n->data + n->agent_len, n->tenant_len);
    ngx_memcpy(ctx->jti.data, n->data + n->agent_len + n->tenant_len,
               n->jti_len);

    ngx_shmtx_unlock(&cache->shpool->mutex);

    return NGX_OK;
}


void
ngx_http_veto_sandbox_cache_put(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t until)
{
    size_t                               size;
    ngx_http_veto_sandbox_shm_table_t   *cache;
    ngx_http_veto_sandbox_cache_node_t  *n;

    cache = vscf->cache_zone->data;

    size = offsetof(ngx_http_veto_sandbox_cache_node_t, data)
           + ctx->agent.len + ctx->tenant.len + ctx->jti.len;

    ngx_shmtx_lock(&cache->shpool->mutex);

    n = ngx_http_veto_sandbox_cache_find(cache, hash);
    if (n != NULL) {
        ngx_http_veto_sandbox_shm_delete(cache, &n->entry);
    }

    ngx_http_veto_sandbox_cache_expire(cache, 0);

    n = ngx_slab_alloc_locked(cache->shpool, size);

    if (n == NULL) {
        ngx_http_veto_sandbox_cache_expire(cache, 1);

        n = ngx_slab_alloc_locked(cache->shpool, size);
        if (n == NULL) {
            ngx_shmtx_unlock(&cache->shpool->mutex);
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "veto_sandbox: token cache \"%V\" is full",
                          &vscf->cache_zone->shm.name);
            return;
        }
    }

    ngx_memcpy(n->hash, hash, 32);
    n->epoch = vscf->epoch;
    n->until = until;
    n->scopes = ctx->scopes;
    n->iat = ctx->iat;
    n->agent_len = (u_short) ctx->agent.len;
    n->tenant_len = (u_short) ctx->tenant.len;
    n->jti_len = (u_short) ctx->jti.len;

    ngx_memcpy(n->data, ctx->agent.data, ctx->agent.len);
    ngx_memcpy(n->data + ctx->agent.len, ctx->tenant.data, ctx->tenant.len);
    /* a token without "jti" leaves jti.data NULL: memcpy(d, NULL, 0) is UB */
    if (ctx->jti.len) {
        ngx_memcpy(n->data + ctx->agent.len + ctx->tenant.len, ctx->jti.data,
                   ctx->jti.len);
    }

    ngx_http_veto_sandbox_shm_add(cache, &n->entry, 32);

    ngx_shmtx_unlock(&cache->shpool->mutex);
}
