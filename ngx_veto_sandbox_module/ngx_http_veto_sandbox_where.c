/*
 * Where a request's sandbox is, and where a create goes, with several
 * gateway hosts (_hosts.c keeps the hosts' leases).
 *
 * Before quotas and approvals, a request for a sandbox reads its
 * ownership record (written once the helper confirmed the create, with
 * the host's name and its helper run).  The agent's own sandbox held by
 * another host whose lease is live is routed there once the gate let it
 * through (_peer.c), or, without routing, answered 421
 * sandbox_elsewhere; one whose host's lease ran out is 503
 * host_unavailable; both before anything is counted, asked for or
 * spent.  A create stays on this host unless its lease says its helper
 * is full; then it is routed to the live host with room and the least
 * load.
 */

#include "ngx_http_veto_sandbox_module.h"


static ngx_int_t ngx_http_veto_sandbox_place_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);


/* KEYS: seen;  ARGV: this host's name, the lease prefix
 * This host has room (or its load is not known): {}; else the live host
 * with room and the least load: {name, addr}; none: {}. */
static const char ngx_http_veto_sandbox_hosts_place_lua[] =
    "local function load(name)\n"
    "  local f = redis.call('HMGET', ARGV[2] .. name, 'sandboxes',\n"
    "    'capacity', 'addr')\n"
    "  local n, c = tonumber(f[1]), tonumber(f[2])\n"
    "  if not n or not c or c < 1 or not f[3] then return nil end\n"
    "  return n, c, f[3]\n"
    "end\n"
    "local n, c = load(ARGV[1])\n"
    "if not n or n < c then return {} end\n"
    "local best, bl, ba = nil, 2, nil\n"
    "for _, h in ipairs(redis.call('ZRANGE', KEYS[1], 0, 63)) do\n"
    "  if h ~= ARGV[1] then\n"
    "    local hn, hc, ha = load(h)\n"
    "    if hn and hn < hc and hn / hc < bl then\n"
    "      best, bl, ba = h, hn / hc, ha\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if best then return {best, ba} end\n"
    "return {}\n"
    ;


static ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_hosts_place_scripts[] = {
    { "host_place", ngx_http_veto_sandbox_hosts_place_lua, "" },
    { NULL, NULL, "" }
};



ngx_int_t
ngx_http_veto_sandbox_where_init(void)
{
    return ngx_http_veto_sandbox_redis_scripts_init(
                                   ngx_http_veto_sandbox_hosts_place_scripts);
}


/*
 * The gate's owner step (NGX_HTTP_VSB_STEP_WHERE, then _LEASE): NGX_OK
 * when a command is in flight; NGX_DECLINED when there is nothing to
 * ask (one host, or a request without a sandbox); else a Redis failure.
 */
