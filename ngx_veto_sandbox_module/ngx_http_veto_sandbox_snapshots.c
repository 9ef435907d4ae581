/*
 * The snapshots op group, whole: its rows, builders, field checks, reply
 * mappers, records and MCP tools (twin, presenter), side by side.  The
 * op table (_ops.c) and the MCP tool table (_mcp_tool_table.c) take its
 * rows and tools from the arrays at the end of this file; the group is
 * named once, in NGX_HTTP_VSB_OP_GROUPS (faces.h).
 *
 *   POST   /v1/sandboxes/{id}/snapshots   snapshot.create (its files)
 *   GET    /v1/snapshots                  snapshot.list (the caller's)
 *   GET    /v1/snapshots/{snap}           snapshot.get
 *   DELETE /v1/snapshots/{snap}           snapshot.delete (confirmed)
 *   POST   /v1/sandboxes/{id}/pause       sandbox.pause (cgroup freezer)
 *   POST   /v1/sandboxes/{id}/resume      sandbox.resume
 *   GET    /v1/sandboxes/{id}/changes     sandbox.changes (json, diff, tar)
 *
 * A fork is sandbox.create with "from_snapshot" (_sandboxes.c).  The
 * helper does the work and keeps its own ceilings (vsb_protocol.h:
 * snapshot_create ... changes); the policy's snapshot quotas and ttl_s
 * ceiling go to it with each snapshot_create.  Ownership is the helper's
 * (tenant and agent from the token): another owner's snapshot is
 * not_found, as an unknown one.  With several hosts a snapshot stays on
 * the host whose helper made it, which keeps its routing record: a fork,
 * get or delete asked of another host is routed there (_where.c,
 * docs/api.md "Several hosts").
 *
 * The unit tests link this file as data (NGX_HTTP_VSB_OPS_DATA_ONLY):
 * then only the rows are compiled, without the code they name; the MCP
 * fuzz target adds NGX_HTTP_VSB_OPS_TOOLS for the tools, their twins and
 * presenters (t/fuzz/fuzz_module_mcp.c).
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_fields.h"


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

#include "ngx_http_veto_sandbox_mcp.h"


/* how much longer than a quick op the helper may take to answer: a
 * snapshot copies the sandbox's files, a change set reads both trees
 * (docs/benchmarks.md has the figures: well within these) */
#define NGX_HTTP_VSB_SNAPSHOT_READ_MS  600000
#define NGX_HTTP_VSB_CHANGES_READ_MS   120000


/* "snap-" and 24 lowercase hex digits */
static ngx_uint_t
ngx_http_veto_sandbox_snapshot_id_valid(const u_char *p, size_t len)
{
    return len == VSB_SNAPSHOT_ID_LEN
           && ngx_strncmp(p, "snap-", 5) == 0
           && ngx_http_veto_sandbox_hex_lower(p + 5, VSB_SNAPSHOT_ID_LEN - 5);
}


#endif


#ifndef NGX_HTTP_VSB_OPS_DATA_ONLY


/* ---- builders -------------------------------------------------------- */


/* docs/openapi.json's SnapshotCreate (scripts/gen-op-fields) */
static const char  *ngx_http_veto_sandbox_snapshot_fields[] = {
    NGX_HTTP_VSB_FIELDS_SNAPSHOT, NULL
};


/*
 * POST /v1/sandboxes/{id}/snapshots {"ttl_s"?, "metadata"?} (an empty
 * body is {}): ttl_s within the policy's snapshot_ttl_s ceiling (its
 * default else), the tenant's quotas as the policy has them.
 */
