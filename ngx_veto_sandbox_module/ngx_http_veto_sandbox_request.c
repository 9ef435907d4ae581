/*
 * Requests in: the JSON body, the one query argument and the policy's
 * limits, validated and turned into the helper request an op forwards
 * (ctx->req, and ctx->payload for the frame's payload).  The builders are
 * the ngx_http_veto_sandbox_build_pt of the op table; each answers a bad
 * request itself, with problem+json naming the field.  Here: what every
 * builder starts from (the helper request, the JSON body) and the simple
 * rows' builders; sandbox.create's is _sandboxes.c's, the exec's
 * _execs.c's, the files' and archives' _files.c's.  tenant and agent
 * sent to the helper always come from the verified token, never from the
 * client.  The request read is ctx->in: r's own, or a tools/call's REST
 * twin.
 */

#include "ngx_http_veto_sandbox_pipeline.h"


/* A helper request with the op's "op", owner and, when one is named,
 * "id"; freed with the request's pool. */
json_t *
ngx_http_veto_sandbox_req(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char              rid[64], *p;
    json_t             *req;
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    req = json_object();
    if (req == NULL) {
        return NULL;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = req;

    p = ngx_snprintf(rid, sizeof(rid), "%uA-%ui", r->connection->number,
                     r->connection->requests);

    if (json_object_set_new(req, "op", json_string(ctx->op->helper)) != 0
        || json_object_set_new(req, "request_id",
                               json_stringn((char *) rid, p - rid)) != 0)
    {
        return NULL;
    }

    /* a public op has no caller to name */
    if (ctx->op->scopes == NGX_HTTP_VSB_PUBLIC) {
        return req;
    }

    if (json_object_set_new(req, "tenant",
                            ngx_http_veto_sandbox_json_ngx_str(&ctx->tenant))
        != 0
        || json_object_set_new(req, "agent",
                            ngx_http_veto_sandbox_json_ngx_str(&ctx->agent))
           != 0)
    {
        return NULL;
    }

    if (ctx->sandbox.len
        && json_object_set_new(req, "id",
                          ngx_http_veto_sandbox_json_ngx_str(&ctx->sandbox))
           != 0)
    {
        return NULL;
    }

    return req;
}


ngx_msec_t
ngx_http_veto_sandbox_wait_ms(ngx_http_veto_sandbox_ctx_t *ctx)
{
    uint64_t  n;

    n = ctx->rule ? ctx->rule->ceiling[NGX_HTTP_VSB_L_TIMEOUT_S] : 0;

    if (n == 0 || n > 86400) {
        n = 86400;
    }

    return (ngx_msec_t) n * 1000;
}


/* list, get, delete: the route says it all */
ngx_int_t
ngx_http_veto_sandbox_build_simple(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->req = ngx_http_veto_sandbox_req(r, ctx);
    if (ctx->req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* approvals and audit: answered from Redis after the gate, which is where
 * their queries are read (a 503 comes before a 400, as ever) */
ngx_int_t
ngx_http_veto_sandbox_build_nothing(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return NGX_DECLINED;
}


/* The whole JSON request body; NULL with *rc the response sent. */
json_t *
ngx_http_veto_sandbox_read_json(ngx_http_request_t *r, ngx_int_t *rc)
{
    u_char              *p, *buf;
    off_t                size;
    ssize_t              n;
    json_t                       *j;
    ngx_buf_t                    *b;
    ngx_str_t                    *ct;
    ngx_chain_t                  *cl;
    json_error_t                  err;
    ngx_pool_cleanup_t           *cln;
    ngx_http_veto_sandbox_ctx_t  *ctx;
    u_char                        detail[256];

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    ct = ctx->in.content_type;

    if (ct != NULL
        && !(ct->len >= sizeof("application/json") - 1
             && ngx_strncasecmp(ct->data, (u_char *) "application/json",
                                sizeof("application/json") - 1) == 0))
    {
        *rc = ngx_http_veto_sandbox_problem(r,
                                    NGX_HTTP_UNSUPPORTED_MEDIA_TYPE,
                                    "unsupported_media_type",
                                    "the body must be application/json",
                                    NULL);
        return NULL;
    }

    size = 0;

    for (cl = ctx->in.body; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
    }

    if (size == 0) {
        *rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                            "bad_json",
                                            "a JSON object body is required",
                                            NULL);
        return NULL;
    }

    if (size > NGX_HTTP_VSB_MAX_JSON_BODY) {
        *rc = ngx_http_veto_sandbox_problem(r,
                                    NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                    "body_too_large",
                                    "a JSON request body is at most 1 MiB",
                                    NULL);
        return NULL;
    }

    buf = ngx_pnalloc(r->pool, (size_t) size);
    if (buf == NULL) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NULL;
    }

    p = buf;

    for (cl = ctx->in.body; cl; cl = cl->next) {
        b = cl->buf;

        if (b->in_file) {
            n = ngx_read_file(b->file, p, (size_t) (b->file_last - b->file_pos),
                              b->file_pos);

            if (n != b->file_last - b->file_pos) {
                *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
                return NULL;
            }

            p += n;
            continue;
        }

        p = ngx_cpymem(p, b->pos, b->last - b->pos);
    }

    j = json_loadb((char *) buf, p - buf, JSON_REJECT_DUPLICATES, &err);

    if (j == NULL) {
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "malformed JSON at line %d column %d: %s%Z",
                     err.line, err.column, err.text);
        *rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                            "bad_json", (char *) detail,
                                            NULL);
        return NULL;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        json_decref(j);
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NULL;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = j;

    if (!json_is_object(j)) {
        *rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                            "bad_json",
                                            "the body must be a JSON object",
                                            NULL);
        return NULL;
    }

    return j;
}
