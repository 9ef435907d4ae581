/*
 * Requests in: the JSON body, the one query argument and the policy's
 * limits, validated and turned into the helper request an op forwards
 * (ctx->req, and ctx->payload for the frame's payload).  The builders are
 * the ngx_http_veto_sandbox_build_pt of the op table; each answers a bad
 * request itself, with problem+json naming the field.  Here: what every
 * builder starts from (the helper request, the JSON body, a path) and
 * the simple rows' builders; sandbox.create's is _request_create.c's,
 * the exec's _execs.c's.  tenant and agent
 * sent to the helper always come from the verified token, never from the
 * client.  The request read is ctx->in: r's own, or a tools/call's REST
 * twin.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "vsb_paths.h"


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


/*
 * ?path= (and for a write ?mode=), decoded exactly as the approval hash
 * reads the query, which covers both, and the path checked by the
 * helper's own rules (vsb_path_workspace): a path the helper would refuse
 * never gets an approval that its use would burn.  On a refusal
 * (answered here, naming the argument at fault) ctx->path is left
 * empty.  *mode: -1 when absent.
 */
static ngx_int_t
ngx_http_veto_sandbox_path(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t *mode)
{
    u_char                       *p;
    ngx_int_t                     rc;
    ngx_str_t                     path, at, *m;
    const char                   *why;
    ngx_http_veto_sandbox_qarg_t  args[2];

    ngx_str_null(&ctx->path);

    args[0].name = "path";
    args[1].name = "mode";

    rc = ngx_http_veto_sandbox_hash_query_args(r->pool, &ctx->in.args, args,
                                               mode ? 2 : 1, &why, &at);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_ABORT) {
        return ngx_http_veto_sandbox_bad_query(r, &at, why);
    }

    path = args[0].value;

    if (path.len == 0) {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field", "path",
                                   "the \"path\" query argument is required");
    }

    rc = ngx_http_veto_sandbox_path_check(r, "path", &path, 0);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    if (mode) {
        m = &args[1].value;
        *mode = -1;

        if (m->data) {
            /* octal, as chmod takes it: 644, 0755; nothing above 0777 */
            *mode = (m->len >= 1 && m->len <= 4) ? 0 : NGX_ERROR;

            for (p = m->data; *mode >= 0 && p < m->data + m->len; p++) {
                *mode = (*p >= '0' && *p <= '7') ? *mode * 8 + (*p - '0')
                                                 : NGX_ERROR;
            }

            if (*mode < 0 || *mode > 0777) {
                return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                   "mode",
                                   "\"mode\" must be octal, 0 .. 0777 (e.g. "
                                   "0755): setuid, setgid and sticky bits "
                                   "are refused");
            }
        }
    }

    ctx->path = path;

    return NGX_OK;
}


/*
 * A path as the helper will check it (vsb_path_workspace): its size, no
 * NUL, an absolute one under /workspace, then the helper's own rules, so
 * that a path the helper would refuse never gets an approval that its use
 * would burn.  workspace: "/workspace" itself (and "/workspace/", ".")
 * too.  NGX_DECLINED: go on; else the refusal was sent, the code to end
 * with.
 */
