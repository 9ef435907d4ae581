/*
 * The /v1 HTTP API: routing, request validation, policy checks, and the
 * mapping between HTTP and the helper's ops.  Every handler ends the
 * request exactly once with ngx_http_finalize_request(), either right
 * away (a refusal) or from the helper's reply.  tenant and agent sent to
 * the helper always come from the verified token, never from the client.
 */

#include "ngx_http_veto_sandbox_module.h"
#include "ngx_http_veto_sandbox_approval.h"


#define NGX_HTTP_VSB_MAX_JSON_BODY  (1024 * 1024)



static ngx_int_t ngx_http_veto_sandbox_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_scope_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_start(ngx_http_request_t *r);
static ngx_int_t ngx_http_veto_sandbox_simple(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_create(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_write(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, ngx_chain_t *payload,
    size_t payload_len);
static void ngx_http_veto_sandbox_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_reply_error(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_reply_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_reply_read(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_json_cleanup(void *data);
static ngx_int_t ngx_http_veto_sandbox_bad_field(ngx_http_request_t *r,
    const char *code, const char *field, const char *detail);


ngx_int_t
ngx_http_veto_sandbox_api_handler(ngx_http_request_t *r)
{
    ngx_int_t                     rc;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_veto_sandbox_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* a route that answered itself (404, 405) leaves ctx->op unset */
    rc = ngx_http_veto_sandbox_route(r, ctx);
    if (ctx->op == 0) {
        return rc;
    }

    if (ctx->op != NGX_HTTP_VSB_OP_HEALTH) {

        /* fail closed: internal redirects and subrequests skip POST_READ */
        if (ngx_http_veto_sandbox_identify(r, ctx) != NGX_OK) {
            return ngx_http_veto_sandbox_deny(r, ctx);
        }

        if (ngx_http_veto_sandbox_scope_check(r, ctx) != NGX_OK) {
            return ngx_http_veto_sandbox_deny(r, ctx);
        }
    }

    switch (ctx->op) {

    case NGX_HTTP_VSB_OP_CREATE:
    case NGX_HTTP_VSB_OP_EXEC:
    case NGX_HTTP_VSB_OP_WRITE:
    case NGX_HTTP_VSB_OP_APR_APPROVE:
    case NGX_HTTP_VSB_OP_APR_DENY:

        if (ctx->op != NGX_HTTP_VSB_OP_WRITE
            && r->headers_in.content_length_n > NGX_HTTP_VSB_MAX_JSON_BODY)
        {
            return ngx_http_veto_sandbox_problem(r,
                                   NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                   "body_too_large",
                                   "a JSON request body is at most 1 MiB",
                                   NULL);
        }

        if (ctx->op == NGX_HTTP_VSB_OP_WRITE
            && ctx->rule->ceiling[NGX_HTTP_VSB_L_FILE_BYTES]
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

        rc = ngx_http_read_client_request_body(r,
                                               ngx_http_veto_sandbox_start);

        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            return rc;
        }

        return NGX_DONE;

    default:

        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        r->main->count++;

        ngx_http_veto_sandbox_start(r);

        return NGX_DONE;
    }
}


static ngx_int_t
ngx_http_veto_sandbox_method_not_allowed(ngx_http_request_t *r,
    const char *allow)
{
    if (ngx_http_veto_sandbox_header(r, "Allow", allow) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_ALLOWED,
                                         "method_not_allowed", NULL, NULL);
}


/* Sets ctx->op and the sandbox id; answers 404 / 405 itself, leaving
 * ctx->op 0. */
static ngx_int_t
ngx_http_veto_sandbox_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char      *p, *last, *id;
    ngx_uint_t   m;

    p = r->uri.data;
    last = p + r->uri.len;
    m = r->method;

#define ngx_http_vsb_eat(s)                                                   \
    ((size_t) (last - p) >= sizeof(s) - 1                                     \
     && ngx_strncmp(p, s, sizeof(s) - 1) == 0                                 \
     && (p += sizeof(s) - 1))

    if (!ngx_http_vsb_eat("/v1/")) {
        goto not_found;
    }

    if (ngx_http_vsb_eat("health") && p == last) {
        if (!(m & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
            return ngx_http_veto_sandbox_method_not_allowed(r, "GET, HEAD");
        }

        ctx->op = NGX_HTTP_VSB_OP_HEALTH;
        return NGX_OK;
    }

    if (ngx_http_vsb_eat("audit") && p == last) {
        if (!(m & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
            return ngx_http_veto_sandbox_method_not_allowed(r, "GET, HEAD");
        }

        ctx->op = NGX_HTTP_VSB_OP_AUDIT;
        return NGX_OK;
    }

    if (ngx_http_vsb_eat("approvals")) {

        if (p == last) {
            if (!(m & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
                return ngx_http_veto_sandbox_method_not_allowed(r,
                                                                "GET, HEAD");
            }

            ctx->op = NGX_HTTP_VSB_OP_APR_LIST;
            return NGX_OK;
        }

        if (*p++ != '/'
            || (size_t) (last - p) < NGX_HTTP_VSB_APPROVAL_ID_LEN)
        {
            goto not_found;
        }

        ctx->apr_id.data = p;
        ctx->apr_id.len = NGX_HTTP_VSB_APPROVAL_ID_LEN;

        if (!ngx_http_veto_sandbox_approval_id_valid(&ctx->apr_id)) {
            ngx_str_null(&ctx->apr_id);
            goto not_found;
        }

        p += NGX_HTTP_VSB_APPROVAL_ID_LEN;

        if (p == last) {
            if (!(m & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
                return ngx_http_veto_sandbox_method_not_allowed(r,
                                                                "GET, HEAD");
            }

            ctx->op = NGX_HTTP_VSB_OP_APR_GET;
            return NGX_OK;
        }

        if ((ngx_http_vsb_eat("/approve") || ngx_http_vsb_eat("/deny"))
            && p == last)
        {
            if (!(m & NGX_HTTP_POST)) {
                return ngx_http_veto_sandbox_method_not_allowed(r, "POST");
            }

            ctx->op = last[-1] == 'e' ? NGX_HTTP_VSB_OP_APR_APPROVE
                                      : NGX_HTTP_VSB_OP_APR_DENY;
            return NGX_OK;
        }

        goto not_found;
    }

    if (!ngx_http_vsb_eat("sandboxes")) {
        goto not_found;
    }

    if (p == last) {
        if (m & (NGX_HTTP_GET|NGX_HTTP_HEAD)) {
            ctx->op = NGX_HTTP_VSB_OP_LIST;
            return NGX_OK;
        }

        if (m & NGX_HTTP_POST) {
            ctx->op = NGX_HTTP_VSB_OP_CREATE;
            return NGX_OK;
        }

        return ngx_http_veto_sandbox_method_not_allowed(r, "GET, HEAD, POST");
    }

    if (*p++ != '/' || (size_t) (last - p) < VSB_SANDBOX_ID_LEN) {
        goto not_found;
    }

    /* an id that cannot exist is as unknown as one that does not */
    id = p;

    if (!ngx_http_veto_sandbox_id_valid(id, VSB_SANDBOX_ID_LEN)) {
        goto not_found;
    }

    p += VSB_SANDBOX_ID_LEN;

    ctx->sandbox.data = id;
    ctx->sandbox.len = VSB_SANDBOX_ID_LEN;

    if (p == last) {
        if (m & (NGX_HTTP_GET|NGX_HTTP_HEAD)) {
            ctx->op = NGX_HTTP_VSB_OP_GET;
            return NGX_OK;
        }

        if (m & NGX_HTTP_DELETE) {
            ctx->op = NGX_HTTP_VSB_OP_DELETE;
            return NGX_OK;
        }

        return ngx_http_veto_sandbox_method_not_allowed(r,
                                                        "GET, HEAD, DELETE");
    }

    if (ngx_http_vsb_eat("/files") && p == last) {
        if (m & (NGX_HTTP_GET|NGX_HTTP_HEAD)) {
            ctx->op = NGX_HTTP_VSB_OP_READ;

        } else if (m & NGX_HTTP_PUT) {
            ctx->op = NGX_HTTP_VSB_OP_WRITE;

        } else {
            return ngx_http_veto_sandbox_method_not_allowed(r,
                                                            "GET, HEAD, PUT");
        }

        return NGX_OK;
    }

    if (ngx_http_vsb_eat("/exec") && p == last) {
        if (!(m & NGX_HTTP_POST)) {
            return ngx_http_veto_sandbox_method_not_allowed(r, "POST");
        }

        ctx->op = NGX_HTTP_VSB_OP_EXEC;
        return NGX_OK;
    }

#undef ngx_http_vsb_eat

not_found:

    ngx_str_null(&ctx->sandbox);

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND, "not_found",
                                         "no such resource", NULL);
}


static ngx_int_t
ngx_http_veto_sandbox_scope_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_uint_t                         need;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    switch (ctx->op) {

    case NGX_HTTP_VSB_OP_LIST:
    case NGX_HTTP_VSB_OP_GET:
        /* reading one's own sandboxes needs any sandbox scope */
        need = NGX_HTTP_VSB_SCOPE_CREATE|NGX_HTTP_VSB_SCOPE_EXEC
               |NGX_HTTP_VSB_SCOPE_FILES;
        break;

    case NGX_HTTP_VSB_OP_EXEC:
        need = NGX_HTTP_VSB_SCOPE_EXEC;
        break;

    case NGX_HTTP_VSB_OP_WRITE:
    case NGX_HTTP_VSB_OP_READ:
        need = NGX_HTTP_VSB_SCOPE_FILES;
        break;

    case NGX_HTTP_VSB_OP_APR_GET:
        /* reviewers, and requesters reading their own approvals */
        need = NGX_HTTP_VSB_SCOPE_REVIEW|NGX_HTTP_VSB_SCOPE_CREATE
               |NGX_HTTP_VSB_SCOPE_EXEC|NGX_HTTP_VSB_SCOPE_FILES;
        break;

    case NGX_HTTP_VSB_OP_APR_LIST:
    case NGX_HTTP_VSB_OP_APR_APPROVE:
    case NGX_HTTP_VSB_OP_APR_DENY:
        need = NGX_HTTP_VSB_SCOPE_REVIEW;
        break;

    case NGX_HTTP_VSB_OP_AUDIT:
        need = NGX_HTTP_VSB_SCOPE_AUDIT;
        break;

    default:  /* create, delete */
        need = NGX_HTTP_VSB_SCOPE_CREATE;
        break;
    }

    if (ctx->scopes & need) {
        return NGX_OK;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    ngx_str_set(&ctx->decision, "deny:insufficient_scope");

    /* the scope named in the challenge; scope names are NUL-free tokens
     * of the configuration, which keeps them NUL terminated */
    ctx->reason = (const char *) vscf->scope[
                      need & NGX_HTTP_VSB_SCOPE_REVIEW ? 3
                      : need & NGX_HTTP_VSB_SCOPE_AUDIT ? 4
                      : need & NGX_HTTP_VSB_SCOPE_CREATE ? 0
                      : need & NGX_HTTP_VSB_SCOPE_EXEC ? 1 : 2].data;

    return NGX_DECLINED;
}


/* Runs once the body (if any) is in; ends the request exactly once. */
static void
ngx_http_veto_sandbox_start(ngx_http_request_t *r)
{
    ngx_int_t                     rc;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    switch (ctx->op) {

    case NGX_HTTP_VSB_OP_CREATE:
        rc = ngx_http_veto_sandbox_create(r, ctx);
        break;

    case NGX_HTTP_VSB_OP_EXEC:
        rc = ngx_http_veto_sandbox_exec(r, ctx);
        break;

    case NGX_HTTP_VSB_OP_WRITE:
        rc = ngx_http_veto_sandbox_write(r, ctx);
        break;

    case NGX_HTTP_VSB_OP_APR_LIST:
    case NGX_HTTP_VSB_OP_APR_GET:
    case NGX_HTTP_VSB_OP_APR_APPROVE:
    case NGX_HTTP_VSB_OP_APR_DENY:
    case NGX_HTTP_VSB_OP_AUDIT:
        rc = ngx_http_veto_sandbox_gate(r, ctx, ngx_http_veto_sandbox_review);
        break;

    default:
        rc = ngx_http_veto_sandbox_simple(r, ctx);
        break;
    }

    if (rc == NGX_DONE) {
        return;         /* the helper's reply will finish it */
    }

    ngx_http_finalize_request(r, rc);
}


/* A helper request with "op", owner and, when one is named, "id"; freed
 * with the request's pool. */
static json_t *
ngx_http_veto_sandbox_req(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *op)
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

    if (json_object_set_new(req, "op", json_string(op)) != 0
        || json_object_set_new(req, "request_id",
                               json_stringn((char *) rid, p - rid)) != 0)
    {
        return NULL;
    }

    if (ctx->op == NGX_HTTP_VSB_OP_HEALTH) {
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


/* "sb-" and 24 lowercase hex digits (vsb_protocol.h): anything else
 * names no sandbox, whether a client or the helper sent it (it goes into
 * a Location header and Redis keys) */
ngx_uint_t
ngx_http_veto_sandbox_id_valid(u_char *id, size_t len)
{
    size_t  i;

    if (len != VSB_SANDBOX_ID_LEN || ngx_strncmp(id, "sb-", 3) != 0) {
        return 0;
    }

    for (i = 3; i < len; i++) {
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
        {
            return 0;
        }
    }

    return 1;
}


/* A create's reply: the new sandbox's id into ctx->sandbox (once);
 * NGX_DECLINED when the helper named none that is valid. */
ngx_int_t
ngx_http_veto_sandbox_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t  *v;

    if (ctx->sandbox.len) {
        return NGX_OK;
    }

    v = json_object_get(json_object_get(ctx->helper.json, "sandbox"), "id");

    if (!json_is_string(v)
        || !ngx_http_veto_sandbox_id_valid((u_char *) json_string_value(v),
                                           json_string_length(v)))
    {
        return NGX_DECLINED;
    }

    ctx->sandbox.data = ngx_pnalloc(r->pool, VSB_SANDBOX_ID_LEN);
    if (ctx->sandbox.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ctx->sandbox.data, json_string_value(v), VSB_SANDBOX_ID_LEN);
    ctx->sandbox.len = VSB_SANDBOX_ID_LEN;

    return NGX_OK;
}


/* ?path=, decoded exactly as the approval hash reads the query; the
 * helper does the full check (vsb_path_check).  On a refusal (answered
 * here) ctx->path is left empty. */
static ngx_int_t
ngx_http_veto_sandbox_path(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t    rc;
    ngx_str_t    path;
    const char  *why;

    ngx_str_null(&ctx->path);

    rc = ngx_http_veto_sandbox_hash_query_arg(r->pool, &r->args, "path",
                                                  &path, &why);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_ABORT) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "path", why);
    }

    if (rc == NGX_DECLINED || path.len == 0) {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field", "path",
                                   "the \"path\" query argument is required");
    }

    if (path.len > VSB_MAX_PATH
        || ngx_strlchr(path.data, path.data + path.len, '\0') != NULL
        || path.data[0] == '/')
    {
        return ngx_http_veto_sandbox_bad_field(r, "bad_path", "path",
                                   "\"path\" must be a relative path inside "
                                   "the workspace");
    }

    ctx->path = path;

    return NGX_OK;
}


/* health, list, get, delete, read: no request body */
static ngx_int_t
ngx_http_veto_sandbox_simple(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t      *req;
    ngx_int_t    rc;
    const char  *op;

    switch (ctx->op) {
    case NGX_HTTP_VSB_OP_HEALTH: op = VSB_OP_PING; break;
    case NGX_HTTP_VSB_OP_LIST:   op = VSB_OP_LIST; break;
    case NGX_HTTP_VSB_OP_GET:    op = VSB_OP_STATUS; break;
    case NGX_HTTP_VSB_OP_DELETE: op = VSB_OP_DESTROY; break;
    default:                     op = VSB_OP_READ_FILE; break;
    }

    if (ctx->op == NGX_HTTP_VSB_OP_READ) {
        rc = ngx_http_veto_sandbox_path(r, ctx);
        if (ctx->path.len == 0) {
            return rc;
        }
    }

    req = ngx_http_veto_sandbox_req(r, ctx, op);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->op == NGX_HTTP_VSB_OP_READ
        && json_object_set_new(req, "path",
                               ngx_http_veto_sandbox_json_ngx_str(&ctx->path))
           != 0)
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                   "bad_path", "\"path\" must be UTF-8",
                                   json_pack("{s:s}", "field", "path"));
    }

    return ngx_http_veto_sandbox_call(r, ctx, req, NULL, 0);
}


