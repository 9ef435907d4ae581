/*
 * What is kept of a decision: the audit record (fire and forget, a lost
 * one is logged) and the quota slot a request holds.  The gate, the error
 * responses (401/403) and the helper's replies all come here; this file
 * answers nobody itself.  The record_* functions are the
 * ngx_http_veto_sandbox_record_pt of the op table.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_quota.h"
#include "ngx_http_veto_sandbox_audit.h"
#include "ngx_http_veto_sandbox_summary.h"
#include "ngx_http_veto_sandbox_network.h"
#include "ngx_http_veto_sandbox_metrics.h"

#include <openssl/evp.h>


static void ngx_http_veto_sandbox_ignore(ngx_int_t rc, redisReply *reply,
    void *data);
static ngx_int_t ngx_http_veto_sandbox_record_credentials(
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *d);
static void ngx_http_veto_sandbox_reconcile(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


static ngx_http_veto_sandbox_main_conf_t *
ngx_http_veto_sandbox_record_mcf(ngx_http_request_t *r)
{
    return ngx_http_get_module_main_conf(r, ngx_http_veto_sandbox_module);
}


/* Bookkeeping nobody waits for: a failure is logged, naming what. */
void
ngx_http_veto_sandbox_bookkeeping_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_redis_call_t *call, const char *what)
{
    call->rds = ngx_http_veto_sandbox_rds;
    call->pool = r->pool;
    call->timeout = ngx_http_veto_sandbox_record_mcf(r)->timeout;
    call->handler = ngx_http_veto_sandbox_ignore;
    call->data = (void *) what;
    call->cmdp = NULL;
    call->durable = 0;
}


static void
ngx_http_veto_sandbox_ignore(ngx_int_t rc, redisReply *reply, void *data)
{
    if (rc != NGX_OK || reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: redis bookkeeping (%s) failed",
                      (char *) data);
    }
}


/* An audit record; fire and forget (a failure is logged). */
void
ngx_http_veto_sandbox_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *outcome,
    const char *reason, ngx_str_t *reviewer, ngx_str_t *detail,
    ngx_uint_t status)
{
    ngx_http_veto_sandbox_main_conf_t   *vmcf;
    ngx_http_veto_sandbox_audit_rec_t    rec;
    ngx_http_veto_sandbox_redis_call_t   call;

    ngx_http_veto_sandbox_metrics_outcome(outcome);

    if (ngx_http_veto_sandbox_rds == NULL || ctx->tenant.len == 0) {
        return;
    }

    vmcf = ngx_http_veto_sandbox_record_mcf(r);

    if (ctx->action.len == 0) {
        if (ctx->op) {
            ctx->action = ctx->op->name;

        } else {
            /* refused before it was routed (POST_READ): no op yet */
            ngx_str_set(&ctx->action, "request");
        }
    }

    if (ngx_http_veto_sandbox_request_id(r, ctx) != NGX_OK) {
        return;
    }

    if (ngx_strcmp(outcome, "denied") == 0) {
        ctx->audited = 1;
    }

    ngx_memzero(&rec, sizeof(rec));

    rec.tenant = ctx->tenant;
    rec.agent = ctx->agent;
    rec.action = ctx->action;
    rec.outcome.data = (u_char *) outcome;
    rec.outcome.len = ngx_strlen(outcome);

    if (reason) {
        rec.reason.data = (u_char *) reason;
        rec.reason.len = ngx_strlen(reason);
    }

    if (ctx->hash[0]) {
        rec.request_hash.data = ctx->hash;
        rec.request_hash.len = NGX_HTTP_VSB_HASH_HEX_LEN;
    }

    rec.approval = ctx->approval.len ? ctx->approval : ctx->apr_id;

    if (reviewer) {
        rec.reviewer = *reviewer;
    }

    rec.sandbox = ctx->sandbox;
    rec.request_id = ctx->request_id;

    if (detail) {
        rec.detail = *detail;
    }

    rec.status = status;

    /* fire and forget: the audit store logs a lost record itself */
    ngx_http_veto_sandbox_bookkeeping_call(r, &call, "audit");
    call.handler = NULL;
    call.data = NULL;

    (void) ngx_http_veto_sandbox_audit_append(&call, vmcf->audit_maxlen,
                                              vmcf->audit_bytes, &rec);
}