static ngx_int_t
ngx_http_veto_sandbox_build_snapshot(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    off_t                          size;
    json_t                        *body, *req;
    uint64_t                       n;
    ngx_int_t                      rc;
    ngx_chain_t                   *cl;
    ngx_http_veto_sandbox_rule_t  *rule;

    rule = ctx->rule;
    size = 0;

    for (cl = ctx->in.body; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
    }

    body = NULL;

    if (size) {
        body = ngx_http_veto_sandbox_read_json(r, &rc);
        if (body == NULL) {
            return rc;
        }

        if (ngx_http_veto_sandbox_known_fields(r, body,
                                         ngx_http_veto_sandbox_snapshot_fields,
                                         &rc)
            != NGX_OK)
        {
            return rc;
        }
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    n = rule->def[NGX_HTTP_VSB_L_SNAPSHOT_TTL_S];

    if (ngx_http_veto_sandbox_uint(json_object_get(body, "ttl_s"), &n)
        == NGX_ERROR)
    {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "ttl_s",
                                               "\"ttl_s\" must be a positive "
                                               "integer (seconds)");
    }

    if (n && rule->ceiling[NGX_HTTP_VSB_L_SNAPSHOT_TTL_S]
        && n > rule->ceiling[NGX_HTTP_VSB_L_SNAPSHOT_TTL_S])
    {
        return ngx_http_veto_sandbox_over(r, NGX_HTTP_VSB_L_SNAPSHOT_TTL_S, n,
                             rule->ceiling[NGX_HTTP_VSB_L_SNAPSHOT_TTL_S]);
    }

    if ((n && json_object_set_new(req, "ttl_s", json_integer(n)) != 0)
        || (rule->ceiling[NGX_HTTP_VSB_L_SNAPSHOTS]
            && json_object_set_new(req, "max_snapshots",
                   json_integer(rule->ceiling[NGX_HTTP_VSB_L_SNAPSHOTS])) != 0)
        || (rule->ceiling[NGX_HTTP_VSB_L_SNAPSHOT_BYTES]
            && json_object_set_new(req, "max_bytes",
                   json_integer(rule->ceiling[NGX_HTTP_VSB_L_SNAPSHOT_BYTES]))
               != 0))
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (body != NULL
        && (ngx_http_veto_sandbox_copy_field(r, body, req, "metadata",
                                             NGX_HTTP_VSB_FIELD_OBJECT, &rc)
            != NGX_OK
            || ngx_http_veto_sandbox_fits(r, req, &rc) != NGX_OK))
    {
        return rc;
    }

    ctx->req = req;

    ctx->helper.extra_read_ms = NGX_HTTP_VSB_SNAPSHOT_READ_MS;

    return NGX_DECLINED;
}


/* GET /v1/snapshots: the caller's own (tenant and agent) */
static ngx_int_t
ngx_http_veto_sandbox_build_snapshot_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->req = ngx_http_veto_sandbox_req(r, ctx);

    return ctx->req ? NGX_DECLINED : NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/* GET, DELETE /v1/snapshots/{snap}: the id is the URI's end (the router
 * matched it) */
static ngx_int_t
ngx_http_veto_sandbox_build_snapshot_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char  *id;
    json_t  *req;

    if (ctx->in.uri.len < VSB_SNAPSHOT_ID_LEN) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    id = ctx->in.uri.data + ctx->in.uri.len - VSB_SNAPSHOT_ID_LEN;

    if (!ngx_http_veto_sandbox_snapshot_id_valid(id, VSB_SNAPSHOT_ID_LEN)) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    req = ngx_http_veto_sandbox_req(r, ctx);

    if (req == NULL
        || json_object_set_new(req, "snapshot",
                               json_stringn((char *) id, VSB_SNAPSHOT_ID_LEN))
           != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->req = req;

    return NGX_DECLINED;
}


/* GET /v1/sandboxes/{id}/changes?since=created|snap-...&format=json|diff|
 * tar: what the workload changed, computed by the helper */
