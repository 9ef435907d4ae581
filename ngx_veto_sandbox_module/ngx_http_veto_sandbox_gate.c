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
 * through _record.c; the approval step is _gate_approval.c.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_quota.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_notify.h"
#include "ngx_http_veto_sandbox_summary.h"
#include "ngx_http_veto_sandbox_revoke.h"


static ngx_int_t ngx_http_veto_sandbox_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_gate_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_quota_refused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_quota_result_t *qr);
static ngx_int_t ngx_http_veto_sandbox_quota_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_bindings_known(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_epoch_known(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_gate_reply(ngx_int_t rc, redisReply *reply,
    void *data);


/*
 * Runs the gate, then next().  NGX_DONE: the request waits for Redis (or
 * next() took it over); anything else is the response code to finalize.
 */
ngx_int_t
ngx_http_veto_sandbox_gate(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next)
{
    ngx_int_t  rc;

    ctx->next = next;

    ctx->action = ctx->op->name;

    /* a request another gateway host decided and forwarded here: its
     * credential instead of the gate (checked before anything else, with
     * or without Redis: never trusted unchecked) */
    rc = ngx_http_veto_sandbox_peer_receive(r, ctx);

    if (rc != NGX_DECLINED && rc != NGX_AGAIN) {
        return rc;          /* answered (a refusal sent is NGX_OK) */
    }

    if (ngx_http_veto_sandbox_rds == NULL) {
        return next(r, ctx);
    }

    if (ngx_http_veto_sandbox_request_id(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ctx->step = NGX_HTTP_VSB_STEP_REVOKE;
    }

    return ngx_http_veto_sandbox_run(r, ctx);
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
            /* a request attaching secrets: what the helper binds them to,
             * for the human who may be asked (one ping a minute; not
             * for a request another host runs: its helper is not this
             * one, which it needs not reach) */
            if (ctx->cred_names != NULL && !ctx->epoch_known
                && !ctx->peer_route
                && !ngx_http_veto_sandbox_heard_fresh())
            {
                ctx->step = NGX_HTTP_VSB_STEP_EPOCH;

                rc = ngx_http_veto_sandbox_epoch(r, ctx,
                                      ngx_http_veto_sandbox_bindings_known);
                if (rc != NGX_OK) {
                    return rc;      /* answered */
                }

                break;
            }

            ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                             ngx_http_veto_sandbox_gate_reply);

            rc = ngx_http_veto_sandbox_approval_step(r, ctx, &call);
            if (rc == NGX_DECLINED) {
                ctx->step = NGX_HTTP_VSB_STEP_NEXT;
                continue;
            }

            /* a refusal sent answers NGX_OK too: no command in flight */
            if (rc != NGX_OK || ctx->rcmd == NULL) {
                return rc;          /* answered */
            }

            rc = NGX_OK;
            break;

        case NGX_HTTP_VSB_STEP_PEER:
            ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                             ngx_http_veto_sandbox_gate_reply);

            rc = ngx_http_veto_sandbox_peer_nonce(r, ctx, &call);
            break;

        case NGX_HTTP_VSB_STEP_WHERE:
        case NGX_HTTP_VSB_STEP_LEASE:
        case NGX_HTTP_VSB_STEP_PLACE:
        case NGX_HTTP_VSB_STEP_SNAP:
            ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                             ngx_http_veto_sandbox_gate_reply);

            rc = ngx_http_veto_sandbox_where_step(r, ctx, &call);
            if (rc == NGX_DECLINED) {
                ctx->step = NGX_HTTP_VSB_STEP_QUOTA;
                continue;
            }

            if (rc == NGX_HTTP_INTERNAL_SERVER_ERROR) {
                return rc;
            }

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
            if (ctx->peer_route) {
                /* decided here, run by the host that holds the sandbox */
                return ngx_http_veto_sandbox_peer_forward(r, ctx);
            }

            return ctx->next(r, ctx);
        }

        if (rc == NGX_OK) {
            return NGX_DONE;        /* the reply resumes */
        }

        return ngx_http_veto_sandbox_redis_problem(r, ctx, rc);
    }
}


/* The reply to every step's command: the step reads it, then the next. */
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
    const char                             *why;
    ngx_http_veto_sandbox_quota_result_t    qr;
    ngx_http_veto_sandbox_approval_result_t ar;

    switch (ctx->step) {

    case NGX_HTTP_VSB_STEP_REVOKE:
        rc = ngx_http_veto_sandbox_revoke_result(reply, ctx->iat, &why);

        if (rc == NGX_OK) {
            /* where the sandbox is, before anything is counted */
            ctx->step = NGX_HTTP_VSB_STEP_WHERE;
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

    case NGX_HTTP_VSB_STEP_WHERE:
    case NGX_HTTP_VSB_STEP_LEASE:
    case NGX_HTTP_VSB_STEP_PLACE:
    case NGX_HTTP_VSB_STEP_SNAP:
        return ngx_http_veto_sandbox_where_result(r, ctx, reply);

    case NGX_HTTP_VSB_STEP_PEER:
        return ngx_http_veto_sandbox_peer_nonce_result(r, ctx, reply);

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

        if (ar.code == NGX_HTTP_VSB_AR_AGENT_FULL) {
            return ngx_http_veto_sandbox_refuse(r, ctx,
                                   NGX_HTTP_VSB_TOO_MANY_REQUESTS,
                                   "agent_approvals_full",
                                   "this agent holds as many open (pending) "
                                   "approval requests as it may (policy "
                                   "approvals.max_open_per_agent, \"limit\"): "
                                   "wait until a reviewer decides some or "
                                   "they expire; other agents of the tenant "
                                   "are not held back",
                                   json_pack("{s:I}", "limit",
                                             (json_int_t) (ar.detail.len
                                             ? ngx_atoi(ar.detail.data,
                                                        ar.detail.len)
                                             : 0)));
        }

        if (ar.code != NGX_HTTP_VSB_AR_OK) {
            return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
        }

        ngx_http_veto_sandbox_audit(r, ctx, "approval_requested", NULL, NULL,
                                    &ctx->summary_record, NGX_HTTP_ACCEPTED);

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
            return ngx_http_veto_sandbox_gate_not_approved(r, ctx, &ar);

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


/* The credential bindings are heard: the approval step again. */
static ngx_int_t
ngx_http_veto_sandbox_bindings_known(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->step = NGX_HTTP_VSB_STEP_APPROVAL;

    return ngx_http_veto_sandbox_run(r, ctx);
}


/* The epoch is known: the quota step again. */
static ngx_int_t
ngx_http_veto_sandbox_epoch_known(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->step = NGX_HTTP_VSB_STEP_QUOTA;

    return ngx_http_veto_sandbox_run(r, ctx);
}


