/*
 * MCP sessions (the Mcp-Session-Id of the Streamable HTTP transport) in
 * a shared memory zone, so that every worker of this gateway knows them:
 *
 *     veto_sandbox_mcp_sessions zone=name:size [max=N] [per_agent=N]
 *                               [idle=time] [lifetime=time];
 *
 * A session is bound to the tenant and agent of the token that opened it
 * (a SHA-256 of both is kept, a fixed 32 bytes): presented by anyone
 * else it does not exist.  It holds nothing else but its protocol
 * version: identity, scopes, policy and approvals are checked on every
 * request as on the REST API, so a session grants nothing.  Bounded in
 * count (max), per agent (per_agent: an agent's least recently used
 * session goes when it opens one more), in bytes (the zone: every entry
 * has the same size) and in time (idle since last use, lifetime since
 * opened).  A full zone refuses new sessions (503) rather than ending
 * other agents' live ones.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"

#include <openssl/evp.h>
#include <openssl/rand.h>


typedef struct {
    ngx_rbtree_t                 rbtree;
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  queue;     /* most recently used first */
    ngx_uint_t                   count;
} ngx_http_veto_sandbox_mcp_sh_t;


typedef struct {
    ngx_http_veto_sandbox_mcp_sh_t  *sh;
    ngx_slab_pool_t                 *shpool;
    ngx_uint_t                       max;
    ngx_uint_t                       per_agent;
    time_t                           idle;
    time_t                           lifetime;
} ngx_http_veto_sandbox_mcp_zone_t;


typedef struct {
    ngx_rbtree_node_t            node;      /* key: the id's first bytes */
    ngx_queue_t                  queue;
    u_char                       id[NGX_HTTP_VSB_MCP_SID_LEN / 2];
    u_char                       owner[32]; /* SHA-256 of tenant, agent */
    time_t                       opened;
    time_t                       used;
    u_char                       version;
    u_char                       initialized;
} ngx_http_veto_sandbox_mcp_node_t;


static ngx_int_t ngx_http_veto_sandbox_mcp_zone_init(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_veto_sandbox_mcp_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);


