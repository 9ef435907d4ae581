/*
 * The admin API (scope "admin:revoke" by default, veto_sandbox_scope_
 * admin), always within the admin's own tenant:
 *
 *   POST   /v1/admin/revocations                  revoke a token (its jti,
 *                                                 until its expiry) or an
 *                                                 agent's tokens
 *   GET    /v1/admin/revocations/{jti|agent}/{key}  what is revoked
 *   DELETE /v1/admin/revocations/{jti|agent}/{key}  take it back
 *   GET    /v1/admin/sandboxes[?agent=]           every sandbox of the
 *                                                 tenant, whoever made it
 *   DELETE /v1/admin/sandboxes/{id}               end any of them
 *
 * Revocations are written through the revocation store (_revoke.c), read
 * on every request by the gate; sandboxes are the helper's.  Ending
 * another agent's sandbox is the helper's destroy with reason "admin" and
 * no agent (any of the tenant's), through the reply path every helper op
 * takes (_reply.c), with this file's record: the owner the ENDED record
 * names gets its quota slot freed.  Every admin action is on the
 * audit stream, the admin as its agent and what it acted on in detail.
 *
 * The admin op group, whole: its rows (at the end), builders, run()s and
 * record; it has no MCP tool.  A revocation's known fields are
 * docs/openapi.json's RevocationRequest, as scripts/gen-op-fields writes
 * them (_fields.h).  The unit tests link this file as data
 * (NGX_HTTP_VSB_OPS_DATA_ONLY): the rows only.
 */

#include "ngx_http_veto_sandbox_faces.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


#ifndef NGX_HTTP_VSB_OPS_DATA_ONLY

#include "ngx_http_veto_sandbox_fields.h"
#include "ngx_http_veto_sandbox_quota.h"
#include "ngx_http_veto_sandbox_revoke.h"


/* the latest expiry a jti revocation takes: 9999-12-31T23:59:59Z */
#define NGX_HTTP_VSB_ADMIN_MAX_EXP    253402300799LL

/* a revocation is answered from Redis: without it there is none */
static const char  ngx_http_veto_sandbox_admin_no_redis[] =
    "revocations need veto_sandbox_redis";


static const char  *ngx_http_veto_sandbox_admin_revoke_known[] = {
    NGX_HTTP_VSB_FIELDS_REVOKE, NULL
};


static void ngx_http_veto_sandbox_admin_record_end(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);


static ngx_int_t
ngx_http_veto_sandbox_admin_bad(ngx_http_request_t *r, const char *code,
    const char *field, const char *detail)
{
    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST, code,
                                         detail,
                                         json_pack("{s:s}", "field", field));
}


/* j as the request's (decref'd with its pool); NULL: no memory */
static json_t *
ngx_http_veto_sandbox_admin_keep(ngx_http_request_t *r, json_t *j)
{
    ngx_pool_cleanup_t  *cln;

    if (j == NULL) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        json_decref(j);
        return NULL;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = j;

    return j;
}


/*
 * POST /v1/admin/revocations:
 *
 *   {"kind": "jti", "value": "<jti>", "expires_at": <the token's exp>}
 *   {"kind": "agent", "value": "<sub>", "which": "existing" | "all"}
 *
 * and an optional "reason" for the record.  "existing" (the default):
 * every token of the agent issued until now; "all": every token, also
 * those issued later, until the revocation is taken back.  The body
 * becomes ctx->req, what run() writes.
 */
