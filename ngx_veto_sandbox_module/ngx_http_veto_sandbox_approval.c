/*
 * Veto Sandbox: approval records and their state machine in Redis.
 * Contract: ngx_http_veto_sandbox_approval.h and docs/approvals.md.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <openssl/rand.h>

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_approval.h"


static ngx_int_t ngx_http_veto_sandbox_approval_call(
    ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_approval_op_e op, int numkeys, int argc,
    ngx_str_t *args);


/*
 * The Lua scripts (lua/approval_*.lua, after lua/prelude.lua).  Each one
 * is the whole transition, so it is atomic: Redis runs one script at a
 * time.  The state of a record is checked against Redis' own clock on
 * every call ("lazy expiry"): a pending or approved record past
 * expires_ms becomes expired the first time anyone looks at it, and
 * that call reports the transition (third element "1").
 * The tests in t/redis/lua/ run the same files directly.
 */
NGX_HTTP_VSB_LUA(approval_create);
NGX_HTTP_VSB_LUA(approval_approve);
NGX_HTTP_VSB_LUA(approval_deny);
NGX_HTTP_VSB_LUA(approval_consume);
NGX_HTTP_VSB_LUA(approval_expire);
NGX_HTTP_VSB_LUA(approval_get);
NGX_HTTP_VSB_LUA(approval_list);

/* in the order of ngx_http_veto_sandbox_approval_op_e */
ngx_http_veto_sandbox_redis_script_t  ngx_http_veto_sandbox_approval_scripts[]
    = {
    NGX_HTTP_VSB_SCRIPT(approval_create),
    NGX_HTTP_VSB_SCRIPT(approval_approve),
    NGX_HTTP_VSB_SCRIPT(approval_deny),
    NGX_HTTP_VSB_SCRIPT(approval_consume),
    NGX_HTTP_VSB_SCRIPT(approval_expire),
    NGX_HTTP_VSB_SCRIPT(approval_get),
    NGX_HTTP_VSB_SCRIPT(approval_list),
    { NULL, NULL, "" }
};


static ngx_str_t  ngx_http_veto_sandbox_approval_codes[] = {
    ngx_string("ok"),
    ngx_string("not_found"),
    ngx_string("expired"),
    ngx_string("not_pending"),
    ngx_string("not_approved"),
    ngx_string("self_approval"),
    ngx_string("already_approved"),
    ngx_string("reason_required"),
    ngx_string("mismatch"),
    ngx_string("exists"),
    ngx_string("full"),
    ngx_string("agent_full"),
    ngx_null_string
};


ngx_int_t
ngx_http_veto_sandbox_approval_init(void)
{
    return ngx_http_veto_sandbox_redis_scripts_init(
                                      ngx_http_veto_sandbox_approval_scripts);
}


ngx_int_t
ngx_http_veto_sandbox_approval_id(u_char *id)
{
    u_char  rnd[16];

    if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
        return NGX_ERROR;
    }

    (void) ngx_hex_dump(ngx_cpymem(id, "apr_", 4), rnd, sizeof(rnd));

    return NGX_OK;
}


ngx_uint_t
ngx_http_veto_sandbox_approval_agent_max(ngx_uint_t tenant_max)
{
    return tenant_max / 4 ? tenant_max / 4 : 1;
}


ngx_uint_t
ngx_http_veto_sandbox_approval_id_valid(ngx_str_t *id)
{
    return id->len == NGX_HTTP_VSB_APPROVAL_ID_LEN
           && ngx_strncmp(id->data, "apr_", 4) == 0
           && ngx_http_veto_sandbox_hex_lower(id->data + 4, id->len - 4);
}

