/*
 * THE OP TABLE: one row per operation of the API, the lookup of a
 * request's row, and running it.  A row says everything the module does
 * differently for an operation (its ngx_http_veto_sandbox_op_t fields);
 * nothing else in the module asks which operation a request is.  The
 * MCP endpoint's tools run these same rows (_mcp_tools.c).
 * docs/adding-an-endpoint.md walks through adding one.
 *
 * A row is made with ngx_http_vsb_op(), so a row missing a piece does not
 * compile, and ngx_http_veto_sandbox_ops_init() checks the table when the
 * configuration is read, so a piece that cannot work fails "nginx -t".
 */

#include "ngx_http_veto_sandbox_module.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_discovery.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)

/* reading one's own sandboxes needs any sandbox scope */
#define NGX_HTTP_VSB_SANDBOXES (NGX_HTTP_VSB_SCOPE_CREATE                     \
                                |NGX_HTTP_VSB_SCOPE_EXEC                      \
                                |NGX_HTTP_VSB_SCOPE_FILES                     \
                                |NGX_HTTP_VSB_SCOPE_NETWORK)


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_ops[] = {

    /* the liveness probe: public, no gate; reveals only up/down */

    ngx_http_vsb_op("health", NGX_HTTP_VSB_READ, "/v1/health",
                    NGX_HTTP_VSB_PUBLIC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_PING,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_health,
                    ngx_http_veto_sandbox_record_nothing),

    /* the API's own description (docs/openapi.json, compiled in): public,
     * it says nothing of this host */

    ngx_http_vsb_op("openapi", NGX_HTTP_VSB_READ, "/v1/openapi.json",
                    NGX_HTTP_VSB_PUBLIC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_openapi, NULL, NULL),

    /* what this host gives a sandbox: its isolation layers (any caller
     * with a token: it is reconnaissance to anyone else), the profiles
     * the caller's policy allows */

    ngx_http_vsb_op("about", NGX_HTTP_VSB_READ, "/v1/about",
                    NGX_HTTP_VSB_SANDBOXES|NGX_HTTP_VSB_SCOPE_REVIEW
                    |NGX_HTTP_VSB_SCOPE_AUDIT, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_PING,
                    ngx_http_veto_sandbox_build_host,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_about,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_op("profile.list", NGX_HTTP_VSB_READ, "/v1/profiles",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_PROFILES,
                    ngx_http_veto_sandbox_build_host,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_profiles,
                    ngx_http_veto_sandbox_record_nothing),

    /* sandboxes */

    ngx_http_vsb_op("sandbox.list", NGX_HTTP_VSB_READ, "/v1/sandboxes",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_LIST,
                    ngx_http_veto_sandbox_build_list,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_list,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_op("sandbox.create", NGX_HTTP_POST, "/v1/sandboxes",
                    NGX_HTTP_VSB_SCOPE_CREATE, NGX_HTTP_VSB_ACT_CREATE,
                    NGX_HTTP_VSB_QUOTA_SANDBOXES,
                    NGX_HTTP_VSB_BODY_JSON, VSB_OP_CREATE,
                    ngx_http_veto_sandbox_build_create,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_created,
                    ngx_http_veto_sandbox_record_created),

    ngx_http_vsb_op("sandbox.get", NGX_HTTP_VSB_READ, "/v1/sandboxes/{id}",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_STATUS,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_sandbox,
                    ngx_http_veto_sandbox_record_nothing),

    /* changes to a live sandbox: hosts added to its allowlist (helper
     * update_network, scope sandbox:network), or its lifetime (the
     * builder asks update_lifetime instead, scope sandbox:create) */
    ngx_http_vsb_op("sandbox.update", NGX_HTTP_PATCH, "/v1/sandboxes/{id}",
                    NGX_HTTP_VSB_SCOPE_NETWORK|NGX_HTTP_VSB_SCOPE_CREATE,
                    NGX_HTTP_VSB_ACT_UPDATE,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, VSB_OP_UPDATE_NETWORK,
                    ngx_http_veto_sandbox_build_update,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_update),

    ngx_http_vsb_op("sandbox.delete", NGX_HTTP_DELETE, "/v1/sandboxes/{id}",
                    NGX_HTTP_VSB_SCOPE_CREATE, NGX_HTTP_VSB_ACT_DELETE,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_DESTROY,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_destroyed),

    ngx_http_vsb_op("sandbox.files.read", NGX_HTTP_VSB_READ,
                    "/v1/sandboxes/{id}/files",
                    NGX_HTTP_VSB_SCOPE_FILES, NGX_HTTP_VSB_ACT_READ,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_READ_FILE,
                    ngx_http_veto_sandbox_build_read,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_file,
                    ngx_http_veto_sandbox_record_allowed),

    ngx_http_vsb_op("sandbox.files.write", NGX_HTTP_PUT,
                    "/v1/sandboxes/{id}/files",
                    NGX_HTTP_VSB_SCOPE_FILES, NGX_HTTP_VSB_ACT_WRITE,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_FILE, VSB_OP_WRITE_FILE,
                    ngx_http_veto_sandbox_build_write,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_allowed),

    /* workspace archives: as files written and read (approval kinds
     * write and export); an export is streamed (_stream.c) */
    ngx_http_vsb_op("sandbox.archive.write", NGX_HTTP_PUT,
                    "/v1/sandboxes/{id}/archive",
                    NGX_HTTP_VSB_SCOPE_FILES, NGX_HTTP_VSB_ACT_WRITE,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_ARCHIVE, VSB_OP_EXTRACT_ARCHIVE,
                    ngx_http_veto_sandbox_build_archive_in,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_archive,
                    ngx_http_veto_sandbox_record_archive),

    ngx_http_vsb_op("sandbox.archive.read", NGX_HTTP_GET,
                    "/v1/sandboxes/{id}/archive",
                    NGX_HTTP_VSB_SCOPE_FILES, NGX_HTTP_VSB_ACT_READ,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_EXPORT_ARCHIVE,
                    ngx_http_veto_sandbox_build_archive_out,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_archive,
                    ngx_http_veto_sandbox_record_archive),

    /* plain, streamed (Accept: application/x-ndjson) or in the
     * background: one row, one gate (_execs.c) */
    ngx_http_vsb_op("sandbox.exec", NGX_HTTP_POST, "/v1/sandboxes/{id}/exec",
                    NGX_HTTP_VSB_SCOPE_EXEC, NGX_HTTP_VSB_ACT_EXEC,
                    NGX_HTTP_VSB_QUOTA_EXECS,
                    NGX_HTTP_VSB_BODY_JSON, VSB_OP_EXEC,
                    ngx_http_veto_sandbox_build_exec,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_exec_any,
                    ngx_http_veto_sandbox_record_exec_any),

    /* background execs: reading one's own is no decision on record; a
     * kill is */
    ngx_http_vsb_op("sandbox.exec.get", NGX_HTTP_VSB_READ,
                    "/v1/sandboxes/{id}/execs/{exec}",
                    NGX_HTTP_VSB_SCOPE_EXEC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_EXEC_STATUS,
                    ngx_http_veto_sandbox_build_exec_id,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_exec_state,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_op("sandbox.exec.kill", NGX_HTTP_DELETE,
                    "/v1/sandboxes/{id}/execs/{exec}",
                    NGX_HTTP_VSB_SCOPE_EXEC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_EXEC_KILL,
                    ngx_http_veto_sandbox_build_exec_id,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_exec_kill),

    ngx_http_vsb_op("sandbox.exec.output", NGX_HTTP_GET,
                    "/v1/sandboxes/{id}/execs/{exec}/output",
                    NGX_HTTP_VSB_SCOPE_EXEC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_EXEC_OUTPUT,
                    ngx_http_veto_sandbox_build_exec_output,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_exec_output,
                    ngx_http_veto_sandbox_record_nothing),

    /* the humans' side, answered from Redis */

    ngx_http_vsb_op("approval.list", NGX_HTTP_VSB_READ, "/v1/approvals",
                    NGX_HTTP_VSB_SCOPE_REVIEW, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_list, NULL, NULL),

    /* reviewers, and requesters reading their own approvals */
    ngx_http_vsb_op("approval.get", NGX_HTTP_VSB_READ,
                    "/v1/approvals/{approval}",
                    NGX_HTTP_VSB_SCOPE_REVIEW|NGX_HTTP_VSB_SANDBOXES, 0,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_get, NULL, NULL),

    ngx_http_vsb_op("approval.approve", NGX_HTTP_POST,
                    "/v1/approvals/{approval}/approve",
                    NGX_HTTP_VSB_SCOPE_REVIEW, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_approve, NULL, NULL),

    ngx_http_vsb_op("approval.deny", NGX_HTTP_POST,
                    "/v1/approvals/{approval}/deny",
                    NGX_HTTP_VSB_SCOPE_REVIEW, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_deny, NULL, NULL),

    ngx_http_vsb_op("audit.read", NGX_HTTP_VSB_READ, "/v1/audit",
                    NGX_HTTP_VSB_SCOPE_AUDIT, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_audit, NULL, NULL),

    /* the admin API: any token and any sandbox of the admin's tenant */

    ngx_http_vsb_op("admin.revoke", NGX_HTTP_POST, "/v1/admin/revocations",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, NULL,
                    ngx_http_veto_sandbox_admin_build_revoke,
                    ngx_http_veto_sandbox_admin_revoke, NULL, NULL),

    ngx_http_vsb_op("admin.revocation.get", NGX_HTTP_VSB_READ,
                    "/v1/admin/revocations/jti/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_revocation, NULL, NULL),

    ngx_http_vsb_op("admin.revocation.get", NGX_HTTP_VSB_READ,
                    "/v1/admin/revocations/agent/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_revocation, NULL, NULL),

    ngx_http_vsb_op("admin.unrevoke", NGX_HTTP_DELETE,
                    "/v1/admin/revocations/jti/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_unrevoke, NULL, NULL),

    ngx_http_vsb_op("admin.unrevoke", NGX_HTTP_DELETE,
                    "/v1/admin/revocations/agent/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_unrevoke, NULL, NULL),

    ngx_http_vsb_op("admin.sandbox.list", NGX_HTTP_VSB_READ,
                    "/v1/admin/sandboxes",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, VSB_OP_LIST,
                    ngx_http_veto_sandbox_admin_build_list,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_allowed),

    /* two helper requests: the tenant's list names the owner, then the
     * destroy (_admin.c) */
    ngx_http_vsb_op("admin.sandbox.delete", NGX_HTTP_DELETE,
                    "/v1/admin/sandboxes/{id}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_admin_end, NULL, NULL),

    { ngx_null_string, 0, NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL }
};


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
    size_t       i;
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
                || ngx_strncmp(p, "ex-", 3) != 0)
            {
                return NGX_DECLINED;
            }

            for (i = 3; i < VSB_EXEC_ID_LEN; i++) {
                if (!((p[i] >= '0' && p[i] <= '9')
                      || (p[i] >= 'a' && p[i] <= 'f')))
                {
                    return NGX_DECLINED;
                }
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

        if (op->helper != NULL
            && (op->run != ngx_http_veto_sandbox_forward
                || op->reply == NULL || op->record == NULL))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "a helper op runs ngx_http_veto_sandbox_"
                                  "forward() and needs reply() and record()");
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
            && ngx_http_veto_sandbox_policy_action(&op->name) != op->approval)
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
