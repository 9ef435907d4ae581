/*
 * The Redis gate between policy and an op's run(): token revocation,
 * quotas, human approval (in this order, so that a 429 never burns an
 * approval).
 *
 * Each step is one Redis command issued on the worker's shared async
 * connection; the request waits (NGX_DONE, its count already held by the
 * API handler) and resumes from the reply.  Anything but an expected
 * reply refuses with 503: fail closed.  A request in flight when its
 * pool goes away cancels its command from a pool cleanup, so a late
 * reply never touches a freed request.  Without veto_sandbox_redis the
 * gate is open: "nginx -t" refuses a policy with approvals or quotas in
 * that case.  What each op asks of the gate is in its op table row:
 * its approval kind, its quota, its body.  Decisions go on record
 * through _record.c.
 */

#include "ngx_http_veto_sandbox_module.h"
#include "ngx_http_veto_sandbox_quota.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_notify.h"
#include "ngx_http_veto_sandbox_summary.h"
#include "ngx_http_veto_sandbox_revoke.h"


/* the approval of an exec binds what its sandbox adds to it: the env;
 * so does a PATCH's (hosts added to a sandbox: the reviewer sees which
 * sandbox, with what env, gets them, and no approval is made for one
 * this agent has no record of) */
#define ngx_http_vsb_binds_sandbox(op)                                        \
    ((op)->approval == NGX_HTTP_VSB_ACT_EXEC                                  \
     || (op)->approval == NGX_HTTP_VSB_ACT_UPDATE)


static ngx_int_t ngx_http_veto_sandbox_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_gate_reply(ngx_int_t rc,
    redisReply *reply, void *data);
static ngx_int_t ngx_http_veto_sandbox_gate_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_approval_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_quota_refused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_quota_result_t *qr);
static ngx_int_t ngx_http_veto_sandbox_quota_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_approval_202(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t status, const char *code,
    const char *detail, json_t *extra);
static void ngx_http_veto_sandbox_cancel_cleanup(void *data);
static ngx_int_t ngx_http_veto_sandbox_sandbox_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_epoch_known(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


static ngx_http_veto_sandbox_main_conf_t *
ngx_http_veto_sandbox_gate_mcf(ngx_http_request_t *r)
{
    return ngx_http_get_module_main_conf(r, ngx_http_veto_sandbox_module);
}


/* A call the request waits for: handler(r) resumes it; the pool cleanup
 * of ngx_http_veto_sandbox_wait() cancels ctx->rcmd if r goes first. */
void
ngx_http_veto_sandbox_waiting_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_handler_pt handler)
{
    call->rds = ngx_http_veto_sandbox_rds;
    call->pool = r->pool;
    call->timeout = ngx_http_veto_sandbox_gate_mcf(r)->timeout;
    call->handler = handler;
    call->data = r;
    call->cmdp = &ctx->rcmd;
    call->durable = 0;
}


/*
 * Runs the gate, then next().  NGX_DONE: the request waits for Redis (or
 * next() took it over); anything else is the response code to finalize.
 */