ngx_int_t
ngx_http_veto_sandbox_approval_keys(ngx_pool_t *pool, ngx_str_t *tenant,
    ngx_str_t *id, ngx_str_t *rec, ngx_str_t *rv, ngx_str_t *idx)
{
    size_t  len;

    if (!ngx_http_veto_sandbox_redis_key_part_valid(tenant->data,
                                                    tenant->len)
        || (id && !ngx_http_veto_sandbox_approval_id_valid(id)))
    {
        return NGX_DECLINED;
    }

    len = sizeof(NGX_HTTP_VSB_KEY_PREFIX "{}:appr:idx") + tenant->len
          + NGX_HTTP_VSB_APPROVAL_ID_LEN + sizeof(":rv");

    if (rec) {
        rec->data = ngx_pnalloc(pool, len);
        if (rec->data == NULL) {
            return NGX_ERROR;
        }

        rec->len = ngx_sprintf(rec->data,
                               NGX_HTTP_VSB_KEY_PREFIX "{%V}:appr:%V",
                               tenant, id)
                   - rec->data;
    }

    if (rv) {
        rv->data = ngx_pnalloc(pool, len);
        if (rv->data == NULL) {
            return NGX_ERROR;
        }

        rv->len = ngx_sprintf(rv->data,
                              NGX_HTTP_VSB_KEY_PREFIX
                              "{%V}:appr:%V:rv", tenant, id)
                  - rv->data;
    }

    if (idx) {
        idx->data = ngx_pnalloc(pool, len);
        if (idx->data == NULL) {
            return NGX_ERROR;
        }

        idx->len = ngx_sprintf(idx->data,
                               NGX_HTTP_VSB_KEY_PREFIX
                               "{%V}:appr:idx", tenant)
                   - idx->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_approval_call(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_approval_op_e op, int numkeys, int argc,
    ngx_str_t *args)
{
    /* a transition or a consume a failover could lose counts only once
     * replicas have it (veto_sandbox_redis_wait): a consume lost would
     * let an approval be used twice, a denial lost would let it be
     * approved */
    call->durable = (op == NGX_HTTP_VSB_APPROVAL_CREATE
                     || op == NGX_HTTP_VSB_APPROVAL_APPROVE
                     || op == NGX_HTTP_VSB_APPROVAL_DENY
                     || op == NGX_HTTP_VSB_APPROVAL_CONSUME);

    return ngx_http_veto_sandbox_redis_eval_str(call,
                                  &ngx_http_veto_sandbox_approval_scripts[op],
                                  numkeys, argc, args);
}


ngx_int_t
ngx_http_veto_sandbox_approval_create(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *id,
    ngx_http_veto_sandbox_approval_bind_t *bind, ngx_str_t *summary,
    ngx_msec_t ttl, ngx_uint_t threshold, ngx_msec_t retention,
    ngx_uint_t max, ngx_uint_t agent_max)
{
    u_char     *p;
    ngx_int_t   rc;
    ngx_str_t   a[15];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, &bind->tenant, id,
                                             &a[0], &a[1], &a[2]);
    if (rc != NGX_OK) {
        return rc;
    }

    if (!ngx_http_veto_sandbox_redis_key_part_valid(bind->agent.data,
                                                    bind->agent.len))
    {
        return NGX_DECLINED;
    }

    /* the agent's open requests: veto:{<tenant>}:appr:open:<agent> */
    p = ngx_pnalloc(call->pool,
                    sizeof(NGX_HTTP_VSB_KEY_PREFIX "{}:appr:open:")
                    + bind->tenant.len + bind->agent.len
                    + 5 * NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_veto_sandbox_redis_arg(&a[3], p,
                                        NGX_HTTP_VSB_KEY_PREFIX
                                        "{%V}:appr:open:%V",
                                        &bind->tenant, &bind->agent);

    a[4] = *id;
    a[5] = bind->tenant;
    a[6] = bind->agent;
    a[7] = bind->action;
    a[8].data = bind->hash;
    a[8].len = NGX_HTTP_VSB_HASH_HEX_LEN;
    a[9] = *summary;

    p = ngx_http_veto_sandbox_redis_arg(&a[10], p, "%M", ttl);

    p = ngx_http_veto_sandbox_redis_arg(&a[11], p, "%ui",
                                        threshold ? threshold : 1);

    p = ngx_http_veto_sandbox_redis_arg(&a[12], p, "%M", retention);

    max = max ? max : NGX_HTTP_VSB_APPROVAL_MAX;

    p = ngx_http_veto_sandbox_redis_arg(&a[13], p, "%ui", max);

    if (agent_max == 0) {
        agent_max = ngx_http_veto_sandbox_approval_agent_max(max);
    }

    p = ngx_http_veto_sandbox_redis_arg(&a[14], p, "%ui", agent_max);

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_CREATE,
                                               4, 15, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_decide(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *id, ngx_str_t *reviewer, ngx_uint_t approve, ngx_str_t *reason)
{
    ngx_int_t   rc;
    ngx_str_t   a[5];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, id, &a[0],
                                             &a[1], NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[2] = *tenant;
    a[3] = *reviewer;

    if (reason) {
        a[4] = *reason;

    } else {
        ngx_str_null(&a[4]);
        a[4].data = (u_char *) "";
    }

    if (approve) {
        return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_APPROVE,
                                               2, 5, a);
    }

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_DENY,
                                               2, 5, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_consume(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *id,
    ngx_http_veto_sandbox_approval_bind_t *bind)
{
    ngx_int_t   rc;
    ngx_str_t   a[5];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, &bind->tenant, id,
                                             &a[0], NULL, NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[1] = bind->tenant;
    a[2] = bind->agent;
    a[3] = bind->action;
    a[4].data = bind->hash;
    a[4].len = NGX_HTTP_VSB_HASH_HEX_LEN;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_CONSUME,
                                               1, 5, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_expire(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *id, ngx_uint_t force)
{
    ngx_int_t   rc;
    ngx_str_t   a[3];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, id, &a[0],
                                             NULL, NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[1] = *tenant;
    a[2].data = (u_char *) (force ? "1" : "0");
    a[2].len = 1;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_EXPIRE,
                                               1, 3, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_get(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *id)
{
    ngx_int_t   rc;
    ngx_str_t   a[3];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, id, &a[0],
                                             &a[1], NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[2] = *tenant;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_GET,
                                               2, 3, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_list(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *state, ngx_uint_t limit, ngx_str_t *cursor)
{
    u_char     *p;
    ngx_int_t   rc;
    ngx_str_t   a[7];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, NULL, NULL,
                                             NULL, &a[0]);
    if (rc != NGX_OK) {
        return rc;
    }

    p = ngx_pnalloc(call->pool, sizeof(NGX_HTTP_VSB_KEY_PREFIX "{}:appr:")
                          + tenant->len + 2 * NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    a[1] = *tenant;

    p = ngx_http_veto_sandbox_redis_arg(&a[2], p,
                                        NGX_HTTP_VSB_KEY_PREFIX "{%V}:appr:",
                                        tenant);

    if (state && state->len) {
        a[3] = *state;

    } else {
        a[3].data = (u_char *) "";
        a[3].len = 0;
    }

    p = ngx_http_veto_sandbox_redis_arg(&a[4], p, "%ui", limit ? limit : 100);

    if (cursor && cursor->len) {
        a[5] = *cursor;

    } else {
        a[5].data = (u_char *) "";
        a[5].len = 0;
    }

    p = ngx_http_veto_sandbox_redis_arg(&a[6], p, "%ui", (ngx_uint_t)
                                        NGX_HTTP_VSB_APPROVAL_LIST_BYTES);

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_LIST,
                                               1, 7, a);
}


void
ngx_http_veto_sandbox_approval_result(redisReply *reply,
    ngx_http_veto_sandbox_approval_result_t *res)
{
    ngx_uint_t   i;
    redisReply  *e;

    ngx_memzero(res, sizeof(ngx_http_veto_sandbox_approval_result_t));
    res->code = NGX_HTTP_VSB_AR_BAD_REPLY;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements < 2)
    {
        return;
    }

    for (i = 0; i < 4 && i < reply->elements; i++) {
        if (reply->element[i]->type != REDIS_REPLY_STRING) {
            if (i < 2) {
                return;
            }

            continue;
        }

        e = reply->element[i];

        switch (i) {
        case 1:
            res->state.data = (u_char *) e->str;
            res->state.len = e->len;
            break;

        case 2:
            res->just_expired = (e->len == 1 && e->str[0] == '1');
            break;

        case 3:
            res->detail.data = (u_char *) e->str;
            res->detail.len = e->len;
            break;
        }
    }

    e = reply->element[0];

    for (i = 0; ngx_http_veto_sandbox_approval_codes[i].len; i++) {
        if ((size_t) e->len == ngx_http_veto_sandbox_approval_codes[i].len
            && ngx_strncmp(e->str, ngx_http_veto_sandbox_approval_codes[i].data,
                           e->len) == 0)
        {
            res->code = (ngx_http_veto_sandbox_approval_code_e) i;
            return;
        }
    }
}


ngx_uint_t
ngx_http_veto_sandbox_approval_cursor_valid(ngx_str_t *cursor)
{
    size_t     i;
    ngx_str_t  id;

    for (i = 0; i < cursor->len && i < 20; i++) {
        if (cursor->data[i] < '0' || cursor->data[i] > '9') {
            break;
        }
    }

    if (i == 0 || i == cursor->len || cursor->data[i] != ':') {
        return 0;
    }

    id.data = cursor->data + i + 1;
    id.len = cursor->len - i - 1;

    return ngx_http_veto_sandbox_approval_id_valid(&id);
}
