/*
 * The gate's approval step: whether a request needs a human, the
 * sandbox's env an exec's or PATCH's approval binds (read from its
 * ownership record first), the canonical request hash and the summary a
 * reviewer sees, then consuming the approval named or creating one and
 * answering 202.  _gate.c runs the steps and reads their replies.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_notify.h"
#include "ngx_http_veto_sandbox_summary.h"
#include "ngx_http_veto_sandbox_quota.h"


/* the approval of an exec binds what its sandbox adds to it: the env;
 * so does a PATCH's (hosts added to a sandbox: the reviewer sees which
 * sandbox, with what env, gets them, and no approval is made for one
 * this agent has no record of) */
#define ngx_http_vsb_binds_sandbox(op)                                        \
    ((op)->approval == NGX_HTTP_VSB_ACT_EXEC                                  \
     || (op)->approval == NGX_HTTP_VSB_ACT_UPDATE)


/*
 * The review summary into ctx->summary: NGX_DECLINED when it is made,
 * else the answer.  Refused (422) are a request whose summary cannot be
 * shown whole (summary_too_large) and, unless
 * veto_sandbox_approval_inline_credentials is on, one carrying a value
 * that looks like a credential (credential_inline): a reviewer would
 * see it, and redacting it would hide what runs.
 */
