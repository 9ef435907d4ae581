/*
 * The Redis gate between policy and the helper: token revocation, quotas,
 * human approval (in this order, so that a 429 never burns an approval),
 * and the audit records of what was decided.
 *
 * Each step is one Redis command issued on the worker's shared async
 * connection; the request waits (NGX_DONE, its count already held by the
 * API handler) and resumes from the reply.  Anything but an expected
 * reply refuses with 503: fail closed.  A request in flight when its
 * pool goes away cancels its command from a pool cleanup, so a late
 * reply never touches a freed request.  Without veto_sandbox_redis the
 * gate is open: "nginx -t" refuses a policy with approvals or quotas in
 * that case.
 */

#include "ngx_http_veto_sandbox_module.h"
#include "ngx_http_veto_sandbox_quota.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_audit.h"
#include "ngx_http_veto_sandbox_redact.h"
#include "ngx_http_veto_sandbox_revoke.h"

#include <openssl/evp.h>


enum {
    NGX_HTTP_VSB_STEP_REVOKE = 1,
    NGX_HTTP_VSB_STEP_APPROVAL,
    NGX_HTTP_VSB_STEP_APR_CREATE,
    NGX_HTTP_VSB_STEP_APR_CONSUME,
    NGX_HTTP_VSB_STEP_QUOTA,
    NGX_HTTP_VSB_STEP_NEXT,
    NGX_HTTP_VSB_STEP_AFTER          /* after() ran */
};


static ngx_int_t ngx_http_veto_sandbox_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_gate_reply(ngx_int_t rc,
    redisReply *reply, void *data);
static ngx_int_t ngx_http_veto_sandbox_gate_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_approval_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_quota_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_approval_202(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t status, const char *code,
    const char *detail, json_t *extra);
static void ngx_http_veto_sandbox_cancel_cleanup(void *data);
static void ngx_http_veto_sandbox_ignore(ngx_int_t rc, redisReply *reply,
    void *data);
static void ngx_http_veto_sandbox_release_slot(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


static ngx_http_veto_sandbox_main_conf_t *
ngx_http_veto_sandbox_mcf(ngx_http_request_t *r)
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
    call->timeout = ngx_http_veto_sandbox_mcf(r)->timeout;
    call->handler = handler;
    call->data = r;
    call->cmdp = &ctx->rcmd;
}


/* Bookkeeping nobody waits for: a failure is logged, naming what. */
static void
ngx_http_veto_sandbox_bookkeeping_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_redis_call_t *call, const char *what)
{
    call->rds = ngx_http_veto_sandbox_rds;
    call->pool = r->pool;
    call->timeout = ngx_http_veto_sandbox_mcf(r)->timeout;
    call->handler = ngx_http_veto_sandbox_ignore;
    call->data = (void *) what;
    call->cmdp = NULL;
}


static ngx_uint_t
ngx_http_veto_sandbox_act(ngx_uint_t op, ngx_str_t *name)
{
    switch (op) {
    case NGX_HTTP_VSB_OP_CREATE:
        ngx_str_set(name, "sandbox.create");
        return NGX_HTTP_VSB_ACT_CREATE;
    case NGX_HTTP_VSB_OP_EXEC:
        ngx_str_set(name, "sandbox.exec");
        return NGX_HTTP_VSB_ACT_EXEC;
    case NGX_HTTP_VSB_OP_WRITE:
        ngx_str_set(name, "sandbox.files.write");
        return NGX_HTTP_VSB_ACT_WRITE;
    case NGX_HTTP_VSB_OP_READ:
        ngx_str_set(name, "sandbox.files.read");
        return NGX_HTTP_VSB_ACT_READ;
    case NGX_HTTP_VSB_OP_DELETE:
        ngx_str_set(name, "sandbox.delete");
        return NGX_HTTP_VSB_ACT_DELETE;
    case NGX_HTTP_VSB_OP_LIST:
        ngx_str_set(name, "sandbox.list");
        return 0;
    case NGX_HTTP_VSB_OP_GET:
        ngx_str_set(name, "sandbox.get");
        return 0;
    case NGX_HTTP_VSB_OP_APR_LIST:
        ngx_str_set(name, "approval.list");
        return 0;
    case NGX_HTTP_VSB_OP_APR_GET:
        ngx_str_set(name, "approval.get");
        return 0;
    case NGX_HTTP_VSB_OP_APR_APPROVE:
        ngx_str_set(name, "approval.approve");
        return 0;
    case NGX_HTTP_VSB_OP_APR_DENY:
        ngx_str_set(name, "approval.deny");
        return 0;
    case NGX_HTTP_VSB_OP_AUDIT:
        ngx_str_set(name, "audit.read");
        return 0;
    default:
        /* refused before it was routed */
        ngx_str_set(name, "request");
        return 0;
    }
}