/* json as JSON text in the request's pool; out->len 0 on failure */
void
ngx_http_veto_sandbox_json_text(ngx_http_request_t *r, json_t *json,
    ngx_str_t *out)
{
    out->data = ngx_http_veto_sandbox_json_dump(r->pool, json, 0, 0,
                                                &out->len);
    if (out->data == NULL) {
        out->len = 0;
    }
}


/*
 * A refusal decided before the gate (token, scope, policy): on the
 * tenant's record when the tenant is known, i.e. the token's signature
 * held; once per request.
 */
void
ngx_http_veto_sandbox_audit_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status)
{
    json_t     *d;
    ngx_str_t   detail, *method, *uri;

    if (ctx->audited || ctx->tenant.len == 0
        || ngx_http_veto_sandbox_rds == NULL)
    {
        return;
    }

    /* the request the op was asked as (a tools/call's REST twin), or r
     * when refused before it had one */
    method = ctx->in.set ? &ctx->in.method_name : &r->method_name;
    uri = ctx->in.set ? &ctx->in.uri : &r->uri;

    /* what was asked, and why not; a path that is not UTF-8 is left out */
    d = json_pack("{s:s%, s:s%, s:s?}",
                  "method", method->data, method->len,
                  "path", uri->data, uri->len,
                  "why", ctx->reason);
    if (d == NULL) {
        d = json_pack("{s:s%, s:s?}",
                      "method", method->data, method->len,
                      "why", ctx->reason);
    }

    detail.len = 0;

    if (d) {
        ngx_http_veto_sandbox_json_text(r, d, &detail);
        json_decref(d);
    }

    ngx_http_veto_sandbox_audit(r, ctx, "denied", code, NULL,
                                detail.len ? &detail : NULL, status);
}


void
ngx_http_veto_sandbox_release_slot(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_http_veto_sandbox_redis_call_t  call;

    if (!ctx->slot_held) {
        return;
    }

    ctx->slot_held = 0;

    ngx_http_veto_sandbox_bookkeeping_call(r, &call, "quota release");

    (void) ngx_http_veto_sandbox_quota_release(&call, &ctx->tenant,
                                               &ctx->agent, &ctx->slot);
}


/*
 * Once the helper answered (or could not be asked), once: the op's record
 * of the outcome, with the quota bookkeeping (the provisional slot
 * becomes the real sandbox, or is given back; a destroyed sandbox frees
 * its).
 */
void
ngx_http_veto_sandbox_after(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t      *j, *v;
    ngx_uint_t   ok;
    const char  *err, *reason, *state;

    if (ngx_http_veto_sandbox_rds == NULL
        || ctx->step == NGX_HTTP_VSB_STEP_AFTER)
    {
        return;
    }

    ctx->step = NGX_HTTP_VSB_STEP_AFTER;

    j = ctx->helper.json;

    ok = ctx->helper.status == NGX_OK && j != NULL
         && json_is_true(json_object_get(j, "ok"));

    err = "helper_unavailable";

    if (!ok && j != NULL) {
        v = json_object_get(j, "error");
        if (json_is_string(v)) {
            err = json_string_value(v);
        }

        /* the helper has no such sandbox (not a missing file in it):
         * whatever Redis still counts for it is freed */
        v = json_object_get(j, "field");

        if (ctx->sandbox.len && ngx_strcmp(err, VSB_E_NOT_FOUND) == 0
            && json_is_string(v) && ngx_strcmp(json_string_value(v), "id") == 0)
        {
            ngx_http_veto_sandbox_reconcile(r, ctx);
        }
    }

    /* the helper says it ended (an error "ended", or the status of an
     * ended one): the same, at once, not only when the poll of ENDED
     * records comes; a failed termination still holds what it held */
    if (ctx->sandbox.len && j != NULL) {
        v = ok ? json_object_get(j, "sandbox") : j;
        reason = json_string_value(json_object_get(v, "end_reason"));
        state = json_string_value(json_object_get(v, "state"));

        if (reason != NULL && ngx_strcmp(reason, "termination_failed") != 0
            && (ok ? state != NULL && ngx_strcmp(state, "ended") == 0
                   : ngx_strcmp(err, VSB_E_ENDED) == 0))
        {
            ngx_http_veto_sandbox_reconcile(r, ctx);
        }
    }

    ctx->op->record(r, ctx, ok, err);

    /* the ownership record, the env, the audit entry: in Redis before
     * the client has the answer (read-your-writes across workers) */
    ngx_http_veto_sandbox_redis_flush(ngx_http_veto_sandbox_rds);
}


