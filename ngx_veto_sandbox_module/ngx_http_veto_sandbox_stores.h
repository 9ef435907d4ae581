/*
 * The module's floor 3 of 5, stores: what is kept (Redis stores, shared
 * zones) and the pure policy: what a rule, a key, a token says
 *
 * Each file of this floor includes this header and no other floor's;
 * it uses only what its own floor and the floors below offer (this
 * header includes ngx_http_veto_sandbox_transport.h), never a higher
 * floor's, and no two files use each other (scripts/check-floors).
 * Its files, and the functions each offers the floors above:
 *
 *   _env.c        a request's env: the policy's inert names (the rest
 *                 dangerous), the helper's and the policy's rules
 *   _jwt.c        token verification, alg pinned by key; the claims
 *   _jws.c        the signature, checked with the key decoded at load
 *   _jwt_cache.c  shared memory cache of verified tokens
 *   _keys.c       key loading: PEM, HMAC secret, JWKS (RSA, EC P-256);
 *                 the algorithm names a key or a token header gives
 *   _policy.c     the policy file, read at configuration time
 *   _policy_approvals.c  its rules' "approvals" and "quotas" objects
 *   _policy_strings.c  its lists of strings (env names, argv patterns,
 *                 profiles)
 *   _policy_match.c  what the policy says of a request
 *   _network.c    the policy's network section: allowlist entries, the
 *                 ceiling and askable hosts, and what an exec's record
 *                 keeps of its attempts (an approval's hosts: _summary.c)
 *   _approval.c, _quota.c, _revoke.c, _audit.c: the stores in Redis
 *   _snap_route.c  the snapshots' routing records in Redis (hosts)
 *   _jwt_thread.c  signatures checked in a thread pool
 *                 (veto_sandbox_jwt_thread_pool)
 */

#ifndef _NGX_HTTP_VSB_STORES_H_INCLUDED_
#define _NGX_HTTP_VSB_STORES_H_INCLUDED_


#include "ngx_http_veto_sandbox_transport.h"


/* _jwt.c: NGX_OK with ctx identity set, or NGX_DECLINED with *reason;
 * NGX_AGAIN (only when may_wait): a thread checks the signature, and its
 * completion sets ctx->jwt_done and runs r's write event handler. */
ngx_int_t ngx_http_veto_sandbox_jwt_verify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *token,
    ngx_http_veto_sandbox_ctx_t *ctx, const char **reason,
    ngx_uint_t may_wait);
ngx_int_t ngx_http_veto_sandbox_jwt_init_conf(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *vscf);

/* _jwt_thread.c: veto_sandbox_jwt_thread_pool */
char *ngx_http_veto_sandbox_jwt_thread_pool(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);

/* _jws.c: NGX_OK, NGX_DECLINED (not key's signature) or NGX_ERROR. */
ngx_int_t ngx_http_veto_sandbox_jws_verify(ngx_http_veto_sandbox_key_t *key,
    u_char *in, size_t in_len, u_char *sig_b64, size_t sig_b64_len);
ngx_int_t ngx_http_veto_sandbox_jws_decode(ngx_http_veto_sandbox_key_t *key,
    u_char *sig_b64, size_t sig_b64_len, u_char *sig, size_t *sig_len);
ngx_int_t ngx_http_veto_sandbox_jws_check(ngx_http_veto_sandbox_key_t *key,
    struct evp_pkey_ctx_st *pctx, u_char *in, size_t in_len, u_char *sig,
    size_t sig_len);
#if (NGX_THREADS)
struct evp_pkey_ctx_st *ngx_http_veto_sandbox_jws_thread_pctx(
    ngx_http_veto_sandbox_key_t *key, ngx_log_t *log);
#endif

/* _keys.c: config time only. */
char *ngx_http_veto_sandbox_keys_pem(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *kid, ngx_str_t *alg, ngx_str_t *file);
char *ngx_http_veto_sandbox_keys_jwks(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *file);

/* _keys.c: an algorithm's name ("RS256": a key's, a token header's) as
 * NGX_HTTP_VSB_ALG_*; "none" and unknown names NGX_HTTP_VSB_ALG_INVAL */
ngx_int_t ngx_http_veto_sandbox_key_alg(ngx_str_t *name);

/* _keys.c: a new verify context of key->pkey (any thread), or NULL */
struct evp_pkey_ctx_st *ngx_http_veto_sandbox_key_verify_ctx(
    ngx_http_veto_sandbox_key_t *key);

