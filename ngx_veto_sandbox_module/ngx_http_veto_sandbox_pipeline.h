/*
 * The module's floor 4 of 5, pipeline: a request's way: identity, the
 * gate (revocation, quota, approval, placement), the helper call, the
 * record, the reply.
 *
 * Bottom up, each file using only those before it: stream, record, wait,
 * fence, peer, audit_age, ended, hosts, where, notify, gate_approval,
 * gate, lifetime, reply; identity stands apart, and the request builders
 * use only record of them.  wait: a request waiting for Redis, and the
 * refusals every step shares; gate: the step sequencer, which no step
 * calls (a step's reply comes back through the handler the gate gives
 * it).
 *
 * Each file of this floor includes this header and no other floor's;
 * it uses only what its own floor and the floors below offer (this
 * header includes ngx_http_veto_sandbox_stores.h), never a higher
 * floor's, and no two files use each other (scripts/check-floors).
 * Its files, and the functions each offers the floors above:
 *
 *   _identity.c   the Authorization header, the token's rule and scopes;
 *                 the POST_READ check
 *   _reply.c      forwarding to the helper and mapping its reply
 *   _stream.c     streamed replies: helper events out as they come
 *                 (chunked, flushed, the helper paused while the client
 *                 is slow), ndjson lines, a client gone on record
 *   _request.c    request bodies and queries: validation, helper requests
 *   _request_profile.c  a create's profile refused: by the policy (403
 *                 or 404), by the helper (404, 409 profile_unavailable)
 *   _request_fields.c  the 400 naming a field or query argument, the
 *                 helper's header bound (413), the policy's limits, the
 *                 env's check (a refusal on record)
 *   _request_network.c  their network part: create's hosts and
 *                 credentials, PATCH's hosts, credentials and secret
 *   _request_lifetime.c  PATCH's lifetime part (ttl_s, idle_s)
 *   _lifetime.c   Redis follows a changed lifetime (the quota slot and
 *                 ownership record's expiry); ENDED records as shown
 *   _ended.c      ends the gateway did not ask for: polls the helper's
 *                 ENDED records, frees quota slots and ownership
 *                 records, puts each end on the audit stream (once)
 *   _audit_age.c  the audit's age bound (veto_sandbox_audit_max_age)
 *   _gate.c       the Redis gate, the steps in order: revocation,
 *                 where (routing), quotas, approvals, then the op
 *   _gate_approval.c  the gate's approval step: the sandbox's env it
 *                 binds, the hash and summary, consume or create, 202
 *   _wait.c       a request waiting for Redis (the call, its cancel,
 *                 the resume), the 503 of a Redis that cannot decide,
 *                 a step's refusal on record: what every step shares
 *   _record.c     what is kept of a decision: audit records, quota slots
 *   _hosts.c      several gateway hosts: this host's boot epoch and lease
 *                 (address, load), a lost host's sandboxes ended
 *   _where.c      where a request's sandbox is (421, 503, routed), where
 *                 a create goes
 *   _fence.c      the epoch fence: the helper run the ownership record
 *                 names, sent along; one re-read and retry on a mismatch
 *   _peer.c       routing to the host that holds a sandbox: the balancer,
 *                 the sender's redirect, the receiver's check;
 *                 $veto_peer_credential, the error filter's hook
 *   _notify.c     webhooks: directives, the gate's hook, counters
 */

#ifndef _NGX_HTTP_VSB_PIPELINE_H_INCLUDED_
#define _NGX_HTTP_VSB_PIPELINE_H_INCLUDED_


#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_notify.h"


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