static ngx_int_t
ngx_http_veto_sandbox_bad_field(ngx_http_request_t *r, const char *code,
    const char *field, const char *detail)
{
    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST, code,
                                         detail,
                                         json_pack("{s:s}", "field", field));
}


/* The policy said no: on the tenant's audit record, then answered. */
static ngx_int_t
ngx_http_veto_sandbox_policy_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *decision,
    ngx_uint_t status, const char *code, const char *detail, json_t *extra)
{
    ctx->decision.data = (u_char *) decision;
    ctx->decision.len = ngx_strlen(decision);

    ngx_http_veto_sandbox_audit_denied(r, ctx, code, status);

    return ngx_http_veto_sandbox_problem(r, status, code, detail, extra);
}


static ngx_int_t
ngx_http_veto_sandbox_over(ngx_http_request_t *r, ngx_uint_t i,
    uint64_t asked, uint64_t ceiling)
{
    u_char  detail[160];

    ngx_snprintf(detail, sizeof(detail) - 1,
                 "%s %uL is over the policy ceiling %uL%Z",
                 ngx_http_veto_sandbox_limit_names[i], asked, ceiling);

    return ngx_http_veto_sandbox_policy_refuse(r,
                               ngx_http_get_module_ctx(r,
                                               ngx_http_veto_sandbox_module),
                               "deny:over_ceiling",
                               NGX_HTTP_VSB_UNPROCESSABLE,
                               "over_ceiling", (char *) detail,
                               json_pack("{s:s, s:I, s:I}", "limit",
                                         ngx_http_veto_sandbox_limit_names[i],
                                         "requested", (json_int_t) asked,
                                         "ceiling", (json_int_t) ceiling));
}