ngx_int_t
ngx_http_veto_sandbox_gate(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next)
{
    ctx->next = next;

    ctx->action = ctx->op->name;

    if (ngx_http_veto_sandbox_rds == NULL) {
        return next(r, ctx);
    }

    if (ngx_http_veto_sandbox_request_id(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->step = NGX_HTTP_VSB_STEP_REVOKE;

    return ngx_http_veto_sandbox_run(r, ctx);
}


/* Makes the request's pool cancel its Redis command, once. */
ngx_int_t
ngx_http_veto_sandbox_wait(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_pool_cleanup_t  *cln;

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_veto_sandbox_cancel_cleanup) {
            return NGX_OK;
        }
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_cancel_cleanup;
    cln->data = ctx;

    return NGX_OK;
}


static void
ngx_http_veto_sandbox_cancel_cleanup(void *data)
{
    ngx_http_veto_sandbox_ctx_t  *ctx = data;

    if (ctx->rcmd) {
        ngx_http_veto_sandbox_redis_cancel(ctx->rcmd);
        ctx->rcmd = NULL;
    }
}


/* Finishes a request that waited for Redis. */
void
ngx_http_veto_sandbox_resume(ngx_http_request_t *r, ngx_int_t rc)
{
    ngx_connection_t  *c;

    if (rc == NGX_DONE) {
        return;
    }

    c = r->connection;

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/* Issues the command of ctx->step, or moves on when a step has nothing
 * to ask. */
static ngx_int_t
ngx_http_veto_sandbox_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                            rc;
    ngx_http_veto_sandbox_redis_call_t   call;

    if (ngx_http_veto_sandbox_wait(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for ( ;; ) {

        switch (ctx->step) {

        case NGX_HTTP_VSB_STEP_REVOKE:
            ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                             ngx_http_veto_sandbox_gate_reply);

            rc = ngx_http_veto_sandbox_revoke_check(&call, &ctx->tenant,
                                                    &ctx->agent, &ctx->jti);

            if (rc == NGX_DECLINED) {
                /* a sub, tenant or jti that cannot be revoked */
                ngx_str_set(&ctx->decision, "deny:invalid_token");
                ctx->reason = "token cannot be checked for revocation";
                return ngx_http_veto_sandbox_deny(r, ctx);
            }

            break;

        case NGX_HTTP_VSB_STEP_APPROVAL:
            rc = ngx_http_veto_sandbox_approval_step(r, ctx);
            if (rc == NGX_DECLINED) {
                ctx->step = NGX_HTTP_VSB_STEP_NEXT;
                continue;
            }

            if (rc != NGX_OK) {
                return rc;          /* answered */
            }

            rc = NGX_OK;
            break;

        case NGX_HTTP_VSB_STEP_QUOTA:
            rc = ngx_http_veto_sandbox_quota_step(r, ctx);
            if (rc == NGX_DECLINED) {
                ctx->step = NGX_HTTP_VSB_STEP_APPROVAL;
                continue;
            }

            if (rc != NGX_OK) {
                return rc;          /* answered */
            }

            break;

        default: /* NGX_HTTP_VSB_STEP_NEXT */
            return ctx->next(r, ctx);
        }

        if (rc == NGX_OK) {
            return NGX_DONE;        /* the reply resumes */
        }

        return ngx_http_veto_sandbox_redis_problem(r, ctx, rc);
    }
}


/*
 * Every handler of a Redis reply a request waited for starts here: NGX_OK
 * when the reply is one to read; else the refusal (503: Redis could not
 * decide, so nothing is allowed) is answered and *rc is its code.
 */
ngx_int_t
ngx_http_veto_sandbox_redis_replied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply, ngx_int_t *rc)
{
    ctx->rcmd = NULL;

    if (*rc == NGX_OK && reply != NULL && reply->type != REDIS_REPLY_ERROR) {
        return NGX_OK;
    }

    if (reply && reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "veto_sandbox: redis error reply: %*s",
                      (size_t) reply->len, reply->str);
    }

    *rc = ngx_http_veto_sandbox_redis_problem(r, ctx,
                                       *rc == NGX_OK ? NGX_ERROR : *rc);

    return NGX_ERROR;
}


static void
ngx_http_veto_sandbox_gate_reply(ngx_int_t rc, redisReply *reply, void *data)
{
    ngx_http_request_t           *r = data;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    if (ngx_http_veto_sandbox_redis_replied(r, ctx, reply, &rc) == NGX_OK) {
        rc = ngx_http_veto_sandbox_gate_result(r, ctx, reply);

        if (rc == NGX_AGAIN) {
            rc = ngx_http_veto_sandbox_run(r, ctx);
        }
    }

    ngx_http_veto_sandbox_resume(r, rc);
}