/* unique across workers and gateways sharing one Redis */
static ngx_int_t
ngx_http_veto_sandbox_request_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char  *p;

    if (ctx->request_id.len) {
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN * 4 + 4);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ctx->request_id.data = p;
    ctx->request_id.len = ngx_sprintf(p, "%P-%M-%uA-%ui", ngx_pid,
                                      ngx_current_msec,
                                      r->connection->number,
                                      r->connection->requests)
                          - p;

    return NGX_OK;
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

    ngx_http_veto_sandbox_act(ctx->op, &ctx->action);

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
    u_char                                  buf[NGX_INT64_LEN + 1];
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

    case NGX_HTTP_VSB_STEP_APR_CREATE:
        ngx_http_veto_sandbox_approval_result(reply, &ar);

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
            if (ctx->op == NGX_HTTP_VSB_OP_CREATE) {
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

        ngx_sprintf(buf, "%T%Z", qr.retry_after > 0 ? qr.retry_after : 1);

        if (ngx_http_veto_sandbox_header(r, "Retry-After", (char *) buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        why = qr.code == NGX_HTTP_VSB_QR_TENANT_LIMIT ? "tenant"
                                                               : "agent";

        return ngx_http_veto_sandbox_refuse(r, ctx,
                               NGX_HTTP_VSB_TOO_MANY_REQUESTS,
                               "quota_exceeded",
                               ctx->op == NGX_HTTP_VSB_OP_CREATE
                               ? "too many concurrent sandboxes"
                               : "too many execs per minute",
                               json_pack("{s:s, s:s, s:I}", "quota",
                                         ctx->op == NGX_HTTP_VSB_OP_CREATE
                                         ? "concurrent_sandboxes"
                                         : "execs_per_minute",
                                         "scope", why, "retry_after",
                                         (json_int_t) ngx_max(qr.retry_after,
                                                              1)));

    default:
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }
}


static ngx_table_elt_t *
ngx_http_veto_sandbox_find_header(ngx_http_request_t *r, const char *name)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    len = ngx_strlen(name);
    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i];
        }
    }
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
    off_t                                  size;
    json_t                                *v;
    ngx_int_t                              rc;
    ngx_str_t                              sha, in, *path;
    ngx_uint_t                             act;
    const char                            *profile, *network;
    ngx_table_elt_t                       *h;
    ngx_http_veto_sandbox_main_conf_t     *vmcf;
    ngx_http_veto_sandbox_srv_conf_t      *vscf;
    ngx_http_veto_sandbox_redis_call_t     call;
    ngx_http_veto_sandbox_approval_bind_t  bind;

    act = ngx_http_veto_sandbox_act(ctx->op, &ctx->action);

    if (act == 0 || ctx->req == NULL) {
        return NGX_DECLINED;
    }

    v = json_object_get(ctx->req, "profile");
    profile = json_is_string(v) ? json_string_value(v) : NULL;

    if (profile == NULL && act == NGX_HTTP_VSB_ACT_CREATE) {
        profile = "default";
    }

    v = json_object_get(ctx->req, "network");
    network = json_is_string(v) ? json_string_value(v) : NULL;

    if (!ngx_http_veto_sandbox_policy_approval(ctx->rule, act,
                                               json_object_get(ctx->req,
                                                               "argv"),
                                               profile, network))
    {
        return NGX_DECLINED;
    }

    ctx->needs_approval = 1;

    vmcf = ngx_http_veto_sandbox_mcf(r);
    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    /* the canonical request: method, path, query, body by digest */
    if (ngx_http_veto_sandbox_hash_body(r->request_body
                                            ? r->request_body->bufs : NULL,
                                            md, &size, r->connection->log)
        != NGX_OK
        || ngx_http_veto_sandbox_hash_request(r->pool, &r->method_name,
                                               &r->uri, &r->args, md, size,
                                               ctx->hash)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                       ngx_http_veto_sandbox_gate_reply);

    bind.tenant = ctx->tenant;
    bind.agent = ctx->agent;
    bind.action = ctx->action;
    ngx_memcpy(bind.hash, ctx->hash, sizeof(bind.hash));

    h = ngx_http_veto_sandbox_find_header(r, "Veto-Approval");

    if (h != NULL) {
        ctx->approval = h->value;

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

    path = NULL;
    sha.len = 0;

    if (ctx->op == NGX_HTTP_VSB_OP_WRITE || ctx->op == NGX_HTTP_VSB_OP_READ) {
        path = &ctx->path;
    }

    if (ctx->op == NGX_HTTP_VSB_OP_WRITE) {
        ngx_hex_dump(hex, md, 32);
        sha.data = hex;
        sha.len = 64;
    }

    /* an exec's stdin: one buffer in memory (see _api.c) */
    in.len = 0;

    if (ctx->op == NGX_HTTP_VSB_OP_EXEC && ctx->payload) {
        in.data = ctx->payload->buf->pos;
        in.len = ctx->payload->buf->last - ctx->payload->buf->pos;
    }

    if (ngx_http_veto_sandbox_summary(r->pool, &ctx->action, ctx->req,
                                   &in, path,
                                   ctx->op == NGX_HTTP_VSB_OP_WRITE ? size
                                                                    : -1,
                                   sha.len ? &sha : NULL, &ctx->summary)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->ttl = ctx->rule->apr.ttl ? ctx->rule->apr.ttl : vscf->approval_ttl;
    ctx->threshold = ctx->rule->apr.threshold ? ctx->rule->apr.threshold
                                              : vscf->approval_threshold;

    ctx->step = NGX_HTTP_VSB_STEP_APR_CREATE;

    rc = ngx_http_veto_sandbox_approval_create(&call, &ctx->approval, &bind,
                                               &ctx->summary, ctx->ttl,
                                               ctx->threshold,
                                               vmcf->retention);

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


/* 202: the approval's id, where to follow it, and what it covers. */
static ngx_int_t
ngx_http_veto_sandbox_approval_202(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    u_char       *loc;
    json_t       *body, *summary;
    long long     expires;

    loc = ngx_pnalloc(r->pool, sizeof("/v1/approvals/") + ctx->approval.len);
    if (loc == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(loc, "/v1/approvals/%V%Z", &ctx->approval);

    if (ngx_http_veto_sandbox_header(r, "Location", (char *) loc) != NGX_OK) {
        return NGX_ERROR;
    }

    expires = 0;

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 5
        && reply->element[4]->type == REDIS_REPLY_STRING)
    {
        expires = strtoll(reply->element[4]->str, NULL, 10);
    }

    summary = json_loadb((char *) ctx->summary.data, ctx->summary.len, 0,
                         NULL);

    body = json_pack("{s:s%, s:s, s:s%, s:s%, s:o, s:I, s:I, s:s%, s:s}",
                     "approval_id", ctx->approval.data, ctx->approval.len,
                     "state", "pending",
                     "action", ctx->action.data, ctx->action.len,
                     "request_hash", ctx->hash,
                     (size_t) NGX_HTTP_VSB_HASH_HEX_LEN,
                     "summary", summary ? summary : json_object(),
                     "threshold", (json_int_t) ctx->threshold,
                     "expires_at", (json_int_t) (expires / 1000),
                     "location", loc, ngx_strlen(loc),
                     "detail", "a human must approve this request; repeat "
                     "it unchanged with the header Veto-Approval: <id> "
                     "once approved");

    ngx_str_set(&ctx->decision, "approval_required");

    /* nothing is created until the repeat: give the quota slot back */
    ngx_http_veto_sandbox_release_slot(r, ctx);

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_ACCEPTED, body);
}


/*
 * NGX_DECLINED: no quota applies; NGX_OK: a command is in flight; else
 * the response code.
 */
static ngx_int_t
ngx_http_veto_sandbox_quota_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                               *p;
    json_t                               *v;
    ngx_int_t                             rc;
    ngx_msec_t                            ttl;
    ngx_str_t                             gw;
    ngx_http_veto_sandbox_redis_call_t    call;
    ngx_http_veto_sandbox_quota_rule_t   *q;
    ngx_http_veto_sandbox_quota_limits_t  lim;

    q = &ctx->rule->quota;

    ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                       ngx_http_veto_sandbox_gate_reply);

    ngx_memzero(&lim, sizeof(lim));
    lim.exec_window = 60000;

    if (ctx->op == NGX_HTTP_VSB_OP_CREATE
        && (q->tenant_sandboxes || q->agent_sandboxes))
    {
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

        gw = ngx_cycle->hostname;

        rc = ngx_http_veto_sandbox_quota_acquire(&call, &ctx->tenant,
                                                 &ctx->agent, &ctx->slot,
                                                 &lim, ttl, &gw);

    } else if (ctx->op == NGX_HTTP_VSB_OP_EXEC
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

    if (rc == NGX_DECLINED) {
        return NGX_ERROR;
    }

    return rc;
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


static void
ngx_http_veto_sandbox_ignore(ngx_int_t rc, redisReply *reply, void *data)
{
    if (rc != NGX_OK || reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: redis bookkeeping (%s) failed",
                      (char *) data);
    }
}