/* A positive integer; *v untouched and NGX_DECLINED if absent. */
static ngx_int_t
ngx_http_veto_sandbox_uint(json_t *j, uint64_t *v)
{
    if (j == NULL) {
        return NGX_DECLINED;
    }

    if (!json_is_integer(j) || json_integer_value(j) <= 0) {
        return NGX_ERROR;
    }

    *v = (uint64_t) json_integer_value(j);

    return NGX_OK;
}


/*
 * ttl_s of a create, timeout_s of an exec: the body's positive integer or
 * the policy's default, within the policy's ceiling, set in req.  *n: the
 * value (0: none).  NGX_OK, or NGX_ABORT with *rc the refusal's code.
 */
static ngx_int_t
ngx_http_veto_sandbox_limited(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_uint_t limit, uint64_t *n, ngx_int_t *rc)
{
    const char                    *name;
    ngx_http_veto_sandbox_rule_t  *rule;

    rule = ctx->rule;
    name = ngx_http_veto_sandbox_limit_names[limit];

    switch (ngx_http_veto_sandbox_uint(json_object_get(body, name), n)) {

    case NGX_ERROR:
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_type", name,
                                              "must be a positive integer");
        return NGX_ABORT;

    case NGX_DECLINED:
        *n = rule->def[limit];
        break;
    }

    if (*n == 0) {
        return NGX_OK;
    }

    if (rule->ceiling[limit] && *n > rule->ceiling[limit]) {
        *rc = ngx_http_veto_sandbox_over(r, limit, *n, rule->ceiling[limit]);
        return NGX_ABORT;
    }

    if (json_object_set_new(req, name, json_integer((json_int_t) *n)) != 0) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    return NGX_OK;
}


