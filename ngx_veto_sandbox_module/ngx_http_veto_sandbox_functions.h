/*
 * Veto Sandbox: the functions each module file offers the others, by
 * file.  Part of ngx_http_veto_sandbox_module.h, which includes it at its
 * end (the types and the op table are there): include that one.
 */

#ifndef _NGX_HTTP_VSB_FUNCTIONS_H_INCLUDED_
#define _NGX_HTTP_VSB_FUNCTIONS_H_INCLUDED_


/* _ctx.c */
ngx_http_veto_sandbox_ctx_t *ngx_http_veto_sandbox_get_ctx(
    ngx_http_request_t *r);
/* ctx->in from r, its body as read so far */
void ngx_http_veto_sandbox_input_rest(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_protected(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf);
ngx_int_t ngx_http_veto_sandbox_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_veto_sandbox_request_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_uint_t ngx_http_veto_sandbox_id_valid(u_char *id, size_t len);

/* _identity.c */
/* how the identity phase finds r's op row (a public op needs no token):
 * the router's lookup, set at configuration (_op_route.c); NULL: none,
 * every request needs a token */
extern ngx_http_veto_sandbox_op_find_pt  ngx_http_veto_sandbox_identity_op_find;
ngx_int_t ngx_http_veto_sandbox_identify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t may_wait);
ngx_int_t ngx_http_veto_sandbox_scope_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_identity_init(ngx_conf_t *cf);

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

/* _helper.c */
ngx_int_t ngx_http_veto_sandbox_helper_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, ngx_chain_t *payload,
    size_t payload_len, ngx_http_veto_sandbox_reply_pt handler);
/* reading again after an event handler said NGX_AGAIN */
void ngx_http_veto_sandbox_helper_resume(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
/* the connection closed now (the helper cancels a foreground exec) */
void ngx_http_veto_sandbox_helper_close(ngx_http_veto_sandbox_ctx_t *ctx);
/* another exchange in the same request: its reply read from scratch */
void ngx_http_veto_sandbox_helper_reset(ngx_http_veto_sandbox_helper_t *h);
/* what a higher floor hears of each exchange (the epoch fence sets them
 * at configuration; NULL: nobody listens): send() before a request goes
 * out, which may add to it (NGX_ERROR: it is not sent); done() once the
 * exchange is over (after metrics, before h->handler): NGX_OK when it
 * took the request over (h->handler is called later, once), else
 * NGX_DECLINED */
typedef struct {
    ngx_int_t                  (*send)(ngx_http_veto_sandbox_ctx_t *ctx,
                                       json_t *req);
    ngx_int_t                  (*done)(ngx_http_request_t *r,
                                       ngx_http_veto_sandbox_ctx_t *ctx);
} ngx_http_veto_sandbox_helper_hooks_t;
extern ngx_http_veto_sandbox_helper_hooks_t ngx_http_veto_sandbox_helper_hooks;

/* _pipe.c: quick requests pipelined on one connection per worker; the
 * exchange's end (status NGX_OK: the reply is in ctx->helper) goes to
 * the done() its sender gave */
typedef void (*ngx_http_veto_sandbox_pipe_done_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t status, const char *error);
ngx_int_t ngx_http_veto_sandbox_pipe_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, size_t payload_len,
    ngx_http_veto_sandbox_pipe_done_pt done);
void ngx_http_veto_sandbox_pipe_forget(ngx_http_veto_sandbox_helper_t *h);

/* _api.c */
ngx_int_t ngx_http_veto_sandbox_api_handler(ngx_http_request_t *r);