/* NGX_AGAIN: go on with ctx->step; else the response code. */
static ngx_int_t
ngx_http_veto_sandbox_gate_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    ngx_int_t                               rc;
    const char                             *why, *code;
    ngx_http_veto_sandbox_quota_result_t    qr;
    ngx_http_veto_sandbox_approval_result_t ar;

    switch (ctx->step) {

    case NGX_HTTP_VSB_STEP_REVOKE:
        rc = ngx_http_veto_sandbox_revoke_result(reply, ctx->iat, &why);

        if (rc == NGX_OK) {
            ctx->step = NGX_HTTP_VSB_STEP_QUOTA;
            return NGX_AGAIN;
        }

        if (rc == NGX_DECLINED) {
            ngx_http_veto_sandbox_audit(r, ctx, "denied",
                                        *why == 'j' ? "token_revoked"
                                                    : "agent_revoked",
                                        NULL, NULL, NGX_HTTP_UNAUTHORIZED);
            ngx_str_set(&ctx->decision, "deny:invalid_token");
            ctx->reason = "token revoked";
            return ngx_http_veto_sandbox_deny(r, ctx);
        }

        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);

    case NGX_HTTP_VSB_STEP_SANDBOX:
        rc = ngx_http_veto_sandbox_sandbox_result(r, ctx, reply);

        if (rc == NGX_AGAIN) {
            ctx->step = NGX_HTTP_VSB_STEP_APPROVAL;
            return NGX_AGAIN;
        }

        return rc;

    case NGX_HTTP_VSB_STEP_APR_CREATE:
        ngx_http_veto_sandbox_approval_result(reply, &ar);

        if (ar.code == NGX_HTTP_VSB_AR_FULL) {
            return ngx_http_veto_sandbox_refuse(r, ctx,
                                   NGX_HTTP_VSB_TOO_MANY_REQUESTS,
                                   "approvals_full",
                                   "the tenant holds as many approval "
                                   "requests as it may, all still open: "
                                   "decide some, or wait until they expire",
                                   NULL);
        }

        if (ar.code != NGX_HTTP_VSB_AR_OK) {
            return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
        }

        ngx_http_veto_sandbox_audit(r, ctx, "approval_requested", NULL, NULL,
                                    &ctx->summary, NGX_HTTP_ACCEPTED);

        return ngx_http_veto_sandbox_approval_202(r, ctx, reply);

    case NGX_HTTP_VSB_STEP_APR_CONSUME:
        ngx_http_veto_sandbox_approval_result(reply, &ar);

        switch (ar.code) {

        case NGX_HTTP_VSB_AR_OK:
            ngx_http_veto_sandbox_audit(r, ctx, "approval_consumed", NULL,
                                        NULL, NULL, 0);
            ngx_str_set(&ctx->decision, "allow:approved");
            ctx->step = NGX_HTTP_VSB_STEP_NEXT;
            return NGX_AGAIN;

        case NGX_HTTP_VSB_AR_NOT_FOUND:
            return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN,
                                   "approval_invalid",
                                   "no such approval for this tenant",
                                   NULL);

        case NGX_HTTP_VSB_AR_EXPIRED:
            if (ar.just_expired) {
                ngx_http_veto_sandbox_audit(r, ctx, "approval_expired", NULL,
                                            NULL, NULL, 0);
            }

            return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN,
                                   "approval_expired",
                                   "the approval has expired", NULL);

        case NGX_HTTP_VSB_AR_NOT_APPROVED:
            code = ar.state.len == 8
                   && ngx_strncmp(ar.state.data, "consumed", 8) == 0
                   ? "approval_consumed" : "approval_not_approved";

            return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN,
                                   code, "the approval is not approved, or "
                                   "was used already",
                                   json_pack("{s:s%}", "state",
                                             ar.state.data ? ar.state.data
                                                           : (u_char *) "",
                                             ar.state.len));

        case NGX_HTTP_VSB_AR_MISMATCH:
            return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN,
                                   "approval_mismatch",
                                   "the approval was given for another "
                                   "request, agent or action",
                                   json_pack("{s:s%}", "mismatch",
                                             ar.detail.data ? ar.detail.data
                                                            : (u_char *) "",
                                             ar.detail.len));

        default:
            return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
        }

    case NGX_HTTP_VSB_STEP_QUOTA:
        ngx_http_veto_sandbox_quota_result(reply, &qr);

        if (qr.code == NGX_HTTP_VSB_QR_OK
            || qr.code == NGX_HTTP_VSB_QR_EXISTS)
        {
            if (ctx->op->quota == NGX_HTTP_VSB_QUOTA_SANDBOXES) {
                ctx->slot_held = 1;
            }

            ctx->step = NGX_HTTP_VSB_STEP_APPROVAL;
            return NGX_AGAIN;
        }

        if (qr.code != NGX_HTTP_VSB_QR_TENANT_LIMIT
            && qr.code != NGX_HTTP_VSB_QR_AGENT_LIMIT)
        {
            return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
        }

        return ngx_http_veto_sandbox_quota_refused(r, ctx, &qr);

    default:
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }
}


