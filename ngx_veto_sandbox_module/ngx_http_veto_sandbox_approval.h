/*
 * Veto Sandbox: human approvals held in Redis.
 *
 * An approval record binds tenant, agent (requester), action and the
 * canonical request hash.  States:
 *
 *     pending -> approved | denied | expired
 *     approved -> consumed | expired
 *
 * Every transition is one Lua script (atomic in Redis), a file of
 * lua/ (approval_*.lua, after lua/prelude.lua); the scripts, their keys,
 * arguments and replies are documented in docs/approvals.md and tested
 * directly by the tests in t/redis/lua/.  Time is Redis' clock (TIME),
 * so every gateway sharing one Redis agrees on expiry.
 *
 * Every script replies with an array whose first element is a code:
 *
 *     ok, not_found, expired, not_pending, not_approved, self_approval,
 *     already_approved, reason_required, mismatch, exists, full,
 *     agent_full
 *
 * and whose second element is the record's state after the call.  A
 * third element "1" on "expired" means this call made the transition, so
 * the caller writes the approval_expired audit record exactly once.
 */

#ifndef _NGX_HTTP_VSB_APPROVAL_H_INCLUDED_
#define _NGX_HTTP_VSB_APPROVAL_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_redis.h"
#include "ngx_http_veto_sandbox_hash.h"


/* "apr_" and 32 lowercase hex digits (128 random bits) */
#define NGX_HTTP_VSB_APPROVAL_ID_LEN    36

#define NGX_HTTP_VSB_APPROVAL_TTL       900000      /* ms, 15 min */
#define NGX_HTTP_VSB_APPROVAL_RETENTION 604800000   /* ms, 7 days */

/* records a tenant keeps (veto_sandbox_approval_max) */
#define NGX_HTTP_VSB_APPROVAL_MAX       5000

/* a page of GET /v1/approvals: records, and the bytes of their summaries
 * (each at most NGX_HTTP_VSB_SUMMARY_MAX) before the page ends */
#define NGX_HTTP_VSB_APPROVAL_PAGE      100
#define NGX_HTTP_VSB_APPROVAL_PAGE_MAX  200
#define NGX_HTTP_VSB_APPROVAL_LIST_BYTES  (1024 * 1024)


typedef enum {
    NGX_HTTP_VSB_APPROVAL_CREATE = 0,
    NGX_HTTP_VSB_APPROVAL_APPROVE,
    NGX_HTTP_VSB_APPROVAL_DENY,
    NGX_HTTP_VSB_APPROVAL_CONSUME,
    NGX_HTTP_VSB_APPROVAL_EXPIRE,
    NGX_HTTP_VSB_APPROVAL_GET,
    NGX_HTTP_VSB_APPROVAL_LIST,
    NGX_HTTP_VSB_APPROVAL_NSCRIPTS
} ngx_http_veto_sandbox_approval_op_e;


typedef enum {
    NGX_HTTP_VSB_AR_OK = 0,
    NGX_HTTP_VSB_AR_NOT_FOUND,
    NGX_HTTP_VSB_AR_EXPIRED,
    NGX_HTTP_VSB_AR_NOT_PENDING,
    NGX_HTTP_VSB_AR_NOT_APPROVED,
    NGX_HTTP_VSB_AR_SELF_APPROVAL,
    NGX_HTTP_VSB_AR_ALREADY_APPROVED,
    NGX_HTTP_VSB_AR_REASON_REQUIRED,
    NGX_HTTP_VSB_AR_MISMATCH,
    NGX_HTTP_VSB_AR_EXISTS,
    NGX_HTTP_VSB_AR_FULL,         /* the tenant's records are all live */
    NGX_HTTP_VSB_AR_AGENT_FULL,   /* the agent's open max (detail) */
    NGX_HTTP_VSB_AR_BAD_REPLY     /* unexpected reply: fail closed */
} ngx_http_veto_sandbox_approval_code_e;


