/*
 * Veto Sandbox: token revocation, checked on every request.
 *
 * Keys (tenant-scoped; docs/approvals.md, "Revocation"):
 *
 *   veto:{T}:revoked:jti:<jti>      any value; expires with the token
 *   veto:{T}:revoked:agent:<agent>  "<unix seconds>": every token of the
 *                                   agent issued at or before that time
 *                                   (iat) is refused; "*": every token,
 *                                   whatever its iat
 *
 * One script per request reads both (revoke_check: like MGET, but a key
 * of another type than string counts as "*", never as absent).  A token whose jti (or sub) cannot be
 * a key part (ngx_http_veto_sandbox_redis_key_part_valid) is refused: it
 * could not be revoked, so it is not accepted.  Redis down: refused (503).
 */

#ifndef _NGX_HTTP_VSB_REVOKE_H_INCLUDED_
#define _NGX_HTTP_VSB_REVOKE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_redis.h"


/* Prepares the script (init_process). */
ngx_int_t ngx_http_veto_sandbox_revoke_init(void);

/*
 * Reads the jti and agent keys.  jti may be empty (token without jti: only
 * the agent is checked).  NGX_DECLINED: tenant, agent or jti is not a
 * valid key part; refuse the token (401).
 */
ngx_int_t ngx_http_veto_sandbox_revoke_check(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *jti);

/*
 * Reads the reply ([jti value or nil, agent value or nil]): NGX_OK (not revoked), NGX_DECLINED (revoked; why
 * is set to "jti" or "agent"), NGX_ERROR (unexpected reply: fail closed).
 * iat: the token's iat claim, or -1 when it has none.
 */
ngx_int_t ngx_http_veto_sandbox_revoke_result(redisReply *reply,
    time_t iat, const char **why);

/*
 * Admin API: revoke one token until exp (SET ... EXAT exp, Redis >= 6.2),
 * or every token of an agent issued up to before (SET ... <before>; 0:
 * now), or with before -1 every token of the agent (SET ... "*").
 */
ngx_int_t ngx_http_veto_sandbox_revoke_jti(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *jti, time_t exp);

ngx_int_t ngx_http_veto_sandbox_revoke_agent(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, time_t before);

/*
 * Admin API, kind "jti" or "agent": take a revocation back (DEL: the
 * reply is 1, or 0 when there was none), or read it (a jti: TTL, -2
 * when there is none; an agent: GET, nil when there is none).
 * NGX_DECLINED: tenant or value is not a valid key part.
 */
ngx_int_t ngx_http_veto_sandbox_unrevoke(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    const char *kind, ngx_str_t *value);

ngx_int_t ngx_http_veto_sandbox_revocation_get(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    const char *kind, ngx_str_t *value);


#endif /* _NGX_HTTP_VSB_REVOKE_H_INCLUDED_ */