static ngx_int_t
ngx_http_veto_sandbox_build_changes(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                        *req;
    ngx_int_t                      rc;
    ngx_str_t                      at, *s, *f;
    const char                    *why;
    ngx_http_veto_sandbox_qarg_t   q[2];

    q[0].name = "since";
    q[1].name = "format";

    rc = ngx_http_veto_sandbox_hash_query_args(r->pool, &ctx->in.args, q, 2,
                                               &why, &at);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_ABORT) {
        return ngx_http_veto_sandbox_bad_query(r, &at, why);
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    s = &q[0].value;

    if (s->data != NULL) {
        if (!(s->len == sizeof("created") - 1
              && ngx_strncmp(s->data, "created", s->len) == 0)
            && !ngx_http_veto_sandbox_snapshot_id_valid(s->data, s->len))
        {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value", "since",
                                                   "\"since\" is \"created\" "
                                                   "or a snapshot id "
                                                   "(snap- and 24 hex "
                                                   "digits)");
        }

        if (json_object_set_new(req, "since",
                                json_stringn((char *) s->data, s->len))
            != 0)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    f = &q[1].value;

    if (f->data != NULL) {
        if (!((f->len == 4 && ngx_strncmp(f->data, "json", 4) == 0)
              || (f->len == 4 && ngx_strncmp(f->data, "diff", 4) == 0)
              || (f->len == 3 && ngx_strncmp(f->data, "tar", 3) == 0)))
        {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value", "format",
                                                   "\"format\" is json, diff "
                                                   "or tar");
        }

        if (json_object_set_new(req, "format",
                                json_stringn((char *) f->data, f->len))
            != 0)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    ctx->req = req;

    ctx->helper.extra_read_ms = NGX_HTTP_VSB_CHANGES_READ_MS;

    return NGX_DECLINED;
}


/* ---- reply mappers ---------------------------------------------------- */


/* 201 with the snapshot, and its Location */
static ngx_int_t
ngx_http_veto_sandbox_reply_snapshot(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char       *loc, *p;
    json_t       *snap;
    const char   *id;

    snap = json_object_get(ctx->helper.json, "snapshot");
    id = json_string_value(json_object_get(snap, "id"));

    if (id == NULL
        || !ngx_http_veto_sandbox_snapshot_id_valid((u_char *) id,
                                                    ngx_strlen(id)))
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                             "bad_gateway",
                                             "the sandbox helper answered a "
                                             "snapshot without an id", NULL);
    }

    loc = ngx_pnalloc(r->pool, sizeof("/v1/snapshots/") + VSB_SNAPSHOT_ID_LEN);
    if (loc == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(loc, "/v1/snapshots/%s", id);
    *p = '\0';

    if (ngx_http_veto_sandbox_header(r, "Location", (char *) loc) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_CREATED,
                                           json_incref(snap));
}


/* GET: the snapshot itself, as its create answered it */
static ngx_int_t
ngx_http_veto_sandbox_reply_snapshot_get(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t  *snap;

    snap = json_object_get(ctx->helper.json, "snapshot");

    if (!json_is_object(snap)) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                             "bad_gateway",
                                             "the sandbox helper answered no "
                                             "snapshot", NULL);
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, json_incref(snap));
}


/* The changes: json as one object (the counts and "changes"); diff and
 * tar as the bytes, untrusted like any export. */
static ngx_int_t
ngx_http_veto_sandbox_reply_changes(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *j, *payload, *out;
    const char                      *format, *type;
    json_error_t                     err;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;
    j = h->json;

    if (ngx_http_veto_sandbox_header(r, "Veto-Untrusted", "true") != NGX_OK
        || ngx_http_veto_sandbox_header(r, "X-Content-Type-Options",
                                        "nosniff") != NGX_OK)
    {
        return NGX_ERROR;
    }

    format = json_string_value(json_object_get(j, "format"));

    if (format == NULL || ngx_strcmp(format, "json") == 0) {
        payload = json_loadb((char *) h->payload, h->payload_len,
                             JSON_REJECT_DUPLICATES, &err);

        if (!json_is_array(json_object_get(payload, "changes"))) {
            json_decref(payload);
            return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                                 "bad_gateway",
                                                 "the sandbox helper's "
                                                 "changes are not JSON", NULL);
        }

        out = json_deep_copy(j);

        if (out == NULL
            || json_object_set(out, "changes",
                               json_object_get(payload, "changes")) != 0)
        {
            json_decref(out);
            json_decref(payload);
            return NGX_ERROR;
        }

        json_decref(payload);
        json_object_del(out, "ok");
        json_object_del(out, "request_id");
        json_object_del(out, "payload_len");

        return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, out);
    }

    type = ngx_strcmp(format, "tar") == 0 ? "application/x-tar"
                                          : "text/x-diff";

    if (ngx_http_veto_sandbox_header(r, "Content-Disposition", "attachment")
        != NGX_OK
        || ngx_http_veto_sandbox_header(r, "Content-Security-Policy",
                                        "sandbox; default-src 'none'")
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send(r, NGX_HTTP_OK, type, h->payload,
                                      h->payload_len);
}


