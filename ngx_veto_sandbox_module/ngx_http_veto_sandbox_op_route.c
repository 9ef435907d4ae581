/*
 * Routing a request to its row of the op table (_ops.c), running the
 * row, and the table's check when the configuration is read: a row that
 * cannot work fails "nginx -t" with a message naming it.
 */

#include "ngx_http_veto_sandbox_module.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_discovery.h"


/*
 * Does uri match the row's path?  A literal byte matches itself; "{id}"
 * matches a valid sandbox id and "{approval}" a valid approval id, which
 * are returned: an id that cannot exist is as unknown as one that does
 * not.  "{key}", always last, matches the rest of the URI when it can be
 * a Redis key part (a jti, an agent); its builder reads it from there.
 * NGX_ERROR: a placeholder this function does not know.
 */
static ngx_int_t
ngx_http_veto_sandbox_op_match(const char *path, ngx_str_t *uri,
    ngx_str_t *sandbox, ngx_str_t *approval, ngx_str_t *exec)
{
    u_char      *p, *last;
    ngx_str_t    id;
    const char  *s;

    p = uri->data;
    last = p + uri->len;

    ngx_str_null(sandbox);
    ngx_str_null(approval);
    ngx_str_null(exec);

    for (s = path; *s; /* void */) {

        if (*s != '{') {
            if (p == last || *p != (u_char) *s) {
                return NGX_DECLINED;
            }

            p++;
            s++;
            continue;
        }

        if (ngx_strncmp(s, "{id}", 4) == 0) {
            if ((size_t) (last - p) < VSB_SANDBOX_ID_LEN
                || !ngx_http_veto_sandbox_id_valid(p, VSB_SANDBOX_ID_LEN))
            {
                return NGX_DECLINED;
            }

            sandbox->data = p;
            sandbox->len = VSB_SANDBOX_ID_LEN;

            p += VSB_SANDBOX_ID_LEN;
            s += 4;
            continue;
        }

        if (ngx_strncmp(s, "{approval}", 10) == 0) {
            id.data = p;
            id.len = NGX_HTTP_VSB_APPROVAL_ID_LEN;

            if ((size_t) (last - p) < NGX_HTTP_VSB_APPROVAL_ID_LEN
                || !ngx_http_veto_sandbox_approval_id_valid(&id))
            {
                return NGX_DECLINED;
            }

            *approval = id;

            p += NGX_HTTP_VSB_APPROVAL_ID_LEN;
            s += 10;
            continue;
        }

        if (ngx_strcmp(s, "{key}") == 0) {
            return ngx_http_veto_sandbox_redis_key_part_valid(p, last - p)
                   ? NGX_OK : NGX_DECLINED;
        }

        if (ngx_strncmp(s, "{exec}", 6) == 0) {
            /* "ex-" and 16 lowercase hex digits (vsb_protocol.h) */
            if ((size_t) (last - p) < VSB_EXEC_ID_LEN
                || ngx_strncmp(p, "ex-", 3) != 0
                || !ngx_http_veto_sandbox_hex_lower(p + 3,
                                                    VSB_EXEC_ID_LEN - 3))
            {
                return NGX_DECLINED;
            }

            exec->data = p;
            exec->len = VSB_EXEC_ID_LEN;

            p += VSB_EXEC_ID_LEN;
            s += 6;
            continue;
        }

        return NGX_ERROR;
    }

    return p == last ? NGX_OK : NGX_DECLINED;
}


ngx_http_veto_sandbox_op_t *
ngx_http_veto_sandbox_op_find(ngx_http_request_t *r, ngx_uint_t *allow,
    ngx_str_t *sandbox, ngx_str_t *approval)
{
    return ngx_http_veto_sandbox_op_route(r->method, &r->uri, allow, sandbox,
                                          approval);
}


ngx_http_veto_sandbox_op_t *
ngx_http_veto_sandbox_op_route(ngx_uint_t method, ngx_str_t *uri,
    ngx_uint_t *allow, ngx_str_t *sandbox, ngx_str_t *approval)
{
    ngx_str_t                    sb, apr, ex;
    ngx_http_veto_sandbox_op_t  *op;

    *allow = 0;
    ngx_str_null(sandbox);
    ngx_str_null(approval);

    for (op = ngx_http_veto_sandbox_ops; op->name.len; op++) {

        if (ngx_http_veto_sandbox_op_match(op->path, uri, &sb, &apr, &ex)
            != NGX_OK)
        {
            continue;
        }

        /* the ids are the URI's, whichever of its rows takes the method */
        *sandbox = sb;
        *approval = apr;
        *allow |= op->methods;

        if (method & op->methods) {
            return op;
        }
    }

    return NULL;
}


/*
 * A routed op, its caller's identity and scope checked and its request
 * in ctx->in: build, then the gate (a public op has no caller to ask
 * about), then run.  The same for a REST request and for a tools/call's
 * REST twin.
 */
