/*
 * A sandbox's lifetime in Redis, once the helper changed it: the quota
 * slot and the ownership record follow the new expiry (PATCH's record,
 * _sandboxes.c, asks); and ENDED records as the API shows them (a
 * delete's, the list's, a get's).  The request side is in
 * _request_lifetime.c.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_audit.h"


/* lua/sandbox_extend.lua: the quota slot, the live sets and the
 * ownership record follow an extended lifetime */
NGX_HTTP_VSB_LUA(sandbox_extend);

static ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_lifetime_scripts[] = {
    NGX_HTTP_VSB_SCRIPT(sandbox_extend),
    { NULL, NULL, "" }
};


ngx_int_t
ngx_http_veto_sandbox_lifetime_init(void)
{
    return ngx_http_veto_sandbox_redis_scripts_init(
                                      ngx_http_veto_sandbox_lifetime_scripts);
}


/* Bookkeeping nobody waits for: a failure is logged. */
static void
ngx_http_veto_sandbox_lifetime_logged(ngx_int_t rc, redisReply *reply,
    void *data)
{
    if (rc != NGX_OK || reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: redis bookkeeping (%s) failed",
                      (char *) data);
    }
}


/* The quota slot and the ownership record follow the new expiry. */
void
ngx_http_veto_sandbox_lifetime_extend(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_int_t expires_at)
{
    u_char                              *p;
    ngx_str_t                            a[5];
    ngx_http_veto_sandbox_main_conf_t   *vmcf;
    ngx_http_veto_sandbox_redis_call_t   call;

    if (ngx_http_veto_sandbox_rds == NULL || expires_at <= 0
        || !ngx_http_veto_sandbox_redis_key_part_valid(ctx->agent.data,
                                                       ctx->agent.len)
        || !ngx_http_veto_sandbox_redis_key_part_valid(ctx->tenant.data,
                                                       ctx->tenant.len))
    {
        return;
    }

    if (ngx_http_veto_sandbox_tenant_key(r->pool, &a[0], "sbx:live",
                                         &ctx->tenant, NULL) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(r->pool, &a[1], "sbx:live",
                                            &ctx->tenant, &ctx->agent)
           != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(r->pool, &a[2], "sbx:own",
                                            &ctx->tenant, &ctx->sandbox)
           != NGX_OK)
    {
        return;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN + 3);
    if (p == NULL) {
        return;
    }

    a[3] = ctx->sandbox;
    a[4].data = p;
    a[4].len = ngx_sprintf(p, "%L000", (int64_t) expires_at) - p;

    vmcf = ngx_http_get_module_main_conf(r, ngx_http_veto_sandbox_module);

    call.rds = ngx_http_veto_sandbox_rds;
    call.pool = r->pool;
    call.timeout = vmcf->timeout;
    call.handler = ngx_http_veto_sandbox_lifetime_logged;
    call.data = "lifetime extension";
    call.cmdp = NULL;

    (void) ngx_http_veto_sandbox_redis_eval_str(&call,
                                    &ngx_http_veto_sandbox_lifetime_scripts[0],
                                    3, 5, a);
}


/* An ENDED record as the API shows it: the helper's cursor is its own. */
void
ngx_http_veto_sandbox_ended_view(json_t *sb)
{
    if (json_is_object(sb)) {
        json_object_del(sb, "seq");
    }
}