/* ---- records ----------------------------------------------------------- */


/* detail (stolen) as the record's text */
static void
ngx_http_veto_sandbox_snapshot_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error,
    const char *outcome, json_t *d, ngx_uint_t status)
{
    ngx_str_t  detail;

    detail.len = 0;

    if (d != NULL) {
        ngx_http_veto_sandbox_json_text(r, d, &detail);
        json_decref(d);
    }

    ngx_http_veto_sandbox_audit(r, ctx, ok ? outcome : "error",
                                ok ? NULL : error, NULL,
                                detail.len ? &detail : NULL,
                                ok ? status : 0);
}


/* snapshot_created: its id, digest, size and files */
static void
ngx_http_veto_sandbox_record_snapshot(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t  *s;

    s = json_object_get(ctx->helper.json, "snapshot");

    /* with several hosts: which one holds it (_where.c routes by it) */
    if (ok) {
        ngx_http_veto_sandbox_record_snapshot_route(r, ctx,
                                               json_object_get(s, "id"),
                                               json_object_get(s,
                                                               "expires_at"));
    }

    ngx_http_veto_sandbox_snapshot_audit(r, ctx, ok, error,
                      "snapshot_created",
                      ok ? json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}",
                                     "snapshot", json_object_get(s, "id"),
                                     "digest", json_object_get(s, "digest"),
                                     "bytes", json_object_get(s, "bytes"),
                                     "files", json_object_get(s, "files"),
                                     "expires_at",
                                     json_object_get(s, "expires_at"))
                         : NULL,
                      NGX_HTTP_CREATED);
}


/* snapshot_deleted: which, and its files confirmed gone */
static void
ngx_http_veto_sandbox_record_snapshot_deleted(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t  *j;

    j = ctx->helper.json;

    if (ok) {
        ngx_http_veto_sandbox_record_snapshot_route(r, ctx,
                                   json_object_get(ctx->req, "snapshot"),
                                   NULL);
    }

    ngx_http_veto_sandbox_snapshot_audit(r, ctx, ok, error,
                      "snapshot_deleted",
                      json_pack("{s:O?, s:O?}",
                                "snapshot", json_object_get(ctx->req,
                                                            "snapshot"),
                                "confirmed", ok ? json_object_get(j,
                                                           "confirmed")
                                                : NULL),
                      NGX_HTTP_OK);
}


/* sandbox_paused, sandbox_resumed: how long the freezer took */
static void
ngx_http_veto_sandbox_record_paused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t      *j;
    const char  *outcome;

    j = ctx->helper.json;
    outcome = ngx_strcmp(ctx->op->helper, VSB_OP_PAUSE) == 0
              ? "sandbox_paused" : "sandbox_resumed";

    ngx_http_veto_sandbox_snapshot_audit(r, ctx, ok, error, outcome,
                      ok ? json_pack("{s:O?}", "ms", json_object_get(j, "ms"))
                         : NULL,
                      NGX_HTTP_OK);
}


/* changes taken out, as an export: since, format, counts, bytes */
static void
ngx_http_veto_sandbox_record_changes(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t  *j;

    j = ctx->helper.json;

    ngx_http_veto_sandbox_snapshot_audit(r, ctx, ok, error, "allowed",
                      ok ? json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, "
                                     "s:O?}",
                                     "since", json_object_get(j, "since"),
                                     "format", json_object_get(j, "format"),
                                     "added", json_object_get(j, "added"),
                                     "modified",
                                     json_object_get(j, "modified"),
                                     "deleted", json_object_get(j, "deleted"),
                                     "mode_changed",
                                     json_object_get(j, "mode_changed"),
                                     "bytes", json_object_get(j, "bytes"))
                         : NULL,
                      NGX_HTTP_OK);
}


#endif /* NGX_HTTP_VSB_OPS_DATA_ONLY */


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)


/* ---- MCP: twins and presenters ----------------------------------------- */


