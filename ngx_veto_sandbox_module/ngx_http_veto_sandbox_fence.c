/*
 * The epoch fence, with several gateway hosts.  A request for a sandbox
 * this host owns tells the helper which of its runs the ownership record
 * names ("epoch"); the helper refuses one that is not its own
 * (epoch_mismatch, with its own epoch) before it does anything.  There is
 * no cache of ownership records to drop, so the record is read once more:
 * when it now names this host and the helper's run, the request is sent
 * once more with that epoch; otherwise the answer is the truth about the
 * sandbox here: the helper's ENDED record (410) if it has one, else
 * not_found (the helper's own when it has no such sandbox, so that what
 * Redis counts for it is freed; one naming the record when the sandbox
 * is live in this run, which frees nothing).  One retry at most, never a
 * loop.
 *
 * A request routed here from another gateway host (_peer.c) is fenced
 * the same way: that host read the ownership record to route it, and
 * the epoch it found comes in the signed credential ("e"), so the helper
 * is told the run the record named when the request was decided.
 */

#include "ngx_http_veto_sandbox_pipeline.h"


static ngx_int_t ngx_http_veto_sandbox_fence_add(
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req);
static ngx_int_t ngx_http_veto_sandbox_fence_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_fence_reread(ngx_int_t rc,
    redisReply *reply, void *data);
static void ngx_http_veto_sandbox_fence_probe(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_fence_probed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_fence_answer(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *reply);


/* postconfiguration: the helper client tells the fence of each request
 * that goes out and each exchange that is over (its hooks) */
ngx_int_t
ngx_http_veto_sandbox_fence_init(ngx_conf_t *cf)
{
    ngx_http_veto_sandbox_helper_hooks.send = ngx_http_veto_sandbox_fence_add;
    ngx_http_veto_sandbox_helper_hooks.done =
                                         ngx_http_veto_sandbox_fence_check;

    return NGX_OK;
}


/* a JSON value of ours, freed with the request's pool */
static ngx_int_t
ngx_http_veto_sandbox_fence_keep(ngx_pool_t *pool, json_t *j)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        json_decref(j);
        return NGX_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = j;

    return NGX_OK;
}


/* VSB_EPOCH_LEN lowercase hex digits */
static ngx_uint_t
ngx_http_veto_sandbox_fence_epoch_ok(const char *s, size_t len)
{
    return len == VSB_EPOCH_LEN
           && ngx_http_veto_sandbox_hex_lower((const u_char *) s, len);
}


/* to = a copy of s in the request's pool (the Redis and JSON strings the
 * fence and the owner step keep) */
