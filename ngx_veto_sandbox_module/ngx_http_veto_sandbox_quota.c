/*
 * Veto Sandbox: quotas (concurrent sandboxes, execs per minute) and
 * sandbox ownership records in Redis.
 * Contract: ngx_http_veto_sandbox_quota.h and docs/approvals.md.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_quota.h"


static ngx_int_t ngx_http_veto_sandbox_quota_call(
    ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_quota_op_e op, int numkeys, int argc,
    ngx_str_t *args);


/*
 * The Lua scripts (lua/quota_*.lua, after lua/prelude.lua).  Both limits
 * are checked before either count moves, so a refused call changes
 * nothing.
 */
NGX_HTTP_VSB_LUA(quota_acquire);
NGX_HTTP_VSB_LUA(quota_release);
NGX_HTTP_VSB_LUA(quota_exec_rate);
NGX_HTTP_VSB_LUA(quota_gone);

/* in the order of ngx_http_veto_sandbox_quota_op_e */
ngx_http_veto_sandbox_redis_script_t  ngx_http_veto_sandbox_quota_scripts[] = {
    NGX_HTTP_VSB_SCRIPT(quota_acquire),
    NGX_HTTP_VSB_SCRIPT(quota_release),
    NGX_HTTP_VSB_SCRIPT(quota_exec_rate),
    NGX_HTTP_VSB_SCRIPT(quota_gone),
    { NULL, NULL, "" }
};


ngx_int_t
ngx_http_veto_sandbox_quota_init(void)
{
    return ngx_http_veto_sandbox_redis_scripts_init(
                                      ngx_http_veto_sandbox_quota_scripts);
}


static ngx_int_t
ngx_http_veto_sandbox_quota_call(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_quota_op_e op, int numkeys, int argc,
    ngx_str_t *args)
{
    return ngx_http_veto_sandbox_redis_eval_str(call,
                                     &ngx_http_veto_sandbox_quota_scripts[op],
                                     numkeys, argc, args);
}


#define ngx_http_veto_sandbox_quota_valid(s)                                  \
    ngx_http_veto_sandbox_redis_key_part_valid((s)->data, (s)->len)


/* KEYS of acquire and release: the tenant's and the agent's live sets,
 * the sandbox's ownership record */
