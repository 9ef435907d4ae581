/*
 * Veto Sandbox: quotas and sandbox ownership in Redis, shared by every
 * gateway on the same Redis.
 *
 *   concurrent sandboxes   per tenant and per agent: sorted sets of live
 *                          sandbox ids scored by their expiry, so a gateway
 *                          that dies without releasing cannot leak a slot
 *                          past the sandbox's own lifetime
 *   execs per minute       per tenant and per agent: a sliding-window log
 *   ownership              one hash per sandbox: agent, gateway, times
 *
 * Keys (docs/approvals.md, "Key layout"):
 *
 *   veto:{T}:sbx:live            zset  sandbox id -> expires_ms
 *   veto:{T}:sbx:live:<agent>    zset  sandbox id -> expires_ms
 *   veto:{T}:sbx:own:<id>        hash  agent, gateway, created_ms, expires_ms,
 *                                      epoch (the helper run that made it),
 *                                      env, env_sha256, env_dropped (what
 *                                      its env shows a reviewer, its digest)
 *   veto:{T}:sbx:route:<id>      hash  agent, gateway, epoch, end_reason,
 *                                      ended_at: an ended sandbox's
 *                                      routing record (the ownership
 *                                      record's owner, kept until the
 *                                      helper's ENDED record's
 *                                      retained_until; _where.c reads it)
 *   veto:{T}:rate:exec           zset  event id -> ms
 *   veto:{T}:rate:exec:<agent>   zset  event id -> ms
 *
 * Script replies: {code, retry_after_seconds}, code one of ok,
 * tenant_limit, agent_limit, exists.  Limits of 0 mean "no limit".
 */

#ifndef _NGX_HTTP_VSB_QUOTA_H_INCLUDED_
#define _NGX_HTTP_VSB_QUOTA_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_veto_sandbox_redis.h"


/* the longest end reason a routing record keeps */
#define NGX_HTTP_VSB_ROUTE_REASON_MAX  32


typedef enum {
    NGX_HTTP_VSB_QUOTA_ACQUIRE = 0,
    NGX_HTTP_VSB_QUOTA_RELEASE,
    NGX_HTTP_VSB_QUOTA_EXEC_RATE,
    NGX_HTTP_VSB_QUOTA_GONE,
    NGX_HTTP_VSB_QUOTA_NSCRIPTS
} ngx_http_veto_sandbox_quota_op_e;


typedef enum {
    NGX_HTTP_VSB_QR_OK = 0,
    NGX_HTTP_VSB_QR_TENANT_LIMIT,   /* 429, Retry-After */
    NGX_HTTP_VSB_QR_AGENT_LIMIT,    /* 429, Retry-After */
    NGX_HTTP_VSB_QR_EXISTS,         /* id already counted */
    NGX_HTTP_VSB_QR_BAD_REPLY       /* fail closed: 503 */
} ngx_http_veto_sandbox_quota_code_e;


typedef struct {
    ngx_http_veto_sandbox_quota_code_e   code;
    time_t                               retry_after;    /* seconds */
} ngx_http_veto_sandbox_quota_result_t;


/* What the ownership record says besides the owner; empty: not set. */
typedef struct {
    ngx_str_t    gateway;                /* this host's name */
    ngx_str_t    epoch;                  /* its helper's current run */
    ngx_str_t    env;                    /* the env view, JSON text */
    ngx_str_t    env_sha256;             /* digest of the whole env */
    ngx_uint_t   env_dropped;            /* names the view left out */
} ngx_http_veto_sandbox_quota_owner_t;


typedef struct {
    ngx_uint_t   tenant_sandboxes;       /* concurrent, 0: no limit */
    ngx_uint_t   agent_sandboxes;
    ngx_uint_t   tenant_execs;           /* per window, 0: no limit */
    ngx_uint_t   agent_execs;
    ngx_msec_t   exec_window;            /* 60000 */
} ngx_http_veto_sandbox_quota_limits_t;


extern ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_quota_scripts[];


ngx_int_t ngx_http_veto_sandbox_quota_init(void);

/*
 * Before asking the helper to create: reserve a slot for sandbox id
 * (the id is chosen by the gateway, or a provisional one that
 * ngx_http_veto_sandbox_quota_release() frees if the create fails).
 * ttl: the sandbox lifetime; the slot frees itself after it.  With
 * owner->epoch, this gateway's live sandboxes of another helper epoch
 * are dropped first (the helper restarted: they are gone).
 */
ngx_int_t ngx_http_veto_sandbox_quota_acquire(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *sandbox,
    ngx_http_veto_sandbox_quota_limits_t *limits, ngx_msec_t ttl,
    ngx_http_veto_sandbox_quota_owner_t *owner);

/* The helper said not_found for a sandbox agent named: its slot and
 * ownership record go, if they are agent's on this gateway. */
ngx_int_t ngx_http_veto_sandbox_quota_gone(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *sandbox, ngx_str_t *gateway);

/* After the sandbox ended (or its creation failed). */
ngx_int_t ngx_http_veto_sandbox_quota_release(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *sandbox);

/* After a DELETE the helper confirmed, with its ENDED record (the
 * reply's "ended"): as release(), and the sandbox's routing record
 * (veto:{T}:sbx:route:<id>: the owner, its run, how and when it ended)
 * stays until the record's retained_until, so that every gateway host
 * finds the host that answers for it.  Without a usable record: as
 * release(). */
ngx_int_t ngx_http_veto_sandbox_quota_release_ended(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *sandbox, json_t *ended);

/* Before each exec; event_id must be unique (request id). */
ngx_int_t ngx_http_veto_sandbox_quota_exec(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *event_id,
    ngx_http_veto_sandbox_quota_limits_t *limits);

/*
 * Who owns a sandbox and what its env shows, as every gateway sees it:
 * HMGET agent env env_sha256 env_dropped.  A nil agent: no such sandbox
 * in this tenant (answer 404); a nil env_sha256: a record made before
 * envs were kept (unknown: fail closed).
 */
ngx_int_t ngx_http_veto_sandbox_quota_owner(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *sandbox);

void ngx_http_veto_sandbox_quota_result(redisReply *reply,
    ngx_http_veto_sandbox_quota_result_t *res);


#endif /* _NGX_HTTP_VSB_QUOTA_H_INCLUDED_ */