static const char  *ngx_http_veto_sandbox_create_fields[] = {
    "profile", "limits", "ttl_s", "network", "env", "metadata", NULL
};

static const char  *ngx_http_veto_sandbox_exec_fields[] = {
    "argv", "cwd", "env", "stdin", "timeout_s", NULL
};


/* Every key of body is one of names; else NGX_ABORT with the 400 in *rc. */
static ngx_int_t
ngx_http_veto_sandbox_known(ngx_http_request_t *r, json_t *body,
    const char **names, ngx_int_t *rc)
{
    char         field[64];
    json_t      *v;
    ngx_uint_t   i;
    const char  *key;

    json_object_foreach(body, key, v) {
        for (i = 0; names[i]; i++) {
            if (ngx_strcmp(key, names[i]) == 0) {
                break;
            }
        }

        if (names[i] == NULL) {
            ngx_snprintf((u_char *) field, sizeof(field) - 1, "%s%Z", key);
            *rc = ngx_http_veto_sandbox_bad_field(r, "unknown_field", field,
                                                  "unknown field");
            return NGX_ABORT;
        }
    }

    return NGX_OK;
}


enum {
    NGX_HTTP_VSB_STRING = 0,
    NGX_HTTP_VSB_OBJECT,
    NGX_HTTP_VSB_STRINGS            /* an object of strings */
};


/* An optional field copied from the body into the helper request when it
 * has the type; else NGX_ABORT with the 400 in *rc. */