/* _request.c: builders (ngx_http_veto_sandbox_build_pt) */
ngx_int_t ngx_http_veto_sandbox_build_simple(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_nothing(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
json_t *ngx_http_veto_sandbox_read_json(ngx_http_request_t *r,
    ngx_int_t *rc);
/* the helper request of ctx->op: "op", the caller, "id" when named */
json_t *ngx_http_veto_sandbox_req(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
/* a request's timeout as the helper will apply it, for the read timeout
 * of an op that waits for a workload: the policy's ceiling, or a day */
ngx_msec_t ngx_http_veto_sandbox_wait_ms(ngx_http_veto_sandbox_ctx_t *ctx);

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
/* the policy's ceiling of limit as the helper request's caps.<name>: what
 * the request leaves to the helper is at most it (none: nothing set) */
ngx_int_t ngx_http_veto_sandbox_cap(json_t *req,
    ngx_http_veto_sandbox_rule_t *rule, ngx_uint_t limit);
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
 * none; else *rc is build()'s answer) */
ngx_int_t ngx_http_veto_sandbox_build_lifetime(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, ngx_int_t *rc);

/* _lifetime.c: Redis follows a changed lifetime (the quota slot and the
 * ownership record expire at expires_at: bookkeeping, a failure is
 * logged); an ENDED record as the API shows it */
void ngx_http_veto_sandbox_lifetime_extend(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_int_t expires_at);
void ngx_http_veto_sandbox_ended_view(json_t *sb);
ngx_int_t ngx_http_veto_sandbox_lifetime_init(void);

/* _ended.c: the worker that polls the helpers' ENDED records */
ngx_int_t ngx_http_veto_sandbox_ended_init_process(ngx_cycle_t *cycle);
void ngx_http_veto_sandbox_ended_exit_process(ngx_cycle_t *cycle);
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

/* _audit_age.c: the audit's age bound, on _ended.c's timer */
ngx_int_t ngx_http_veto_sandbox_audit_age_init(ngx_cycle_t *cycle,
    ngx_http_veto_sandbox_main_conf_t *vmcf);
ngx_msec_t ngx_http_veto_sandbox_audit_age_every(
    ngx_http_veto_sandbox_main_conf_t *vmcf);
void ngx_http_veto_sandbox_audit_age_tick(ngx_log_t *log);

/* _request_network.c: the hosts and credentials of a create; PATCH's
 * network parts (PATCH's builder is _sandboxes.c's): host entries checked
 * against the policy (NGX_OK, or NGX_ABORT with *rc the answer),
 * credentials attached or detached, an agent's secret (build()'s
 * answer) */
ngx_int_t ngx_http_veto_sandbox_create_network(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_int_t *rc);
ngx_int_t ngx_http_veto_sandbox_network_entries(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *list, const char *field,
    ngx_int_t *rc);
ngx_int_t ngx_http_veto_sandbox_build_attach(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *v);
ngx_int_t ngx_http_veto_sandbox_build_secret(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *v);

/* _reply.c: run() of the helper ops, and the mappers
 * (ngx_http_veto_sandbox_map_pt) */
ngx_int_t ngx_http_veto_sandbox_forward(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_json(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

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

/* _gate.c */
ngx_int_t ngx_http_veto_sandbox_gate(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next);

/* _wait.c: a request that waits for Redis (the call, its cancel; the
 * resume is _problem.c's) and the refusals every step answers */
ngx_int_t ngx_http_veto_sandbox_redis_problem(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc);
ngx_int_t ngx_http_veto_sandbox_redis_replied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply, ngx_int_t *rc);
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

/* _notify.c: the gate's hook: the approval ctx->approval was just
 * created and expires at expires (unix seconds); queues one delivery per
 * webhook of r's server; never fails r (what goes wrong is logged and
 * counted) */
void ngx_http_veto_sandbox_notify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t expires);
/* the counters, for metrics; NULL when no webhook is configured */
ngx_http_veto_sandbox_notify_counters_t *
    ngx_http_veto_sandbox_notify_counters(void);
extern ngx_module_t  ngx_http_veto_sandbox_notify_module;

/* _gate_approval.c: the refusal of a Veto-Approval that is not approved
 * (not_approved): approval_pending, approval_denied (with the reviewer's
 * reason), approval_used, approval_expired */
ngx_int_t ngx_http_veto_sandbox_gate_not_approved(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_approval_result_t *ar);

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

/* _record.c: records (ngx_http_veto_sandbox_record_pt) and the audit */
/* call set up for Redis bookkeeping nobody waits for: a failure is
 * logged, naming what */
void ngx_http_veto_sandbox_bookkeeping_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_redis_call_t *call, const char *what);
/* a create's record detail as text: what the sandbox was given, its
 * env's names (and what a reviewer sees of the values), credentials */
void ngx_http_veto_sandbox_create_detail(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *j, ngx_str_t *out);
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
/* with several hosts, a snapshot this host's helper holds (id): its
 * routing record kept until at least at (its expiry, a fork's), or
 * dropped (at NULL: deleted) */
void ngx_http_veto_sandbox_record_snapshot_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *id, json_t *at);
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


#endif /* _NGX_HTTP_VSB_PIPELINE_H_INCLUDED_ */