/* _jwt_cache.c */
char *ngx_http_veto_sandbox_cache_zone(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *value);
ngx_int_t ngx_http_veto_sandbox_cache_get(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_cache_put(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t until);

/* _policy.c: the names of the limits, by NGX_HTTP_VSB_L_* */
extern const char  *ngx_http_veto_sandbox_limit_names[NGX_HTTP_VSB_NLIMITS];

/* _policy.c: ops is the op table (ngx_http_veto_sandbox_ops): its rows
 * with an approval kind are the actions the policy can name */
ngx_http_veto_sandbox_policy_t *ngx_http_veto_sandbox_policy_load(
    ngx_conf_t *cf, ngx_str_t *file, ngx_http_veto_sandbox_op_t *ops);

/* _policy_strings.c: a JSON array of non-empty strings as an ngx_str_t
 * array; NULL: not one, or no memory */
ngx_array_t *ngx_http_veto_sandbox_policy_strings(ngx_conf_t *cf,
    json_t *v);

/* _policy_approvals.c: a rule's "approvals" and "quotas" */
/* the NGX_HTTP_VSB_ACT_* kind of an action approvals.always can name:
 * the row of that name's in the op table ops, 0 for a row without one */
ngx_uint_t ngx_http_veto_sandbox_policy_action(
    ngx_http_veto_sandbox_op_t *ops, ngx_str_t *name);
ngx_int_t ngx_http_veto_sandbox_policy_approvals(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *obj,
    ngx_http_veto_sandbox_apr_rule_t *apr, ngx_http_veto_sandbox_op_t *ops);
ngx_int_t ngx_http_veto_sandbox_policy_quotas(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *obj,
    ngx_http_veto_sandbox_quota_rule_t *q, ngx_uint_t agent);

/* _policy_match.c */
ngx_http_veto_sandbox_rule_t *ngx_http_veto_sandbox_policy_rule(
    ngx_http_veto_sandbox_policy_t *policy, ngx_str_t *tenant,
    ngx_str_t *agent);
ngx_int_t ngx_http_veto_sandbox_policy_profile(
    ngx_http_veto_sandbox_rule_t *rule, const char *profile);
uint64_t ngx_http_veto_sandbox_policy_max_ceiling(
    ngx_http_veto_sandbox_policy_t *policy, ngx_uint_t limit);
ngx_uint_t ngx_http_veto_sandbox_policy_approval(
    ngx_http_veto_sandbox_rule_t *rule, ngx_uint_t action, json_t *argv,
    const char *profile, const char *network, json_t *env);
/* an env name that can change what runs: every name but the inert ones
 * (the rule's "env.inert" or the default list, "env.also_inert"), and
 * always the rule's "env.dangerous" */
ngx_uint_t ngx_http_veto_sandbox_policy_env_dangerous(
    ngx_http_veto_sandbox_rule_t *rule, const char *name);
/* the first dangerous name of env (an object), or NULL */
const char *ngx_http_veto_sandbox_policy_env_first(
    ngx_http_veto_sandbox_rule_t *rule, json_t *env);
/* why a request cannot be undone (network egress, file export, what the
 * policy marks "irreversible"), or NULL */
const char *ngx_http_veto_sandbox_policy_irreversible(
    ngx_http_veto_sandbox_rule_t *rule, ngx_uint_t action, json_t *argv,
    const char *network);

/* _keys.c: a whole file, NUL terminated (config time) */
u_char *ngx_http_veto_sandbox_read_file(ngx_conf_t *cf, ngx_str_t *file,
    size_t *len);

/* _env.c: a request's env, by the helper's rules: NGX_DECLINED, else the
 * 400 or 413 sent */
ngx_int_t ngx_http_veto_sandbox_env_valid(ngx_http_request_t *r,
    json_t *env);
/* by the policy's: the first name it refuses, detail (NUL terminated)
 * saying why; NULL: none */
const char *ngx_http_veto_sandbox_env_refused(
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *env, u_char *detail,
    size_t size);
/* the env view of env (over base) by the caller's rule's dangerous names
 * (ngx_http_veto_sandbox_summary.h): for records */
json_t *ngx_http_veto_sandbox_env_view_of(ngx_pool_t *pool,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *base, json_t *env,
    ngx_uint_t *dropped);
/* the env that will apply, whole, and its flagged names: for reviewers */
json_t *ngx_http_veto_sandbox_env_review_of(ngx_http_veto_sandbox_ctx_t *ctx,
    json_t *base, json_t *env, json_t **flagged);


/* _snap_route.c: which host holds a snapshot (veto:{T}:snap:route:<snap>);
 * the redis_command() contract, or NGX_DECLINED (a bad key part) */
ngx_int_t ngx_http_veto_sandbox_snap_route_init(void);
ngx_int_t ngx_http_veto_sandbox_snap_route_keep(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *snap, ngx_str_t *agent, ngx_str_t *gateway, time_t at);
ngx_int_t ngx_http_veto_sandbox_snap_route_drop(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *snap);


#endif /* _NGX_HTTP_VSB_STORES_H_INCLUDED_ */