char *
ngx_http_veto_sandbox_mcp_sessions(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    u_char                            *p;
    ssize_t                            size;
    ngx_int_t                          n;
    ngx_str_t                         *value, name, s;
    ngx_uint_t                         i, max, per_agent;
    time_t                             idle, lifetime;
    ngx_shm_zone_t                    *zone;
    ngx_http_veto_sandbox_mcp_zone_t  *mz;

    if (vscf->mcp.sessions != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    size = 0;
    ngx_str_null(&name);
    max = 1024;
    per_agent = 16;
    idle = 3600;
    lifetime = 86400;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            name.data = value[i].data + 5;

            p = (u_char *) ngx_strchr(name.data, ':');
            if (p == NULL) {
                goto invalid;
            }

            name.len = p - name.data;

            s.data = p + 1;
            s.len = value[i].data + value[i].len - s.data;

            size = ngx_parse_size(&s);
            if (name.len == 0 || size == NGX_ERROR) {
                goto invalid;
            }

            if (size < (ssize_t) (8 * ngx_pagesize)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"%V\": zone \"%V\" is too small, at "
                                   "least %uz bytes", &cmd->name, &name,
                                   8 * ngx_pagesize);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "max=", 4) == 0
            || ngx_strncmp(value[i].data, "per_agent=", 10) == 0)
        {
            p = (u_char *) ngx_strchr(value[i].data, '=') + 1;

            n = ngx_atoi(p, value[i].data + value[i].len - p);
            if (n == NGX_ERROR || n == 0 || n > 1000000) {
                goto invalid;
            }

            if (value[i].data[0] == 'm') {
                max = (ngx_uint_t) n;
            } else {
                per_agent = (ngx_uint_t) n;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "idle=", 5) == 0
            || ngx_strncmp(value[i].data, "lifetime=", 9) == 0)
        {
            s.data = (u_char *) ngx_strchr(value[i].data, '=') + 1;
            s.len = value[i].data + value[i].len - s.data;

            n = ngx_parse_time(&s, 1);
            if (n == NGX_ERROR || n == 0) {
                goto invalid;
            }

            if (value[i].data[0] == 'i') {
                idle = (time_t) n;
            } else {
                lifetime = (time_t) n;
            }

            continue;
        }

        goto invalid;
    }

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" needs \"zone=name:size\"", &cmd->name);
        return NGX_CONF_ERROR;
    }

    zone = ngx_shared_memory_add(cf, &name, size,
                                 &ngx_http_veto_sandbox_module);
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (zone->data != NULL) {
        mz = zone->data;

        if (zone->init != ngx_http_veto_sandbox_mcp_zone_init) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\": zone \"%V\" is used for something "
                               "else", &cmd->name, &name);
            return NGX_CONF_ERROR;
        }

        if (mz->max != max || mz->per_agent != per_agent || mz->idle != idle
            || mz->lifetime != lifetime)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\": zone \"%V\" is already declared "
                               "with other bounds", &cmd->name, &name);
            return NGX_CONF_ERROR;
        }

    } else {
        mz = ngx_pcalloc(cf->pool, sizeof(ngx_http_veto_sandbox_mcp_zone_t));
        if (mz == NULL) {
            return NGX_CONF_ERROR;
        }

        mz->max = max;
        mz->per_agent = per_agent;
        mz->idle = idle;
        mz->lifetime = lifetime;

        zone->init = ngx_http_veto_sandbox_mcp_zone_init;
        zone->data = mz;
    }

    vscf->mcp.sessions = zone;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"%V\": invalid parameter \"%V\" (expected "
                       "zone=name:size, max=N, per_agent=N, idle=time, "
                       "lifetime=time)", &cmd->name, &value[i]);
    return NGX_CONF_ERROR;
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_veto_sandbox_mcp_zone_t  *omz = data;

    ngx_uint_t                         fresh;
    ngx_http_veto_sandbox_mcp_zone_t  *mz;

    mz = shm_zone->data;

    if (omz) {
        /* a reload keeps the sessions */
        mz->sh = omz->sh;
        mz->shpool = omz->shpool;
        return NGX_OK;
    }

    /* a full zone is answered with 503 and logged once per refusal */
    mz->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    mz->sh = ngx_http_veto_sandbox_shm_data(shm_zone,
                                   sizeof(ngx_http_veto_sandbox_mcp_sh_t),
                                   "veto_sandbox_mcp_sessions", &fresh);
    if (mz->sh == NULL) {
        return NGX_ERROR;
    }

    if (fresh) {
        ngx_rbtree_init(&mz->sh->rbtree, &mz->sh->sentinel,
                        ngx_http_veto_sandbox_mcp_insert);
        ngx_queue_init(&mz->sh->queue);
    }

    return NGX_OK;
}


static ngx_rbtree_key_t
ngx_http_veto_sandbox_mcp_key(u_char *id)
{
    return ((ngx_rbtree_key_t) id[0] << 24) | (id[1] << 16) | (id[2] << 8)
           | id[3];
}


static void
ngx_http_veto_sandbox_mcp_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t                 **p;
    ngx_http_veto_sandbox_mcp_node_t   *n, *t;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            n = (ngx_http_veto_sandbox_mcp_node_t *) node;
            t = (ngx_http_veto_sandbox_mcp_node_t *) temp;

            p = ngx_memcmp(n->id, t->id, sizeof(n->id)) < 0
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