/*
 * 429 for a quota.  Retry-After only where waiting is what helps: an exec
 * rate frees itself within the minute; a concurrent-sandbox limit frees
 * at once when a sandbox is deleted, and otherwise only when the oldest
 * reaches its TTL (possibly hours away): the detail says so instead.
 */
static ngx_int_t
ngx_http_veto_sandbox_quota_refused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_quota_result_t *qr)
{
    u_char      *p, *detail, *secs;
    time_t       wait;
    const char  *scope, *whose;

    wait = ngx_max(qr->retry_after, 1);
    scope = (qr->code == NGX_HTTP_VSB_QR_TENANT_LIMIT) ? "tenant" : "agent";
    whose = (qr->code == NGX_HTTP_VSB_QR_TENANT_LIMIT) ? "the tenant's"
                                                       : "this agent's";

    detail = ngx_pnalloc(r->pool, 256);
    secs = ngx_pnalloc(r->pool, NGX_TIME_T_LEN + 1);
    if (detail == NULL || secs == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->op->quota == NGX_HTTP_VSB_QUOTA_SANDBOXES) {
        p = ngx_snprintf(detail, 255,
                         "%s concurrent sandboxes are at the quota: delete "
                         "one that is no longer needed (DELETE "
                         "/v1/sandboxes/{id}) and a create succeeds at once; "
                         "otherwise the oldest ends with its TTL in %T s",
                         whose, wait);
        *p = '\0';

        return ngx_http_veto_sandbox_refuse(r, ctx,
                               NGX_HTTP_VSB_TOO_MANY_REQUESTS,
                               "quota_exceeded", (char *) detail,
                               json_pack("{s:s, s:s, s:I}",
                                         "quota", "concurrent_sandboxes",
                                         "scope", scope,
                                         "oldest_expires_in",
                                         (json_int_t) wait));
    }

    ngx_sprintf(secs, "%T%Z", wait);

    if (ngx_http_veto_sandbox_header(r, "Retry-After", (char *) secs)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = ngx_snprintf(detail, 255, "%s execs per minute are at the quota: "
                     "retry in %T s", whose, wait);
    *p = '\0';

    return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_VSB_TOO_MANY_REQUESTS,
                               "quota_exceeded", (char *) detail,
                               json_pack("{s:s, s:s, s:I}",
                                         "quota", "execs_per_minute",
                                         "scope", scope,
                                         "retry_after", (json_int_t) wait));
}


/*
 * NGX_DECLINED: no approval needed; NGX_OK: a command is in flight;
 * else the response code (refused or failed here).
 */
