/*
 * The module's floor 2 of 5, transport: the helper client, the op pipe,
 * Redis (and Sentinel), webhook delivery: moves bytes, knows no policy
 *
 * Each file of this floor includes this header and no other floor's;
 * it uses only what its own floor and the floors below offer (this
 * header includes ngx_http_veto_sandbox_base.h), never a higher
 * floor's, and no two files use each other (scripts/check-floors).
 * Its files, and the functions each offers the floors above:
 *
 *   _epoch.c      which run of its helper this gateway talks to
 *   _heard.c      what this worker last heard from its helper's ping:
 *                 the exec timeout ceiling, the credential bindings
 *   _helper.c     non-blocking client to the helper (frames)
 *   _redis_call.c the Redis call layer: commands, scripts, key names
 *   _redis_conf.c the Redis directives (connection, Sentinel, WAIT,
 *                 credentials) and veto_sandbox_host
 *   _redis.c      the worker's Redis connection
 *   _redis_link.c a hiredis context on nginx's event loop (the
 *                 connection's, the sentinels')
 *   _sentinel.c   the Redis master as Redis Sentinel names it, and its
 *                 failover listeners
 *   _notify_send.c  deliveries: carrier requests, attempts, retries
 *   _pipe.c       quick requests pipelined on one connection per worker
 */

#ifndef _NGX_HTTP_VSB_TRANSPORT_H_INCLUDED_
#define _NGX_HTTP_VSB_TRANSPORT_H_INCLUDED_


#include "ngx_http_veto_sandbox_base.h"


/* _redis.c, _redis_conf.c, _redis_call.c: configuration time */

char *ngx_http_veto_sandbox_redis_parse_addr(ngx_conf_t *cf,
    ngx_str_t *value, ngx_http_veto_sandbox_redis_conf_t *rcf);
void ngx_http_veto_sandbox_redis_conf_init(
    ngx_http_veto_sandbox_redis_conf_t *rcf);
ngx_int_t ngx_http_veto_sandbox_redis_script_init(
    ngx_http_veto_sandbox_redis_script_t *script);
/* every script of a table ended by a NULL name */
ngx_int_t ngx_http_veto_sandbox_redis_scripts_init(
    ngx_http_veto_sandbox_redis_script_t *scripts);
/* the scripts made known so far, NULL-ended: what a new connection loads */
ngx_http_veto_sandbox_redis_script_t **ngx_http_veto_sandbox_redis_scripts(
    void);

/* _redis.c: the worker's connection (init_process / exit_process) */

ngx_http_veto_sandbox_redis_t *ngx_http_veto_sandbox_redis_create(
    ngx_cycle_t *cycle, ngx_http_veto_sandbox_redis_conf_t *rcf);
void ngx_http_veto_sandbox_redis_destroy(ngx_http_veto_sandbox_redis_t *rds);

/* this worker's Redis connection; NULL when no veto_sandbox_redis */
extern ngx_http_veto_sandbox_redis_t  *ngx_http_veto_sandbox_rds;

/* makes it (NGX_ERROR logged), and ends it */
ngx_int_t ngx_http_veto_sandbox_redis_init_worker(ngx_cycle_t *cycle,
    ngx_http_veto_sandbox_redis_conf_t *rcf);
void ngx_http_veto_sandbox_redis_exit_worker(void);

/* _redis_call.c: commands */

/* writes what is queued on the connection now, not on the loop's next
 * turn: for writes the client's next request may read elsewhere */
void ngx_http_veto_sandbox_redis_flush(ngx_http_veto_sandbox_redis_t *rds);

/*
 * Returns NGX_OK when the command is queued: the handler will be called
 * exactly once (or never, after ngx_http_veto_sandbox_redis_cancel()).
 * Returns NGX_HTTP_SERVICE_UNAVAILABLE when Redis is not connected and
 * NGX_ERROR on allocation failure: then the handler is never called.
 * argv is copied; the caller's buffers may go away at once.
 */
ngx_int_t ngx_http_veto_sandbox_redis_command(
    ngx_http_veto_sandbox_redis_call_t *call, int argc, const char **argv,
    const size_t *argvlen);

/* HMGET key and the fields (NULL-ended, at most NGX_HTTP_VSB_HMGET_MAX):
 * the same contract */
#define NGX_HTTP_VSB_HMGET_MAX  8

ngx_int_t ngx_http_veto_sandbox_redis_hmget(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *key,
    const char *const *fields);

/*
 * EVALSHA script->sha1 numkeys argv..., retried once as EVAL with the
 * script text when Redis answers NOSCRIPT.  argv holds the keys first,
 * then the arguments; numkeys says how many keys.  Same contract as
 * ngx_http_veto_sandbox_redis_command().
 */