static ngx_http_veto_sandbox_mcp_node_t *
ngx_http_veto_sandbox_mcp_find(ngx_http_veto_sandbox_mcp_zone_t *mz,
    u_char *id)
{
    ngx_int_t                          rc;
    ngx_rbtree_key_t                   key;
    ngx_rbtree_node_t                 *node, *sentinel;
    ngx_http_veto_sandbox_mcp_node_t  *n;

    key = ngx_http_veto_sandbox_mcp_key(id);

    node = mz->sh->rbtree.root;
    sentinel = mz->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (key != node->key) {
            node = key < node->key ? node->left : node->right;
            continue;
        }

        n = (ngx_http_veto_sandbox_mcp_node_t *) node;

        rc = ngx_memcmp(id, n->id, sizeof(n->id));

        if (rc == 0) {
            return n;
        }

        node = rc < 0 ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_veto_sandbox_mcp_delete(ngx_http_veto_sandbox_mcp_zone_t *mz,
    ngx_http_veto_sandbox_mcp_node_t *n)
{
    ngx_queue_remove(&n->queue);
    ngx_rbtree_delete(&mz->sh->rbtree, &n->node);
    ngx_slab_free_locked(mz->shpool, n);
    mz->sh->count--;
}


static ngx_uint_t
ngx_http_veto_sandbox_mcp_expired(ngx_http_veto_sandbox_mcp_zone_t *mz,
    ngx_http_veto_sandbox_mcp_node_t *n, time_t now)
{
    return n->used + mz->idle <= now || n->opened + mz->lifetime <= now;
}


/* SHA-256 of the tenant and the agent, each length-prefixed */
static ngx_int_t
ngx_http_veto_sandbox_mcp_owner(ngx_http_veto_sandbox_ctx_t *ctx,
    u_char *owner)
{
    u_char        lens[2 * NGX_INT64_LEN + 2], *p;
    unsigned int  len;
    EVP_MD_CTX   *md;
    ngx_int_t     rc;

    p = ngx_sprintf(lens, "%uz:%uz:", ctx->tenant.len, ctx->agent.len);

    md = EVP_MD_CTX_new();
    if (md == NULL) {
        return NGX_ERROR;
    }

    rc = (EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1
          && EVP_DigestUpdate(md, lens, p - lens) == 1
          && EVP_DigestUpdate(md, ctx->tenant.data, ctx->tenant.len) == 1
          && EVP_DigestUpdate(md, ctx->agent.data, ctx->agent.len) == 1
          && EVP_DigestFinal_ex(md, owner, &len) == 1
          && len == 32)
         ? NGX_OK : NGX_ERROR;

    EVP_MD_CTX_free(md);

    return rc;
}


ngx_int_t
ngx_http_veto_sandbox_mcp_session_create(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_uint_t version, u_char *id)
{
    u_char                             raw[NGX_HTTP_VSB_MCP_SID_LEN / 2];
    u_char                             owner[32];
    time_t                             now;
    ngx_uint_t                         mine;
    ngx_queue_t                       *q, *prev;
    ngx_http_veto_sandbox_mcp_node_t  *n, *oldest;
    ngx_http_veto_sandbox_mcp_zone_t  *mz;

    mz = zone->data;

    if (ngx_http_veto_sandbox_mcp_owner(ctx, owner) != NGX_OK
        || RAND_bytes(raw, sizeof(raw)) != 1)
    {
        return NGX_ERROR;
    }

    now = ngx_time();

    ngx_shmtx_lock(&mz->shpool->mutex);

    /* the expired go first; then this agent's oldest beyond per_agent */
    mine = 0;
    oldest = NULL;

    for (q = ngx_queue_last(&mz->sh->queue);
         q != ngx_queue_sentinel(&mz->sh->queue);
         q = prev)
    {
        prev = ngx_queue_prev(q);
        n = ngx_queue_data(q, ngx_http_veto_sandbox_mcp_node_t, queue);

        if (ngx_http_veto_sandbox_mcp_expired(mz, n, now)) {
            ngx_http_veto_sandbox_mcp_delete(mz, n);
            continue;
        }

        if (ngx_memcmp(n->owner, owner, sizeof(owner)) == 0) {
            if (oldest == NULL) {
                oldest = n;
            }

            mine++;
        }
    }

    if (mine >= mz->per_agent && oldest != NULL) {
        ngx_http_veto_sandbox_mcp_delete(mz, oldest);
    }

    n = NULL;

    if (mz->sh->count < mz->max
        && ngx_http_veto_sandbox_mcp_find(mz, raw) == NULL)
    {
        n = ngx_slab_alloc_locked(mz->shpool,
                                  sizeof(ngx_http_veto_sandbox_mcp_node_t));
    }

    if (n == NULL) {
        ngx_shmtx_unlock(&mz->shpool->mutex);

        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "veto_sandbox: MCP sessions zone \"%V\" is full "
                      "(%ui sessions at most): a new session was refused",
                      &zone->shm.name, mz->max);
        return NGX_BUSY;
    }

    ngx_memcpy(n->id, raw, sizeof(raw));
    ngx_memcpy(n->owner, owner, sizeof(owner));
    n->node.key = ngx_http_veto_sandbox_mcp_key(raw);
    n->opened = now;
    n->used = now;
    n->version = (u_char) version;
    n->initialized = 0;

    ngx_rbtree_insert(&mz->sh->rbtree, &n->node);
    ngx_queue_insert_head(&mz->sh->queue, &n->queue);
    mz->sh->count++;

    ngx_shmtx_unlock(&mz->shpool->mutex);

    ngx_hex_dump(id, raw, sizeof(raw));

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_mcp_session_use(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_veto_sandbox_ctx_t *ctx, ngx_str_t *id,
    ngx_uint_t what, ngx_uint_t *version, ngx_uint_t *initialized)
{
    u_char                             raw[NGX_HTTP_VSB_MCP_SID_LEN / 2];
    u_char                             owner[32];
    ngx_uint_t                         i;
    ngx_http_veto_sandbox_mcp_node_t  *n;
    ngx_http_veto_sandbox_mcp_zone_t  *mz;

    mz = zone->data;

    /* 32 lowercase hex digits, or no session of ours */
    if (id->len != NGX_HTTP_VSB_MCP_SID_LEN
        || !ngx_http_veto_sandbox_hex_lower(id->data, id->len))
    {
        return NGX_DECLINED;
    }

    for (i = 0; i < sizeof(raw); i++) {
        raw[i] = (u_char) ngx_hextoi(&id->data[2 * i], 2);
    }

    if (ngx_http_veto_sandbox_mcp_owner(ctx, owner) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_shmtx_lock(&mz->shpool->mutex);

    n = ngx_http_veto_sandbox_mcp_find(mz, raw);

    if (n != NULL && ngx_http_veto_sandbox_mcp_expired(mz, n, ngx_time())) {
        ngx_http_veto_sandbox_mcp_delete(mz, n);
        n = NULL;
    }

    /* another agent's session is no session at all */
    if (n == NULL || ngx_memcmp(n->owner, owner, sizeof(owner)) != 0) {
        ngx_shmtx_unlock(&mz->shpool->mutex);
        return NGX_DECLINED;
    }

    *version = n->version;

    if (what == NGX_HTTP_VSB_MCP_END) {
        ngx_http_veto_sandbox_mcp_delete(mz, n);
        ngx_shmtx_unlock(&mz->shpool->mutex);
        return NGX_OK;
    }

    if (what == NGX_HTTP_VSB_MCP_INITIALIZED) {
        n->initialized = 1;
    }

    if (initialized) {
        *initialized = n->initialized;
    }

    n->used = ngx_time();
    ngx_queue_remove(&n->queue);
    ngx_queue_insert_head(&mz->sh->queue, &n->queue);

    ngx_shmtx_unlock(&mz->shpool->mutex);

    return NGX_OK;
}