static ngx_int_t
ngx_http_veto_sandbox_admin_build_revoke(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t       *body, *v;
    ngx_int_t     rc;
    ngx_uint_t    jti;
    const char   *k, *s, **f;

    body = ngx_http_veto_sandbox_read_json(r, &rc);
    if (body == NULL) {
        return rc;
    }

    json_object_foreach(body, k, v) {
        for (f = ngx_http_veto_sandbox_admin_revoke_known; *f; f++) {
            if (ngx_strcmp(k, *f) == 0) {
                break;
            }
        }

        if (*f == NULL) {
            return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                   "unknown_field",
                                   "a revocation has kind, value, "
                                   "expires_at (jti), which (agent) and "
                                   "reason",
                                   json_pack("{s:s}", "field", k));
        }
    }

    v = json_object_get(body, "kind");
    if (v == NULL) {
        return ngx_http_veto_sandbox_admin_bad(r, "missing_field", "kind",
                                   "\"kind\" is \"jti\" or \"agent\"");
    }

    s = json_string_value(v);

    if (s == NULL
        || (ngx_strcmp(s, "jti") != 0 && ngx_strcmp(s, "agent") != 0))
    {
        return ngx_http_veto_sandbox_admin_bad(r, "bad_value", "kind",
                                   "\"kind\" is \"jti\" or \"agent\"");
    }

    jti = (s[0] == 'j');

    v = json_object_get(body, "value");
    if (v == NULL) {
        return ngx_http_veto_sandbox_admin_bad(r, "missing_field", "value",
                                   "\"value\" names the jti or the agent");
    }

    if (!json_is_string(v)
        || !ngx_http_veto_sandbox_redis_key_part_valid(
                (u_char *) json_string_value(v), json_string_length(v)))
    {
        return ngx_http_veto_sandbox_admin_bad(r, "bad_value", "value",
                                   "\"value\" is 1..128 printable ASCII "
                                   "bytes without space, : { } * ? [ ] or "
                                   "\\ (no token with another could be "
                                   "accepted)");
    }

    v = json_object_get(body, "expires_at");

    if (jti && v == NULL) {
        return ngx_http_veto_sandbox_admin_bad(r, "missing_field",
                                   "expires_at",
                                   "a jti is revoked until the token's "
                                   "\"exp\": \"expires_at\", unix seconds");
    }

    if (v != NULL
        && (!jti || !json_is_integer(v) || json_integer_value(v) < 1
            || json_integer_value(v) > NGX_HTTP_VSB_ADMIN_MAX_EXP))
    {
        return ngx_http_veto_sandbox_admin_bad(r, "bad_value", "expires_at",
                                   jti ? "\"expires_at\" is the token's "
                                         "exp in unix seconds"
                                       : "an agent's revocation lasts until "
                                         "it is taken back: no "
                                         "\"expires_at\"");
    }

    v = json_object_get(body, "which");

    if (v != NULL
        && (jti || !json_is_string(v)
            || (ngx_strcmp(json_string_value(v), "existing") != 0
                && ngx_strcmp(json_string_value(v), "all") != 0)))
    {
        return ngx_http_veto_sandbox_admin_bad(r, "bad_value", "which",
                                   jti ? "\"which\" is for an agent"
                                       : "\"which\" is \"existing\" (issued "
                                         "until now) or \"all\"");
    }

    v = json_object_get(body, "reason");

    if (v != NULL
        && (!json_is_string(v)
            || json_string_length(v) > NGX_HTTP_VSB_REASON_MAX))
    {
        return ngx_http_veto_sandbox_admin_bad(r, "bad_value", "reason",
                                   "\"reason\" is a string of at most 1024 "
                                   "bytes");
    }

    ctx->req = body;

    return NGX_DECLINED;
}


/* the revocation routes: kind from the row's path, value from the URI
 * (the op table matched it as a key part) */
