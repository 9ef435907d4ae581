/*
 * Identity: the bearer token of the Authorization header, verified
 * (_jwt.c), looked up in the policy (the caller's rule) and held against
 * the scopes an op asks for.
 *
 * Identity is enforced in the POST_READ phase for every request whose URI
 * is under a location carrying "veto_sandbox_api" on that server, whatever
 * its method, before any rewrite-phase "return" or "rewrite" can answer
 * it; only a public op of the op table is let through without a token.
 * The API content handler checks again (fail closed), so internal
 * redirects and subrequests, which skip POST_READ, cannot reach it
 * unauthenticated either.
 */

#include "ngx_http_veto_sandbox_pipeline.h"


static ngx_int_t ngx_http_veto_sandbox_post_read_handler(
    ngx_http_request_t *r);


/* the router's lookup of r's op row (_op_route.c sets it at
 * configuration); NULL: no row is known, every request needs a token */
ngx_http_veto_sandbox_op_find_pt  ngx_http_veto_sandbox_identity_op_find;


/*
 * Verifies the bearer token and looks the caller up in the policy.
 * NGX_OK: ctx->agent, tenant, scopes and rule are set.  NGX_DECLINED:
 * ctx->decision says why; the caller answers with
 * ngx_http_veto_sandbox_deny().  NGX_AGAIN (only when may_wait): the
 * signature is being checked in a thread (veto_sandbox_jwt_thread_pool);
 * its completion runs r's write event handler, and the call made then
 * takes the outcome.
 */
ngx_int_t
ngx_http_veto_sandbox_identify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t may_wait)
{
    u_char                            *p, *last;
    ngx_int_t                          rc;
    ngx_str_t                          token;
    const char                        *reason;
    ngx_table_elt_t                   *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    if (ctx->identified) {
        return NGX_OK;
    }

    if (ctx->jwt_pending) {
        /* an event of r's connection while the thread works */
        return NGX_AGAIN;
    }

    if (ctx->jwt_done) {
        ctx->jwt_done = 0;
        rc = ctx->jwt_rc;
        reason = ctx->jwt_reason;
        goto verified;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    h = r->headers_in.authorization;

    if (h == NULL) {
        ngx_str_set(&ctx->decision, "deny:no_token");
        return NGX_DECLINED;
    }

    p = h->value.data;
    last = p + h->value.len;

    if (h->value.len < sizeof("Bearer ") - 1
        || ngx_strncasecmp(p, (u_char *) "Bearer ", sizeof("Bearer ") - 1)
           != 0)
    {
        ngx_str_set(&ctx->decision, "deny:no_token");
        return NGX_DECLINED;
    }

    p += sizeof("Bearer ") - 1;

    while (p < last && *p == ' ') {
        p++;
    }

    while (last > p && last[-1] == ' ') {
        last--;
    }

    token.data = p;
    token.len = last - p;

    rc = ngx_http_veto_sandbox_jwt_verify(r, vscf, &token, ctx, &reason,
                                          may_wait);
    if (rc == NGX_AGAIN) {
        return NGX_AGAIN;
    }

verified:

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "veto_sandbox: token refused: %s", reason);
        ngx_str_set(&ctx->decision, "deny:invalid_token");
        ctx->reason = reason;
        return NGX_DECLINED;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    ctx->rule = ngx_http_veto_sandbox_policy_rule(vscf->policy, &ctx->tenant,
                                                  &ctx->agent);
    if (ctx->rule == NULL) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "veto_sandbox: tenant \"%V\" is not in policy \"%V\"",
                      &ctx->tenant, &vscf->policy->file);
        ngx_str_set(&ctx->decision, "deny:policy");
        return NGX_DECLINED;
    }

    ctx->identified = 1;

    return NGX_OK;
}


/* Does the token carry one of the scopes the op asks for?  NGX_DECLINED:
 * ctx->decision and the challenge's scope are set for
 * ngx_http_veto_sandbox_deny(). */
ngx_int_t
ngx_http_veto_sandbox_scope_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_uint_t                         need;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    need = ctx->op->scopes;

    if (ctx->scopes & need) {
        return NGX_OK;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    ngx_str_set(&ctx->decision, "deny:insufficient_scope");

    /* the scope named in the challenge; scope names are NUL-free tokens
     * of the configuration, which keeps them NUL terminated */
    ctx->reason = (const char *) vscf->scope[
                      need & NGX_HTTP_VSB_SCOPE_ADMIN ? 6
                      : need & NGX_HTTP_VSB_SCOPE_REVIEW ? 3
                      : need & NGX_HTTP_VSB_SCOPE_AUDIT ? 4
                      : need & NGX_HTTP_VSB_SCOPE_CREATE ? 0
                      : need & NGX_HTTP_VSB_SCOPE_EXEC ? 1
                      : need & NGX_HTTP_VSB_SCOPE_FILES ? 2 : 5].data;

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_veto_sandbox_post_read_handler(ngx_http_request_t *r)
{
    ngx_int_t                          rc;
    ngx_str_t                          sandbox, approval;
    ngx_uint_t                         allow;
    ngx_http_veto_sandbox_op_t        *op;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (!ngx_http_veto_sandbox_protected(r, vscf)) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_veto_sandbox_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* a public op (the liveness probe) asks for no token; it reveals
     * only up/down */
    op = ngx_http_veto_sandbox_identity_op_find
         ? ngx_http_veto_sandbox_identity_op_find(r, &allow, &sandbox,
                                                  &approval)
         : NULL;

    if (op != NULL && op->scopes == NGX_HTTP_VSB_PUBLIC) {
        ngx_str_set(&ctx->decision, "public");
        return NGX_DECLINED;
    }

    /* nginx's own 413, before the content handler, names the right limit */
    ctx->file_body = (op != NULL && op->body == NGX_HTTP_VSB_BODY_FILE);

    rc = ngx_http_veto_sandbox_identify(r, ctx, 1);

    if (rc == NGX_OK) {
        return NGX_DECLINED;
    }

    if (rc == NGX_AGAIN) {
        /* the phase stops here; the verification's completion runs the
         * phases again from this handler */
        return NGX_AGAIN;
    }

    rc = ngx_http_veto_sandbox_deny(r, ctx);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


ngx_int_t
ngx_http_veto_sandbox_identity_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_POST_READ_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_veto_sandbox_post_read_handler;

    /* the refusals ngx_http_veto_sandbox_deny() answers (token, scope,
     * policy) go on the tenant's audit record */
    ngx_http_veto_sandbox_deny_record = ngx_http_veto_sandbox_audit_denied;

    return NGX_OK;
}
