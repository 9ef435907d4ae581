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
    ngx_rbtree_t                 rbtree;
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  queue;
} ngx_http_veto_sandbox_cache_sh_t;


typedef struct {
    ngx_http_veto_sandbox_cache_sh_t  *sh;
    ngx_slab_pool_t                   *shpool;
} ngx_http_veto_sandbox_cache_t;


typedef struct {
    ngx_rbtree_node_t            node;       /* key: first bytes of hash */
    ngx_queue_t                  queue;
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


static ngx_int_t ngx_http_veto_sandbox_cache_init(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_veto_sandbox_cache_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static ngx_http_veto_sandbox_cache_node_t *ngx_http_veto_sandbox_cache_find(
    ngx_http_veto_sandbox_cache_t *cache, u_char *hash);
static void ngx_http_veto_sandbox_cache_expire(
    ngx_http_veto_sandbox_cache_t *cache, ngx_uint_t force);
static ngx_int_t ngx_http_veto_sandbox_cache_lookup(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx);


char *
ngx_http_veto_sandbox_cache_zone(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *value)
{
    u_char                         *p;
    ssize_t                         size;
    ngx_str_t                       name, s;
    ngx_shm_zone_t                 *zone;
    ngx_http_veto_sandbox_cache_t  *cache;

    if (ngx_strncmp(value->data, "zone=", 5) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_cache\": expected "
                           "\"zone=name:size\" or \"off\", not \"%V\"",
                           value);
        return NGX_CONF_ERROR;
    }

    name.data = value->data + 5;

    p = (u_char *) ngx_strchr(name.data, ':');
    if (p == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_cache\": no zone size in "
                           "\"%V\"", value);
        return NGX_CONF_ERROR;
    }

    name.len = p - name.data;

    s.data = p + 1;
    s.len = value->data + value->len - s.data;

    size = ngx_parse_size(&s);

    if (name.len == 0 || size == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_cache\": invalid zone "
                           "\"%V\"", value);
        return NGX_CONF_ERROR;
    }

    if (size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_cache\": zone \"%V\" is too "
                           "small, at least %uz bytes", &name,
                           8 * ngx_pagesize);
        return NGX_CONF_ERROR;
    }

    zone = ngx_shared_memory_add(cf, &name, size,
                                 &ngx_http_veto_sandbox_module);
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (zone->data == NULL) {
        cache = ngx_pcalloc(cf->pool, sizeof(ngx_http_veto_sandbox_cache_t));
        if (cache == NULL) {
            return NGX_CONF_ERROR;
        }

        zone->init = ngx_http_veto_sandbox_cache_init;
        zone->data = cache;
    }

    vscf->cache_zone = zone;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_cache_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_veto_sandbox_cache_t  *ocache = data;

    ngx_uint_t                      fresh;
    ngx_http_veto_sandbox_cache_t  *cache;

    cache = shm_zone->data;

    if (ocache) {
        cache->sh = ocache->sh;
        cache->shpool = ocache->shpool;
        return NGX_OK;
    }

    /* a full cache is normal: old entries are evicted, nothing logged */
    cache->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    cache->sh = ngx_http_veto_sandbox_shm_data(shm_zone,
                                   sizeof(ngx_http_veto_sandbox_cache_sh_t),
                                   "veto_sandbox_jwt_cache", &fresh);
    if (cache->sh == NULL) {
        return NGX_ERROR;
    }

    if (fresh) {
        ngx_rbtree_init(&cache->sh->rbtree, &cache->sh->sentinel,
                        ngx_http_veto_sandbox_cache_insert);
        ngx_queue_init(&cache->sh->queue);
    }

    return NGX_OK;
}


static ngx_rbtree_key_t
ngx_http_veto_sandbox_cache_key(u_char *hash)
{
    return ((ngx_rbtree_key_t) hash[0] << 24) | (hash[1] << 16)
           | (hash[2] << 8) | hash[3];
}


static void
ngx_http_veto_sandbox_cache_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t                   **p;
    ngx_http_veto_sandbox_cache_node_t   *n, *t;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            n = (ngx_http_veto_sandbox_cache_node_t *) node;
            t = (ngx_http_veto_sandbox_cache_node_t *) temp;

            p = ngx_memcmp(n->hash, t->hash, 32) < 0
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


static ngx_http_veto_sandbox_cache_node_t *
ngx_http_veto_sandbox_cache_find(ngx_http_veto_sandbox_cache_t *cache,
    u_char *hash)
{
    ngx_int_t                            rc;
    ngx_rbtree_key_t                     key;
    ngx_rbtree_node_t                   *node, *sentinel;
    ngx_http_veto_sandbox_cache_node_t  *n;

    key = ngx_http_veto_sandbox_cache_key(hash);

    node = cache->sh->rbtree.root;
    sentinel = cache->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (key < node->key) {
            node = node->left;
            continue;
        }

        if (key > node->key) {
            node = node->right;
            continue;
        }

        n = (ngx_http_veto_sandbox_cache_node_t *) node;

        rc = ngx_memcmp(hash, n->hash, 32);

        if (rc == 0) {
            return n;
        }

        node = rc < 0 ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_veto_sandbox_cache_delete(ngx_http_veto_sandbox_cache_t *cache,
    ngx_http_veto_sandbox_cache_node_t *n)
{
    ngx_queue_remove(&n->queue);
    ngx_rbtree_delete(&cache->sh->rbtree, &n->node);
    ngx_slab_free_locked(cache->shpool, n);
}


/* Drops up to two expired entries from the cold end; with force, the
 * coldest entry whatever its age. */
static void
ngx_http_veto_sandbox_cache_expire(ngx_http_veto_sandbox_cache_t *cache,
    ngx_uint_t force)
{
    time_t                               now;
    ngx_uint_t                           i;
    ngx_queue_t                         *q;
    ngx_http_veto_sandbox_cache_node_t  *n;

    now = ngx_time();

    for (i = 0; i < 2; i++) {

        if (ngx_queue_empty(&cache->sh->queue)) {
            return;
        }

        q = ngx_queue_last(&cache->sh->queue);
        n = ngx_queue_data(q, ngx_http_veto_sandbox_cache_node_t, queue);

        if (!force && n->until > now) {
            return;
        }

        force = 0;

        ngx_http_veto_sandbox_cache_delete(cache, n);
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
    ngx_http_veto_sandbox_cache_t       *cache;
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
        ngx_http_veto_sandbox_cache_delete(cache, n);
        ngx_shmtx_unlock(&cache->shpool->mutex);
        return NGX_DECLINED;
    }

    ngx_queue_remove(&n->queue);
    ngx_queue_insert_head(&cache->sh->queue, &n->queue);

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
    ngx_http_veto_sandbox_cache_t       *cache;
    ngx_http_veto_sandbox_cache_node_t  *n;

    cache = vscf->cache_zone->data;

    size = offsetof(ngx_http_veto_sandbox_cache_node_t, data)
           + ctx->agent.len + ctx->tenant.len + ctx->jti.len;

    ngx_shmtx_lock(&cache->shpool->mutex);

    n = ngx_http_veto_sandbox_cache_find(cache, hash);
    if (n != NULL) {
        ngx_http_veto_sandbox_cache_delete(cache, n);
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
    n->node.key = ngx_http_veto_sandbox_cache_key(hash);
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

    ngx_rbtree_insert(&cache->sh->rbtree, &n->node);
    ngx_queue_insert_head(&cache->sh->queue, &n->queue);

    ngx_shmtx_unlock(&cache->shpool->mutex);
}