ngx_int_t
ngx_http_veto_sandbox_op_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                    rc;
    ngx_http_veto_sandbox_op_t  *op;

    op = ctx->op;

    rc = op->build(r, ctx);

    if (rc != NGX_DECLINED) {
        return rc;
    }

    if (r->header_sent) {
        /* a builder that answered must not say "go on" */
        return NGX_ERROR;
    }

    if (op->scopes == NGX_HTTP_VSB_PUBLIC) {
        return op->run(r, ctx);
    }

    return ngx_http_veto_sandbox_gate(r, ctx, op->run);
}


void
ngx_http_veto_sandbox_op_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_str_t  sb, apr;

    if (ngx_http_veto_sandbox_op_match(ctx->op->path, &ctx->in.uri, &sb, &apr,
                                       &ctx->exec)
        != NGX_OK)
    {
        ngx_str_null(&ctx->exec);
    }
}


/* the helper's ops (vsb_protocol.h): a row names one of them */
#define NGX_HTTP_VSB_HELPER_OP(op)  #op,

static const char *ngx_http_veto_sandbox_helper_ops[] = {
    VSB_OPS(NGX_HTTP_VSB_HELPER_OP)
    NULL
};


static ngx_int_t
ngx_http_veto_sandbox_op_helper_known(const char *helper)
{
    const char  **h;

    for (h = ngx_http_veto_sandbox_helper_ops; *h; h++) {
        if (ngx_strcmp(*h, helper) == 0) {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_veto_sandbox_op_refuse(ngx_conf_t *cf,
    ngx_http_veto_sandbox_op_t *op, const char *why)
{
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "veto_sandbox: op table row \"%V\" (%s): %s", &op->name,
                  op->path ? op->path : "no path", why);

    return NGX_ERROR;
}


/*
 * The table holds together: every row has all it needs, and nothing it
 * would never use (a mapper no reply reaches would be dead code that
 * looks alive).  Called at postconfiguration: a bad row fails "nginx -t".
 */
ngx_int_t
ngx_http_veto_sandbox_ops_init(ngx_conf_t *cf)
{
    const char                  *s;
    ngx_http_veto_sandbox_op_t  *op, *o;

    for (op = ngx_http_veto_sandbox_ops; op->name.len; op++) {

        if (op->methods == 0 || op->path == NULL
            || ngx_strncmp(op->path, "/v1/", 4) != 0)
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                         "needs methods and a /v1/ path");
        }

        for (s = op->path; *s; s++) {
            if (*s == '{' && ngx_strncmp(s, "{id}", 4) != 0
                && ngx_strncmp(s, "{approval}", 10) != 0
                && ngx_strncmp(s, "{exec}", 6) != 0
                && ngx_strcmp(s, "{key}") != 0)
            {
                return ngx_http_veto_sandbox_op_refuse(cf, op,
                                      "unknown placeholder (known: {id}, "
                                      "{approval}, {exec}, and {key} at "
                                      "the end)");
            }
        }

        if (op->scopes == 0) {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "needs scopes, or NGX_HTTP_VSB_PUBLIC");
        }

        if (op->scopes == NGX_HTTP_VSB_PUBLIC
            && (op->approval || op->quota
                || (op->helper == NULL
                    && op->run != ngx_http_veto_sandbox_openapi)))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "a public op knows no caller: no "
                                  "approval, no quota, and it is forwarded "
                                  "(or is the OpenAPI document)");
        }

        if (op->build == NULL || op->run == NULL) {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                            "needs build() and run()");
        }

        /* health asks Redis first, then forwards (_reply.c) */
        if (op->helper != NULL
            && ((op->run != ngx_http_veto_sandbox_forward
                 && op->run != ngx_http_veto_sandbox_health_run)
                || op->reply == NULL || op->record == NULL))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "a helper op runs ngx_http_veto_sandbox_"
                                  "forward() and needs reply() and record()");
        }

        if (op->helper != NULL
            && !ngx_http_veto_sandbox_op_helper_known(op->helper))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "its helper op is not one of the helper's "
                                  "(VSB_OPS in vsb_protocol.h)");
        }

        if (op->helper == NULL
            && (op->run == ngx_http_veto_sandbox_forward
                || op->reply != NULL || op->record != NULL))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "an op answered by run() has no helper "
                                  "reply to map or record");
        }

        if (op->approval
            && ngx_http_veto_sandbox_policy_action(ngx_http_veto_sandbox_ops,
                                                   &op->name)
               != op->approval)
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "its approval kind is not the policy's "
                                  "for this action name");
        }

        for (o = ngx_http_veto_sandbox_ops; o < op; o++) {
            if ((o->methods & op->methods)
                && ngx_strcmp(o->path, op->path) == 0)
            {
                return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "another row has this method and path");
            }
        }
    }

    return ngx_http_veto_sandbox_openapi_init(cf);
}