static ngx_int_t
ngx_http_veto_sandbox_copy(ngx_http_request_t *r, json_t *body, json_t *req,
    const char *name, ngx_uint_t type, ngx_int_t *rc)
{
    json_t      *v, *e;
    ngx_uint_t   ok;
    const char  *k;

    static const char  *want[] = {
        "must be a string", "must be an object", "must be an object of strings"
    };

    v = json_object_get(body, name);

    if (v == NULL) {
        return NGX_OK;
    }

    ok = (type == NGX_HTTP_VSB_STRING) ? json_is_string(v)
                                       : json_is_object(v);

    if (ok && type == NGX_HTTP_VSB_STRINGS) {
        json_object_foreach(v, k, e) {
            if (!json_is_string(e)) {
                ok = 0;
                break;
            }
        }
    }

    if (!ok) {
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_type", name, want[type]);
        return NGX_ABORT;
    }

    if (json_object_set(req, name, v) != 0) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_create(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    char                          field[64];
    json_t                       *body, *req, *v, *lim, *out;
    uint64_t                      n;
    ngx_int_t                     rc;
    ngx_uint_t                    i;
    const char                   *key, *profile;
    ngx_http_veto_sandbox_rule_t *rule;

    body = ngx_http_veto_sandbox_read_json(r, &rc);
    if (body == NULL) {
        return rc;
    }

    rule = ctx->rule;

    if (ngx_http_veto_sandbox_known(r, body, ngx_http_veto_sandbox_create_fields,
                                    &rc)
        != NGX_OK)
    {
        return rc;
    }

    req = ngx_http_veto_sandbox_req(r, ctx, VSB_OP_CREATE);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* profile: allowed by policy, or the policy's default */
    v = json_object_get(body, "profile");

    if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "profile",
                                               "\"profile\" must be a "
                                               "non-empty string");
    }

    profile = v ? json_string_value(v)
                : rule->default_profile.len
                  ? (const char *) rule->default_profile.data : NULL;

    if (profile != NULL) {
        if (ngx_http_veto_sandbox_policy_profile(rule, profile) != NGX_OK) {
            return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN, "profile_not_allowed",
                                   "the policy does not allow this profile",
                                   json_pack("{s:s, s:s}", "field", "profile",
                                             "profile", profile));
        }

        json_object_set_new(req, "profile", json_string(profile));

    } else if (rule->profiles != NULL
               && ngx_http_veto_sandbox_policy_profile(rule, "default")
                  != NGX_OK)
    {
        return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN, "profile_not_allowed",
                                   "the policy does not allow the default "
                                   "profile; name one",
                                   json_pack("{s:s}", "field", "profile"));
    }

    /* limits: known names, positive integers, within the ceilings;
     * the policy's defaults fill what is omitted */
    lim = json_object_get(body, "limits");

    if (lim != NULL && !json_is_object(lim)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "limits",
                                               "\"limits\" must be an "
                                               "object");
    }

    json_object_foreach(lim, key, v) {
        for (i = 0; i < NGX_HTTP_VSB_NHELPER_LIMITS; i++) {
            if (ngx_strcmp(key, ngx_http_veto_sandbox_limit_names[i]) == 0) {
                break;
            }
        }

        ngx_snprintf((u_char *) field, sizeof(field) - 1, "limits.%s%Z", key);

        if (i == NGX_HTTP_VSB_NHELPER_LIMITS) {
            return ngx_http_veto_sandbox_bad_field(r, "unknown_field", field,
                                                   "unknown limit");
        }

        if (ngx_http_veto_sandbox_uint(v, &n) != NGX_OK) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type", field,
                                                   "a limit must be a "
                                                   "positive integer");
        }
    }

    out = json_object();
    if (out == NULL || json_object_set_new(req, "limits", out) != 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < NGX_HTTP_VSB_NHELPER_LIMITS; i++) {
        v = lim ? json_object_get(lim, ngx_http_veto_sandbox_limit_names[i])
                : NULL;

        if (v != NULL) {
            n = (uint64_t) json_integer_value(v);

        } else if (rule->def[i]) {
            n = rule->def[i];

        } else {
            continue;
        }

        if (rule->ceiling[i] && n > rule->ceiling[i]) {
            return ngx_http_veto_sandbox_over(r, i, n, rule->ceiling[i]);
        }

        json_object_set_new(out, ngx_http_veto_sandbox_limit_names[i],
                            json_integer((json_int_t) n));
    }

    if (json_object_size(out) == 0) {
        json_object_del(req, "limits");
    }

    if (ngx_http_veto_sandbox_limited(r, ctx, body, req, NGX_HTTP_VSB_L_TTL_S,
                                      &n, &rc)
        != NGX_OK)
    {
        return rc;
    }

    /* network: only "none" until the egress proxy arrives */
    v = json_object_get(body, "network");

    if (v != NULL) {
        if (!json_is_string(v)) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type", "network",
                                                   "\"network\" must be "
                                                   "\"none\"");
        }

        if (ngx_strcmp(json_string_value(v), "none") != 0) {
            return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_VSB_UNPROCESSABLE,
                                   "network_not_allowed",
                                   "only \"network\": \"none\" is available",
                                   json_pack("{s:s, s:s}", "field", "network",
                                             "limit", "network"));
        }

        json_object_set(req, "network", v);
    }

    if (ngx_http_veto_sandbox_copy(r, body, req, "env",
                                   NGX_HTTP_VSB_STRINGS, &rc) != NGX_OK
        || ngx_http_veto_sandbox_copy(r, body, req, "metadata",
                                      NGX_HTTP_VSB_OBJECT, &rc) != NGX_OK)
    {
        return rc;
    }

    return ngx_http_veto_sandbox_call(r, ctx, req, NULL, 0);
}


