/*
 * Veto Sandbox: the summary of a request, what a human decides on (the
 * approval record, the 202) and what an audit record keeps of it, and
 * the view of a sandbox's environment it shows.  Every string in it is
 * redacted (ngx_http_veto_sandbox_redact.h) and cut to a byte bound, so
 * a summary is at most NGX_HTTP_VSB_SUMMARY_MAX bytes of JSON whatever
 * the request holds; what was cut is said (*_truncated), and the argv's
 * size and digest stay exact, so a reviewer still approves one request.
 * Pure functions of their input: pools and JSON, no request, no Redis.
 * docs/approvals.md, "Approval summary", has the fields.
 */

#ifndef _NGX_HTTP_VSB_SUMMARY_H_INCLUDED_
#define _NGX_HTTP_VSB_SUMMARY_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <jansson.h>


/* Bounds, in bytes of JSON text (a string's escapes count). */
#define NGX_HTTP_VSB_SUMMARY_STR_MAX     1024    /* one argv element, cwd,
                                                    path, an env value */
#define NGX_HTTP_VSB_SUMMARY_ARGV_MAX    4096    /* the argv kept */
#define NGX_HTTP_VSB_SUMMARY_STDIN_MAX   4096    /* stdin's head */
#define NGX_HTTP_VSB_SUMMARY_ENV_MAX     3072    /* an env view */
#define NGX_HTTP_VSB_SUMMARY_HOSTS_MAX   4096    /* the hosts granted, at
                                                    most: less when the
                                                    rest leaves less */
#define NGX_HTTP_VSB_SUMMARY_MAX         16384   /* the whole summary */


/* What a summary is made of; what does not apply is NULL (size -1). */
typedef struct {
    ngx_str_t    action;
    json_t      *req;           /* the helper request built for it */
    ngx_str_t   *in;            /* an exec's stdin (the frame payload) */
    ngx_str_t   *path;          /* ?path= of a files op */
    off_t        size;          /* a file body's size, or -1 */
    ngx_str_t   *sha256;        /* a file body's digest, hex */
    ngx_str_t   *sandbox;       /* the sandbox the request names */
    json_t      *env;           /* an env view (below), instead of req's */
    ngx_uint_t   env_dropped;   /* names the view could not hold */
    json_t      *hosts;         /* entries a create or a PATCH grants */
    json_t      *hosts_ask;     /* those of them a human must grant */
    const char  *irreversible;  /* why it cannot be undone, or NULL */
} ngx_http_veto_sandbox_summary_in_t;


/*
 * The summary as JSON text (at most NGX_HTTP_VSB_SUMMARY_MAX bytes):
 * action; sandbox; from req: profile, limits, ttl_s, network, argv, cwd,
 * timeout_s, output_bytes, background, an archive's format; argv as argv_bytes, argv_sha256 (SHA-256 of every element
 * followed by a NUL byte) and, when cut, argv_truncated and argv_count;
 * the env view as env (name -> value or null) and env_names, and when
 * names were dropped env_truncated and env_count; an exec's
 * stdin as stdin_bytes and its head; a file as path, size, sha256;
 * the hosts granted as network: {"mode": "allowlist", "hosts": [...],
 * "needs_approval": [...]} (below); irreversible and
 * irreversible_reason.  Nothing else (metadata) is kept.
 */
ngx_int_t ngx_http_veto_sandbox_summary(ngx_pool_t *pool,
    ngx_http_veto_sandbox_summary_in_t *in, ngx_str_t *out);

/*
 * Whole entries of list (strings; host names the egress parser took, so
 * shown as they are: a reviewer grants exactly what is listed) in order
 * while their JSON fits in max bytes; *cut set when any was left out.
 * A new array, or NULL on failure.  The network summary keeps
 * needs_approval first, then hosts with what is left (at least a quarter
 * when they need it), and says of a cut list <name>_truncated and
 * <name>_count.
 */
json_t *ngx_http_veto_sandbox_summary_hosts(json_t *list, size_t max,
    ngx_uint_t *cut);

/*
 * The environment a reviewer sees: base (an earlier view: the sandbox's,
 * kept in its ownership record; may be NULL) with env (a request's
 * name -> value object; may be NULL) over it.  Every name is in it; a
 * name dangerous(name) says can change what runs (PATH, LD_*, ...) keeps
 * its value, redacted and cut to NGX_HTTP_VSB_SUMMARY_STR_MAX, the others
 * are null (the value never leaves the request).  Dangerous names come
 * first, each group sorted; past NGX_HTTP_VSB_SUMMARY_ENV_MAX bytes of
 * JSON the rest is dropped.  *dropped: in, the names base had dropped;
 * out, all the names dropped.  NULL on failure.
 */
typedef ngx_uint_t (*ngx_http_veto_sandbox_env_dangerous_pt)(void *data,
    const char *name);

json_t *ngx_http_veto_sandbox_env_view(ngx_pool_t *pool, json_t *base,
    json_t *env, ngx_http_veto_sandbox_env_dangerous_pt dangerous,
    void *data, ngx_uint_t *dropped);

/* SHA-256 (hex, NUL ended) of env as compact JSON with sorted keys;
 * env NULL hashes as {} */
ngx_int_t ngx_http_veto_sandbox_env_digest(json_t *env, u_char *hex);

/*
 * The longest prefix of s (len bytes) whose JSON string escapes fit in
 * max bytes and that does not end inside a UTF-8 sequence.
 */
size_t ngx_http_veto_sandbox_json_cut(u_char *s, size_t len, size_t max);


#endif /* _NGX_HTTP_VSB_SUMMARY_H_INCLUDED_ */