#define NGX_HTTP_VSB_MCP_SNAPSHOT_ARG                                         \
    "\"snapshot_id\":{\"type\":\"string\","                                   \
    "\"pattern\":\"^snap-[0-9a-f]{24}$\","                                    \
    "\"description\":\"The snapshot, as snapshot_sandbox or list_snapshots "  \
    "gave it (snap- and 24 hex digits).\"}"


/* the arguments each tool takes (its row's rest.args) */

static const char  *ngx_http_veto_sandbox_mcp_snapshot_args[] = {
    "sandbox_id", NGX_HTTP_VSB_MCP_FIELDS_SNAPSHOT, NULL
};

static const char  *ngx_http_veto_sandbox_mcp_pause_args[] = {
    "sandbox_id", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_changes_args[] = {
    "sandbox_id", "since", "format", "approval_id", NULL
};


/* sandbox_changes: GET /v1/sandboxes/{id}/changes?since=&format= (json or
 * diff; a tar is for REST): written by hand for its query, made of two
 * arguments it checks; the rest is its row's (the generic twin's) */
static ngx_int_t
ngx_http_veto_sandbox_mcp_twin_changes(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_tool_t *tool, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    u_char      *p;
    json_t      *since, *format;
    ngx_int_t    rc;
    const char  *s, *f;

    rc = ngx_http_veto_sandbox_mcp_rest_twin(r, tool, args, twin, why);
    if (rc != NGX_OK) {
        return rc;
    }

    since = json_object_get(args, "since");
    format = json_object_get(args, "format");

    s = since ? json_string_value(since) : "created";
    f = format ? json_string_value(format) : "json";

    if (s == NULL
        || !(ngx_strcmp(s, "created") == 0
             || ngx_http_veto_sandbox_snapshot_id_valid((u_char *) s,
                                                        ngx_strlen(s))))
    {
        *why = "since is \"created\" or a snapshot_id (snap- and 24 hex "
               "digits)";
        return NGX_DECLINED;
    }

    if (f == NULL || (ngx_strcmp(f, "json") != 0 && ngx_strcmp(f, "diff") != 0))
    {
        *why = "format is \"json\" (the list of changes) or \"diff\" (a "
               "unified diff of the changed text files)";
        return NGX_DECLINED;
    }

    twin->args.data = ngx_pnalloc(r->pool, sizeof("since=&format=")
                                           + ngx_strlen(s) + ngx_strlen(f));
    if (twin->args.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(twin->args.data, "since=%s&format=%s", s, f);
    twin->args.len = p - twin->args.data;

    return NGX_OK;
}


/* delete_snapshot: DELETE /v1/snapshots/{snap}: written by hand, as the
 * id in its path is a snapshot's (the generic twin knows {id} only) */
static ngx_int_t
ngx_http_veto_sandbox_mcp_twin_snapshot_delete(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_tool_t *tool, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    json_t     *v;
    ngx_int_t   rc;

    static const char  *names[] = { "snapshot_id", NULL };

    rc = ngx_http_veto_sandbox_mcp_known(r, args, names, why);
    if (rc != NGX_OK) {
        return rc;
    }

    v = json_object_get(args, "snapshot_id");

    if (!json_is_string(v)
        || !ngx_http_veto_sandbox_snapshot_id_valid(
                                  (u_char *) json_string_value(v),
                                  json_string_length(v)))
    {
        *why = "snapshot_id is required: snap- and 24 lowercase hex digits, "
               "as snapshot_sandbox or list_snapshots gave it";
        return NGX_DECLINED;
    }

    twin->method = NGX_HTTP_DELETE;
    ngx_str_set(&twin->method_name, "DELETE");

    twin->uri.len = sizeof("/v1/snapshots/") - 1 + VSB_SNAPSHOT_ID_LEN;
    twin->uri.data = ngx_pnalloc(r->pool, twin->uri.len);
    if (twin->uri.data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(twin->uri.data, "/v1/snapshots/%s", json_string_value(v));

    return NGX_OK;
}


/* a JSON reply: a one-line summary (prefix, then the JSON) and the reply
 * as structured content */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_json(ngx_http_request_t *r,
    json_t *rest, const char *prefix, json_t *result)
{
    char       *s;
    size_t      size;
    ngx_int_t   rc;

    s = json_dumps(rest, JSON_COMPACT);
    size = ngx_strlen(prefix) + 2 + (s ? ngx_strlen(s) : 2);

    rc = ngx_http_veto_sandbox_mcp_text_restf(r, result, rest, size, "%s %s",
                                              prefix, s ? s : "{}");
    free(s);

    return rc;
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_present_snapshot(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    return ngx_http_veto_sandbox_mcp_present_json(r, rest,
                     "Snapshot made (fork it with create_sandbox's "
                     "from_snapshot, its id):", result);
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_present_snapshots(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    return ngx_http_veto_sandbox_mcp_present_json(r, rest, "Your snapshots:",
                                                  result);
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_present_snapshot_deleted(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    return ngx_http_veto_sandbox_mcp_present_json(r, rest,
                     "Snapshot deleted, its files confirmed gone:", result);
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_present_paused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    return ngx_http_veto_sandbox_mcp_present_json(r, rest,
                     json_is_true(json_object_get(rest, "paused"))
                     ? "Paused (every process frozen; exec and files answer "
                       "paused until resume_sandbox):"
                     : "Resumed:", result);
}


/* changes: json as structured content; a diff as bounded text, marked as
 * the workload's */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_changes(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    json_t     *structured;
    ngx_str_t   text;

    if (rest != NULL) {
        return ngx_http_veto_sandbox_mcp_present_json(r, rest,
                     "The changes (computed by the gateway from the files; "
                     "paths and contents are the workload's, untrusted):",
                     result);
    }

    structured = json_object();
    if (structured == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_veto_sandbox_mcp_bounded(r, data, len, 65536, "diff",
                                          structured, &text)
        == NULL
        || json_object_set_new(structured, "untrusted", json_true()) != 0
        || ngx_http_veto_sandbox_mcp_text(result, (char *) text.data,
                                          text.len)
           != NGX_OK
        || json_object_set_new(result, "structuredContent", structured) != 0)
    {
        json_decref(structured);
        return NGX_ERROR;
    }

    return NGX_OK;
}

#endif /* the MCP tools' code */


/* ---- the group's rows (_ops.c's table) ---------------------------------- */


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_snapshots_ops[] = {

    /* making, forking (sandbox.create) and deleting snapshots, pausing and
     * resuming: what creates and ends sandboxes (sandbox:create) */
    ngx_http_vsb_op("snapshot.create", NGX_HTTP_POST,
                    "/v1/sandboxes/{id}/snapshots",
                    NGX_HTTP_VSB_SCOPE_CREATE, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, 0, VSB_OP_SNAPSHOT_CREATE,
                    ngx_http_veto_sandbox_build_snapshot,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_snapshot,
                    ngx_http_veto_sandbox_record_snapshot),

    ngx_http_vsb_op("snapshot.list", NGX_HTTP_GET|NGX_HTTP_HEAD,
                    "/v1/snapshots",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_SNAPSHOT_LIST,
                    ngx_http_veto_sandbox_build_snapshot_list,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_op("snapshot.get", NGX_HTTP_GET|NGX_HTTP_HEAD,
                    "/v1/snapshots/{snap}",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE,
                    NGX_HTTP_VSB_ROW_SNAPSHOT, VSB_OP_SNAPSHOT_GET,
                    ngx_http_veto_sandbox_build_snapshot_id,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_snapshot_get,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_op("snapshot.delete", NGX_HTTP_DELETE,
                    "/v1/snapshots/{snap}",
                    NGX_HTTP_VSB_SCOPE_CREATE, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE,
                    NGX_HTTP_VSB_ROW_SNAPSHOT, VSB_OP_SNAPSHOT_DELETE,
                    ngx_http_veto_sandbox_build_snapshot_id,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_snapshot_deleted),

    ngx_http_vsb_op("sandbox.pause", NGX_HTTP_POST,
                    "/v1/sandboxes/{id}/pause",
                    NGX_HTTP_VSB_SCOPE_CREATE, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_PAUSE,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_paused),

    ngx_http_vsb_op("sandbox.resume", NGX_HTTP_POST,
                    "/v1/sandboxes/{id}/resume",
                    NGX_HTTP_VSB_SCOPE_CREATE, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_RESUME,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_paused),

    /* the workload's files taken out, as an archive export: sandbox:files,
     * and a read's approval kind (the policy's "export") */
    ngx_http_vsb_op("sandbox.changes", NGX_HTTP_GET,
                    "/v1/sandboxes/{id}/changes",
                    NGX_HTTP_VSB_SCOPE_FILES, NGX_HTTP_VSB_ACT_READ,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_CHANGES,
                    ngx_http_veto_sandbox_build_changes,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_changes,
                    ngx_http_veto_sandbox_record_changes),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

/* ---- the group's MCP tools (_mcp_tool_table.c's list) -------------------- */


ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_snapshots_tools[] = {

    { "snapshot_sandbox", "Snapshot a sandbox",
      "Save a sandbox's files (its /workspace and root; not its running "
      "processes) as a snapshot you can fork any number of times with "
      "create_sandbox's from_snapshot: install dependencies once, then try "
      "each patch in a fresh fork. Pause the sandbox first for a "
      "consistent one. Returns the snapshot's id, size and expiry.",
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        NGX_HTTP_VSB_MCP_PROPS_SNAPSHOT
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":false,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_snapshot,
      { NGX_HTTP_POST, "/v1/sandboxes/{id}/snapshots",
        ngx_http_veto_sandbox_mcp_snapshot_args, NULL, NULL,
        NGX_HTTP_VSB_MCP_BODY } },

    { "list_snapshots", "List my snapshots",
      "The snapshots this agent owns: id, the sandbox and profile each was "
      "made of, size, files, forks alive and expiry.",
      "{\"type\":\"object\",\"properties\":{},"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_snapshots,
      { NGX_HTTP_GET, "/v1/snapshots", NULL, NULL, NULL, 0 } },

    { "delete_snapshot", "Delete a snapshot",
      "Delete one of your snapshots; its files are removed and that is "
      "confirmed. A snapshot with live forks cannot be deleted until they "
      "end.",
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SNAPSHOT_ARG
      "},\"required\":[\"snapshot_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":true,"
      "\"idempotentHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_snapshot_delete,
      ngx_http_veto_sandbox_mcp_present_snapshot_deleted,
      { 0, NULL, NULL, NULL, NULL, 0 } },     /* its twin's own */

    { "pause_sandbox", "Pause a sandbox",
      "Freeze every process of a sandbox (nothing runs, its memory is "
      "kept); commands and file calls answer \"paused\" until "
      "resume_sandbox. Its ttl keeps running; its idle timeout does not "
      "end it while paused.",
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_paused,
      { NGX_HTTP_POST, "/v1/sandboxes/{id}/pause",
        ngx_http_veto_sandbox_mcp_pause_args, NULL, NULL, 0 } },

    { "resume_sandbox", "Resume a sandbox",
      "Let a paused sandbox's processes run on where they stopped; "
      "commands and file calls work again.",
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_paused,
      { NGX_HTTP_POST, "/v1/sandboxes/{id}/resume",
        ngx_http_veto_sandbox_mcp_pause_args, NULL, NULL, 0 } },

    { "sandbox_changes", "What a sandbox's files changed",
      "What differs in a sandbox's files since its creation or since one "
      "of your snapshots (added, modified, deleted, mode changed; size and "
      "sha256 each), computed by the gateway from the files, never by "
      "running anything in the sandbox: take a patch from here rather than "
      "from what a command printed. format \"diff\" gives a unified diff of "
      "the changed text files. Paths and contents are the workload's: "
      "untrusted.",
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        "\"since\":{\"type\":\"string\",\"description\":\"\\\"created\\\" "
        "(the default) or a snapshot_id.\"},"
        "\"format\":{\"type\":\"string\",\"enum\":[\"json\",\"diff\"]},"
        "\"approval_id\":{\"type\":\"string\",\"pattern\":"
        "\"^apr_[0-9a-f]{32}$\",\"description\":\"Only when retrying a "
        "call a human approved.\"}"
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_changes,
      ngx_http_veto_sandbox_mcp_present_changes,
      { NGX_HTTP_GET, "/v1/sandboxes/{id}/changes",
        ngx_http_veto_sandbox_mcp_changes_args, NULL, NULL, 0 } },

    ngx_http_vsb_null_tool
};

#endif /* the MCP tools */
