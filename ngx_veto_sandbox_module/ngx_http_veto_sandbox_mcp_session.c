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
    ngx_http_veto_sandbox_shm_table_t  table;   /* first: the zone's data */
    ngx_uint_t                       max;
    ngx_uint_t                       per_agent;
    time_t                           idle;
    time_t                           lifetime;
} ngx_http_veto_sandbox_mcp_zone_t;


typedef struct {
    ngx_http_veto_sandbox_shm_entry_t  entry;   /* key: id */
    u_char                       id[NGX_HTTP_VSB_MCP_SID_LEN / 2];
    u_char                       owner[32]; /* SHA-256 of tenant, agent */
    time_t                       opened;
    time_t                       used;
    u_char                       version;
    u_char                       initialized;
} ngx_http_veto_sandbox_mcp_node_t;

_Static_assert(offsetof(ngx_http_veto_sandbox_mcp_node_t, id)
               == sizeof(ngx_http_veto_sandbox_shm_entry_t),
               "the id is the entry's key, right after it");


static ngx_int_t ngx_http_veto_sandbox_mcp_zone_init(ngx_shm_zone_t *shm_zone,
    void *data);


char *
ngx_http_veto_sandbox_mcp_sessions(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    u_char                            *p;
    ngx_int_t                          n;
    ngx_str_t                         *value, *zone_arg, s;
    ngx_uint_t                         i, max, per_agent;
    time_t                             idle, lifetime;
    ngx_shm_zone_t                    *zone;
    ngx_http_veto_sandbox_mcp_zone_t  *mz, *omz;

    if (vscf->mcp.sessions != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    zone_arg = NULL;
    max = 1024;
    per_agent = 16;
    idle = 3600;
    lifetime = 86400;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            zone_arg = &value[i];
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

    if (zone_arg == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" needs \"zone=name:size\"", &cmd->name);
        return NGX_CONF_ERROR;
    }

    mz = ngx_pcalloc(cf->pool, sizeof(ngx_http_veto_sandbox_mcp_zone_t));
    if (mz == NULL) {
        return NGX_CONF_ERROR;
    }

    mz->max = max;
    mz->per_agent = per_agent;
    mz->idle = idle;
    mz->lifetime = lifetime;

    zone = ngx_http_veto_sandbox_shm_zone(cf, &cmd->name, zone_arg,
                                          ngx_http_veto_sandbox_mcp_zone_init,
                                          mz);
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (zone->data != mz) {
        omz = zone->data;

        if (omz->max != max || omz->per_agent != per_agent
            || omz->idle != idle || omz->lifetime != lifetime)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\": zone \"%V\" is already declared "
                               "with other bounds", &cmd->name,
                               &zone->shm.name);
            return NGX_CONF_ERROR;
        }
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


/* a full zone is answered with 503 and logged once per refusal */
static ngx_int_t
ngx_http_veto_sandbox_mcp_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    return ngx_http_veto_sandbox_shm_table_init(shm_zone, data,
                                                "veto_sandbox_mcp_sessions");
}


static ngx_http_veto_sandbox_mcp_node_t *
ngx_http_veto_sandbox_mcp_find(ngx_http_veto_sandbox_mcp_zone_t *mz,
    u_char *id)
{
    return (ngx_http_veto_sandbox_mcp_node_t *)
               ngx_http_veto_sandbox_shm_find(&mz->table, id,
                                              NGX_HTTP_VSB_MCP_SID_LEN / 2);
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

    ngx_shmtx_lock(&mz->table.shpool->mutex);

    /* the expired go first; then this agent's oldest beyond per_agent */
    mine = 0;
    oldest = NULL;

    for (q = ngx_queue_last(&mz->table.sh->queue);
         q != ngx_queue_sentinel(&mz->table.sh->queue);
         q = prev)
    {
        prev = ngx_queue_prev(q);
        n = ngx_queue_data(q, ngx_http_veto_sandbox_mcp_node_t, entry.queue);

        if (ngx_http_veto_sandbox_mcp_expired(mz, n, now)) {
            ngx_http_veto_sandbox_shm_delete(&mz->table, &n->entry);
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
        ngx_http_veto_sandbox_shm_delete(&mz->table, &oldest->entry);
    }

    n = NULL;

    if (mz->table.sh->count < mz->max
        && ngx_http_veto_sandbox_mcp_find(mz, raw) == NULL)
    {
        n = ngx_slab_alloc_locked(mz->table.shpool,
                                  sizeof(ngx_http_veto_sandbox_mcp_node_t));
    }

    if (n == NULL) {
        ngx_shmtx_unlock(&mz->table.shpool->mutex);

        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "veto_sandbox: MCP sessions zone \"%V\" is full "
                      "(%ui sessions at most): a new session was refused",
                      &zone->shm.name, mz->max);
        return NGX_BUSY;
    }

    ngx_memcpy(n->id, raw, sizeof(raw));
    ngx_memcpy(n->owner, owner, sizeof(owner));
    n->opened = now;
    n->used = now;
    n->version = (u_char) version;
    n->initialized = 0;

    ngx_http_veto_sandbox_shm_add(&mz->table, &n->entry, sizeof(raw));

    ngx_shmtx_unlock(&mz->table.shpool->mutex);

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

    ngx_shmtx_lock(&mz->table.shpool->mutex);

    n = ngx_http_veto_sandbox_mcp_find(mz, raw);

    if (n != NULL && ngx_http_veto_sandbox_mcp_expired(mz, n, ngx_time())) {
        ngx_http_veto_sandbox_shm_delete(&mz->table, &n->entry);
        n = NULL;
    }

    /* another agent's session is no session at all */
    if (n == NULL || ngx_memcmp(n->owner, owner, sizeof(owner)) != 0) {
        ngx_shmtx_unlock(&mz->table.shpool->mutex);
        return NGX_DECLINED;
    }

    *version = n->version;

    if (what == NGX_HTTP_VSB_MCP_END) {
        ngx_http_veto_sandbox_shm_delete(&mz->table, &n->entry);
        ngx_shmtx_unlock(&mz->table.shpool->mutex);
        return NGX_OK;
    }

    if (what == NGX_HTTP_VSB_MCP_INITIALIZED) {
        n->initialized = 1;
    }

    if (initialized) {
        *initialized = n->initialized;
    }

    n->used = ngx_time();
    ngx_http_veto_sandbox_shm_used(&mz->table, &n->entry);

    ngx_shmtx_unlock(&mz->table.shpool->mutex);

    return NGX_OK;
}