/* A parsed script reply.  Strings point into the hiredis reply. */
typedef struct {
    ngx_http_veto_sandbox_approval_code_e  code;
    ngx_str_t                              state;
    ngx_uint_t                             just_expired;
    ngx_str_t                              detail;  /* mismatch: field;
                                                       approve: count;
                                                       agent_full: max */
} ngx_http_veto_sandbox_approval_result_t;


/* What an approval binds; the strings must be valid key parts. */
typedef struct {
    ngx_str_t   tenant;
    ngx_str_t   agent;
    ngx_str_t   action;     /* e.g. "sandbox.create", "sandbox.exec" */
    u_char      hash[NGX_HTTP_VSB_HASH_HEX_LEN + 1];
} ngx_http_veto_sandbox_approval_bind_t;


extern ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_approval_scripts[];


/* init_process (or postconfiguration): compute the scripts' SHA-1s */
ngx_int_t ngx_http_veto_sandbox_approval_init(void);

/* "apr_" + 32 hex digits from RAND_bytes(); id must hold ID_LEN bytes */
ngx_int_t ngx_http_veto_sandbox_approval_id(u_char *id);
ngx_uint_t ngx_http_veto_sandbox_approval_id_valid(ngx_str_t *id);

/*
 * Key names: veto:{<tenant>}:appr:<id>, veto:{<tenant>}:appr:<id>:rv and
 * veto:{<tenant>}:appr:idx.  Returns NGX_DECLINED when tenant or id is
 * not a valid key part.
 */
ngx_int_t ngx_http_veto_sandbox_approval_keys(ngx_pool_t *pool,
    ngx_str_t *tenant, ngx_str_t *id, ngx_str_t *rec, ngx_str_t *rv,
    ngx_str_t *idx);

/*
 * Script calls.  Each builds the keys and arguments documented for its
 * script and calls ngx_http_veto_sandbox_redis_eval(); the handler gets
 * the raw reply, to be read with ngx_http_veto_sandbox_approval_result().
 * NGX_DECLINED: an argument is not a valid key part (refuse the request).
 */
ngx_int_t ngx_http_veto_sandbox_approval_create(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *id,
    ngx_http_veto_sandbox_approval_bind_t *bind, ngx_str_t *summary,
    ngx_msec_t ttl, ngx_uint_t threshold, ngx_msec_t retention,
    ngx_uint_t max, ngx_uint_t agent_max);

/* the open (pending) requests one agent may hold when its policy does
 * not say (approvals.max_open_per_agent): a quarter of the tenant's
 * records, at least 1 */
ngx_uint_t ngx_http_veto_sandbox_approval_agent_max(ngx_uint_t tenant_max);

ngx_int_t ngx_http_veto_sandbox_approval_decide(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *id, ngx_str_t *reviewer, ngx_uint_t approve,
    ngx_str_t *reason);

ngx_int_t ngx_http_veto_sandbox_approval_consume(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *id,
    ngx_http_veto_sandbox_approval_bind_t *bind);

ngx_int_t ngx_http_veto_sandbox_approval_expire(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *id, ngx_uint_t force);

ngx_int_t ngx_http_veto_sandbox_approval_get(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *id);

/*
 * state: empty for any; limit: at most this many records, newest first,
 * older than cursor ("<created_ms>:<id>", empty: from the newest); the
 * page also ends at NGX_HTTP_VSB_APPROVAL_LIST_BYTES of summaries.  The
 * reply's sixth element is the next page's cursor ("": none).
 */
ngx_int_t ngx_http_veto_sandbox_approval_list(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *state, ngx_uint_t limit, ngx_str_t *cursor);

/* "<created_ms>:apr_<32 hex>": a cursor the list script takes */
ngx_uint_t ngx_http_veto_sandbox_approval_cursor_valid(ngx_str_t *cursor);

/* Reads the code/state/flag head of any approval script reply. */
void ngx_http_veto_sandbox_approval_result(redisReply *reply,
    ngx_http_veto_sandbox_approval_result_t *res);

#endif /* _NGX_HTTP_VSB_APPROVAL_H_INCLUDED_ */