/*
 * The helper said the sandbox ctx names does not exist, or ended: a
 * crash, a restart or its TTL ended it without this gateway hearing.  Its slot
 * and ownership record go, when they are this agent's on this gateway
 * (the helper answers not_found for another agent's sandbox too).
 */
static void
ngx_http_veto_sandbox_reconcile(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_str_t                            gw;
    ngx_http_veto_sandbox_redis_call_t   call;

    gw = ngx_http_veto_sandbox_record_mcf(r)->host;

    ngx_http_veto_sandbox_bookkeeping_call(r, &call, "reconcile");

    (void) ngx_http_veto_sandbox_quota_gone(&call, &ctx->tenant, &ctx->agent,
                                            &ctx->sandbox, &gw);
}


/*
 * With several hosts, the routing record of a snapshot this host's
 * helper holds (_snap_route.c; _where.c routes by it): kept until at
 * least at, or dropped when at is NULL.  Bookkeeping nobody waits for,
 * in Redis before the client has the answer (after() flushes).
 */
void
ngx_http_veto_sandbox_record_snapshot_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *id, json_t *at)
{
    ngx_str_t                            snap;
    ngx_http_veto_sandbox_main_conf_t   *mcf;
    ngx_http_veto_sandbox_redis_call_t   call;

    mcf = ngx_http_veto_sandbox_record_mcf(r);

    if (mcf->host_addr.len == 0 || ngx_http_veto_sandbox_rds == NULL
        || !json_is_string(id)
        || (at != NULL && !json_is_integer(at)))
    {
        return;
    }

    snap.data = (u_char *) json_string_value(id);
    snap.len = json_string_length(id);

    if (at == NULL) {
        ngx_http_veto_sandbox_bookkeeping_call(r, &call,
                                               "snapshot routing record's "
                                               "delete");
        (void) ngx_http_veto_sandbox_snap_route_drop(&call, &ctx->tenant,
                                                     &snap);
        return;
    }

    ngx_http_veto_sandbox_bookkeeping_call(r, &call,
                                           "snapshot routing record");

    (void) ngx_http_veto_sandbox_snap_route_keep(&call, &ctx->tenant, &snap,
                                                 &ctx->agent, &mcf->host,
                                                 (time_t)
                                                 json_integer_value(at));
}


/* an exec: the execution record */
void
ngx_http_veto_sandbox_record_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    ngx_str_t  detail;

    if (ok) {
        ngx_http_veto_sandbox_exec_detail(r, ctx, ctx->helper.json,
                                          ngx_http_veto_sandbox_stream_detail(
                                              ctx),
                                          &detail);
        ngx_http_veto_sandbox_audit(r, ctx, "exec_finished", NULL, NULL,
                                    detail.len ? &detail : NULL,
                                    NGX_HTTP_OK);
    } else {
        ngx_http_veto_sandbox_audit(r, ctx, "error", error, NULL, NULL, 0);
    }
}


/* files written or read: allowed, or the helper's error; which file,
 * and what went in or out (size, SHA-256, as the helper counted them) */