ngx_int_t
ngx_http_veto_sandbox_fence_copy(ngx_http_request_t *r, ngx_str_t *to,
    const char *s, size_t len)
{
    to->data = ngx_pnalloc(r->pool, len);
    if (to->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(to->data, s, len);
    to->len = len;

    return NGX_OK;
}


/* to = s when s is a helper epoch (else to stays empty: not fenced) */
ngx_int_t
ngx_http_veto_sandbox_fence_epoch(ngx_http_request_t *r, ngx_str_t *to,
    const char *s, size_t len)
{
    if (!ngx_http_veto_sandbox_fence_epoch_ok(s, len)) {
        return NGX_OK;
    }

    return ngx_http_veto_sandbox_fence_copy(r, to, s, len);
}


/* The WHERE step's {agent, gateway, epoch}: the epoch to send when the
 * record is the agent's own and names this host. */
ngx_int_t
ngx_http_veto_sandbox_fence_set(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    redisReply  *agent, *gw, *epoch;
    ngx_str_t   *host;

    agent = reply->element[0];
    gw = reply->element[1];
    epoch = reply->element[2];
    host = &ngx_http_veto_sandbox_gate_mcf(r)->host;

    if (agent->type != REDIS_REPLY_STRING || gw->type != REDIS_REPLY_STRING
        || epoch->type != REDIS_REPLY_STRING
        || (size_t) agent->len != ctx->agent.len
        || ngx_strncmp(agent->str, ctx->agent.data, ctx->agent.len) != 0
        || (size_t) gw->len != host->len
        || ngx_strncmp(gw->str, host->data, host->len) != 0
        || !ngx_http_veto_sandbox_fence_epoch_ok(epoch->str, epoch->len))
    {
        return NGX_OK;
    }

    return ngx_http_veto_sandbox_fence_copy(r, &ctx->own_epoch, epoch->str,
                                            epoch->len);
}


/* Before a helper request goes out: the epoch, on a request naming the
 * request's own sandbox (not on the probe, which asks without one). */
static ngx_int_t
ngx_http_veto_sandbox_fence_add(ngx_http_veto_sandbox_ctx_t *ctx,
    json_t *req)
{
    json_t  *id;

    if (ctx->own_epoch.len == 0 || ctx->fence_probe) {
        return NGX_OK;
    }

    id = json_object_get(req, "id");

    if (!json_is_string(id) || json_string_length(id) != ctx->sandbox.len
        || ngx_strncmp(json_string_value(id), ctx->sandbox.data,
                       ctx->sandbox.len) != 0)
    {
        return NGX_OK;
    }

    if (json_object_set_new(req, "epoch",
                            ngx_http_veto_sandbox_json_ngx_str(&ctx->own_epoch))
        != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A helper reply is in: NGX_DECLINED when it is for the op's handler;
 * NGX_OK when it was an epoch_mismatch the fence took over (the handler
 * is called later, once).
 */
static ngx_int_t
ngx_http_veto_sandbox_fence_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                              *err, *ep;
    ngx_str_t                            key;
    ngx_http_veto_sandbox_helper_t      *h;
    ngx_http_veto_sandbox_redis_call_t   call;

    static const char *const  fields[] = { "gateway", "epoch", NULL };

    h = &ctx->helper;

    if (h->status != NGX_OK || ctx->own_epoch.len == 0 || ctx->fence_tried
        || json_is_true(json_object_get(h->json, "ok")))
    {
        return NGX_DECLINED;
    }

    err = json_object_get(h->json, "error");
    ep = json_object_get(h->json, "epoch");

    if (!json_is_string(err)
        || ngx_strcmp(json_string_value(err), VSB_E_EPOCH_MISMATCH) != 0
        || !json_is_string(ep)
        || !ngx_http_veto_sandbox_fence_epoch_ok(json_string_value(ep),
                                                 json_string_length(ep)))
    {
        return NGX_DECLINED;
    }

    ctx->fence_tried = 1;

    if (ngx_http_veto_sandbox_fence_copy(r, &ctx->helper_epoch,
                                         json_string_value(ep),
                                         json_string_length(ep))
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "veto_sandbox: sandbox \"%V\": the ownership record's "
                  "epoch %V is not the helper's %V; reading it again",
                  &ctx->sandbox, &ctx->own_epoch, &ctx->helper_epoch);

    if (ngx_http_veto_sandbox_rds == NULL
        || ngx_http_veto_sandbox_wait(r, ctx) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(r->pool, &key, "sbx:own",
                                            &ctx->tenant, &ctx->sandbox)
           != NGX_OK)
    {
        ngx_http_veto_sandbox_fence_probe(r, ctx);
        return NGX_OK;
    }

    ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                       ngx_http_veto_sandbox_fence_reread);

    if (ngx_http_veto_sandbox_redis_hmget(&call, &key, fields) != NGX_OK)
    {
        /* Redis cannot say: what the helper has is still the truth */
        ngx_http_veto_sandbox_fence_probe(r, ctx);
    }

    return NGX_OK;
}


/* The record read again: the same request once more when it now names
 * this host and the helper's run; else the truth from the helper. */
static void
ngx_http_veto_sandbox_fence_reread(ngx_int_t rc, redisReply *reply,
    void *data)
{
    ngx_http_request_t              *r = data;
    redisReply                      *gw, *ep;
    ngx_str_t                       *host;
    ngx_http_veto_sandbox_ctx_t     *ctx;
    ngx_http_veto_sandbox_helper_t  *h;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    ctx->rcmd = NULL;
    h = &ctx->helper;
    host = &ngx_http_veto_sandbox_gate_mcf(r)->host;

    if (rc != NGX_OK || reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[1]->type != REDIS_REPLY_STRING)
    {
        ngx_http_veto_sandbox_fence_probe(r, ctx);
        return;
    }

    gw = reply->element[0];
    ep = reply->element[1];

    if ((size_t) gw->len != host->len
        || ngx_strncmp(gw->str, host->data, host->len) != 0
        || (size_t) ep->len != ctx->helper_epoch.len
        || ngx_strncmp(ep->str, ctx->helper_epoch.data,
                       ctx->helper_epoch.len) != 0
        || h->sent_req == NULL || h->stream_payload)
    {
        ngx_http_veto_sandbox_fence_probe(r, ctx);
        return;
    }

    ctx->own_epoch = ctx->helper_epoch;
    ngx_http_veto_sandbox_helper_reset(h);

    if (ngx_http_veto_sandbox_helper_send(r, ctx, h->sent_req,
                                          h->sent_payload,
                                          h->sent_payload_len, h->handler)
        != NGX_OK)
    {
        h->status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        h->error = "the request could not be sent again";
        h->handler(r, ctx);
    }
}


/* status without an epoch: whether the helper ended that sandbox */
static void
ngx_http_veto_sandbox_fence_probe(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *req;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;
    ctx->fence_handler = h->handler;
    ctx->fence_probe = 1;
    ngx_http_veto_sandbox_helper_reset(h);

    req = json_pack("{s:s, s:o, s:o, s:o}", "op", VSB_OP_STATUS,
                    "tenant", ngx_http_veto_sandbox_json_ngx_str(&ctx->tenant),
                    "agent", ngx_http_veto_sandbox_json_ngx_str(&ctx->agent),
                    "id", ngx_http_veto_sandbox_json_ngx_str(&ctx->sandbox));

    if (req == NULL
        || ngx_http_veto_sandbox_fence_keep(r->pool, req) != NGX_OK
        || ngx_http_veto_sandbox_helper_send(r, ctx, req, NULL, 0,
                                       ngx_http_veto_sandbox_fence_probed)
           != NGX_OK)
    {
        h->status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        h->error = "the sandbox's status could not be asked";
        h->handler(r, ctx);
    }
}


static void
ngx_http_veto_sandbox_fence_probed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *sb, *reply;
    const char                      *state, *why;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;
    h->handler = ctx->fence_handler;

    if (h->status != NGX_OK) {
        h->handler(r, ctx);         /* the helper failed: said as such */
        return;
    }

    sb = json_object_get(h->json, "sandbox");
    state = json_string_value(json_object_get(sb, "state"));
    why = json_string_value(json_object_get(sb, "end_reason"));

    if (json_is_true(json_object_get(h->json, "ok")) && state != NULL
        && ngx_strcmp(state, "ended") == 0 && why != NULL)
    {
        /* a status asked for it: this is its answer */
        if (ctx->op != NULL && (ctx->op->flags & NGX_HTTP_VSB_ROW_STATE)) {
            h->handler(r, ctx);
            return;
        }

        reply = json_pack("{s:b, s:s, s:s, s:s, s:s}", "ok", 0,
                          "error", VSB_E_ENDED, "field", "id",
                          "end_reason", why,
                          "detail", "the sandbox ended on this host");

    } else if (!json_is_true(json_object_get(h->json, "ok"))) {
        /* the helper's own answer (not_found: its bookkeeping goes) */
        h->handler(r, ctx);
        return;

    } else {
        /* live in this run, yet its record names another: the record is
         * wrong, so nothing runs and nothing it counts is freed (the
         * field is not "id") */
        reply = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0,
                          "error", VSB_E_NOT_FOUND, "field", "epoch",
                          "detail", "the sandbox's ownership record names "
                          "another run of this host's helper");
    }

    ngx_http_veto_sandbox_fence_answer(r, ctx, reply);
}


/* The op's handler sees the truth as a reply of the helper's. */
static void
ngx_http_veto_sandbox_fence_answer(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *reply)
{
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    if (reply == NULL
        || ngx_http_veto_sandbox_fence_keep(r->pool, reply) != NGX_OK)
    {
        h->status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        h->error = "no memory for the answer";
        h->handler(r, ctx);
        return;
    }

    h->json = reply;
    h->payload = NULL;
    h->payload_len = 0;

    h->handler(r, ctx);
}
