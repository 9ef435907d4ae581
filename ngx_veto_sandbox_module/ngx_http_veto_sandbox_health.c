/*
 * GET /v1/health: the liveness probe.  Public, no gate: it reveals only
 * whether the gateway, its helper and Redis answer, and whether
 * allowlist sandboxes can be made now (the egress proxy); nothing of
 * this host's profiles or ceilings (/v1/about, with a token).  The
 * helper's "brief" ping, and Redis asked with a PING of its own, its
 * answer reused for a second.
 *
 * The unit tests link this file as data (NGX_HTTP_VSB_OPS_DATA_ONLY):
 * then only the row is compiled; the helper-reply fuzz target adds
 * NGX_HTTP_VSB_OPS_CODE for the reply (t/fuzz/fuzz_module_helper_reply.c).
 */

#include "ngx_http_veto_sandbox_faces.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_CODE)

/* health: the liveness probe's "brief" ping, without what the probe
 * never shows (the host's profiles and ceilings: most of the reply) */
ngx_int_t
ngx_http_veto_sandbox_build_health(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->req = ngx_http_veto_sandbox_req(r, ctx);
    if (ctx->req == NULL
        || json_object_set_new(ctx->req, "brief", json_true()) != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/*
 * Whether Redis answers, as /v1/health says it: a connection that is up
 * is not enough (a stopped server keeps its sockets open, and every
 * command times out), so health asks: a PING on the worker's connection
 * with a short timeout, its answer reused for a second.  One probe in
 * flight per worker: a health request that finds one overdue says
 * "down" at once, else it goes by the last answer.  Never blocks: the
 * request that probes waits for the reply (at most the probe's timeout)
 * like any request that waits for Redis.
 */
#define NGX_HTTP_VSB_HEALTH_PROBE_MS   250     /* a PING's time to answer */
#define NGX_HTTP_VSB_HEALTH_CACHE_MS   1000    /* an answer is reused */

static struct {
    ngx_http_request_t  *r;         /* waiting for the probe in flight */
    ngx_msec_t           sent;      /* when it was sent */
    ngx_msec_t           at;        /* when the last answer came */
    ngx_uint_t           answered;  /* one came ever */
    ngx_uint_t           up;        /* it was PONG */
} ngx_http_veto_sandbox_health_probe;


static void ngx_http_veto_sandbox_health_pinged(ngx_int_t rc,
    redisReply *reply, void *data);
static void ngx_http_veto_sandbox_health_cleanup(void *data);


/* "not_configured", "up" or "down" */
static const char *
ngx_http_veto_sandbox_health_redis(void)
{
    ngx_msec_int_t  age;

    if (ngx_http_veto_sandbox_rds == NULL) {
        return "not_configured";
    }

    if (!ngx_http_veto_sandbox_redis_ready(ngx_http_veto_sandbox_rds)) {
        return "down";
    }

    if (ngx_http_veto_sandbox_health_probe.r) {
        age = (ngx_msec_int_t) (ngx_current_msec
                                - ngx_http_veto_sandbox_health_probe.sent);

        if (age >= NGX_HTTP_VSB_HEALTH_PROBE_MS) {
            return "down";
        }
    }

    if (!ngx_http_veto_sandbox_health_probe.answered) {
        return "up";            /* the handshake's PING, just now */
    }

    return ngx_http_veto_sandbox_health_probe.up ? "up" : "down";
}


/* run() of /v1/health: the probe when the last answer is old, then the
 * helper's ping */
ngx_int_t
ngx_http_veto_sandbox_health_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                            rc;
    ngx_msec_int_t                       age;
    ngx_pool_cleanup_t                  *cln;
    ngx_http_veto_sandbox_redis_call_t   call;

    static const char    *argv[] = { "PING" };
    static const size_t   argvlen[] = { 4 };

    age = (ngx_msec_int_t) (ngx_current_msec
                            - ngx_http_veto_sandbox_health_probe.at);

    if (ngx_http_veto_sandbox_rds == NULL
        || !ngx_http_veto_sandbox_redis_ready(ngx_http_veto_sandbox_rds)
        || ngx_http_veto_sandbox_health_probe.r != NULL
        || (ngx_http_veto_sandbox_health_probe.answered
            && age >= 0 && age < NGX_HTTP_VSB_HEALTH_CACHE_MS))
    {
        return ngx_http_veto_sandbox_forward(r, ctx);
    }

    if (ngx_http_veto_sandbox_wait(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the request may go first (the client left): the probe is then
     * nobody's, and the next health request sends another */
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_health_cleanup;
    cln->data = r;

    ngx_http_veto_sandbox_waiting_call(r, ctx, &call,
                                       ngx_http_veto_sandbox_health_pinged);
    call.timeout = NGX_HTTP_VSB_HEALTH_PROBE_MS;

    /* set first: the handler clears it, whenever it runs */
    ngx_http_veto_sandbox_health_probe.r = r;
    ngx_http_veto_sandbox_health_probe.sent = ngx_current_msec;

    rc = ngx_http_veto_sandbox_redis_command(&call, 1, argv, argvlen);

    if (rc != NGX_OK) {
        /* not connected after all: the reply says so */
        ngx_http_veto_sandbox_health_probe.r = NULL;
        return ngx_http_veto_sandbox_forward(r, ctx);
    }

    return NGX_DONE;
}


static void
ngx_http_veto_sandbox_health_pinged(ngx_int_t rc, redisReply *reply,
    void *data)
{
    ngx_http_request_t           *r = data;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    ctx->rcmd = NULL;

    ngx_http_veto_sandbox_health_probe.r = NULL;
    ngx_http_veto_sandbox_health_probe.at = ngx_current_msec;
    ngx_http_veto_sandbox_health_probe.answered = 1;
    ngx_http_veto_sandbox_health_probe.up =
        rc == NGX_OK && reply != NULL
        && reply->type == REDIS_REPLY_STATUS
        && reply->len == 4 && ngx_strncmp(reply->str, "PONG", 4) == 0;

    ngx_http_veto_sandbox_resume(r, ngx_http_veto_sandbox_forward(r, ctx));
}


static void
ngx_http_veto_sandbox_health_cleanup(void *data)
{
    if (ngx_http_veto_sandbox_health_probe.r == data) {
        ngx_http_veto_sandbox_health_probe.r = NULL;
    }
}


/* /v1/health: the helper's ping, and whether Redis answers */
ngx_int_t
ngx_http_veto_sandbox_reply_health(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t      *j, *eg;
    const char  *redis;

    j = ctx->helper.json;

    /* what an unauthenticated caller needs, not the host's ceilings */
    json_object_del(j, "sandboxes");
    json_object_del(j, "limits_max");
    json_object_del(j, "limits_default");

    /* egress: whether allowlist sandboxes can be made now */
    eg = json_object_get(j, "egress");
    eg = json_pack("{s:b, s:s}", "available",
                   json_is_true(json_object_get(eg, "available")),
                   "state",
                   json_is_string(json_object_get(eg, "state"))
                   ? json_string_value(json_object_get(eg, "state"))
                   : "off");

    /* the profiles a caller may use are its own to see (/v1/about) */
    json_object_del(j, "profiles");

    /* 200 either way: the gateway lives (restarting it would not bring
     * Redis back); "degraded" while decisions need a Redis that does
     * not answer, when every other call answers 503 */
    redis = ngx_http_veto_sandbox_health_redis();

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                              json_pack("{s:s, s:O, s:o?, s:s}", "status",
                                        redis[0] == 'd' ? "degraded" : "ok",
                                        "helper", j, "egress", eg,
                                        "redis", redis));
}

#endif /* the row's code */


/* ---- the row (_ops.c's table) ------------------------------------------ */


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_health_ops[] = {

    ngx_http_vsb_op("health", NGX_HTTP_VSB_READ, "/v1/health",
                    NGX_HTTP_VSB_PUBLIC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_PING,
                    ngx_http_veto_sandbox_build_health,
                    ngx_http_veto_sandbox_health_run,
                    ngx_http_veto_sandbox_reply_health,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

#include "ngx_http_veto_sandbox_mcp.h"

/* no MCP tool: the probe is for load balancers and monitors */
ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_health_tools[] = {
    ngx_http_vsb_null_tool
};

#endif