ngx_int_t ngx_http_veto_sandbox_redis_eval(
    ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_script_t *script, int numkeys, int argc,
    const char **argv, const size_t *argvlen);

/* The same with the keys and arguments as ngx_str_t (at most 16). */
ngx_int_t ngx_http_veto_sandbox_redis_eval_str(
    ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_script_t *script, int numkeys, int argc,
    ngx_str_t *args);

/* An argument printed with ngx_sprintf()'s fmt at p (room the caller
 * made) into *arg; returns the end, where the next one may go. */
u_char *ngx_http_veto_sandbox_redis_arg(ngx_str_t *arg, u_char *p,
    const char *fmt, ...);

/* The handler will not be called; a late reply is dropped. */
void ngx_http_veto_sandbox_redis_cancel(
    ngx_http_veto_sandbox_redis_cmd_t *cmd);

/* For health checks: 1 when connected, authenticated and answering. */
ngx_uint_t ngx_http_veto_sandbox_redis_ready(
    ngx_http_veto_sandbox_redis_t *rds);

/*
 * Redis key components (tenant, agent, ids) are restricted so that a
 * claim can never break out of its key or form a glob pattern: 1..128
 * bytes of printable ASCII without space, ':', '{', '}', '*', '?', '[',
 * ']' or '\'.  Returns 1 when valid.
 */
ngx_uint_t ngx_http_veto_sandbox_redis_key_part_valid(u_char *p, size_t len);

ngx_int_t ngx_http_veto_sandbox_tenant_key(ngx_pool_t *pool, ngx_str_t *key,
    const char *what, ngx_str_t *tenant, ngx_str_t *part);
/* the same, NGX_DECLINED when tenant or part cannot be part of a key */
ngx_int_t ngx_http_veto_sandbox_tenant_key_valid(ngx_pool_t *pool,
    ngx_str_t *key, const char *what, ngx_str_t *tenant, ngx_str_t *part);

/* between the connection and the call layer: a stalled connection goes */
void ngx_http_veto_sandbox_redis_drop(ngx_http_veto_sandbox_redis_t *rds,
    const char *why);

/* "ip:port" or "host:port" of a TCP server (sentinels, _redis_conf.c);
 * NGX_CONF_OK */
char *ngx_http_veto_sandbox_redis_parse_node(ngx_conf_t *cf,
    ngx_str_t *value, ngx_http_veto_sandbox_redis_node_t *node);

/* _redis_link.c: a link, open a context to host:port (or unix_path);
 * NGX_ERROR logged */
ngx_int_t ngx_http_veto_sandbox_redis_link_open(
    ngx_http_veto_sandbox_redis_link_t *link, const char *host,
    in_port_t port, const char *unix_path);
/* free the context (deferred by hiredis inside its callbacks) */
void ngx_http_veto_sandbox_redis_link_close(
    ngx_http_veto_sandbox_redis_link_t *link);

ngx_http_veto_sandbox_sentinel_t *ngx_http_veto_sandbox_sentinel_create(
    ngx_http_veto_sandbox_redis_t *rds, ngx_pool_t *pool,
    const ngx_http_veto_sandbox_sentinel_handlers_t *handlers);
void ngx_http_veto_sandbox_sentinel_discover(
    ngx_http_veto_sandbox_sentinel_t *st);
void ngx_http_veto_sandbox_sentinel_destroy(
    ngx_http_veto_sandbox_sentinel_t *st);

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

/* _heard.c: heard() keeps a full ping reply (with "ok"): its exec
 * timeout ceiling and "credentials"; fresh(): heard less than a minute
 * ago; ceiling(): the helper's exec timeout ceiling in ms, 0 when not
 * fresh; bindings(): for each name of an array, its binding {name, host,
 * header, env, path?} or {name, bound: false}, a new array; NULL when
 * none was heard yet (or out of memory) */
void ngx_http_veto_sandbox_heard(json_t *ping, ngx_log_t *log);
ngx_uint_t ngx_http_veto_sandbox_heard_fresh(void);
ngx_msec_t ngx_http_veto_sandbox_heard_ceiling(void);
json_t *ngx_http_veto_sandbox_heard_bindings(json_t *names);

/* _epoch.c: asks the helper its epoch (ctx->epoch), then next(); the
 * reply is heard (_heard.c) */
ngx_int_t ngx_http_veto_sandbox_epoch(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next);


#endif /* _NGX_HTTP_VSB_TRANSPORT_H_INCLUDED_ */