static ngx_int_t
ngx_http_veto_sandbox_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                       *body, *req, *v, *e;
    uint64_t                      n;
    ngx_buf_t                    *b;
    ngx_int_t                     rc;
    ngx_uint_t                    i;
    ngx_chain_t                  *payload;
    ngx_http_veto_sandbox_rule_t *rule;

    body = ngx_http_veto_sandbox_read_json(r, &rc);
    if (body == NULL) {
        return rc;
    }

    rule = ctx->rule;

    if (ngx_http_veto_sandbox_known(r, body, ngx_http_veto_sandbox_exec_fields,
                                    &rc)
        != NGX_OK)
    {
        return rc;
    }

    v = json_object_get(body, "argv");

    if (v == NULL) {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field", "argv",
                                               "\"argv\" is required");
    }

    if (!json_is_array(v) || json_array_size(v) == 0
        || json_array_size(v) > VSB_MAX_ARGV)
    {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "argv",
                                               "\"argv\" must be a non-empty "
                                               "array of strings");
    }

    json_array_foreach(v, i, e) {
        if (!json_is_string(e)) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type", "argv",
                                                   "\"argv\" must be a "
                                                   "non-empty array of "
                                                   "strings");
        }
    }

    req = ngx_http_veto_sandbox_req(r, ctx, VSB_OP_EXEC);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set(req, "argv", v);

    if (ngx_http_veto_sandbox_copy(r, body, req, "cwd",
                                   NGX_HTTP_VSB_STRING, &rc) != NGX_OK
        || ngx_http_veto_sandbox_copy(r, body, req, "env",
                                      NGX_HTTP_VSB_STRINGS, &rc) != NGX_OK)
    {
        return rc;
    }

    if (ngx_http_veto_sandbox_limited(r, ctx, body, req,
                                      NGX_HTTP_VSB_L_TIMEOUT_S, &n, &rc)
        != NGX_OK)
    {
        return rc;
    }

    /* the reply comes after the command ends: wait that long too */
    if (n == 0) {
        n = rule->ceiling[NGX_HTTP_VSB_L_TIMEOUT_S];
    }

    ctx->helper.extra_read_ms = (ngx_msec_t) ngx_min(n, 86400) * 1000;

    /* stdin goes as the frame's payload, straight from the parsed body */
    payload = NULL;
    n = 0;

    v = json_object_get(body, "stdin");
    if (v != NULL) {
        if (!json_is_string(v)) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type", "stdin",
                                                   "\"stdin\" must be a "
                                                   "string");
        }

        n = json_string_length(v);

        if (n) {
            b = ngx_calloc_buf(r->pool);
            payload = ngx_alloc_chain_link(r->pool);

            if (b == NULL || payload == NULL) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            b->pos = (u_char *) json_string_value(v);
            b->last = b->pos + n;
            b->memory = 1;

            payload->buf = b;
            payload->next = NULL;
        }
    }

    return ngx_http_veto_sandbox_call(r, ctx, req, payload, n);
}


static ngx_int_t
ngx_http_veto_sandbox_write(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    off_t         size;
    json_t       *req;
    ngx_int_t     rc;
    ngx_chain_t  *cl;
    uint64_t      ceiling;

    rc = ngx_http_veto_sandbox_path(r, ctx);
    if (ctx->path.len == 0) {
        return rc;
    }

    size = 0;

    if (r->request_body) {
        for (cl = r->request_body->bufs; cl; cl = cl->next) {
            size += ngx_buf_size(cl->buf);
        }
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

    req = ngx_http_veto_sandbox_req(r, ctx, VSB_OP_WRITE_FILE);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (json_object_set_new(req, "path",
                            ngx_http_veto_sandbox_json_ngx_str(&ctx->path))
        != 0)
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                   "bad_path", "\"path\" must be UTF-8",
                                   json_pack("{s:s}", "field", "path"));
    }

    /* the body goes as it lies: memory buffers or the temporary file */
    return ngx_http_veto_sandbox_call(r, ctx, req,
                                      r->request_body
                                      ? r->request_body->bufs : NULL,
                                      (size_t) size);
}


/* Policy allowed it: the Redis gate (revocation, approval, quotas) may
 * still refuse, then the helper.  req is freed with the pool.
 * NGX_DONE when the reply will finish the request. */
static ngx_int_t
ngx_http_veto_sandbox_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, ngx_chain_t *payload,
    size_t payload_len)
{
    ctx->req = req;
    ctx->payload = payload;
    ctx->payload_len = payload_len;

    if (ctx->op == NGX_HTTP_VSB_OP_HEALTH) {
        return ngx_http_veto_sandbox_forward(r, ctx);
    }

    return ngx_http_veto_sandbox_gate(r, ctx, ngx_http_veto_sandbox_forward);
}


/* Sends ctx->req to the helper. */
ngx_int_t
ngx_http_veto_sandbox_forward(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t  rc;

    if (ctx->decision.len == 0) {
        ngx_str_set(&ctx->decision, "allow");
    }

    rc = ngx_http_veto_sandbox_helper_send(r, ctx, ctx->req, ctx->payload,
                                           ctx->payload_len,
                                           ngx_http_veto_sandbox_reply);

    if (rc == NGX_OK) {
        return NGX_DONE;
    }

    /* the gate may hold a quota slot: give it back */
    ngx_http_veto_sandbox_after(r, ctx);

    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                             "helper_unavailable",
                                             "the sandbox helper is not "
                                             "reachable", NULL);
    }

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                         "internal",
                                         "the helper request could not be "
                                         "built", NULL);
}