static ngx_int_t
ngx_http_veto_sandbox_admin_build_key(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    size_t       off;
    const char  *kind, *key;

    key = ngx_strstr(ctx->op->path, "{key}");
    if (key == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    off = key - ctx->op->path;
    kind = ngx_strstr(ctx->op->path, "/jti/") ? "jti" : "agent";

    if (r->uri.len <= off) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->req = ngx_http_veto_sandbox_admin_keep(r,
                   json_pack("{s:s, s:s%}", "kind", kind, "value",
                             r->uri.data + off, r->uri.len - off));
    if (ctx->req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* GET /v1/admin/sandboxes[?agent=]: the helper's list of the tenant */
static ngx_int_t
ngx_http_veto_sandbox_admin_build_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char     *dst, *src;
    ngx_int_t   rc;
    ngx_str_t   arg, agent;

    rc = ngx_http_veto_sandbox_build_simple(r, ctx);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    json_object_del(ctx->req, "agent");

    if (ngx_http_arg(r, (u_char *) "agent", 5, &arg) != NGX_OK) {
        return NGX_DECLINED;
    }

    agent.data = ngx_pnalloc(r->pool, arg.len);
    if (agent.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    dst = agent.data;
    src = arg.data;
    ngx_unescape_uri(&dst, &src, arg.len, 0);
    agent.len = dst - agent.data;

    if (!ngx_http_veto_sandbox_redis_key_part_valid(agent.data, agent.len)) {
        return ngx_http_veto_sandbox_admin_bad(r, "bad_value", "agent",
                                   "\"agent\" is not an agent's name");
    }

    if (json_object_set_new(ctx->req, "agent",
                            json_stringn((char *) agent.data, agent.len))
        != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* ---- revocations: answered from Redis ---- */


/* the revocation's kind and value (ctx->req) */
static void
ngx_http_veto_sandbox_admin_what(ngx_http_veto_sandbox_ctx_t *ctx,
    const char **kind, ngx_str_t *value)
{
    json_t  *v;

    *kind = json_string_value(json_object_get(ctx->req, "kind"));

    v = json_object_get(ctx->req, "value");
    value->data = (u_char *) json_string_value(v);
    value->len = json_string_length(v);
}


/* The admin action on record: its detail is o as JSON text (o is
 * decref'd). */
static void
ngx_http_veto_sandbox_admin_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *outcome, const char *reason,
    json_t *o, ngx_uint_t status)
{
    ngx_str_t  detail;

    ngx_http_veto_sandbox_json_text(r, o, &detail);
    json_decref(o);

    ngx_http_veto_sandbox_audit(r, ctx, outcome, reason, NULL,
                                detail.len ? &detail : NULL, status);
}


/* Location: /v1/admin/revocations/<kind>/<value, escaped> */
static ngx_int_t
ngx_http_veto_sandbox_admin_location(ngx_http_request_t *r, const char *kind,
    ngx_str_t *value)
{
    u_char     *loc, *p;
    uintptr_t   n;

    n = ngx_escape_uri(NULL, value->data, value->len,
                       NGX_ESCAPE_URI_COMPONENT);

    loc = ngx_pnalloc(r->pool, sizeof("/v1/admin/revocations/agent/")
                               + value->len + 2 * n);
    if (loc == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(loc, "/v1/admin/revocations/%s/", kind);
    p = (u_char *) ngx_escape_uri(p, value->data, value->len,
                                  NGX_ESCAPE_URI_COMPONENT);
    *p = '\0';

    return ngx_http_veto_sandbox_header(r, "Location", (char *) loc);
}


static ngx_int_t
ngx_http_veto_sandbox_admin_revoked(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    json_t      *body;
    ngx_str_t    value;
    const char  *kind, *reason;

    if (reply->type != REDIS_REPLY_STATUS) {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    ngx_http_veto_sandbox_admin_what(ctx, &kind, &value);

    /* what was written (run() set it): the effective expiry, the time;
     * the reason goes to the record's own field */
    body = json_deep_copy(ctx->req);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    reason = json_string_value(json_object_get(ctx->req, "reason"));
    json_object_del(body, "reason");

    ngx_http_veto_sandbox_admin_audit(r, ctx, "revoked", reason,
                                      json_incref(body), NGX_HTTP_CREATED);

    if (ngx_http_veto_sandbox_admin_location(r, kind, &value) != NGX_OK) {
        json_decref(body);
        return NGX_ERROR;
    }

    json_object_set_new(body, "revoked", json_true());

    ngx_str_set(&ctx->decision, "allow");

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_CREATED, body);
}


static ngx_int_t
ngx_http_veto_sandbox_admin_revoke(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    time_t                               exp, before;
    json_t                              *v;
    ngx_int_t                            rc;
    ngx_str_t                            value;
    const char                          *kind;
    ngx_http_veto_sandbox_redis_call_t   call;

    rc = ngx_http_veto_sandbox_answer_start(r, ctx, &call,
                                       ngx_http_veto_sandbox_admin_revoked,
                                       ngx_http_veto_sandbox_admin_no_redis);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    ngx_http_veto_sandbox_admin_what(ctx, &kind, &value);

    if (kind[0] == 'j') {
        exp = (time_t) json_integer_value(json_object_get(ctx->req,
                                                          "expires_at"));

        /* an expired token needs no record: the store keeps a minute */
        if (exp <= ngx_time()) {
            exp = ngx_time() + 60;
            json_object_set_new(ctx->req, "expires_at",
                                json_integer((json_int_t) exp));
        }

        rc = ngx_http_veto_sandbox_revoke_jti(&call, &ctx->tenant, &value,
                                              exp);
        return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
    }

    v = json_object_get(ctx->req, "which");

    if (v != NULL && ngx_strcmp(json_string_value(v), "all") == 0) {
        before = -1;

    } else {
        before = ngx_time();

        if (json_object_set_new(ctx->req, "which", json_string("existing"))
            != 0
            || json_object_set_new(ctx->req, "issued_before",
                                   json_integer((json_int_t) before))
               != 0)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    rc = ngx_http_veto_sandbox_revoke_agent(&call, &ctx->tenant, &value,
                                            before);

    return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
}


/* GET: a jti's TTL, an agent's value */
static ngx_int_t
ngx_http_veto_sandbox_admin_read(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    time_t       t;
    json_t      *body;
    ngx_str_t    value;
    const char  *kind;

    ngx_http_veto_sandbox_admin_what(ctx, &kind, &value);

    body = json_deep_copy(ctx->req);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (kind[0] == 'j') {
        if (reply->type != REDIS_REPLY_INTEGER) {
            json_decref(body);
            return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
        }

        if (reply->integer == -2) {
            goto none;
        }

        json_object_set_new(body, "expires_at",
                            reply->integer < 0
                            ? json_null()
                            : json_integer((json_int_t) ngx_time()
                                           + reply->integer));

    } else {
        if (reply->type == REDIS_REPLY_NIL) {
            goto none;
        }

        if (reply->type != REDIS_REPLY_STRING) {
            json_decref(body);
            return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
        }

        /* what the gate makes of it: a time, else every token */
        t = ngx_atotm((u_char *) reply->str, reply->len);

        json_object_set_new(body, "which",
                            json_string(t == NGX_ERROR ? "all" : "existing"));

        if (t != NGX_ERROR) {
            json_object_set_new(body, "issued_before",
                                json_integer((json_int_t) t));
        }
    }

    json_object_set_new(body, "revoked", json_true());

    ngx_http_veto_sandbox_admin_audit(r, ctx, "allowed", NULL,
                                      json_incref(ctx->req), NGX_HTTP_OK);

    ngx_str_set(&ctx->decision, "allow");

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, body);

none:

    json_decref(body);

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND, "not_found",
                                         "no such revocation", NULL);
}


static ngx_int_t
ngx_http_veto_sandbox_admin_revocation(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                            rc;
    ngx_str_t                            value;
    const char                          *kind;
    ngx_http_veto_sandbox_redis_call_t   call;

    rc = ngx_http_veto_sandbox_answer_start(r, ctx, &call,
                                   ngx_http_veto_sandbox_admin_read,
                                   ngx_http_veto_sandbox_admin_no_redis);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    ngx_http_veto_sandbox_admin_what(ctx, &kind, &value);

    rc = ngx_http_veto_sandbox_revocation_get(&call, &ctx->tenant, kind,
                                              &value);

    return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
}


/* DELETE: 1 when there was one */
static ngx_int_t
ngx_http_veto_sandbox_admin_unrevoked(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    json_t  *body;

    if (reply->type != REDIS_REPLY_INTEGER) {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    if (reply->integer == 0) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                                             "not_found",
                                             "no such revocation", NULL);
    }

    ngx_http_veto_sandbox_admin_audit(r, ctx, "unrevoked", NULL,
                                      json_incref(ctx->req), NGX_HTTP_OK);

    body = json_deep_copy(ctx->req);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(body, "revoked", json_false());

    ngx_str_set(&ctx->decision, "allow");

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, body);
}


/* the same shape as _admin_revocation() above: kept apart, as each names
 * the one store call and reply it makes (a read; a delete, audited) */
static ngx_int_t
ngx_http_veto_sandbox_admin_unrevoke(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                            rc;
    ngx_str_t                            value;
    const char                          *kind;
    ngx_http_veto_sandbox_redis_call_t   call;

    rc = ngx_http_veto_sandbox_answer_start(r, ctx, &call,
                                     ngx_http_veto_sandbox_admin_unrevoked,
                                     ngx_http_veto_sandbox_admin_no_redis);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    ngx_http_veto_sandbox_admin_what(ctx, &kind, &value);

    rc = ngx_http_veto_sandbox_unrevoke(&call, &ctx->tenant, kind, &value);

    return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
}


/* ---- ending any sandbox of the tenant ---------------------------------- */


/*
 * DELETE /v1/admin/sandboxes/{id}: the helper's destroy with reason
 * "admin" and no agent: it ends the tenant's sandbox of that id, whoever
 * made it (another tenant's is not found, as one that never was), and
 * the ENDED record names its owner and says an administrator ended it.
 */
static ngx_int_t
ngx_http_veto_sandbox_admin_build_end(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t  *req;

    req = ngx_http_veto_sandbox_req(r, ctx);

    if (req == NULL
        || json_object_del(req, "agent") != 0
        || json_object_set_new(req, "reason", json_string(VSB_END_ADMIN))
           != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->req = req;

    return NGX_DECLINED;
}


/* Bookkeeping nobody waits for: a failure is logged, naming what. */
static void
ngx_http_veto_sandbox_admin_logged(ngx_int_t rc, redisReply *reply,
    void *data)
{
    if (rc != NGX_OK || reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: redis bookkeeping (admin quota "
                      "release) failed");
    }
}


/* the destroy of another agent's sandbox: its owner's slot is free */
static void
ngx_http_veto_sandbox_admin_record_end(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t                              *owner;
    ngx_str_t                            agent;
    ngx_http_veto_sandbox_main_conf_t   *vmcf;
    ngx_http_veto_sandbox_redis_call_t   call;

    /* the helper's ENDED record names whose it was */
    owner = json_object_get(json_object_get(ctx->helper.json, "ended"),
                            "agent");

    if (ok && json_is_string(owner)) {
        vmcf = ngx_http_get_module_main_conf(r, ngx_http_veto_sandbox_module);

        agent.data = (u_char *) json_string_value(owner);
        agent.len = json_string_length(owner);

        ngx_memzero(&call, sizeof(call));
        call.rds = ngx_http_veto_sandbox_rds;
        call.pool = r->pool;
        call.timeout = vmcf->timeout;
        call.handler = ngx_http_veto_sandbox_admin_logged;

        /* with hosts, its routing record stays (_where.c) */
        if (vmcf->host_addr.len) {
            (void) ngx_http_veto_sandbox_quota_release_ended(&call,
                       &ctx->tenant, &agent, &ctx->sandbox,
                       json_object_get(ctx->helper.json, "ended"));

        } else {
            (void) ngx_http_veto_sandbox_quota_release(&call, &ctx->tenant,
                                                       &agent,
                                                       &ctx->sandbox);
        }
    }

    ngx_http_veto_sandbox_admin_audit(r, ctx,
                                      ok ? "sandbox_destroyed" : "error",
                                      ok ? NULL : error,
                                      json_pack("{s:O?}", "owner", owner),
                                      ok ? NGX_HTTP_OK : 0);
}

#endif /* the rows' code */


/* ---- the group's rows (_ops.c's table) ---------------------------------- */


/* any token and any sandbox of the admin's tenant */
ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_admin_ops[] = {

    ngx_http_vsb_op("admin.revoke", NGX_HTTP_POST, "/v1/admin/revocations",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, 0, NULL,
                    ngx_http_veto_sandbox_admin_build_revoke,
                    ngx_http_veto_sandbox_admin_revoke, NULL, NULL),

    ngx_http_vsb_op("admin.revocation.get", NGX_HTTP_VSB_READ,
                    "/v1/admin/revocations/jti/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_revocation, NULL, NULL),

    ngx_http_vsb_op("admin.revocation.get", NGX_HTTP_VSB_READ,
                    "/v1/admin/revocations/agent/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_revocation, NULL, NULL),

    ngx_http_vsb_op("admin.unrevoke", NGX_HTTP_DELETE,
                    "/v1/admin/revocations/jti/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_unrevoke, NULL, NULL),

    ngx_http_vsb_op("admin.unrevoke", NGX_HTTP_DELETE,
                    "/v1/admin/revocations/agent/{key}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_admin_build_key,
                    ngx_http_veto_sandbox_admin_unrevoke, NULL, NULL),

    ngx_http_vsb_op("admin.sandbox.list", NGX_HTTP_VSB_READ,
                    "/v1/admin/sandboxes",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_LIST,
                    ngx_http_veto_sandbox_admin_build_list,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_allowed),

    /* the helper's destroy of any of the tenant's sandboxes */
    ngx_http_vsb_op("admin.sandbox.delete", NGX_HTTP_DELETE,
                    "/v1/admin/sandboxes/{id}",
                    NGX_HTTP_VSB_SCOPE_ADMIN, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_DESTROY,
                    ngx_http_veto_sandbox_admin_build_end,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_admin_record_end),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

#include "ngx_http_veto_sandbox_mcp.h"


/* no MCP tool: the admin API is an operator's, not an agent's */
ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_admin_tools[] = {
    ngx_http_vsb_null_tool
};

#endif /* the (no) MCP tools */