static ngx_int_t
ngx_http_veto_sandbox_approval_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                                 md[32], hex[65], *id;
    u_char                                 line[sizeof("sandbox-env ")
                                                + NGX_HTTP_VSB_HASH_HEX_LEN];
    off_t                                  size;
    json_t                                *v, *argv, *env, *view;
    ngx_int_t                              rc;
    ngx_str_t                              sha, in, context;
    ngx_uint_t                             act, file, dropped;
    const char                            *profile, *network;
    ngx_http_veto_sandbox_main_conf_t     *vmcf;
    ngx_http_veto_sandbox_srv_conf_t      *vscf;
    ngx_http_veto_sandbox_redis_call_t     call;
    ngx_http_veto_sandbox_summary_in_t     sum;
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

    /* hosts beyond the policy's allowlist, a lifetime beyond its
     * ceiling (within the askable one) always need a human */
    if (ctx->net_ask == NULL && !ctx->limit_ask
        && !ngx_http_veto_sandbox_policy_approval(ctx->rule, act, argv,
                                                  profile, network, env))
    {
        return NGX_DECLINED;
    }

    ctx->needs_approval = 1;

    ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                       ngx_http_veto_sandbox_gate_reply);

    /* an exec runs with its sandbox's env too: read it first, the human
     * sees it and the approval binds it */
    if (ngx_http_vsb_binds_sandbox(ctx->op) && !ctx->sbx_known) {
        ctx->step = NGX_HTTP_VSB_STEP_SANDBOX;

        rc = ngx_http_veto_sandbox_quota_owner(&call, &ctx->tenant,
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
     * the request the op was asked as: a tools/call's REST twin), and
     * what the sandbox adds */
    if (ngx_http_veto_sandbox_hash_body(ctx->in.body, md, &size,
                                        r->connection->log)
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

        rc = ngx_http_veto_sandbox_approval_consume(&call, &ctx->approval,
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

    /* the env that will apply: the sandbox's under the request's */
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

    /* the hosts granted (a create's allowlist, a PATCH's) */
    sum.hosts = ctx->net_hosts;
    sum.hosts_ask = ctx->net_ask;
    sum.irreversible = ngx_http_veto_sandbox_policy_irreversible(ctx->rule,
                                                       act, argv, network);

    rc = ngx_http_veto_sandbox_summary(r->pool, &sum, &ctx->summary);

    json_decref(view);

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->ttl = ctx->rule->apr.ttl ? ctx->rule->apr.ttl : vscf->approval_ttl;
    ctx->threshold = ctx->rule->apr.threshold ? ctx->rule->apr.threshold
                                              : vscf->approval_threshold;

    ctx->step = NGX_HTTP_VSB_STEP_APR_CREATE;

    rc = ngx_http_veto_sandbox_approval_create(&call, &ctx->approval, &bind,
                                               &ctx->summary, ctx->ttl,
                                               ctx->threshold,
                                               vmcf->retention,
                                               vmcf->approval_max);

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
static ngx_int_t
ngx_http_veto_sandbox_sandbox_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    json_t                             *env;
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

    if (gw->type == REDIS_REPLY_STRING && gw->len > 0
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
static ngx_int_t
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


/*
 * NGX_DECLINED: no quota applies; NGX_OK: a command (or the helper's
 * ping) is in flight; else the response code (answered here).
 */
static ngx_int_t
ngx_http_veto_sandbox_quota_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                               *p;
    json_t                               *v;
    ngx_int_t                             rc;
    ngx_msec_t                            ttl;
    ngx_http_veto_sandbox_redis_call_t    call;
    ngx_http_veto_sandbox_quota_rule_t   *q;
    ngx_http_veto_sandbox_quota_owner_t   owner;
    ngx_http_veto_sandbox_quota_limits_t  lim;

    q = &ctx->rule->quota;

    ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                       ngx_http_veto_sandbox_gate_reply);

    ngx_memzero(&lim, sizeof(lim));
    lim.exec_window = 60000;

    if (ctx->op->quota == NGX_HTTP_VSB_QUOTA_SANDBOXES
        && (q->tenant_sandboxes || q->agent_sandboxes))
    {
        /* which helper run this is: sandboxes Redis counts for this
         * gateway under another run are gone (the helper restarted) */
        if (!ctx->epoch_known) {
            ctx->step = NGX_HTTP_VSB_STEP_EPOCH;

            return ngx_http_veto_sandbox_epoch(r, ctx,
                                           ngx_http_veto_sandbox_epoch_known);
        }

        lim.tenant_sandboxes = q->tenant_sandboxes;
        lim.agent_sandboxes = q->agent_sandboxes;

        /* the helper names the sandbox; hold a provisional slot until
         * it does (after() swaps it for the real id) */
        p = ngx_pnalloc(r->pool, sizeof("new-") - 1 + ctx->request_id.len);
        if (p == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ctx->slot.data = p;
        ctx->slot.len = ngx_sprintf(p, "new-%V", &ctx->request_id) - p;

        v = json_object_get(ctx->req, "ttl_s");
        ttl = json_is_integer(v) ? (ngx_msec_t) json_integer_value(v) * 1000
                                 : 86400000;

        ngx_memzero(&owner, sizeof(owner));
        owner.gateway = ngx_http_veto_sandbox_gate_mcf(r)->host;
        owner.epoch = ctx->epoch;

        rc = ngx_http_veto_sandbox_quota_acquire(&call, &ctx->tenant,
                                                 &ctx->agent, &ctx->slot,
                                                 &lim, ttl, &owner);

    } else if (ctx->op->quota == NGX_HTTP_VSB_QUOTA_EXECS
               && (q->tenant_execs || q->agent_execs))
    {
        lim.tenant_execs = q->tenant_execs;
        lim.agent_execs = q->agent_execs;

        rc = ngx_http_veto_sandbox_quota_exec(&call, &ctx->tenant,
                                              &ctx->agent, &ctx->request_id,
                                              &lim);

    } else {
        return NGX_DECLINED;
    }

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    return ngx_http_veto_sandbox_redis_problem(r, ctx,
                                      rc == NGX_DECLINED ? NGX_ERROR : rc);
}


/* The epoch is known: the quota step again. */
static ngx_int_t
ngx_http_veto_sandbox_epoch_known(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->step = NGX_HTTP_VSB_STEP_QUOTA;

    return ngx_http_veto_sandbox_run(r, ctx);
}


/* A refusal decided here: on record, then answered. */
static ngx_int_t
ngx_http_veto_sandbox_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t status, const char *code,
    const char *detail, json_t *extra)
{
    ngx_http_veto_sandbox_audit(r, ctx, "denied", code, NULL, NULL, status);
    ngx_http_veto_sandbox_release_slot(r, ctx);

    ctx->decision.len = sizeof("deny:") - 1 + ngx_strlen(code);
    ctx->decision.data = ngx_pnalloc(r->pool, ctx->decision.len);
    if (ctx->decision.data == NULL) {
        ctx->decision.len = 0;
        json_decref(extra);
        return NGX_ERROR;
    }

    ngx_sprintf(ctx->decision.data, "deny:%s", code);

    return ngx_http_veto_sandbox_problem(r, status, code, detail, extra);
}


/* Redis could not decide: refuse, never allow. */
ngx_int_t
ngx_http_veto_sandbox_redis_problem(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc)
{
    if (rc == NGX_HTTP_INTERNAL_SERVER_ERROR) {
        return rc;
    }

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "veto_sandbox: redis could not decide \"%V\" (%s), "
                  "refused", &ctx->action,
                  rc == NGX_HTTP_GATEWAY_TIME_OUT ? "timed out"
                  : rc == NGX_HTTP_SERVICE_UNAVAILABLE ? "unavailable"
                  : "unexpected reply");

    ngx_str_set(&ctx->decision, "deny:redis_unavailable");

    /* best effort: with Redis out the slot frees itself at its expiry;
     * problem() adds Retry-After to every 503 */
    ngx_http_veto_sandbox_release_slot(r, ctx);

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                         "redis_unavailable",
                                         "the decision store is unreachable; "
                                         "nothing was allowed", NULL);
}