void
ngx_http_veto_sandbox_record_allowed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t     *d, *j;
    ngx_str_t   detail;

    detail.len = 0;
    d = NULL;

    if (ctx->path.len) {
        j = ctx->helper.json;

        d = json_pack("{s:s%}", "path", ctx->path.data, ctx->path.len);

        if (d != NULL && ok) {
            if (json_is_integer(json_object_get(j, "size"))) {
                json_object_set(d, "size", json_object_get(j, "size"));
            }

            if (json_is_string(json_object_get(j, "sha256"))) {
                json_object_set(d, "sha256", json_object_get(j, "sha256"));
            }
        }
    }

    if (d != NULL) {
        ngx_http_veto_sandbox_json_text(r, d, &detail);
        json_decref(d);
    }

    ngx_http_veto_sandbox_audit(r, ctx, ok ? "allowed" : "error",
                                ok ? NULL : error, NULL,
                                detail.len ? &detail : NULL,
                                ok ? NGX_HTTP_OK : 0);
}


/* a list of hosts in a record: whole entries within
 * NGX_HTTP_VSB_SUMMARY_HOSTS_MAX bytes, like a summary's (three fit in
 * an entry); a cut one says so and counts them all */
static ngx_int_t
ngx_http_veto_sandbox_record_hosts(json_t *d, const char *name,
    json_t *list)
{
    u_char      key[64];
    json_t     *kept;
    ngx_uint_t  cut;

    if (!json_is_array(list)) {
        return NGX_OK;
    }

    cut = 0;

    kept = ngx_http_veto_sandbox_summary_hosts(list,
                                               NGX_HTTP_VSB_SUMMARY_HOSTS_MAX,
                                               &cut);
    if (kept == NULL || json_object_set_new(d, name, kept) != 0) {
        return NGX_ERROR;
    }

    if (!cut) {
        return NGX_OK;
    }

    ngx_snprintf(key, sizeof(key), "%s_truncated%Z", name);

    if (json_object_set_new(d, (char *) key, json_true()) != 0) {
        return NGX_ERROR;
    }

    ngx_snprintf(key, sizeof(key), "%s_count%Z", name);

    return json_object_set_new(d, (char *) key,
                               json_integer(json_array_size(list))) == 0
           ? NGX_OK : NGX_ERROR;
}


/* credentials attached (a create's, a PATCH's) or detached (a PATCH's):
 * the names asked, those a human approved, those taken away, and what
 * the sandbox holds now as the helper says
 * (name, host, header, env variable: never a value or a placeholder) */