static void
ngx_http_veto_sandbox_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *j, *sb;
    ngx_int_t                        rc;
    ngx_uint_t                       status;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    /* audit records, quota slots: whatever the outcome */
    ngx_http_veto_sandbox_after(r, ctx);

    if (h->status != NGX_OK) {
        rc = ngx_http_veto_sandbox_problem(r,
                                   h->status == NGX_HTTP_GATEWAY_TIME_OUT
                                   ? NGX_HTTP_SERVICE_UNAVAILABLE : h->status,
                                   "helper_unavailable", h->error, NULL);
        ngx_http_finalize_request(r, rc);
        return;
    }

    j = h->json;

    if (!json_is_true(json_object_get(j, "ok"))) {
        rc = ngx_http_veto_sandbox_reply_error(r, ctx);
        ngx_http_finalize_request(r, rc);
        return;
    }

    json_object_del(j, "ok");
    json_object_del(j, "request_id");

    status = NGX_HTTP_OK;

    switch (ctx->op) {

    case NGX_HTTP_VSB_OP_HEALTH:
        json_object_del(j, "sandboxes");
        rc = ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                              json_pack("{s:s, s:O, s:s}", "status", "ok",
                                        "helper", j, "redis",
                                        ngx_http_veto_sandbox_rds == NULL
                                        ? "not_configured"
                                        : ngx_http_veto_sandbox_redis_ready(
                                              ngx_http_veto_sandbox_rds)
                                          ? "up" : "down"));
        break;

    case NGX_HTTP_VSB_OP_CREATE:
    case NGX_HTTP_VSB_OP_GET:
        sb = json_object_get(j, "sandbox");

        if (!json_is_object(sb)) {
            rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                     "bad_gateway",
                                     "the sandbox helper sent no sandbox",
                                     NULL);
            break;
        }

        if (ctx->op == NGX_HTTP_VSB_OP_CREATE
            && ngx_http_veto_sandbox_created(r, ctx) != NGX_OK)
        {
            rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                     "bad_gateway",
                                     "the sandbox helper sent no valid "
                                     "sandbox id", NULL);
            break;
        }

        if (ctx->op == NGX_HTTP_VSB_OP_CREATE) {
            u_char  *loc;

            loc = ngx_pnalloc(r->pool, sizeof("/v1/sandboxes/")
                                       + VSB_SANDBOX_ID_LEN);

            if (loc) {
                ngx_sprintf(loc, "/v1/sandboxes/%V%Z", &ctx->sandbox);

                if (ngx_http_veto_sandbox_header(r, "Location", (char *) loc)
                    != NGX_OK)
                {
                    ngx_http_finalize_request(r, NGX_ERROR);
                    return;
                }
            }

            status = NGX_HTTP_CREATED;
        }

        rc = ngx_http_veto_sandbox_send_json(r, status, json_incref(sb));
        break;

    case NGX_HTTP_VSB_OP_EXEC:
        rc = ngx_http_veto_sandbox_reply_exec(r, ctx);
        break;

    case NGX_HTTP_VSB_OP_READ:
        rc = ngx_http_veto_sandbox_reply_read(r, ctx);
        break;

    default:   /* list, delete, write */
        rc = ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, json_incref(j));
        break;
    }

    ngx_http_finalize_request(r, rc);
}


typedef struct {
    const char  *error;
    ngx_uint_t   status;
} ngx_http_veto_sandbox_errmap_t;


static ngx_http_veto_sandbox_errmap_t  ngx_http_veto_sandbox_errors[] = {
    { VSB_E_NOT_FOUND,          NGX_HTTP_NOT_FOUND },
    { VSB_E_OVER_CEILING,       NGX_HTTP_VSB_UNPROCESSABLE },
    { VSB_E_BAD_JSON,           NGX_HTTP_BAD_REQUEST },
    { VSB_E_UNKNOWN_FIELD,      NGX_HTTP_BAD_REQUEST },
    { VSB_E_MISSING_FIELD,      NGX_HTTP_BAD_REQUEST },
    { VSB_E_BAD_TYPE,           NGX_HTTP_BAD_REQUEST },
    { VSB_E_BAD_VALUE,          NGX_HTTP_BAD_REQUEST },
    { VSB_E_BAD_PATH,           NGX_HTTP_BAD_REQUEST },
    { VSB_E_NOT_A_FILE,         NGX_HTTP_BAD_REQUEST },
    { VSB_E_UNKNOWN_OP,         NGX_HTTP_BAD_GATEWAY },
    { VSB_E_BAD_FRAME,          NGX_HTTP_BAD_GATEWAY },
    { VSB_E_CAPACITY,           NGX_HTTP_SERVICE_UNAVAILABLE },
    { VSB_E_BUSY,               NGX_HTTP_VSB_TOO_MANY_REQUESTS },
    { VSB_E_FILE_TOO_LARGE,     NGX_HTTP_REQUEST_ENTITY_TOO_LARGE },
    { VSB_E_FRAME_TOO_LARGE,    NGX_HTTP_REQUEST_ENTITY_TOO_LARGE },
    { VSB_E_NO_SPACE,           NGX_HTTP_VSB_INSUFFICIENT_STORAGE },
    { VSB_E_IO,                 NGX_HTTP_INTERNAL_SERVER_ERROR },
    { VSB_E_EXEC_FAILED,        NGX_HTTP_INTERNAL_SERVER_ERROR },
    { VSB_E_TERMINATION_FAILED, NGX_HTTP_INTERNAL_SERVER_ERROR },
    { VSB_E_NOT_PERMITTED,      NGX_HTTP_SERVICE_UNAVAILABLE },
    { VSB_E_INTERNAL,           NGX_HTTP_INTERNAL_SERVER_ERROR },
    { NULL,                     NGX_HTTP_BAD_GATEWAY }
};


/* A failed helper reply as problem+json: the helper's error name is the
 * problem code; field, limit and step come along. */