static ngx_int_t
ngx_http_veto_sandbox_gate_review(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_summary_in_t *sum)
{
    u_char                             where[300], detail[640];
    size_t                             size;
    ngx_int_t                          rc;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (!vscf->approval_credentials) {
        rc = ngx_http_veto_sandbox_summary_credential(r->pool, sum, where,
                                                      sizeof(where));
        if (rc == NGX_ERROR) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (rc == NGX_DECLINED) {
            *ngx_snprintf(detail, sizeof(detail) - 1,
                          "%s holds a value that looks like a credential; "
                          "a reviewer sees this request exactly as it will "
                          "run, so a credential must not be in it: write "
                          "it to a file in the sandbox (PUT "
                          "/v1/sandboxes/{id}/files) and name the file in "
                          "the command (--password-file, curl -H @file, "
                          "...): the reviewer sees the file's name, not "
                          "its content", where) = '\0';

            return ngx_http_veto_sandbox_refuse(r, ctx,
                                   NGX_HTTP_VSB_UNPROCESSABLE,
                                   "credential_inline", (char *) detail,
                                   json_pack("{s:s}", "field",
                                             (char *) where));
        }
    }

    rc = ngx_http_veto_sandbox_summary(r->pool, sum, &ctx->summary);

    if (rc == NGX_DECLINED) {
        *ngx_snprintf(detail, sizeof(detail) - 1,
                      "a reviewer must see this request whole, and its "
                      "summary would be %uz bytes of JSON, over the "
                      "%d-byte bound: make the command shorter (put a long "
                      "script in a file in the sandbox and run the file), "
                      "or split it", ctx->summary.len,
                      NGX_HTTP_VSB_SUMMARY_MAX) = '\0';

        size = ctx->summary.len;
        ngx_str_null(&ctx->summary);

        return ngx_http_veto_sandbox_refuse(r, ctx,
                               NGX_HTTP_VSB_UNPROCESSABLE,
                               "summary_too_large", (char *) detail,
                               json_pack("{s:s, s:I, s:I}",
                                         "limit", "summary_bytes",
                                         "requested", (json_int_t) size,
                                         "ceiling", (json_int_t)
                                         NGX_HTTP_VSB_SUMMARY_MAX));
    }

    return rc == NGX_OK ? NGX_DECLINED : NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/*
 * NGX_DECLINED: no approval needed; NGX_OK: a command is in flight on
 * call (the gate made it: its reply goes back to the gate); else the
 * response code (refused or failed here).
 */
ngx_int_t
ngx_http_veto_sandbox_approval_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call)
{
    u_char                                 md[32], hex[65], *id;
    u_char                                 line[sizeof("sandbox-env ")
                                                + NGX_HTTP_VSB_HASH_HEX_LEN];
    off_t                                  size;
    json_t                                *v, *argv, *env, *view, *flagged;
    ngx_int_t                              rc;
    ngx_str_t                              sha, in, context;
    ngx_uint_t                             act, file, dropped;
    const char                            *profile, *network;
    ngx_http_veto_sandbox_main_conf_t     *vmcf;
    ngx_http_veto_sandbox_srv_conf_t      *vscf;
    ngx_http_veto_sandbox_summary_in_t     sum;
    ngx_pool_cleanup_t                    *cln;
    ngx_http_veto_sandbox_approval_bind_t  bind;

    act = ctx->op->approval;

    if (act == 0 || ctx->req == NULL) {
        return NGX_DECLINED;
    }

    v = json_object_get(ctx->req, "profile");
    profile = json_is_string(v) ? json_string_value(v) : NULL;

    if (profile == NULL && act == NGX_HTTP_VSB_ACT_CREATE) {
        profile = "default";
    }

    /* hosts granted (a create's allowlist, a PATCH's): "allowlist" */
    v = json_object_get(ctx->req, "network");
    network = ctx->net_hosts ? "allowlist"
              : json_is_string(v) ? json_string_value(v) : NULL;

    argv = json_object_get(ctx->req, "argv");
    env = json_object_get(ctx->req, "env");

    /* hosts beyond the policy's allowlist, credentials it lists under
     * "ask", a lifetime beyond its ceiling (within the askable one)
     * always need a human */
    if (ctx->net_ask == NULL && ctx->cred_ask == NULL && !ctx->limit_ask
        && !ngx_http_veto_sandbox_policy_approval(ctx->rule, act, argv,
                                                  profile, network, env))
    {
        return NGX_DECLINED;
    }

    /* an agent's own secret is never held while a human decides: its
     * value would have to wait in Redis */
    if (ctx->secret != NULL) {
        return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN,
                                   "secret_needs_no_approval",
                                   "the policy would have a human approve "
                                   "this change, and an agent's secret is "
                                   "never held while one decides (its value "
                                   "would wait in the approval store); the "
                                   "operator's policy must let it pass "
                                   "without one", json_pack("{s:s}",
                                                            "field",
                                                            "secret"));
    }

    ctx->needs_approval = 1;

    /* an exec runs with its sandbox's env too: read it first, the human
     * sees it and the approval binds it */
    if (ngx_http_vsb_binds_sandbox(ctx->op) && !ctx->sbx_known) {
        ctx->step = NGX_HTTP_VSB_STEP_SANDBOX;

        rc = ngx_http_veto_sandbox_quota_owner(call, &ctx->tenant,
                                               &ctx->sandbox);
        if (rc == NGX_OK) {
            return NGX_OK;
        }

        return ngx_http_veto_sandbox_redis_problem(r, ctx,
                                      rc == NGX_DECLINED ? NGX_ERROR : rc);
    }

    vmcf = ngx_http_veto_sandbox_gate_mcf(r);
    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    context.len = 0;

    if (ngx_http_vsb_binds_sandbox(ctx->op)) {
        context.data = line;
        context.len = ngx_sprintf(line, "sandbox-env %s", ctx->sbx_env_sha256)
                      - line;
    }

    /* the canonical request: method, path, query, body by digest (of
     * the request the op was asked as: a tools/call's REST twin; a JSON
     * body in its JCS form, file bytes as they are), and what the
     * sandbox adds */
    if ((ctx->op->body == NGX_HTTP_VSB_BODY_JSON
         ? ngx_http_veto_sandbox_hash_body_jcs(r->pool, ctx->in.body,
                                               NGX_HTTP_VSB_MAX_JSON_BODY,
                                               md, &size, r->connection->log)
         : ngx_http_veto_sandbox_hash_body(ctx->in.body, md, &size,
                                           r->connection->log))
        != NGX_OK
        || ngx_http_veto_sandbox_hash_request(r->pool, &ctx->in.method_name,
                                               &ctx->in.uri, &ctx->in.args,
                                               md, size, &context, ctx->hash)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    bind.tenant = ctx->tenant;
    bind.agent = ctx->agent;
    bind.action = ctx->action;
    ngx_memcpy(bind.hash, ctx->hash, sizeof(bind.hash));

    if (ctx->in.has_approval) {
        ctx->approval = ctx->in.approval;

        if (!ngx_http_veto_sandbox_approval_id_valid(&ctx->approval)) {
            ngx_str_null(&ctx->approval);
            return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN,
                                   "approval_invalid",
                                   "Veto-Approval is not an approval id",
                                   NULL);
        }

        ctx->step = NGX_HTTP_VSB_STEP_APR_CONSUME;

        rc = ngx_http_veto_sandbox_approval_consume(call, &ctx->approval,
                                                    &bind);
        goto sent;
    }

    /* a new approval: what the human will see */
    id = ngx_pnalloc(r->pool, NGX_HTTP_VSB_APPROVAL_ID_LEN);
    if (id == NULL || ngx_http_veto_sandbox_approval_id(id) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->approval.data = id;
    ctx->approval.len = NGX_HTTP_VSB_APPROVAL_ID_LEN;

    ngx_memzero(&sum, sizeof(sum));

    sum.action = ctx->action;
    sum.req = ctx->req;
    sum.size = -1;
    sum.sandbox = &ctx->sandbox;

    /* ?path= of a files op (empty for the others) */
    sum.path = &ctx->path;

    /* a file body: its size and digest */
    file = (ctx->op->body == NGX_HTTP_VSB_BODY_FILE
            || ctx->op->body == NGX_HTTP_VSB_BODY_ARCHIVE);

    if (file) {
        ngx_hex_dump(hex, md, 32);
        sha.data = hex;
        sha.len = 64;
        sum.sha256 = &sha;
        sum.size = size;
    }

    /* a JSON body's payload is a field of it, an exec's stdin: one
     * buffer in memory (see _request.c) */
    if (ctx->op->body == NGX_HTTP_VSB_BODY_JSON && ctx->payload) {
        in.data = ctx->payload->buf->pos;
        in.len = ctx->payload->buf->last - ctx->payload->buf->pos;
        sum.in = &in;
    }

    /* the hosts granted (a create's allowlist, a PATCH's) */
    sum.hosts = ctx->net_hosts;
    sum.hosts_ask = ctx->net_ask;
    sum.creds = ctx->cred_names;
    sum.creds_ask = ctx->cred_ask;

    /* their bindings as the helper said them: the human sees the hosts */
    if (ctx->cred_names != NULL) {
        sum.cred_bindings = ngx_http_veto_sandbox_heard_bindings(ctx->cred_names);

        cln = ngx_pool_cleanup_add(r->pool, 0);
        if (cln == NULL) {
            json_decref(sum.cred_bindings);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        cln->handler = ngx_http_veto_sandbox_json_cleanup;
        cln->data = sum.cred_bindings;
    }
    sum.irreversible = ngx_http_veto_sandbox_policy_irreversible(ctx->rule,
                                                       act, argv, network);

    /* the audit trail's summary: redacted, cut, with the env's view */
    dropped = ctx->sbx_env_dropped;
    view = NULL;

    if (env != NULL || ctx->sbx_env != NULL) {
        view = ngx_http_veto_sandbox_env_view_of(r->pool, ctx, ctx->sbx_env,
                                                 env, &dropped);
        if (view == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    sum.env = view;
    sum.env_dropped = dropped;

    rc = ngx_http_veto_sandbox_summary(r->pool, &sum, &ctx->summary_record);

    json_decref(view);

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* what the human sees: the request as it will run, every value of
     * the env that will apply (the sandbox's under the request's) */
    view = NULL;
    flagged = NULL;

    if (env != NULL || ctx->sbx_env != NULL) {
        view = ngx_http_veto_sandbox_env_review_of(ctx, ctx->sbx_env, env,
                                                   &flagged);
        if (view == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    sum.env = view;
    sum.env_dropped = 0;
    sum.env_flagged = flagged;
    sum.review = 1;

    rc = ngx_http_veto_sandbox_gate_review(r, ctx, &sum);

    json_decref(view);
    json_decref(flagged);

    if (rc != NGX_DECLINED) {
        return rc;
    }

    if (ngx_http_veto_sandbox_summary_link(r->pool, &ctx->summary,
                                           &ctx->summary_record)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->ttl = ctx->rule->apr.ttl ? ctx->rule->apr.ttl : vscf->approval_ttl;
    ctx->threshold = ctx->rule->apr.threshold ? ctx->rule->apr.threshold
                                              : vscf->approval_threshold;

    ctx->step = NGX_HTTP_VSB_STEP_APR_CREATE;

    rc = ngx_http_veto_sandbox_approval_create(call, &ctx->approval, &bind,
                                               &ctx->summary, ctx->ttl,
                                               ctx->threshold,
                                               vmcf->retention,
                                               vmcf->approval_max,
                                               ctx->rule->apr.max_open);

sent:

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN,
                                            "approval_invalid",
                                            "the approval cannot be bound "
                                            "to this identity", NULL);
    }

    return ngx_http_veto_sandbox_redis_problem(r, ctx, rc);
}


/*
 * The exec's sandbox as its ownership record has it (HMGET agent env
 * env_sha256 env_dropped gateway): NGX_AGAIN with ctx->sbx_* set, else
 * the answer (a refusal already sent answers NGX_OK: not "go on").
 * No record of this agent's (an unknown id, another agent's, one an
 * older gateway made without its env, or one Redis lost) cannot show a
 * reviewer what would run: refused, never guessed; all alike, so the
 * answer does not tell another agent's sandbox from an unknown one.
 */
ngx_int_t
ngx_http_veto_sandbox_sandbox_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    u_char                              digest[NGX_HTTP_VSB_HASH_HEX_LEN
                                                   + 1], detail[768];
    json_t                             *env, *v, *where;
    const char                         *name;
    ngx_str_t                          *host;
    redisReply                         *agent, *text, *sha, *dropped, *gw;
    ngx_pool_cleanup_t                 *cln;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 5) {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    agent = reply->element[0];
    text = reply->element[1];
    sha = reply->element[2];
    dropped = reply->element[3];
    gw = reply->element[4];

    env = NULL;

    if (agent->type == REDIS_REPLY_STRING
        && (size_t) agent->len == ctx->agent.len
        && ngx_strncmp(agent->str, ctx->agent.data, ctx->agent.len) == 0
        && text->type == REDIS_REPLY_STRING)
    {
        env = json_loadb(text->str, text->len, 0, NULL);
    }

    /* the env is kept whole: its digest is the one the record keeps (an
     * older record kept a view, values withheld, which a reviewer cannot
     * be shown as what runs) */
    if (sha->type == REDIS_REPLY_STRING
        && sha->len == NGX_HTTP_VSB_HASH_HEX_LEN && json_is_object(env)
        && (ngx_http_veto_sandbox_env_digest(env, digest) != NGX_OK
            || ngx_strncmp(digest, sha->str, NGX_HTTP_VSB_HASH_HEX_LEN)
               != 0))
    {
        /* a value withheld at create: it looked like a credential (an
         * older gateway's view has nulls: unknown, below) */
        json_object_foreach(env, name, v) {
            if (json_is_object(v)) {
                break;
            }
        }

        if (name != NULL) {
            *ngx_snprintf(detail, sizeof(detail) - 1,
                          "the sandbox's env sets %s to a value that looks "
                          "like a credential, and a reviewer sees the env "
                          "this request would run with, exactly: it was "
                          "not kept, so no request a human must approve "
                          "can be shown there; create a sandbox without it "
                          "(write it to a file in the sandbox instead)",
                          name) = '\0';
            where = json_pack("{s:s, s:s}", "field", "env", "name", name);
            json_decref(env);

            return ngx_http_veto_sandbox_refuse(r, ctx,
                                   NGX_HTTP_VSB_UNPROCESSABLE,
                                   "credential_inline", (char *) detail,
                                   where);
        }

        json_decref(env);
        env = NULL;
    }

    if (sha->type != REDIS_REPLY_STRING
        || sha->len != NGX_HTTP_VSB_HASH_HEX_LEN || !json_is_object(env))
    {
        json_decref(env);
        return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_CONFLICT,
                                   "sandbox_env_unknown",
                                   "the gateway has no record of this "
                                   "sandbox's environment (an unknown "
                                   "sandbox, one made before this gateway "
                                   "version, or a record Redis lost), so it "
                                   "cannot show a reviewer the sandbox this "
                                   "request would run in or change; use a "
                                   "sandbox created since", NULL);
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        json_decref(env);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = env;

    /*
     * The agent's own sandbox, held by another gateway host: its helper
     * is there, not here.  Say so before an approval is asked for or
     * used (one used here would be spent on a request that cannot run).
     */
    host = &ngx_http_veto_sandbox_gate_mcf(r)->host;

    if (gw->type == REDIS_REPLY_STRING && gw->len > 0 && !ctx->peer_route
        && ((size_t) gw->len != host->len
            || ngx_strncmp(gw->str, host->data, host->len) != 0))
    {
        return ngx_http_veto_sandbox_refuse(r, ctx,
                                   NGX_HTTP_MISDIRECTED_REQUEST,
                                   "sandbox_elsewhere",
                                   "this sandbox is held by another gateway "
                                   "host (\"host\"); send its requests "
                                   "there: requests are not routed between "
                                   "hosts yet",
                                   json_pack("{s:s%}", "host", gw->str,
                                             (size_t) ngx_min(gw->len, 64)));
    }

    ctx->sbx_env = env;
    ngx_memcpy(ctx->sbx_env_sha256, sha->str, NGX_HTTP_VSB_HASH_HEX_LEN);
    ctx->sbx_env_sha256[NGX_HTTP_VSB_HASH_HEX_LEN] = '\0';

    ctx->sbx_env_dropped = 0;

    if (dropped->type == REDIS_REPLY_STRING) {
        ctx->sbx_env_dropped = (ngx_uint_t) ngx_max(
                        ngx_atoi((u_char *) dropped->str, dropped->len), 0);
    }

    ctx->sbx_known = 1;

    return NGX_AGAIN;
}


/* 202: the approval's id, where to follow it, and what it covers. */
ngx_int_t
ngx_http_veto_sandbox_approval_202(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    u_char       *loc;
    json_t       *body, *summary;
    long long     created, expires;

    loc = ngx_pnalloc(r->pool, sizeof("/v1/approvals/") + ctx->approval.len);
    if (loc == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(loc, "/v1/approvals/%V%Z", &ctx->approval);

    if (ngx_http_veto_sandbox_header(r, "Location", (char *) loc) != NGX_OK) {
        return NGX_ERROR;
    }

    created = 0;
    expires = 0;

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 5
        && reply->element[3]->type == REDIS_REPLY_STRING
        && reply->element[4]->type == REDIS_REPLY_STRING)
    {
        created = strtoll(reply->element[3]->str, NULL, 10);
        expires = strtoll(reply->element[4]->str, NULL, 10);
    }

    summary = json_loadb((char *) ctx->summary.data, ctx->summary.len, 0,
                         NULL);

    /* times in ms like the approvals API; expires_at (seconds) stays for
     * the clients that read it */
    body = json_pack("{s:s%, s:s, s:s%, s:s%, s:o, s:I, s:I, s:I, s:I, "
                     "s:s%, s:s}",
                     "approval_id", ctx->approval.data, ctx->approval.len,
                     "state", "pending",
                     "action", ctx->action.data, ctx->action.len,
                     "request_hash", ctx->hash,
                     (size_t) NGX_HTTP_VSB_HASH_HEX_LEN,
                     "summary", summary ? summary : json_object(),
                     "threshold", (json_int_t) ctx->threshold,
                     "created_ms", (json_int_t) created,
                     "expires_ms", (json_int_t) expires,
                     "expires_at", (json_int_t) (expires / 1000),
                     "location", loc, ngx_strlen(loc),
                     "detail", "a human must approve this request; repeat "
                     "it unchanged with the header Veto-Approval: <id> "
                     "once approved");

    ngx_str_set(&ctx->decision, "approval_required");

    /* the webhooks: queued now, sent after this response */
    ngx_http_veto_sandbox_notify(r, ctx, (time_t) (expires / 1000));

    /* nothing is created until the repeat: give the quota slot back */
    ngx_http_veto_sandbox_release_slot(r, ctx);

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_ACCEPTED, body);
}


/* a deny reason as it is put in a refusal, at most */
#define NGX_HTTP_VSB_DENY_REASON_MAX  512

/*
 * A Veto-Approval whose approval is not approved: a code per state, so
 * that an agent knows whether to wait (pending), give up (denied: the
 * reviewer's reason says why), ask again (used, expired).  All 403:
 * nothing ran.
 */
ngx_int_t
ngx_http_veto_sandbox_gate_not_approved(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_approval_result_t *ar)
{
    size_t       len;
    json_t      *extra, *reason;
    ngx_str_t   *st;
    const char  *code, *detail;

    st = &ar->state;

#define ngx_http_vsb_state_is(s)                                              \
    (st->len == sizeof(s) - 1 && ngx_strncmp(st->data, s, st->len) == 0)

    if (ngx_http_vsb_state_is("pending")) {
        code = "approval_pending";
        detail = "no reviewer has approved this request yet (or not enough "
                 "of them): nothing ran; follow GET /v1/approvals/{id} and "
                 "send the request again once it is approved";

    } else if (ngx_http_vsb_state_is("denied")) {
        code = "approval_denied";
        detail = "a reviewer denied this request: nothing ran; do not send "
                 "it again with this approval (\"reason\" says why)";

    } else if (ngx_http_vsb_state_is("consumed")) {
        code = "approval_used";
        detail = "this approval was used already: an approval allows one "
                 "request; send the request without Veto-Approval to ask "
                 "for a new one";

    } else if (ngx_http_vsb_state_is("expired")) {
        code = "approval_expired";
        detail = "the approval has expired; send the request without "
                 "Veto-Approval to ask for a new one";

    } else {
        code = "approval_not_approved";
        detail = "the approval is not approved";
    }

#undef ngx_http_vsb_state_is

    extra = json_pack("{s:s%}", "state",
                      st->data ? st->data : (u_char *) "", st->len);

    if (extra != NULL && ngx_strcmp(code, "approval_denied") == 0
        && ar->detail.len)
    {
        /* cut at a character's start: the reason is the reviewer's text */
        len = ngx_min(ar->detail.len, NGX_HTTP_VSB_DENY_REASON_MAX);

        while (len && len < ar->detail.len
               && (ar->detail.data[len] & 0xc0) == 0x80)
        {
            len--;
        }

        reason = json_stringn((char *) ar->detail.data, len);

        if (reason != NULL) {
            json_object_set_new(extra, "reason", reason);
        }
    }

    return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN, code,
                                        detail, extra);
}
