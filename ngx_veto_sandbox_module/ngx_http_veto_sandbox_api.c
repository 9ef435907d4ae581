/*
 * The /v1 HTTP API's content handler: one path for every op of the op
 * table (_ops.c):
 *
 *     route -> identity and scope -> body -> build -> gate -> run
 *
 * Every request ends exactly once with ngx_http_finalize_request(),
 * either right away (a refusal) or from the reply run() waits for.  The
 * MCP endpoint (/v1/mcp, with veto_sandbox_mcp on) is _mcp.c's.
 */

#include "ngx_http_veto_sandbox_faces.h"


static ngx_int_t ngx_http_veto_sandbox_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_start(ngx_http_request_t *r);


ngx_int_t
ngx_http_veto_sandbox_api_handler(ngx_http_request_t *r)
{
    ngx_int_t                     rc;
    ngx_http_veto_sandbox_op_t   *op;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    if (ngx_http_veto_sandbox_mcp_uri(r)) {
        return ngx_http_veto_sandbox_mcp_handler(r);
    }

    ctx = ngx_http_veto_sandbox_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* a route that answered itself (404, 405) leaves ctx->op unset */
    rc = ngx_http_veto_sandbox_route(r, ctx);
    if (ctx->op == NULL) {
        return rc;
    }

    op = ctx->op;

    if (op->scopes != NGX_HTTP_VSB_PUBLIC) {

        /* fail closed: internal redirects and subrequests skip POST_READ */
        if (ngx_http_veto_sandbox_identify(r, ctx, 0) != NGX_OK) {
            return ngx_http_veto_sandbox_deny(r, ctx);
        }

        if (ngx_http_veto_sandbox_scope_check(r, ctx) != NGX_OK) {
            return ngx_http_veto_sandbox_deny(r, ctx);
        }
    }

    switch (op->body) {

    case NGX_HTTP_VSB_BODY_JSON:

        if (r->headers_in.content_length_n > NGX_HTTP_VSB_MAX_JSON_BODY) {
            return ngx_http_veto_sandbox_problem(r,
                                   NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                   "body_too_large",
                                   "a JSON request body is at most 1 MiB",
                                   NULL);
        }

        break;

    case NGX_HTTP_VSB_BODY_FILE:

        if (ctx->rule->ceiling[NGX_HTTP_VSB_L_FILE_BYTES]
            && r->headers_in.content_length_n
               > (off_t) ctx->rule->ceiling[NGX_HTTP_VSB_L_FILE_BYTES])
        {
            return ngx_http_veto_sandbox_problem(r,
                                   NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                   "over_ceiling",
                                   "the file is larger than the policy "
                                   "allows",
                                   json_pack("{s:s, s:I}", "limit",
                                             VSB_LIMIT_FILE_BYTES, "ceiling",
                                             (json_int_t) ctx->rule->ceiling[
                                                 NGX_HTTP_VSB_L_FILE_BYTES]));
        }

        break;

    case NGX_HTTP_VSB_BODY_ARCHIVE:

        rc = ngx_http_veto_sandbox_archive_early(r, ctx);
        if (rc != NGX_DECLINED) {
            return rc;
        }

        break;

    default: /* NGX_HTTP_VSB_BODY_NONE */

        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        r->main->count++;

        ngx_http_veto_sandbox_start(r);

        return NGX_DONE;
    }

    rc = ngx_http_read_client_request_body(r, ngx_http_veto_sandbox_start);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* "GET, HEAD, POST": the Allow header of a 405, from method bits */
static ngx_int_t
ngx_http_veto_sandbox_method_not_allowed(ngx_http_request_t *r,
    ngx_uint_t allow)
{
    u_char      *p, *start;
    ngx_uint_t   i;

    static struct {
        ngx_uint_t   method;
        const char  *name;
    } methods[] = {
        { NGX_HTTP_GET, "GET" },
        { NGX_HTTP_HEAD, "HEAD" },
        { NGX_HTTP_POST, "POST" },
        { NGX_HTTP_PUT, "PUT" },
        { NGX_HTTP_PATCH, "PATCH" },
        { NGX_HTTP_DELETE, "DELETE" },
        { 0, NULL }
    };

    start = ngx_pnalloc(r->pool,
                        sizeof("GET, HEAD, POST, PUT, PATCH, DELETE"));
    if (start == NULL) {
        return NGX_ERROR;
    }

    p = start;

    for (i = 0; methods[i].name; i++) {
        if (allow & methods[i].method) {
            p = ngx_sprintf(p, "%s%s", p == start ? "" : ", ",
                            methods[i].name);
        }
    }

    *p = '\0';

    if (ngx_http_veto_sandbox_header(r, "Allow", (char *) start) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_ALLOWED,
                                         "method_not_allowed", NULL, NULL);
}


/* Sets ctx->op and the ids its path names (sandbox, approval, exec);
 * answers 404 / 405 itself, leaving ctx->op NULL. */
static ngx_int_t
ngx_http_veto_sandbox_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_uint_t  allow;

    ctx->op = ngx_http_veto_sandbox_op_route(r->method, &r->uri, &allow,
                                             &ctx->sandbox, &ctx->apr_id,
                                             &ctx->exec);
    if (ctx->op != NULL) {
        return NGX_OK;
    }

    if (allow) {
        return ngx_http_veto_sandbox_method_not_allowed(r, allow);
    }

    /* the MCP endpoint where it is off (_mcp.c took it where it is on):
     * say so, not "no such resource" */
    if (r->uri.len == sizeof("/v1/mcp") - 1
        && ngx_strncmp(r->uri.data, "/v1/mcp", sizeof("/v1/mcp") - 1) == 0)
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                   "not_found",
                   "the MCP endpoint is not enabled on this server "
                   "(veto_sandbox_mcp off)", NULL);
    }

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND, "not_found",
                                         "no such resource", NULL);
}


/* Runs once the body (if any) is in; ends the request exactly once. */
static void
ngx_http_veto_sandbox_start(ngx_http_request_t *r)
{
    ngx_int_t                     rc;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    ngx_http_veto_sandbox_input_rest(r, ctx);

    rc = ngx_http_veto_sandbox_op_run(r, ctx);

    if (rc == NGX_DONE) {
        return;         /* the reply will finish it */
    }

    ngx_http_finalize_request(r, rc);
}