static ngx_int_t
ngx_http_veto_sandbox_record_credentials(ngx_http_veto_sandbox_ctx_t *ctx,
    json_t *d)
{
    json_t  *net;

    if (ctx->cred_names == NULL && ctx->cred_detach == NULL
        && ctx->secret == NULL)
    {
        return NGX_OK;
    }

    net = json_object_get(ctx->helper.json, "network");
    if (net == NULL) {
        net = json_object_get(json_object_get(ctx->helper.json, "sandbox"),
                              "network");
    }

    /* an agent's own secret: its name, host and header, never its value */
    if (ctx->secret
        && json_object_set_new(d, "credentials_agent", json_pack("{s:O, s:O, s:s}",
                                   "name", json_object_get(ctx->secret,
                                                           "name"),
                                   "host", json_object_get(ctx->secret,
                                                           "host"),
                                   "header", json_is_string(json_object_get(
                                                 ctx->secret, "header"))
                                   ? json_string_value(json_object_get(
                                                 ctx->secret, "header"))
                                   : "Authorization")) != 0)
    {
        return NGX_ERROR;
    }

    if ((ctx->cred_names
         && json_object_set(d, "credentials_requested", ctx->cred_names)
            != 0)
        || (ctx->cred_detach
            && json_object_set(d, "credentials_detached", ctx->cred_detach)
               != 0)
        || (ctx->cred_ask
            && json_object_set(d, "credentials_needed_approval",
                               ctx->cred_ask) != 0)
        || (json_is_array(json_object_get(net, "credentials"))
            && json_object_set(d, "credentials",
                               json_object_get(net, "credentials")) != 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* hosts added to a sandbox's allowlist: what was asked, what the helper
 * added (entries it already had are not repeated) */
void
ngx_http_veto_sandbox_record_network(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t     *d;
    ngx_str_t   detail;

    if (!ok) {
        ngx_http_veto_sandbox_audit(r, ctx, "error", error, NULL, NULL, 0);
        return;
    }

    detail.len = 0;

    d = json_object();

    if (d != NULL
        && ngx_http_veto_sandbox_record_hosts(d, "requested", ctx->net_hosts)
           == NGX_OK
        && ngx_http_veto_sandbox_record_hosts(d, "needed_approval",
                                              ctx->net_ask)
           == NGX_OK
        && ngx_http_veto_sandbox_record_hosts(d, "added",
                            json_object_get(ctx->helper.json, "added"))
           == NGX_OK
        && ngx_http_veto_sandbox_record_credentials(ctx, d) == NGX_OK)
    {
        ngx_http_veto_sandbox_json_text(r, d, &detail);
    }

    json_decref(d);

    ngx_http_veto_sandbox_audit(r, ctx, "network_updated", NULL, NULL,
                                detail.len ? &detail : NULL, NGX_HTTP_OK);
}


/* reads of one's own sandboxes (and the liveness probe) are not
 * decisions on record */
void
ngx_http_veto_sandbox_record_nothing(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
}


/* SHA-256 of one output stream, as a JSON string (NULL if it failed) */
static json_t *
ngx_http_veto_sandbox_output_sha256(u_char *data, size_t len)
{
    u_char        md[EVP_MAX_MD_SIZE], hex[2 * EVP_MAX_MD_SIZE];
    unsigned int  mdlen;

    if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1) {
        return NULL;
    }

    ngx_hex_dump(hex, md, mdlen);

    return json_stringn((char *) hex, 2 * mdlen);
}


/* what the execution record keeps of the helper's reply */
static const char *const  ngx_http_veto_sandbox_exec_fields[] = {
    "exit_code", "signal", "timed_out", "oom_killed", "limits_hit",
    "stdout_truncated", "stderr_truncated", "usage", NULL
};

/* what the creation record keeps of the new sandbox */
static const char *const  ngx_http_veto_sandbox_create_fields[] = {
    "profile", "network", "limits", "ttl_s", "expires_at", "epoch", NULL
};


/*
 * The execution record: what ran (the redacted request summary: argv,
 * cwd, env names, timeout, stdin size), how it ended, its usage, and the
 * size and SHA-256 of each output stream as returned to the agent (extra:
 * what a streamed exec sent, or a background exec's id, instead).
 */
void
ngx_http_veto_sandbox_exec_detail(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *j, json_t *extra,
    ngx_str_t *out)
{
    size_t                               used, room;
    json_t                              *d, *req, *env, *view, *v;
    ngx_str_t                            in, summary;
    json_int_t                           olen, elen;
    ngx_uint_t                           dropped;
    ngx_http_veto_sandbox_helper_t      *h;
    ngx_http_veto_sandbox_summary_in_t   sum;

    out->len = 0;
    h = &ctx->helper;

    ngx_memzero(&sum, sizeof(sum));
    sum.action = ctx->action;
    sum.req = ctx->req;
    sum.size = -1;
    sum.sandbox = &ctx->sandbox;

    if (ctx->payload) {
        in.data = ctx->payload->buf->pos;
        in.len = ctx->payload->buf->last - ctx->payload->buf->pos;
        sum.in = &in;
    }

    /* the env that applied, as records keep it (the sandbox's too when
     * an approval read it) */
    env = json_object_get(ctx->req, "env");
    dropped = ctx->sbx_env_dropped;
    view = NULL;

    if (env != NULL || ctx->sbx_env != NULL) {
        view = ngx_http_veto_sandbox_env_view_of(r->pool, ctx, ctx->sbx_env,
                                                 env, &dropped);
    }

    sum.env = view;
    sum.env_dropped = dropped;

    req = NULL;

    if (ngx_http_veto_sandbox_summary(r->pool, &sum, &summary) == NGX_OK) {
        req = json_loadb((char *) summary.data, summary.len, 0, NULL);
    }

    json_decref(view);

    d = json_pack("{s:o?}", "request", req);

    if (d == NULL
        || ngx_http_veto_sandbox_json_pick(d, j,
                                           ngx_http_veto_sandbox_exec_fields)
           != NGX_OK)
    {
        json_decref(d);
        json_decref(extra);
        return;
    }

    olen = json_integer_value(json_object_get(j, "stdout_len"));
    elen = json_integer_value(json_object_get(j, "stderr_len"));

    if (extra != NULL) {
        /* what was streamed, not a payload, describes the output */
        json_object_update(d, extra);
        json_decref(extra);

    } else if (j != NULL && olen >= 0 && elen >= 0
               && (size_t) olen <= h->payload_len
               && (size_t) elen == h->payload_len - (size_t) olen)
    {
        /* only what the reply check in _reply.c accepts is described */
        json_object_set_new(d, "stdout_bytes", json_integer(olen));
        json_object_set_new(d, "stderr_bytes", json_integer(elen));
        json_object_set_new(d, "stdout_sha256",
            ngx_http_veto_sandbox_output_sha256(h->payload, (size_t) olen));
        json_object_set_new(d, "stderr_sha256",
            ngx_http_veto_sandbox_output_sha256(h->payload + olen,
                                                (size_t) elen));
    }

    /* the network attempts get what the rest leaves of the entry, at
     * most NGX_HTTP_VSB_NETWORK_RECORD_BYTES; the others are counted
     * ("dropped"), so a large request never costs the whole detail */
    v = json_object_get(j, "network");

    if (v != NULL) {
        used = json_dumpb(d, NULL, 0, JSON_COMPACT)
               + NGX_HTTP_VSB_NETWORK_RECORD_FRAME;
        room = used < NGX_HTTP_VSB_AUDIT_DETAIL_MAX
               ? NGX_HTTP_VSB_AUDIT_DETAIL_MAX - used : 0;

        v = ngx_http_veto_sandbox_network_record(v,
                              ngx_min(room, NGX_HTTP_VSB_NETWORK_RECORD_BYTES));
        if (v != NULL) {
            json_object_set_new(d, "network", v);
        }
    }

    ngx_http_veto_sandbox_json_text(r, d, out);
    json_decref(d);
}


/* The creation record: what the sandbox was given (its image's digest
 * too), the names of its env
 * (the values of those that change what runs, like a reviewer sees
 * them), and the helper run it lives in */
void
ngx_http_veto_sandbox_create_detail(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *j, ngx_str_t *out)
{
    json_t      *sb, *d, *env, *view, *names, *v;
    ngx_uint_t   dropped;
    const char  *name;

    out->len = 0;
    sb = json_object_get(j, "sandbox");

    d = json_object();

    if (d == NULL
        || ngx_http_veto_sandbox_json_pick(d, sb,
                                           ngx_http_veto_sandbox_create_fields)
           != NGX_OK)
    {
        json_decref(d);
        return;
    }

    /* the image its root is made of; null: a directory profile */
    /* a fork: the snapshot it was made of */
    if (json_is_string(json_object_get(sb, "from_snapshot"))
        && json_object_set(d, "from_snapshot",
                           json_object_get(sb, "from_snapshot")) != 0)
    {
        json_decref(d);
        return;
    }

    if (json_object_set(d, "profile_digest",
                        json_is_string(json_object_get(sb, "profile_digest"))
                        ? json_object_get(sb, "profile_digest")
                        : json_null()) != 0)
    {
        json_decref(d);
        return;
    }

    env = json_object_get(ctx->req, "env");

    if (json_is_object(env)) {
        dropped = 0;
        view = ngx_http_veto_sandbox_env_view_of(r->pool, ctx, NULL, env,
                                                 &dropped);
        names = json_array();

        if (view != NULL && names != NULL) {
            json_object_foreach(view, name, v) {
                json_array_append_new(names, json_string(name));
            }

            json_object_set(d, "env_names", names);
            json_object_set(d, "env", view);

            if (dropped) {
                json_object_set_new(d, "env_count",
                                    json_integer(json_object_size(env)));
            }
        }

        json_decref(names);
        json_decref(view);
    }

    (void) ngx_http_veto_sandbox_record_credentials(ctx, d);

    ngx_http_veto_sandbox_json_text(r, d, out);
    json_decref(d);
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