static ngx_int_t
ngx_http_veto_sandbox_quota_sbx_keys(ngx_pool_t *pool, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *sandbox, ngx_str_t *keys)
{
    if (!ngx_http_veto_sandbox_quota_valid(tenant)
        || !ngx_http_veto_sandbox_quota_valid(agent)
        || !ngx_http_veto_sandbox_quota_valid(sandbox))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_veto_sandbox_tenant_key(pool, &keys[0], "sbx:live", tenant,
                                         NULL)
        != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(pool, &keys[1], "sbx:live",
                                            tenant, agent)
           != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(pool, &keys[2], "sbx:own",
                                            tenant, sandbox)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_quota_acquire(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *sandbox,
    ngx_http_veto_sandbox_quota_limits_t *limits, ngx_msec_t ttl,
    ngx_http_veto_sandbox_quota_owner_t *owner)
{
    u_char     *p;
    ngx_int_t   rc;
    ngx_str_t   a[15];

    rc = ngx_http_veto_sandbox_quota_sbx_keys(call->pool, tenant, agent,
                                              sandbox, a);
    if (rc != NGX_OK) {
        return rc;
    }

    p = ngx_pnalloc(call->pool, 4 * NGX_INT_T_LEN
                                + 2 * (sizeof(NGX_HTTP_VSB_KEY_PREFIX
                                              "{}:sbx:live:")
                                       + tenant->len));
    if (p == NULL) {
        return NGX_ERROR;
    }

    a[3] = *sandbox;
    a[4] = *agent;

    p = ngx_http_veto_sandbox_redis_arg(&a[5], p, "%ui",
                                        limits->tenant_sandboxes);

    p = ngx_http_veto_sandbox_redis_arg(&a[6], p, "%ui",
                                        limits->agent_sandboxes);

    p = ngx_http_veto_sandbox_redis_arg(&a[7], p, "%M", ttl);

    a[8] = owner->gateway;
    a[9] = owner->epoch;

    p = ngx_http_veto_sandbox_redis_arg(&a[10], p,
                                        NGX_HTTP_VSB_KEY_PREFIX
                                        "{%V}:sbx:own:",
                                        tenant);

    p = ngx_http_veto_sandbox_redis_arg(&a[11], p,
                                        NGX_HTTP_VSB_KEY_PREFIX
                                        "{%V}:sbx:live:",
                                        tenant);

    a[12] = owner->env;
    a[13] = owner->env_sha256;

    p = ngx_http_veto_sandbox_redis_arg(&a[14], p, "%ui", owner->env_dropped);

    return ngx_http_veto_sandbox_quota_call(call, NGX_HTTP_VSB_QUOTA_ACQUIRE,
                                            3, 15, a);
}


ngx_int_t
ngx_http_veto_sandbox_quota_release(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *sandbox)
{
    ngx_int_t  rc;
    ngx_str_t  a[4];

    rc = ngx_http_veto_sandbox_quota_sbx_keys(call->pool, tenant, agent,
                                              sandbox, a);
    if (rc != NGX_OK) {
        return rc;
    }

    a[3] = *sandbox;

    return ngx_http_veto_sandbox_quota_call(call, NGX_HTTP_VSB_QUOTA_RELEASE,
                                            3, 4, a);
}


/* a sandbox the helper ended at our asking (a DELETE): its slot and
 * ownership record go, its routing record stays (ended: its ENDED
 * record, the helper's reply's "ended") */
ngx_int_t
ngx_http_veto_sandbox_quota_release_ended(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *sandbox, json_t *ended)
{
    u_char     *p;
    json_t     *why, *at, *until;
    ngx_int_t   rc;
    ngx_str_t   a[8];

    why = json_object_get(ended, "end_reason");
    at = json_object_get(ended, "ended_at");
    until = json_object_get(ended, "retained_until");

    if (!json_is_string(why) || json_string_length(why) == 0
        || json_string_length(why) > NGX_HTTP_VSB_ROUTE_REASON_MAX
        || !json_is_integer(until) || json_integer_value(until) < 0)
    {
        return ngx_http_veto_sandbox_quota_release(call, tenant, agent,
                                                   sandbox);
    }

    rc = ngx_http_veto_sandbox_quota_sbx_keys(call->pool, tenant, agent,
                                              sandbox, a);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_veto_sandbox_tenant_key(call->pool, &a[3], "sbx:route",
                                         tenant, sandbox)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(call->pool, 2 * NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    a[4] = *sandbox;
    a[5].data = (u_char *) json_string_value(why);
    a[5].len = json_string_length(why);

    p = ngx_http_veto_sandbox_redis_arg(&a[6], p, "%L",
                                        json_is_integer(at)
                                        ? (int64_t) json_integer_value(at)
                                        : (int64_t) ngx_time());

    p = ngx_http_veto_sandbox_redis_arg(&a[7], p, "%L",
                                        (int64_t) json_integer_value(until));

    return ngx_http_veto_sandbox_quota_call(call, NGX_HTTP_VSB_QUOTA_RELEASE,
                                            4, 8, a);
}


/* same shape as ngx_http_veto_sandbox_quota_release(): each is the
 * argument list of its own script */
ngx_int_t
ngx_http_veto_sandbox_quota_gone(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *sandbox,
    ngx_str_t *gateway)
{
    ngx_int_t  rc;
    ngx_str_t  a[6];

    rc = ngx_http_veto_sandbox_quota_sbx_keys(call->pool, tenant, agent,
                                              sandbox, a);
    if (rc != NGX_OK) {
        return rc;
    }

    a[3] = *sandbox;
    a[4] = *agent;
    a[5] = *gateway;

    return ngx_http_veto_sandbox_quota_call(call, NGX_HTTP_VSB_QUOTA_GONE,
                                            3, 6, a);
}


ngx_int_t
ngx_http_veto_sandbox_quota_exec(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *event_id,
    ngx_http_veto_sandbox_quota_limits_t *limits)
{
    u_char     *p;
    ngx_str_t   a[6];

    if (!ngx_http_veto_sandbox_quota_valid(tenant)
        || !ngx_http_veto_sandbox_quota_valid(agent))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_veto_sandbox_tenant_key(call->pool, &a[0], "rate:exec",
                                         tenant, NULL)
        != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(call->pool, &a[1], "rate:exec",
                                            tenant, agent)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(call->pool, 3 * NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_veto_sandbox_redis_arg(&a[2], p, "%ui", limits->tenant_execs);

    p = ngx_http_veto_sandbox_redis_arg(&a[3], p, "%ui", limits->agent_execs);

    p = ngx_http_veto_sandbox_redis_arg(&a[4], p, "%M",
                                        limits->exec_window
                                        ? limits->exec_window : 60000);

    a[5] = *event_id;

    return ngx_http_veto_sandbox_quota_call(call,
                                            NGX_HTTP_VSB_QUOTA_EXEC_RATE,
                                            2, 6, a);
}


ngx_int_t
ngx_http_veto_sandbox_quota_owner(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *sandbox)
{
    ngx_str_t  key;

    /* in the order ngx_http_veto_sandbox_sandbox_result() reads them */
    static const char *const  fields[] = {
        "agent", "env", "env_sha256", "env_dropped", "gateway", NULL
    };

    if (!ngx_http_veto_sandbox_quota_valid(tenant)
        || !ngx_http_veto_sandbox_quota_valid(sandbox))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_veto_sandbox_tenant_key(call->pool, &key, "sbx:own", tenant,
                                         sandbox)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_redis_hmget(call, &key, fields);
}


void
ngx_http_veto_sandbox_quota_result(redisReply *reply,
    ngx_http_veto_sandbox_quota_result_t *res)
{
    ngx_int_t    n;
    redisReply  *code, *retry;

    res->code = NGX_HTTP_VSB_QR_BAD_REPLY;
    res->retry_after = 0;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements < 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[1]->type != REDIS_REPLY_STRING)
    {
        return;
    }

    code = reply->element[0];
    retry = reply->element[1];

    n = ngx_atoi((u_char *) retry->str, retry->len);
    res->retry_after = (n == NGX_ERROR || n < 1) ? 1 : (time_t) n;

#define ngx_http_vsb_is(s)                                                    \
    ((size_t) code->len == sizeof(s) - 1                                      \
     && ngx_strncmp(code->str, s, sizeof(s) - 1) == 0)

    if (ngx_http_vsb_is("ok")) {
        res->code = NGX_HTTP_VSB_QR_OK;
        res->retry_after = 0;

    } else if (ngx_http_vsb_is("tenant_limit")) {
        res->code = NGX_HTTP_VSB_QR_TENANT_LIMIT;

    } else if (ngx_http_vsb_is("agent_limit")) {
        res->code = NGX_HTTP_VSB_QR_AGENT_LIMIT;

    } else if (ngx_http_vsb_is("exists")) {
        res->code = NGX_HTTP_VSB_QR_EXISTS;
    }

#undef ngx_http_vsb_is
}
