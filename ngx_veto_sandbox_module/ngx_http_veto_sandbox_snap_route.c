/*
 * The snapshots' routing records in Redis, with several gateway hosts:
 *
 *   veto:{T}:snap:route:<snap>   hash  agent, gateway: the host whose
 *                                      helper holds the snapshot
 *
 * written by that host once its helper made the snapshot, expiring with
 * it, its expiry pushed later (never earlier) by each fork made of it
 * (the helper keeps a snapshot while a fork of it lives), deleted with
 * the snapshot's delete.  _where.c reads it to route a fork, a get or a
 * delete to the holder.  Every command here is bookkeeping nobody waits
 * for: the caller's call says where a failure is logged.
 */

#include "ngx_http_veto_sandbox_stores.h"


/* lua/snap_route.lua: the record, its expiry never shortened */
NGX_HTTP_VSB_LUA(snap_route);

static ngx_http_veto_sandbox_redis_script_t  ngx_http_veto_sandbox_snap_script
    = NGX_HTTP_VSB_SCRIPT(snap_route);


/* once per worker, with several hosts */
ngx_int_t
ngx_http_veto_sandbox_snap_route_init(void)
{
    return ngx_http_veto_sandbox_redis_script_init(
                                         &ngx_http_veto_sandbox_snap_script);
}


/* The snapshot is held by gateway, for agent, until at least at (Unix
 * seconds).  The redis_command() contract, or NGX_DECLINED (bad key). */
ngx_int_t
ngx_http_veto_sandbox_snap_route_keep(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *snap, ngx_str_t *agent, ngx_str_t *gateway,
    time_t at)
{
    u_char     *p;
    ngx_int_t   rc;
    ngx_str_t   a[4];

    if (at <= 0) {
        return NGX_DECLINED;
    }

    rc = ngx_http_veto_sandbox_tenant_key_valid(call->pool, &a[0],
                                                "snap:route", tenant, snap);
    if (rc != NGX_OK) {
        return rc;
    }

    p = ngx_pnalloc(call->pool, NGX_TIME_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    a[1] = *agent;
    a[2] = *gateway;
    a[3].data = p;
    a[3].len = ngx_sprintf(p, "%T", at) - p;

    return ngx_http_veto_sandbox_redis_eval_str(call,
                                  &ngx_http_veto_sandbox_snap_script, 1, 4, a);
}


/* The snapshot is deleted: its record goes. */
ngx_int_t
ngx_http_veto_sandbox_snap_route_drop(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *snap)
{
    ngx_int_t    rc;
    ngx_str_t    key;
    const char  *argv[2];
    size_t       argvlen[2];

    rc = ngx_http_veto_sandbox_tenant_key_valid(call->pool, &key,
                                                "snap:route", tenant, snap);
    if (rc != NGX_OK) {
        return rc;
    }

    argv[0] = "DEL";
    argvlen[0] = 3;
    argv[1] = (const char *) key.data;
    argvlen[1] = key.len;

    return ngx_http_veto_sandbox_redis_command(call, 2, argv, argvlen);
}
