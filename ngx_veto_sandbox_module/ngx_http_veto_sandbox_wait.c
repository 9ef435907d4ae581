/*
 * A request that waits for Redis, and what a refusal answers: the
 * plumbing every step of the pipeline shares (the gate and its steps,
 * the fence, the routing, the helper's replies, the ops answered from
 * Redis alone).
 *
 * A command the request waits for is issued on the worker's shared
 * async connection with a call made by waiting_call(); the request
 * waits (NGX_DONE, its count already held by the API handler) and its
 * handler resumes it from the reply.  A request in flight when its pool
 * goes away cancels its command from a pool cleanup (wait()), so a late
 * reply never touches a freed request.  Anything but an expected reply
 * refuses with 503: fail closed (redis_problem()).  A refusal decided
 * by a step goes on record through _record.c, then is answered
 * (refuse()).  This file calls no step back: whoever issues a command
 * names the handler its reply goes to.
 */

#include "ngx_http_veto_sandbox_pipeline.h"


static void ngx_http_veto_sandbox_cancel_cleanup(void *data);
static void ngx_http_veto_sandbox_answer_reply(ngx_int_t rc,
    redisReply *reply, void *data);


/* The module's main conf as a request's step sees it (the Redis timeout,
 * this host's name and routing). */
ngx_http_veto_sandbox_main_conf_t *
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
 * A request answered from Redis alone (an approval, the audit, a
 * revocation): without Redis there is nothing to answer (detail says
 * so).  NGX_DECLINED: call is ready for the command, whose reply
 * answer() reads; else the response code.
 */
ngx_int_t
ngx_http_veto_sandbox_answer_start(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_answer_pt answer, const char *detail)
{
    if (ngx_http_veto_sandbox_rds == NULL) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                                             "not_found", detail, NULL);
    }

    if (ngx_http_veto_sandbox_wait(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_veto_sandbox_waiting_call(r, ctx, call,
                                       ngx_http_veto_sandbox_answer_reply);
    ctx->answer = answer;

    return NGX_DECLINED;
}


/* The command of such a request went out (NGX_DONE: the reply answers),
 * or could not. */
ngx_int_t
ngx_http_veto_sandbox_answer_sent(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc)
{
    if (rc == NGX_OK) {
        return NGX_DONE;
    }

    if (rc == NGX_DECLINED) {
        /* the builders checked the values: a tenant or id that cannot be
         * a key names nothing */
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                                             "not_found", "no such resource",
                                             NULL);
    }

    return ngx_http_veto_sandbox_redis_problem(r, ctx, rc);
}


static void
ngx_http_veto_sandbox_answer_reply(ngx_int_t rc, redisReply *reply,
    void *data)
{
    ngx_http_request_t           *r = data;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    if (ngx_http_veto_sandbox_redis_replied(r, ctx, reply, &rc) == NGX_OK) {
        rc = ctx->answer(r, ctx, reply);
    }

    ngx_http_veto_sandbox_resume(r, rc);
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


/* A refusal decided by a step: on record, then answered. */
ngx_int_t
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