ngx_int_t
ngx_http_veto_sandbox_where_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call)
{
    ngx_str_t                           key;
    int                                 argc;
    const char                         *argv[5];
    size_t                              argvlen[5];
    ngx_http_veto_sandbox_main_conf_t  *mcf;

    mcf = ngx_http_veto_sandbox_gate_mcf(r);

    /* a create, with routing: here, unless this host is full */
    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE && ctx->sandbox.len == 0
        && ctx->op->quota == NGX_HTTP_VSB_QUOTA_SANDBOXES
        && mcf->host_addr.len && mcf->peer_pass.len)
    {
        ngx_str_t  a[3];

        if (ngx_http_veto_sandbox_hosts_key(r->pool, &a[0], "seen", NULL)
            != NGX_OK
            || ngx_http_veto_sandbox_hosts_key(r->pool, &a[2], "lease:",
                                               NULL)
               != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        a[1] = mcf->host;
        ctx->step = NGX_HTTP_VSB_STEP_PLACE;

        return ngx_http_veto_sandbox_redis_eval_str(call,
                             &ngx_http_veto_sandbox_hosts_place_scripts[0],
                             1, 3, a);
    }

    if (mcf->host_addr.len == 0 || ctx->sandbox.len == 0
        || !ngx_http_veto_sandbox_redis_key_part_valid(ctx->sandbox.data,
                                                       ctx->sandbox.len)
        || !ngx_http_veto_sandbox_redis_key_part_valid(ctx->tenant.data,
                                                       ctx->tenant.len))
    {
        return NGX_DECLINED;
    }

    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE) {
        if (ngx_http_veto_sandbox_tenant_key(r->pool, &key, "sbx:own",
                                             &ctx->tenant, &ctx->sandbox)
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

    } else {
        if (ngx_http_veto_sandbox_hosts_key(r->pool, &key, "lease:",
                                            &ctx->owner_host)
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    argv[0] = "HMGET";
    argvlen[0] = 5;
    argv[1] = (const char *) key.data;
    argvlen[1] = key.len;

    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE) {
        argv[2] = "agent";
        argvlen[2] = 5;
        argv[3] = "gateway";
        argvlen[3] = 7;
        /* the helper run that holds it: sent along (the epoch fence) */
        argv[4] = "epoch";
        argvlen[4] = 5;
        argc = 5;

    } else {
        argv[2] = "addr";
        argvlen[2] = 4;
        argv[3] = "epoch";
        argvlen[3] = 5;
        argc = 4;
    }

    return ngx_http_veto_sandbox_redis_command(call, argc, argv, argvlen);
}


/* A create's place: here ({}), or the least loaded live host with room
 * ({name, addr}), then the quota, as every create. */
static ngx_int_t
ngx_http_veto_sandbox_place_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    redisReply  *name, *addr;

    if (reply->type != REDIS_REPLY_ARRAY
        || (reply->elements != 0 && reply->elements != 2))
    {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    ctx->step = NGX_HTTP_VSB_STEP_QUOTA;

    if (reply->elements == 0) {
        return NGX_AGAIN;
    }

    name = reply->element[0];
    addr = reply->element[1];

    if (name->type != REDIS_REPLY_STRING || addr->type != REDIS_REPLY_STRING
        || !ngx_http_veto_sandbox_redis_key_part_valid((u_char *) name->str,
                                                       name->len))
    {
        return NGX_AGAIN;
    }

    ctx->owner_host.data = ngx_pnalloc(r->pool, name->len);
    if (ctx->owner_host.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(ctx->owner_host.data, name->str, name->len);
    ctx->owner_host.len = name->len;

    /* no route: the create is made here, and its helper says it is full */
    if (ngx_http_veto_sandbox_peer_plan(r, ctx, (u_char *) addr->str,
                                        addr->len)
        == NGX_ERROR)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_AGAIN;
}


/* NGX_AGAIN: go on with ctx->step; else the answer. */
ngx_int_t
ngx_http_veto_sandbox_where_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    redisReply  *agent, *gw, *addr;
    ngx_str_t   *host;

    if (ctx->step == NGX_HTTP_VSB_STEP_PLACE) {
        return ngx_http_veto_sandbox_place_result(r, ctx, reply);
    }

    if (reply->type != REDIS_REPLY_ARRAY
        || reply->elements != (ctx->step == NGX_HTTP_VSB_STEP_WHERE ? 3 : 2))
    {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE) {
        agent = reply->element[0];
        gw = reply->element[1];
        host = &ngx_http_veto_sandbox_gate_mcf(r)->host;

        /* only the agent's own sandbox is told apart: another agent's
         * is not found, here as on its host */
        if (agent->type != REDIS_REPLY_STRING
            || (size_t) agent->len != ctx->agent.len
            || ngx_strncmp(agent->str, ctx->agent.data, ctx->agent.len) != 0
            || gw->type != REDIS_REPLY_STRING
            || !ngx_http_veto_sandbox_redis_key_part_valid((u_char *) gw->str,
                                                           gw->len)
            || ((size_t) gw->len == host->len
                && ngx_strncmp(gw->str, host->data, host->len) == 0))
        {
            /* the agent's own and ours: the helper is told which of its
             * runs holds it (the epoch fence) */
            if (ngx_http_veto_sandbox_fence_set(r, ctx, reply) != NGX_OK) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            ctx->step = NGX_HTTP_VSB_STEP_QUOTA;
            return NGX_AGAIN;
        }

        ctx->owner_host.data = ngx_pnalloc(r->pool, gw->len);
        if (ctx->owner_host.data == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_memcpy(ctx->owner_host.data, gw->str, gw->len);
        ctx->owner_host.len = gw->len;

        /* the run of its helper the record names: signed along when the
         * request is routed, so the owner fences it as its own */
        if (reply->element[2]->type == REDIS_REPLY_STRING
            && ngx_http_veto_sandbox_fence_epoch(r, &ctx->peer_epoch,
                                                 reply->element[2]->str,
                                                 reply->element[2]->len)
               != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ctx->step = NGX_HTTP_VSB_STEP_LEASE;
        return NGX_AGAIN;
    }

    addr = reply->element[0];

    if (addr->type != REDIS_REPLY_STRING) {
        return ngx_http_veto_sandbox_refuse(r, ctx,
                                   NGX_HTTP_SERVICE_UNAVAILABLE,
                                   "host_unavailable",
                                   "the gateway host that holds this "
                                   "sandbox (\"host\") is not answering: its "
                                   "lease ran out.  If it comes back, the "
                                   "sandbox answers again; if it stays away "
                                   "past the grace period, the sandbox is "
                                   "ended as host_lost and its files are "
                                   "gone with the host",
                                   json_pack("{s:s%}", "host",
                                             ctx->owner_host.data,
                                             ctx->owner_host.len));
    }

    /* a live owner: the request is decided here, then run there */
    switch (ngx_http_veto_sandbox_peer_plan(r, ctx, (u_char *) addr->str,
                                            addr->len))
    {
    case NGX_OK:
        ctx->step = NGX_HTTP_VSB_STEP_QUOTA;
        return NGX_AGAIN;

    case NGX_DECLINED:
        break;

    default:
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_MISDIRECTED_REQUEST,
                               "sandbox_elsewhere",
                               "this sandbox is held by another gateway "
                               "host (\"host\", reachable at \"address\"); "
                               "send its requests there: requests are not "
                               "routed between hosts yet",
                               json_pack("{s:s%, s:s%}",
                                         "host", ctx->owner_host.data,
                                         ctx->owner_host.len,
                                         "address", addr->str,
                                         (size_t) ngx_min(addr->len, 255)));
}