ngx_int_t
ngx_http_veto_sandbox_path_check(ngx_http_request_t *r, const char *field,
    ngx_str_t *path, ngx_uint_t workspace)
{
    char         err[128];
    u_char       detail[256];
    size_t       rel_len;
    const char  *rel;

    static ngx_str_t  ws = ngx_string("/workspace");

    if (path->len > VSB_MAX_PATH) {
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "\"%s\" is at most %d bytes%Z", field, VSB_MAX_PATH);
        return ngx_http_veto_sandbox_bad_field(r, "bad_path", field,
                                               (char *) detail);
    }

    if (ngx_strlchr(path->data, path->data + path->len, '\0') != NULL) {
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "\"%s\" has a NUL byte%Z", field);
        return ngx_http_veto_sandbox_bad_field(r, "bad_path", field,
                                               (char *) detail);
    }

    if (path->len > 0 && path->data[0] == '/'
        && !(path->len >= ws.len
             && ngx_strncmp(path->data, ws.data, ws.len) == 0
             && ((path->len > ws.len + 1 && path->data[ws.len] == '/')
                 || (workspace && (path->len == ws.len
                                   || (path->len == ws.len + 1
                                       && path->data[ws.len] == '/'))))))
    {
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "\"%s\" must be relative to the workspace (src/a.c) or "
                     "absolute under it (/workspace/src/a.c)%Z", field);

        return ngx_http_veto_sandbox_bad_field(r, "bad_path", field,
                                               (char *) detail);
    }

    if (vsb_path_workspace((char *) path->data, path->len, workspace != 0,
                           &rel, &rel_len, err, sizeof(err))
        != 0)
    {
        ngx_snprintf(detail, sizeof(detail) - 1, "\"%s\": %s%Z", field, err);

        return ngx_http_veto_sandbox_bad_field(r, "bad_path", field,
                                               (char *) detail);
    }

    return NGX_DECLINED;
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


/* The helper request of a files op, naming ctx->path; NULL with *rc
 * the refusal (or the failure). */
static json_t *
ngx_http_veto_sandbox_req_path(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t *rc)
{
    json_t  *req;

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NULL;
    }

    if (json_object_set_new(req, "path",
                            ngx_http_veto_sandbox_json_ngx_str(&ctx->path))
        != 0)
    {
        *rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                   "bad_path", "\"path\" must be UTF-8",
                                   json_pack("{s:s}", "field", "path"));
        return NULL;
    }

    return req;
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


/* health: the liveness probe's "brief" ping, without what the probe
 * never shows (the host's profiles and ceilings: most of the reply) */
ngx_int_t
ngx_http_veto_sandbox_build_health(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->req = ngx_http_veto_sandbox_req(r, ctx);
    if (ctx->req == NULL
        || json_object_set_new(ctx->req, "brief", json_true()) != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* a file read back: ?path= */
ngx_int_t
ngx_http_veto_sandbox_build_read(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t     *req;
    ngx_int_t   rc;

    rc = ngx_http_veto_sandbox_path(r, ctx, NULL);
    if (ctx->path.len == 0) {
        return rc;
    }

    req = ngx_http_veto_sandbox_req_path(r, ctx, &rc);
    if (req == NULL) {
        return rc;
    }

    ctx->req = req;

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


ngx_int_t
ngx_http_veto_sandbox_build_write(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    off_t         size;
    json_t       *req;
    ngx_int_t     rc, mode;
    ngx_chain_t  *cl;
    uint64_t      ceiling;

    rc = ngx_http_veto_sandbox_path(r, ctx, &mode);
    if (ctx->path.len == 0) {
        return rc;
    }

    size = 0;

    for (cl = ctx->in.body; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
    }

    ceiling = ctx->rule->ceiling[NGX_HTTP_VSB_L_FILE_BYTES];

    if ((ceiling && (uint64_t) size > ceiling) || size > VSB_MAX_PAYLOAD) {
        if (ceiling == 0 || ceiling > VSB_MAX_PAYLOAD) {
            ceiling = VSB_MAX_PAYLOAD;
        }

        return ngx_http_veto_sandbox_problem(r,
                               NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                               "over_ceiling",
                               "the file is larger than the policy allows",
                               json_pack("{s:s, s:I}", "limit",
                                         VSB_LIMIT_FILE_BYTES, "ceiling",
                                         (json_int_t) ceiling));
    }

    req = ngx_http_veto_sandbox_req_path(r, ctx, &rc);
    if (req == NULL) {
        return rc;
    }

    if (mode >= 0
        && json_object_set_new(req, "mode", json_integer(mode)) != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the body goes as it lies: memory buffers or the temporary file */
    ctx->req = req;
    ctx->payload = ctx->in.body;
    ctx->payload_len = (size_t) size;

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