static ngx_int_t
ngx_http_veto_sandbox_reply_error(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *j, *extra, *v;
    const char                      *error, *detail;
    ngx_http_veto_sandbox_errmap_t  *e;

    j = ctx->helper.json;

    v = json_object_get(j, "error");
    error = json_is_string(v) ? json_string_value(v) : "internal";

    v = json_object_get(j, "detail");
    detail = json_is_string(v) ? json_string_value(v) : NULL;

    for (e = ngx_http_veto_sandbox_errors; e->error; e++) {
        if (ngx_strcmp(e->error, error) == 0) {
            break;
        }
    }

    if (e->error == NULL) {
        error = "helper_error";
    }

    if (e->status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "veto_sandbox: helper answered %s: %s", error,
                      detail ? detail : "");
    }

    /* the module's own problem for helper faults the client cannot fix */
    if (ngx_strcmp(error, VSB_E_NOT_PERMITTED) == 0) {
        detail = "the sandbox helper does not accept this gateway";
    }

    extra = json_object();
    if (extra == NULL) {
        return NGX_ERROR;
    }

    if (json_is_string(v = json_object_get(j, "field"))) {
        json_object_set(extra, "field", v);
    }

    if (json_is_string(v = json_object_get(j, "limit"))) {
        json_object_set(extra, "limit", v);
    }

    if (json_is_string(v = json_object_get(j, "step"))) {
        json_object_set(extra, "step", v);
    }

    if (e->status == NGX_HTTP_NOT_FOUND) {
        /* nothing that tells apart "never existed" and "not yours" */
        detail = "no such sandbox";
        json_object_clear(extra);
    }

    if (ngx_strcmp(error, VSB_E_OVER_CEILING) == 0) {
        ngx_str_set(&ctx->decision, "deny:over_ceiling");
    }

    return ngx_http_veto_sandbox_problem(r, e->status, error, detail, extra);
}


/* Output as JSON strings when it is UTF-8, else base64 (see docs). */
static ngx_int_t
ngx_http_veto_sandbox_output(ngx_http_request_t *r, json_t *out,
    const char *name, const char *enc_name, u_char *data, size_t len)
{
    json_t     *s;
    ngx_str_t   src, dst;

    s = json_stringn((char *) data, len);

    if (s != NULL) {
        json_object_set_new(out, name, s);
        json_object_set_new(out, enc_name, json_string("utf-8"));
        return NGX_OK;
    }

    src.data = data;
    src.len = len;

    dst.data = ngx_pnalloc(r->pool, ngx_base64_encoded_length(len));
    if (dst.data == NULL) {
        return NGX_ERROR;
    }

    ngx_encode_base64(&dst, &src);

    json_object_set_new(out, name, json_stringn((char *) dst.data, dst.len));
    json_object_set_new(out, enc_name, json_string("base64"));

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_reply_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *j, *out;
    json_int_t                       olen, elen;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;
    j = h->json;

    olen = json_integer_value(json_object_get(j, "stdout_len"));
    elen = json_integer_value(json_object_get(j, "stderr_len"));

    /* each bounded first: the sum of two helper numbers must not wrap */
    if (olen < 0 || elen < 0 || (size_t) olen > h->payload_len
        || (size_t) elen != h->payload_len - (size_t) olen)
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                             "bad_gateway",
                                             "the sandbox helper's output "
                                             "lengths do not add up", NULL);
    }

    out = json_copy(j);
    if (out == NULL) {
        return NGX_ERROR;
    }

    json_object_del(out, "stdout_len");
    json_object_del(out, "stderr_len");

    if (ngx_http_veto_sandbox_output(r, out, "stdout", "stdout_encoding",
                                     h->payload, (size_t) olen)
        != NGX_OK
        || ngx_http_veto_sandbox_output(r, out, "stderr", "stderr_encoding",
                                        h->payload + olen, (size_t) elen)
           != NGX_OK)
    {
        json_decref(out);
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, out);
}


/* File content is the agent's untrusted data: never rendered inline. */
static ngx_int_t
ngx_http_veto_sandbox_reply_read(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *v;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    if (ngx_http_veto_sandbox_header(r, "Content-Disposition", "attachment")
        != NGX_OK
        || ngx_http_veto_sandbox_header(r, "X-Content-Type-Options",
                                        "nosniff") != NGX_OK
        || ngx_http_veto_sandbox_header(r, "Content-Security-Policy",
                                        "sandbox; default-src 'none'")
           != NGX_OK
        || ngx_http_veto_sandbox_header(r, "Veto-Untrusted", "true")
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    v = json_object_get(h->json, "sha256");

    if (json_is_string(v) && json_string_length(v) == 64
        && ngx_http_veto_sandbox_header(r, "Veto-Content-Sha256",
                                        json_string_value(v)) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send(r, NGX_HTTP_OK,
                                      "application/octet-stream", h->payload,
                                      h->payload_len);
}


/* The whole JSON request body; NULL with *rc the response sent. */
json_t *
ngx_http_veto_sandbox_read_json(ngx_http_request_t *r, ngx_int_t *rc)
{
    u_char              *p, *buf;
    off_t                size;
    ssize_t              n;
    json_t              *j;
    ngx_buf_t           *b;
    ngx_str_t           *ct;
    ngx_chain_t         *cl;
    json_error_t         err;
    ngx_pool_cleanup_t  *cln;
    u_char               detail[256];

    ct = r->headers_in.content_type ? &r->headers_in.content_type->value
                                    : NULL;

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

    if (r->request_body) {
        for (cl = r->request_body->bufs; cl; cl = cl->next) {
            size += ngx_buf_size(cl->buf);
        }
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

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
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


static void
ngx_http_veto_sandbox_json_cleanup(void *data)
{
    json_decref((json_t *) data);
}
