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
 *
 * An ended sandbox has no ownership record; its routing record
 * (veto:{T}:sbx:route:<id>, written where the end freed the ownership
 * record, kept as long as the helper keeps its ENDED record) names the
 * host that held it and how it ended.  It is routed there like a live
 * one, so every host answers what the owner's helper answers (200
 * "ended" to a GET, 410 to the rest); when the owner cannot answer (its
 * lease ran out: host_lost, or a host away) this host answers from the
 * record itself (_where_ended()), never 503.
 *
 * A snapshot stays on the host whose helper made it (files are not
 * copied between hosts); its routing record (veto:{T}:snap:route:<snap>,
 * {agent, gateway}: _snap_route.c, written by that host's _record.c)
 * names that host.  A fork (from_snapshot), a get or a delete of the
 * agent's own snapshot that another host holds is routed there like a
 * request for a sandbox, the fork then living there; one whose holder's
 * lease ran out is 503 snapshot_host_unavailable; without routing, 421
 * snapshot_elsewhere.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_quota.h"


static ngx_int_t ngx_http_veto_sandbox_place_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_where_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_where_snap_result(
    ngx_http_request_t *r, ngx_http_veto_sandbox_ctx_t *ctx,
    redisReply *reply);


/* a Redis string equal to s */
#define ngx_http_vsb_is(rs, s)                                                \
    ((rs)->type == REDIS_REPLY_STRING && (size_t) (rs)->len == (s)->len      \
     && ngx_strncmp((rs)->str, (s)->data, (s)->len) == 0)

/* a Redis string kept in the request's pool */
#define ngx_http_vsb_keep(r, to, rs)                                          \
    ngx_http_veto_sandbox_fence_copy(r, to, (rs)->str, (rs)->len)


/* lua/host_place.lua: where a create goes when this host is full;
 * lua/sbx_where.lua: the ownership record, else the routing record */
NGX_HTTP_VSB_LUA(host_place);
NGX_HTTP_VSB_LUA(sbx_where);

static ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_hosts_place_scripts[] = {
    NGX_HTTP_VSB_SCRIPT(host_place),
    NGX_HTTP_VSB_SCRIPT(sbx_where),
    { NULL, NULL, "" }
};


/* the snapshot a request names (a fork's from_snapshot, the snapshot of
 * a get or a delete): NGX_OK and *id, else NGX_DECLINED */
static ngx_int_t
ngx_http_veto_sandbox_where_snapshot(ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_str_t *id)
{
    json_t  *v;

    if (ctx->sandbox.len || ctx->op == NULL) {
        return NGX_DECLINED;
    }

    if (ctx->op->flags & NGX_HTTP_VSB_ROW_MAKES) {
        v = json_object_get(ctx->req, "from_snapshot");

    } else if (ctx->op->flags & NGX_HTTP_VSB_ROW_SNAPSHOT) {
        v = json_object_get(ctx->req, "snapshot");

    } else {
        return NGX_DECLINED;
    }

    if (!json_is_string(v)
        || !ngx_http_veto_sandbox_redis_key_part_valid(
                                           (u_char *) json_string_value(v),
                                           json_string_length(v)))
    {
        return NGX_DECLINED;
    }

    id->data = (u_char *) json_string_value(v);
    id->len = json_string_length(v);

    return NGX_OK;
}


/* placement is asked by every worker, with several hosts */
ngx_int_t
ngx_http_veto_sandbox_where_init_process(ngx_cycle_t *cycle)
{
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    vmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_veto_sandbox_module);

    if (vmcf == NULL || !vmcf->enabled || vmcf->host_addr.len == 0) {
        return NGX_OK;
    }

    /* the snapshots' routing records (_snap_route.c) too */
    if (ngx_http_veto_sandbox_snap_route_init() != NGX_OK) {
        return NGX_ERROR;
    }

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
    ngx_str_t                           key, snap;
    ngx_http_veto_sandbox_main_conf_t  *mcf;

    /* a snapshot's routing record; a host's lease */
    static const char *const  snap_fields[] = { "agent", "gateway", NULL };
    static const char *const  lease_fields[] = { "addr", "epoch", NULL };

    mcf = ngx_http_veto_sandbox_gate_mcf(r);

    /* a fork, a snapshot's get or delete: where the snapshot is */
    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE && mcf->host_addr.len
        && ngx_http_veto_sandbox_redis_key_part_valid(ctx->tenant.data,
                                                      ctx->tenant.len)
        && ngx_http_veto_sandbox_where_snapshot(ctx, &snap) == NGX_OK)
    {
        if (ngx_http_veto_sandbox_tenant_key(r->pool, &key, "snap:route",
                                             &ctx->tenant, &snap)
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ctx->step = NGX_HTTP_VSB_STEP_SNAP;

        return ngx_http_veto_sandbox_redis_hmget(call, &key,
                                         snap_fields);
    }

    /* a create, with routing: here, unless this host is full; a fork
     * goes where its snapshot is (above) */
    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE && ctx->sandbox.len == 0
        && ctx->op->quota == NGX_HTTP_VSB_QUOTA_SANDBOXES
        && json_object_get(ctx->req, "from_snapshot") == NULL
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

    if (mcf->host_addr.len == 0
        || (ctx->sandbox.len == 0 && !ctx->snap_held)
        || (ctx->sandbox.len
            && !ngx_http_veto_sandbox_redis_key_part_valid(ctx->sandbox.data,
                                                           ctx->sandbox.len))
        || !ngx_http_veto_sandbox_redis_key_part_valid(ctx->tenant.data,
                                                       ctx->tenant.len))
    {
        return NGX_DECLINED;
    }

    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE) {
        ngx_str_t  k[2];

        /* the ownership record, else the routing record of an ended one */
        if (ngx_http_veto_sandbox_tenant_key(r->pool, &k[0], "sbx:own",
                                             &ctx->tenant, &ctx->sandbox)
            != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(r->pool, &k[1], "sbx:route",
                                                &ctx->tenant, &ctx->sandbox)
               != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_veto_sandbox_redis_eval_str(call,
                             &ngx_http_veto_sandbox_hosts_place_scripts[1],
                             2, 2, k);
    }

    if (ngx_http_veto_sandbox_hosts_key(r->pool, &key, "lease:",
                                        &ctx->owner_host)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_veto_sandbox_redis_hmget(call, &key,
                                         lease_fields);
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

    if (ngx_http_vsb_keep(r, &ctx->owner_host, name) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* no route: the create is made here, and its helper says it is full */
    if (ngx_http_veto_sandbox_peer_plan(r, ctx, (u_char *) addr->str,
                                        addr->len)
        == NGX_ERROR)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_AGAIN;
}


/*
 * The agent's ended sandbox, by its routing record {agent, gateway,
 * epoch, end_reason, ended_at}: to its host's helper (here, or routed to
 * that host while its lease is live, which answers from its ENDED
 * record); answered here from the record when that host cannot answer
 * (its lease ran out: the LEASE step; a host_lost end while its host is
 * away).  No epoch is sent along: an ended sandbox runs nothing, and its
 * host answers what it answers a request sent to it directly.
 */
static ngx_int_t
ngx_http_veto_sandbox_where_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    redisReply  *gw, *why, *at;
    ngx_str_t   *host;

    gw = reply->element[1];
    why = reply->element[3];
    at = reply->element[4];
    host = &ngx_http_veto_sandbox_gate_mcf(r)->host;

    if (why->len == 0 || why->len > NGX_HTTP_VSB_ROUTE_REASON_MAX
        || !ngx_http_veto_sandbox_redis_key_part_valid((u_char *) why->str,
                                                       why->len))
    {
        /* not a record of ours: as if there were none */
        ctx->step = NGX_HTTP_VSB_STEP_QUOTA;
        return NGX_AGAIN;
    }

    if (ngx_http_vsb_keep(r, &ctx->route_reason, why) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->route_ended_at = 0;

    if (at->type == REDIS_REPLY_STRING) {
        ctx->route_ended_at = ngx_atotm((u_char *) at->str, at->len);
        if (ctx->route_ended_at == NGX_ERROR) {
            ctx->route_ended_at = 0;
        }
    }

    ctx->step = NGX_HTTP_VSB_STEP_QUOTA;

    if (gw->type != REDIS_REPLY_STRING
        || !ngx_http_veto_sandbox_redis_key_part_valid((u_char *) gw->str,
                                                       gw->len))
    {
        ctx->route_local = 1;
        return NGX_AGAIN;
    }

    if (ngx_http_vsb_keep(r, &ctx->owner_host, gw) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* ours: our helper's ENDED record answers, as without hosts */
    if (ngx_http_vsb_is(gw, host)) {
        return NGX_AGAIN;
    }

    ctx->step = NGX_HTTP_VSB_STEP_LEASE;
    return NGX_AGAIN;
}


/*
 * What the routing record says of an ended sandbox, as the helper would
 * say it (the op's reply handler takes it as the helper's): the status
 * of a GET, the error "ended" (410) for anything else.  A json_t kept
 * by the request's pool; NULL: no memory.
 */
json_t *
ngx_http_veto_sandbox_where_ended(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t              *j, *sb;
    u_char               detail[256], *p;
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    p = ngx_snprintf(detail, sizeof(detail) - 1, "the sandbox ended (%V)%s%V"
                     "; its host's helper cannot be asked for its ENDED "
                     "record, this is what the gateways keep of it",
                     &ctx->route_reason,
                     ctx->owner_host.len ? " on host " : "",
                     &ctx->owner_host);
    *p = '\0';

    if (ctx->op != NULL && (ctx->op->flags & NGX_HTTP_VSB_ROW_STATE)) {
        sb = json_pack("{s:o, s:s, s:o, s:s}",
                       "id", ngx_http_veto_sandbox_json_ngx_str(&ctx->sandbox),
                       "state", "ended",
                       "end_reason",
                       ngx_http_veto_sandbox_json_ngx_str(&ctx->route_reason),
                       "detail", (char *) detail);

        if (sb != NULL && ctx->route_ended_at > 0) {
            json_object_set_new(sb, "ended_at",
                                json_integer(ctx->route_ended_at));
        }

        if (sb != NULL && ctx->owner_host.len) {
            json_object_set_new(sb, "host",
                         ngx_http_veto_sandbox_json_ngx_str(&ctx->owner_host));
        }

        j = sb ? json_pack("{s:b, s:o}", "ok", 1, "sandbox", sb) : NULL;

    } else {
        j = json_pack("{s:b, s:s, s:s, s:o, s:s}", "ok", 0,
                      "error", VSB_E_ENDED, "field", "id",
                      "end_reason",
                      ngx_http_veto_sandbox_json_ngx_str(&ctx->route_reason),
                      "detail", (char *) detail);
    }

    if (j == NULL) {
        return NULL;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = j;

    return j;
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

    if (ctx->step == NGX_HTTP_VSB_STEP_SNAP) {
        return ngx_http_veto_sandbox_where_snap_result(r, ctx, reply);
    }

    if (reply->type != REDIS_REPLY_ARRAY
        || reply->elements != (ctx->step == NGX_HTTP_VSB_STEP_WHERE ? 5 : 2))
    {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    if (ctx->step == NGX_HTTP_VSB_STEP_WHERE) {
        agent = reply->element[0];
        gw = reply->element[1];
        host = &ngx_http_veto_sandbox_gate_mcf(r)->host;

        /* an ended sandbox of the agent's: routed by its routing record */
        if (reply->element[3]->type == REDIS_REPLY_STRING
            && ngx_http_vsb_is(agent, &ctx->agent))
        {
            return ngx_http_veto_sandbox_where_route(r, ctx, reply);
        }

        /* only the agent's own sandbox is told apart: another agent's
         * is not found, here as on its host */
        if (!ngx_http_vsb_is(agent, &ctx->agent)
            || gw->type != REDIS_REPLY_STRING
            || !ngx_http_veto_sandbox_redis_key_part_valid((u_char *) gw->str,
                                                           gw->len)
            || ngx_http_vsb_is(gw, host))
        {
            /* the agent's own and ours: the helper is told which of its
             * runs holds it (the epoch fence) */
            if (ngx_http_veto_sandbox_fence_set(r, ctx, reply) != NGX_OK) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            ctx->step = NGX_HTTP_VSB_STEP_QUOTA;
            return NGX_AGAIN;
        }

        if (ngx_http_vsb_keep(r, &ctx->owner_host, gw) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

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

    /* an ended sandbox whose host is away: its end is on record here */
    if (addr->type != REDIS_REPLY_STRING && ctx->route_reason.len) {
        ctx->route_local = 1;
        ctx->step = NGX_HTTP_VSB_STEP_QUOTA;
        return NGX_AGAIN;
    }

    if (addr->type != REDIS_REPLY_STRING && ctx->snap_held) {
        return ngx_http_veto_sandbox_refuse(r, ctx,
                                   NGX_HTTP_SERVICE_UNAVAILABLE,
                                   "snapshot_host_unavailable",
                                   "the gateway host that holds this "
                                   "snapshot (\"host\") is not answering: its "
                                   "lease ran out.  Snapshots are not copied "
                                   "between hosts: retry once that host is "
                                   "back, or make a new snapshot of a "
                                   "sandbox on a host that answers",
                                   json_pack("{s:s%}", "host",
                                             ctx->owner_host.data,
                                             ctx->owner_host.len));
    }

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

    if (ctx->snap_held) {
        return ngx_http_veto_sandbox_refuse(r, ctx,
                               NGX_HTTP_MISDIRECTED_REQUEST,
                               "snapshot_elsewhere",
                               "this snapshot is held by another gateway "
                               "host (\"host\", reachable at \"address\"); "
                               "send its forks and requests there: this "
                               "host does not route them",
                               json_pack("{s:s%, s:s%}",
                                         "host", ctx->owner_host.data,
                                         ctx->owner_host.len,
                                         "address", addr->str,
                                         (size_t) ngx_min(addr->len, 255)));
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


/*
 * A snapshot's routing record {agent, gateway}: the agent's own held by
 * another host goes to that host's lease (routed there, or refused);
 * anything else is asked of this host's helper, which answers for what
 * it holds (another agent's, or an unknown one, is not found).
 */
static ngx_int_t
ngx_http_veto_sandbox_where_snap_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    redisReply  *agent, *gw;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    agent = reply->element[0];
    gw = reply->element[1];

    ctx->step = NGX_HTTP_VSB_STEP_QUOTA;

    if (!ngx_http_vsb_is(agent, &ctx->agent)
        || gw->type != REDIS_REPLY_STRING
        || !ngx_http_veto_sandbox_redis_key_part_valid((u_char *) gw->str,
                                                       gw->len)
        || ngx_http_vsb_is(gw, &ngx_http_veto_sandbox_gate_mcf(r)->host))
    {
        return NGX_AGAIN;
    }

    if (ngx_http_vsb_keep(r, &ctx->owner_host, gw) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->snap_held = 1;
    ctx->step = NGX_HTTP_VSB_STEP_LEASE;

    return NGX_AGAIN;
}