static void
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

    if (ngx_http_veto_sandbox_rds == NULL || ctx->tenant.len == 0) {
        return;
    }

    vmcf = ngx_http_veto_sandbox_mcf(r);

    if (ctx->action.len == 0) {
        ngx_http_veto_sandbox_act(ctx->op, &ctx->action);
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

    (void) ngx_http_veto_sandbox_audit_append(&call, vmcf->audit_maxlen, &rec);
}


/* json as JSON text in the request's pool; out->len 0 on failure */
static void
ngx_http_veto_sandbox_json_text(ngx_http_request_t *r, json_t *json,
    ngx_str_t *out)
{
    char  *s;

    out->len = 0;

    s = json_dumps(json, JSON_COMPACT);
    if (s == NULL) {
        return;
    }

    out->len = ngx_strlen(s);
    out->data = ngx_pnalloc(r->pool, out->len);

    if (out->data == NULL) {
        out->len = 0;
    } else {
        ngx_memcpy(out->data, s, out->len);
    }

    free(s);
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
    ngx_str_t   detail;

    if (ctx->audited || ctx->tenant.len == 0
        || ngx_http_veto_sandbox_rds == NULL)
    {
        return;
    }

    /* what was asked, and why not; a path that is not UTF-8 is left out */
    d = json_pack("{s:s%, s:s%, s:s?}",
                  "method", r->method_name.data, r->method_name.len,
                  "path", r->uri.data, r->uri.len,
                  "why", ctx->reason);
    if (d == NULL) {
        d = json_pack("{s:s%, s:s?}",
                      "method", r->method_name.data, r->method_name.len,
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


/*
 * The execution record: what ran (the redacted request summary: argv,
 * cwd, env names, timeout, stdin size), how it ended, its usage, and the
 * size and SHA-256 of each output stream as returned to the agent.
 */
static void
ngx_http_veto_sandbox_exec_detail(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *j, ngx_str_t *out)
{
    json_t                          *d, *req;
    ngx_str_t                        in, summary;
    json_int_t                       olen, elen;
    ngx_http_veto_sandbox_helper_t  *h;

    out->len = 0;
    h = &ctx->helper;

    in.len = 0;

    if (ctx->payload) {
        in.data = ctx->payload->buf->pos;
        in.len = ctx->payload->buf->last - ctx->payload->buf->pos;
    }

    req = NULL;

    if (ngx_http_veto_sandbox_summary(r->pool, &ctx->action, ctx->req,
                                            &in, NULL, -1, NULL, &summary)
        == NGX_OK)
    {
        req = json_loadb((char *) summary.data, summary.len, 0, NULL);
    }

    d = json_pack("{s:o?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}",
                  "request", req,
                  "exit_code", json_object_get(j, "exit_code"),
                  "signal", json_object_get(j, "signal"),
                  "timed_out", json_object_get(j, "timed_out"),
                  "oom_killed", json_object_get(j, "oom_killed"),
                  "stdout_truncated", json_object_get(j, "stdout_truncated"),
                  "stderr_truncated", json_object_get(j, "stderr_truncated"),
                  "usage", json_object_get(j, "usage"));
    if (d == NULL) {
        return;
    }

    olen = json_integer_value(json_object_get(j, "stdout_len"));
    elen = json_integer_value(json_object_get(j, "stderr_len"));

    /* only what the reply check in _api.c accepts is described */
    if (olen >= 0 && elen >= 0 && (size_t) olen <= h->payload_len
        && (size_t) elen == h->payload_len - (size_t) olen)
    {
        json_object_set_new(d, "stdout_bytes", json_integer(olen));
        json_object_set_new(d, "stderr_bytes", json_integer(elen));
        json_object_set_new(d, "stdout_sha256",
            ngx_http_veto_sandbox_output_sha256(h->payload, (size_t) olen));
        json_object_set_new(d, "stderr_sha256",
            ngx_http_veto_sandbox_output_sha256(h->payload + olen,
                                                (size_t) elen));
    }

    ngx_http_veto_sandbox_json_text(r, d, out);
    json_decref(d);
}


/* The creation record: what the sandbox was given */
static void
ngx_http_veto_sandbox_create_detail(ngx_http_request_t *r, json_t *j,
    ngx_str_t *out)
{
    json_t  *sb, *d;

    out->len = 0;
    sb = json_object_get(j, "sandbox");

    d = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}",
                  "profile", json_object_get(sb, "profile"),
                  "network", json_object_get(sb, "network"),
                  "limits", json_object_get(sb, "limits"),
                  "ttl_s", json_object_get(sb, "ttl_s"),
                  "expires_at", json_object_get(sb, "expires_at"));
    if (d == NULL) {
        return;
    }

    ngx_http_veto_sandbox_json_text(r, d, out);
    json_decref(d);
}


/*
 * Once the helper answered (or could not be asked): the audit record of
 * the outcome, and the quota bookkeeping (the provisional slot becomes
 * the real sandbox, or is given back; a destroyed sandbox frees its).
 */
void
ngx_http_veto_sandbox_after(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                               *j, *v;
    ngx_str_t                             sid, detail, gw;
    ngx_uint_t                            ok;
    const char                           *err;
    ngx_http_veto_sandbox_redis_call_t    call;
    ngx_http_veto_sandbox_quota_limits_t  lim;

    if (ngx_http_veto_sandbox_rds == NULL
        || ctx->step == NGX_HTTP_VSB_STEP_AFTER
        || ctx->op == NGX_HTTP_VSB_OP_HEALTH)
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
    }

    ngx_memzero(&lim, sizeof(lim));
    lim.exec_window = 60000;

    switch (ctx->op) {

    case NGX_HTTP_VSB_OP_CREATE:
        if (ok && ngx_http_veto_sandbox_created(r, ctx) == NGX_OK) {
            sid = ctx->sandbox;

            v = json_object_get(json_object_get(j, "sandbox"), "expires_at");

            gw = ngx_cycle->hostname;

            /* ownership record and the slot under the real id;
             * counted without a limit: the provisional one was */
            ngx_http_veto_sandbox_bookkeeping_call(r, &call, "ownership");

            (void) ngx_http_veto_sandbox_quota_acquire(&call, &ctx->tenant,
                       &ctx->agent, &sid, &lim,
                       json_is_integer(v)
                       && json_integer_value(v) > ngx_time()
                       ? (ngx_msec_t) (json_integer_value(v) - ngx_time())
                         * 1000
                       : 86400000,
                       &gw);

            ngx_http_veto_sandbox_create_detail(r, j, &detail);
            ngx_http_veto_sandbox_audit(r, ctx, "sandbox_created", NULL,
                                        NULL, detail.len ? &detail : NULL,
                                        NGX_HTTP_CREATED);

        } else {
            ngx_http_veto_sandbox_audit(r, ctx, "error", err, NULL, NULL, 0);
        }

        ngx_http_veto_sandbox_release_slot(r, ctx);

        break;

    case NGX_HTTP_VSB_OP_DELETE:
        if (ok) {
            ngx_http_veto_sandbox_bookkeeping_call(r, &call, "quota release");

            (void) ngx_http_veto_sandbox_quota_release(&call, &ctx->tenant,
                                                       &ctx->agent,
                                                       &ctx->sandbox);

            ngx_http_veto_sandbox_audit(r, ctx, "sandbox_destroyed", NULL,
                                        NULL, NULL, NGX_HTTP_OK);
        } else {
            ngx_http_veto_sandbox_audit(r, ctx, "error", err, NULL, NULL, 0);
        }

        break;

    case NGX_HTTP_VSB_OP_EXEC:
        if (ok) {
            ngx_http_veto_sandbox_exec_detail(r, ctx, j, &detail);
            ngx_http_veto_sandbox_audit(r, ctx, "exec_finished", NULL, NULL,
                                        detail.len ? &detail : NULL,
                                        NGX_HTTP_OK);
        } else {
            ngx_http_veto_sandbox_audit(r, ctx, "error", err, NULL, NULL, 0);
        }

        break;

    case NGX_HTTP_VSB_OP_WRITE:
    case NGX_HTTP_VSB_OP_READ:
        ngx_http_veto_sandbox_audit(r, ctx, ok ? "allowed" : "error",
                                    ok ? NULL : err, NULL, NULL,
                                    ok ? NGX_HTTP_OK : 0);
        break;

    default:
        /* reads of one's own sandboxes are not decisions on record */
        break;
    }
}
