/*
 * The lifetime part of requests: PATCH /v1/sandboxes/{id} with "ttl_s"
 * (the new lifetime, counted from creation, so that the same request
 * twice changes nothing) and/or "idle_s" (helper update_lifetime), within
 * the policy's ceilings or, up to its ask_ceilings, once a human
 * approved (ctx->limit_ask: the gate asks).  PATCH's builder
 * (_sandboxes.c) asks it first.  Pure: the fuzzer drives them (fuzz_module_parsers).
 */

#include "ngx_http_veto_sandbox_pipeline.h"


/* 1 when the token has the scope this part of PATCH needs; else 0 and
 * *rc the 403 naming it. */
static ngx_uint_t
ngx_http_veto_sandbox_lifetime_scope(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t scope, ngx_uint_t index,
    ngx_int_t *rc)
{
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    if (ctx->scopes & scope) {
        return 1;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    ngx_str_set(&ctx->decision, "deny:insufficient_scope");
    ctx->reason = (const char *) vscf->scope[index].data;

    *rc = ngx_http_veto_sandbox_deny(r, ctx);
    return 0;
}


/*
 * PATCH /v1/sandboxes/{id}: the lifetime part.  NGX_DECLINED when the
 * body changes no lifetime (the network builder goes on), else what
 * build() returns.
 */
ngx_int_t
ngx_http_veto_sandbox_build_lifetime(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, ngx_int_t *rc)
{
    json_t      *req;
    uint64_t     n;
    ngx_uint_t   life;

    life = json_object_get(body, "ttl_s") != NULL
           || json_object_get(body, "idle_s") != NULL;

    if (!life && (json_object_get(body, "network") != NULL
                  || json_object_get(body, "credentials") != NULL
                  || json_object_get(body, "secret") != NULL))
    {
        /* network, credentials or an agent's secret only: that needs
         * sandbox:network */
        return ngx_http_veto_sandbox_lifetime_scope(r, ctx,
                                                    NGX_HTTP_VSB_SCOPE_NETWORK,
                                                    5, rc)
               ? NGX_DECLINED : NGX_OK;
    }

    /* nothing at all: the network builder says what PATCH takes */
    if (!life && json_object_size(body) == 0) {
        return NGX_DECLINED;
    }

    /* the body's fields were checked (PATCH's builder, _sandboxes.c):
     * ttl_s and idle_s only */

    /* the lifetime belongs to whoever may make sandboxes */
    if (!ngx_http_veto_sandbox_lifetime_scope(r, ctx,
                                              NGX_HTTP_VSB_SCOPE_CREATE, 0,
                                              rc))
    {
        return NGX_OK;
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL
        || json_object_set_new(req, "op",
                               json_string(VSB_OP_UPDATE_LIFETIME)) != 0)
    {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_OK;
    }

    /* only what is given: the policy's defaults are for a create */
    if ((json_object_get(body, "ttl_s") != NULL
         && ngx_http_veto_sandbox_limited(r, ctx, body, req,
                                          NGX_HTTP_VSB_L_TTL_S, &n, rc)
            != NGX_OK)
        || (json_object_get(body, "idle_s") != NULL
            && ngx_http_veto_sandbox_limited(r, ctx, body, req,
                                             NGX_HTTP_VSB_L_IDLE_S, &n, rc)
               != NGX_OK))
    {
        return NGX_OK;
    }

    ctx->lifetime = 1;
    ctx->req = req;

    *rc = NGX_DECLINED;
    return NGX_OK;
}