/* _directives.c: the handlers _module.c's command table names */
char *ngx_http_veto_sandbox_api(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_helper(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_jwt_keys(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_jwt_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_policy(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_scope(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _ops.c: the rows, ended by one whose name is empty */
extern ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_ops[];

/* _op_route.c */

/* the op of r's method and URI; NULL with *allow the methods its URI
 * takes (empty: no such resource); ids set the {id}, {approval} found */
ngx_http_veto_sandbox_op_t *ngx_http_veto_sandbox_op_find(
    ngx_http_request_t *r, ngx_uint_t *allow, ngx_str_t *sandbox,
    ngx_str_t *approval);
ngx_int_t ngx_http_veto_sandbox_ops_init(ngx_conf_t *cf);
/* the op of a method and a decoded URI, as op_find(), and its {exec} */
ngx_http_veto_sandbox_op_t *ngx_http_veto_sandbox_op_route(
    ngx_uint_t method, ngx_str_t *uri, ngx_uint_t *allow, ngx_str_t *sandbox,
    ngx_str_t *approval, ngx_str_t *exec);
/* build, gate, run ctx->op on ctx->in: NGX_DONE when a reply will
 * finalize r, else the code to finalize it with */
ngx_int_t ngx_http_veto_sandbox_op_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _redis_conf.c: veto_sandbox_redis*, veto_sandbox_host */
char *ngx_http_veto_sandbox_redis(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_redis_str(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_redis_sentinel(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_redis_wait(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_host(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _mcp.c: the MCP endpoint, "/v1/mcp" when veto_sandbox_mcp is on */
ngx_int_t ngx_http_veto_sandbox_mcp_uri(ngx_http_request_t *r);
ngx_int_t ngx_http_veto_sandbox_mcp_handler(ngx_http_request_t *r);
char *ngx_http_veto_sandbox_mcp_merge(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *prev,
    ngx_http_veto_sandbox_srv_conf_t *conf);

/* _mcp_session.c: "veto_sandbox_mcp_sessions zone=name:size ..." */
char *ngx_http_veto_sandbox_mcp_sessions(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _mcp_meta.c */
/* ", resource_metadata=\"URL\"" for a challenge on the MCP endpoint,
 * empty elsewhere; NULL: no memory */
u_char *ngx_http_veto_sandbox_mcp_challenge(ngx_http_request_t *r);
/* may a browser page of this Origin use the MCP endpoint? */
ngx_uint_t ngx_http_veto_sandbox_mcp_origin_allowed(ngx_http_request_t *r,
    ngx_str_t *origin);
char *ngx_http_veto_sandbox_mcp_metadata(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_mcp_resource(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _request.c: builders (ngx_http_veto_sandbox_build_pt) */
ngx_int_t ngx_http_veto_sandbox_build_simple(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_health(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_read(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_write(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_nothing(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
json_t *ngx_http_veto_sandbox_read_json(ngx_http_request_t *r,
    ngx_int_t *rc);
/* the helper request of ctx->op: "op", the caller, "id" when named */
json_t *ngx_http_veto_sandbox_req(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
/* a path the helper will take ("src/a.c", "/workspace/src/a.c"; with
 * workspace, also the workspace itself): NGX_DECLINED, or the 400 sent */
ngx_int_t ngx_http_veto_sandbox_path_check(ngx_http_request_t *r,
    const char *field, ngx_str_t *path, ngx_uint_t workspace);
/* a request's timeout as the helper will apply it, for the read timeout
 * of an op that waits for a workload: the policy's ceiling, or a day */
ngx_msec_t ngx_http_veto_sandbox_wait_ms(ngx_http_veto_sandbox_ctx_t *ctx);

/* _request_create.c: sandbox.create's builder */
ngx_int_t ngx_http_veto_sandbox_build_create(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _request_profile.c */
/* a create's profile the policy does not allow: 403, or 404
 * unknown_profile when the helper has no such profile (asked: NGX_DONE) */
ngx_int_t ngx_http_veto_sandbox_profile_refused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *name);
/* the helper has no profile of that name: 404 unknown_profile */
ngx_int_t ngx_http_veto_sandbox_profile_missing(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
/* the helper answered profile_unavailable to a create: 409 */
ngx_int_t ngx_http_veto_sandbox_profile_unavailable(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _request_fields.c: the builders' field checks and refusals */
/* 422: limit i asked above its policy ceiling (on record) */
ngx_int_t ngx_http_veto_sandbox_over(ngx_http_request_t *r, ngx_uint_t i,
    uint64_t asked, uint64_t ceiling);
/* 400 naming the query argument at fault (ngx_http_veto_sandbox_hash_
 * query_args()) */
ngx_int_t ngx_http_veto_sandbox_bad_query(ngx_http_request_t *r,
    ngx_str_t *at, const char *why);
/* ttl_s, idle_s, timeout_s: the body's or the policy's default, within
 * the ceilings, into req; NGX_ABORT with *rc the refusal */
ngx_int_t ngx_http_veto_sandbox_limited(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_uint_t limit, uint64_t *n, ngx_int_t *rc);
/* 400 naming the field */
ngx_int_t ngx_http_veto_sandbox_bad_field(ngx_http_request_t *r,
    const char *code, const char *field, const char *detail);
/* the policy said no: $veto_decision, the audit record, the problem */
ngx_int_t ngx_http_veto_sandbox_policy_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *decision,
    ngx_uint_t status, const char *code, const char *detail, json_t *extra);
/* a request's env, checked before the gate (builders call it): the
 * helper's rules and the policy's (_env.c); NGX_DECLINED: fine, else the
 * refusal's code (a policy's refusal on record) */
ngx_int_t ngx_http_veto_sandbox_env_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *env);
/* the name of names an unknown field most likely meant (an alias, or
 * within 2 edits), or NULL */
const char *ngx_http_veto_sandbox_field_suggest(const char *key,
    const char **names);
/* req within the helper's request header bound: NGX_OK, or NGX_ABORT
 * with *rc the 413 */
ngx_int_t ngx_http_veto_sandbox_fits(ngx_http_request_t *r, json_t *req,
    ngx_int_t *rc);
/* a positive integer into *v; NGX_DECLINED if j is NULL, else NGX_ERROR */
ngx_int_t ngx_http_veto_sandbox_uint(json_t *j, uint64_t *v);
/* every key of body is one of names (NULL ended): NGX_OK, or NGX_ABORT
 * with *rc the 400 naming the field and the one it likely meant */
ngx_int_t ngx_http_veto_sandbox_known_fields(ngx_http_request_t *r,
    json_t *body, const char **names, ngx_int_t *rc);
/* the types copy_field() takes */
enum {
    NGX_HTTP_VSB_FIELD_STRING = 0,
    NGX_HTTP_VSB_FIELD_OBJECT,
    NGX_HTTP_VSB_FIELD_STRINGS          /* an object of strings */
};
/* body's optional field name into req when it has the type: NGX_OK, or
 * NGX_ABORT with *rc the 400 */
ngx_int_t ngx_http_veto_sandbox_copy_field(ngx_http_request_t *r,
    json_t *body, json_t *req, const char *name, ngx_uint_t type,
    ngx_int_t *rc);

/* _request_lifetime.c: PATCH's lifetime (NGX_DECLINED: the body changes
 * none; else *rc is build()'s answer), the list's builder */
ngx_int_t ngx_http_veto_sandbox_build_lifetime(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, ngx_int_t *rc);
ngx_int_t ngx_http_veto_sandbox_build_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _lifetime.c: PATCH's record, the list and ENDED records as shown */
void ngx_http_veto_sandbox_record_update(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
ngx_int_t ngx_http_veto_sandbox_reply_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_ended_view(json_t *sb);
ngx_int_t ngx_http_veto_sandbox_lifetime_init(void);

/* _ended.c: the worker that polls the helpers' ENDED records */
ngx_int_t ngx_http_veto_sandbox_ended_init_process(ngx_cycle_t *cycle);
ngx_int_t ngx_http_veto_sandbox_ended_load(ngx_uint_t *live,
    ngx_uint_t *max);

/* _hosts.c: this host's lease, a lost host's reaping */
#define NGX_HTTP_VSB_HOSTS_KEY  NGX_HTTP_VSB_KEY_PREFIX "{:hosts}:"
ngx_int_t ngx_http_veto_sandbox_hosts_init_process(ngx_cycle_t *cycle);
void ngx_http_veto_sandbox_hosts_exit_process(ngx_cycle_t *cycle);
ngx_int_t ngx_http_veto_sandbox_hosts_key(ngx_pool_t *pool, ngx_str_t *key,
    const char *what, ngx_str_t *name);
/* _fence.c: the helper run a sandbox's ownership record names */
ngx_int_t ngx_http_veto_sandbox_fence_set(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
/* to = s when s is a helper epoch (else to stays empty) */
ngx_int_t ngx_http_veto_sandbox_fence_epoch(ngx_http_request_t *r,
    ngx_str_t *to, const char *s, size_t len);
/* postconfiguration: the helper client's hooks (epoch out, mismatch in) */
ngx_int_t ngx_http_veto_sandbox_fence_init(ngx_conf_t *cf);
ngx_int_t ngx_http_veto_sandbox_fence_copy(ngx_http_request_t *r,
    ngx_str_t *to, const char *s, size_t len);

/* _where.c: a sandbox's owner, a create's place */
ngx_int_t ngx_http_veto_sandbox_where_init_process(ngx_cycle_t *cycle);
ngx_int_t ngx_http_veto_sandbox_where_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_redis_call_t *call);
ngx_int_t ngx_http_veto_sandbox_where_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
json_t *ngx_http_veto_sandbox_where_ended(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


/* _peer_cred.c: the inter-gateway credential */
#define NGX_HTTP_VSB_PEER_CRED_MAX  512

typedef struct {
    ngx_str_t                    host;
    ngx_str_t                    time;
    ngx_str_t                    nonce;
    ngx_str_t                    body;
    ngx_str_t                    slot;          /* optional: a create's */
    ngx_str_t                    epoch;         /* optional: the owner's
                                                   helper run */
    ngx_str_t                    sig;
    int64_t                      ms;
} ngx_http_veto_sandbox_peer_cred_t;

ngx_int_t ngx_http_veto_sandbox_peer_cred_parse(u_char *p, size_t len,
    ngx_http_veto_sandbox_peer_cred_t *cred);
ngx_int_t ngx_http_veto_sandbox_peer_cred_sign(ngx_pool_t *pool,
    ngx_str_t *key, ngx_http_veto_sandbox_peer_cred_t *cred,
    ngx_str_t *method, ngx_str_t *uri, ngx_str_t *tenant, ngx_str_t *agent,
    ngx_str_t *jti, u_char *out);
ngx_int_t ngx_http_veto_sandbox_peer_cred_check(ngx_pool_t *pool,
    ngx_str_t *key, ngx_http_veto_sandbox_peer_cred_t *cred,
    ngx_str_t *method, ngx_str_t *uri, ngx_str_t *tenant, ngx_str_t *agent,
    ngx_str_t *jti);

/* _peer.c: routing to the host that holds a sandbox */
char *ngx_http_veto_sandbox_peer_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_peer_pass(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_peers(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
/* preconfiguration: $veto_peer_credential, the problem filter's hook */
ngx_int_t ngx_http_veto_sandbox_peer_preconfiguration(ngx_conf_t *cf);
ngx_int_t ngx_http_veto_sandbox_peer_plan(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, u_char *addr, size_t len);
ngx_int_t ngx_http_veto_sandbox_peer_forward(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_peer_receive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_peer_nonce(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_redis_call_t *call);
ngx_int_t ngx_http_veto_sandbox_peer_nonce_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
/* _keys.c: a whole file, NUL terminated (config time) */
u_char *ngx_http_veto_sandbox_read_file(ngx_conf_t *cf, ngx_str_t *file,
    size_t *len);
void ngx_http_veto_sandbox_ended_exit_process(ngx_cycle_t *cycle);

/* _audit_age.c: the audit's age bound, on _ended.c's timer */
ngx_int_t ngx_http_veto_sandbox_audit_age_init(ngx_cycle_t *cycle,
    ngx_http_veto_sandbox_main_conf_t *vmcf);
ngx_msec_t ngx_http_veto_sandbox_audit_age_every(
    ngx_http_veto_sandbox_main_conf_t *vmcf);
void ngx_http_veto_sandbox_audit_age_tick(ngx_log_t *log);

/* _request_network.c: the hosts of a create, and PATCH's builder */
ngx_int_t ngx_http_veto_sandbox_create_network(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_int_t *rc);
ngx_int_t ngx_http_veto_sandbox_build_update(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _reply.c: run() of the helper ops, and the mappers
 * (ngx_http_veto_sandbox_map_pt) */
ngx_int_t ngx_http_veto_sandbox_forward(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_health_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_health(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_json(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_sandbox(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_file(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

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

/* _epoch.c: asks the helper its epoch (ctx->epoch), then next() */
ngx_int_t ngx_http_veto_sandbox_epoch(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next);
/* _stream.c: a streamed reply (ctx->stream) */
ngx_int_t ngx_http_veto_sandbox_stream_ndjson(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_stream_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_stream_follow(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_stream_export(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *type,
    const char *encoding);
ngx_int_t ngx_http_veto_sandbox_stream_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
off_t ngx_http_veto_sandbox_stream_sent(ngx_http_veto_sandbox_ctx_t *ctx);
/* an exec's output as MCP progress (_mcp_progress.c): whole UTF-8
 * characters of stream (0 stdout, 1 stderr) from offset; the reply */
typedef ngx_int_t (*ngx_http_veto_sandbox_chunk_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t stream, off_t offset,
    u_char *data, size_t len);
typedef ngx_int_t (*ngx_http_veto_sandbox_stream_end_pt)(
    ngx_http_request_t *r, ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_stream_sse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_chunk_pt chunk,
    ngx_http_veto_sandbox_stream_end_pt end);
ngx_uint_t ngx_http_veto_sandbox_stream_started(
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_chain_t *ngx_http_veto_sandbox_stream_alloc(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, size_t size);
/* out, flushed (and the last chunk when last): NGX_OK, NGX_AGAIN (the
 * helper waits until the client took it), NGX_ERROR (client gone) */
ngx_int_t ngx_http_veto_sandbox_stream_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_chain_t *out, ngx_uint_t last);
/* what was streamed of an exec, for its record (NULL: not streamed) */
json_t *ngx_http_veto_sandbox_stream_detail(ngx_http_veto_sandbox_ctx_t *ctx);

/* _execs.c: builders, mappers and records of the exec rows */
ngx_int_t ngx_http_veto_sandbox_build_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_exec_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_exec_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec_any(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec_state(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_record_exec_any(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_exec_kill(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);

/* _archive.c: builders, mappers and the record of the archive rows */
ngx_int_t ngx_http_veto_sandbox_build_archive_in(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_archive_out(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_archive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_record_archive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
/* Content-Length over the upload's bound: the 413 sent, else
 * NGX_DECLINED */
ngx_int_t ngx_http_veto_sandbox_archive_early(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_archive_too_large(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _gate.c */
ngx_int_t ngx_http_veto_sandbox_gate(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next);

/* _wait.c: a request that waits for Redis (the call, its cancel, the
 * resume) and the refusals every step answers */
ngx_int_t ngx_http_veto_sandbox_redis_problem(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc);
ngx_int_t ngx_http_veto_sandbox_redis_replied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply, ngx_int_t *rc);
void ngx_http_veto_sandbox_resume(ngx_http_request_t *r, ngx_int_t rc);
ngx_int_t ngx_http_veto_sandbox_wait(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_waiting_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_handler_pt handler);
/* for _review.c and _admin.c: a request answered from Redis alone */
ngx_int_t ngx_http_veto_sandbox_answer_start(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_answer_pt answer, const char *detail);
ngx_int_t ngx_http_veto_sandbox_answer_sent(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc);
/* the main conf a step reads, and a refusal decided in a step (on
 * record, answered) */
ngx_http_veto_sandbox_main_conf_t *ngx_http_veto_sandbox_gate_mcf(
    ngx_http_request_t *r);
ngx_int_t ngx_http_veto_sandbox_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t status, const char *code,
    const char *detail, json_t *extra);

/* _gate_approval.c: the approval step (NGX_DECLINED: none needed;
 * NGX_OK: a command in flight on call, made by the gate; else the
 * answer), the sandbox's record it binds (NGX_AGAIN: read), the 202 */
ngx_int_t ngx_http_veto_sandbox_approval_step(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_redis_call_t *call);
ngx_int_t ngx_http_veto_sandbox_sandbox_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
ngx_int_t ngx_http_veto_sandbox_approval_202(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);

/* _review.c: run() of the ops answered from Redis */
ngx_int_t ngx_http_veto_sandbox_review_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_review_get(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_review_approve(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_review_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_review_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _admin.c: the admin API's builders, run()s and record */
ngx_int_t ngx_http_veto_sandbox_admin_build_revoke(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_admin_build_key(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_admin_build_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_admin_revoke(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_admin_revocation(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_admin_unrevoke(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_admin_end(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _metrics.c: the directive, its checks, the log phase count */
char *ngx_http_veto_sandbox_metrics_conf(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_metrics_merge(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *prev,
    ngx_http_veto_sandbox_srv_conf_t *conf);
ngx_int_t ngx_http_veto_sandbox_metrics_init(ngx_conf_t *cf);

/* _openapi.c: GET /v1/openapi.json from the compiled-in document; the
 * document parsed at configuration, for the op table's check (NULL:
 * logged) */
ngx_int_t ngx_http_veto_sandbox_openapi(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
json_t *ngx_http_veto_sandbox_openapi_load(ngx_conf_t *cf);

/* _record.c: records (ngx_http_veto_sandbox_record_pt) and the audit */
void ngx_http_veto_sandbox_record_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_destroyed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
/* an exec's record detail as text; extra (stolen) replaces what the
 * reply's payload would say (a streamed or background exec) */
void ngx_http_veto_sandbox_exec_detail(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *j, json_t *extra,
    ngx_str_t *out);
void ngx_http_veto_sandbox_json_text(ngx_http_request_t *r, json_t *json,
    ngx_str_t *out);
void ngx_http_veto_sandbox_record_allowed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_network(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_nothing(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_after(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *outcome,
    const char *reason, ngx_str_t *reviewer, ngx_str_t *detail,
    ngx_uint_t status);
void ngx_http_veto_sandbox_audit_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status);
void ngx_http_veto_sandbox_release_slot(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _problem.c */
/* type is "urn:veto-sandbox:problem:<code>"; extra (stolen) adds fields */
ngx_int_t ngx_http_veto_sandbox_problem(ngx_http_request_t *r,
    ngx_uint_t status, const char *code, const char *detail,
    json_t *extra);
ngx_int_t ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
/* what deny()'s challenges add for r (", resource_metadata=..." on the
 * MCP endpoint, _mcp_meta.c): set at configuration by the face that has
 * it; NULL: nothing */
extern ngx_http_veto_sandbox_challenge_pt
    ngx_http_veto_sandbox_challenge_extra;
/* the hook deny() records its refusal with (code, status), or NULL */
typedef void (*ngx_http_veto_sandbox_deny_record_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status);
extern ngx_http_veto_sandbox_deny_record_pt  ngx_http_veto_sandbox_deny_record;
ngx_int_t ngx_http_veto_sandbox_header(ngx_http_request_t *r,
    const char *name, const char *value);
/* body is stolen */
ngx_int_t ngx_http_veto_sandbox_send_json(ngx_http_request_t *r,
    ngx_uint_t status, json_t *body);
/* the error filter asks routing (_peer.c sets it at preconfiguration;
 * NULL: nothing is routed): is r routed to its owner's host, and whose
 * answer is this?  NGX_DECLINED: not routed; NGX_OK: the owner's;
 * NGX_ABORT: nginx's own error on the hop, *host the owner, *sent
 * whether the request reached it */
typedef ngx_int_t (*ngx_http_veto_sandbox_routed_failed_pt)(
    ngx_http_request_t *r, ngx_str_t *host, ngx_uint_t *sent);
extern ngx_http_veto_sandbox_routed_failed_pt
    ngx_http_veto_sandbox_routed_failed;

ngx_int_t ngx_http_veto_sandbox_send(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, u_char *data, size_t len);
ngx_int_t ngx_http_veto_sandbox_send_chain(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, ngx_chain_t *out, off_t len);
ngx_int_t ngx_http_veto_sandbox_filter_init(ngx_conf_t *cf);
json_t *ngx_http_veto_sandbox_json_ngx_str(ngx_str_t *s);
void ngx_http_veto_sandbox_json_cleanup(void *data);
u_char *ngx_http_veto_sandbox_json_dump(ngx_pool_t *pool, json_t *j,
    size_t before, size_t after, size_t *len);


#endif /* _NGX_HTTP_VSB_FUNCTIONS_H_INCLUDED_ */
