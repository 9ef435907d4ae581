/*
 * Veto Sandbox: the summary of a request, in two kinds.
 *
 *  - The review summary (review = 1): what a human decides on (the
 *    approval record, the 202, the webhooks).  It is the request as it
 *    will run, exact: argv, cwd, the whole env with every value, stdin
 *    whole (text, or base64), the hosts granted; never redacted, never
 *    cut.  One that does not fit in NGX_HTTP_VSB_SUMMARY_MAX bytes of
 *    JSON is not made (NGX_DECLINED): the gateway refuses the request.
 *  - The record summary (review = 0): what an audit record keeps.  Every
 *    string in it is redacted (ngx_http_veto_sandbox_redact.h) and cut to
 *    a byte bound, so it is at most NGX_HTTP_VSB_SUMMARY_RECORD_MAX bytes
 *    of JSON whatever the request holds; what was cut is said
 *    (*_truncated), and the argv's size and digest stay exact.
 *
 * Pure functions of their input: pools and JSON, no request, no Redis.
 * docs/approvals.md, "Approval summary", has the fields.
 */

#ifndef _NGX_HTTP_VSB_SUMMARY_H_INCLUDED_
#define _NGX_HTTP_VSB_SUMMARY_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <jansson.h>


/* Bounds, in bytes of JSON text (a string's escapes count).  A review
 * summary has one: the whole of it. */
#define NGX_HTTP_VSB_SUMMARY_MAX         32768   /* a review summary */

/* A record summary's */
#define NGX_HTTP_VSB_SUMMARY_STR_MAX     1024    /* one argv element, cwd,
                                                    path, an env value */
#define NGX_HTTP_VSB_SUMMARY_ARGV_MAX    4096    /* the argv kept */
#define NGX_HTTP_VSB_SUMMARY_STDIN_MAX   4096    /* stdin's head */
#define NGX_HTTP_VSB_SUMMARY_ENV_MAX     3072    /* an env view */
#define NGX_HTTP_VSB_SUMMARY_HOSTS_MAX   4096    /* the hosts granted, at
                                                    most: less when the
                                                    rest leaves less */
#define NGX_HTTP_VSB_SUMMARY_CREDS_MAX   3072    /* the credentials
                                                    attached, at most: less
                                                    when the rest leaves
                                                    less */
#define NGX_HTTP_VSB_SUMMARY_RECORD_MAX  16384   /* the whole summary */


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
    json_t      *env_flagged;   /* review: the env names that are not
                                   inert (an array), or NULL */
    ngx_uint_t   review;        /* a review summary, else a record one */
    json_t      *hosts;         /* entries a create or a PATCH grants */
    json_t      *hosts_ask;     /* those of them a human must grant */
    json_t      *creds;         /* credentials a create or a PATCH
                                   attaches (names) */
    json_t      *creds_ask;     /* those of them a human must grant */
    json_t      *cred_bindings; /* their bindings as the helper said them
                                   ([{name, host, header, env, path?} or
                                   {name, bound: false}]), or NULL: not
                                   known */
    const char  *irreversible;  /* why it cannot be undone, or NULL */
} ngx_http_veto_sandbox_summary_in_t;


/*
 * The summary as JSON text.  A review summary: NGX_DECLINED, out->len
 * its size, when it is over NGX_HTTP_VSB_SUMMARY_MAX bytes; its fields
 * are those below, exact, with stdin_sha256, stdin whole (or
 * stdin_base64 when it is not UTF-8), env_flagged, and no *_truncated.
 * A record summary (at most NGX_HTTP_VSB_SUMMARY_RECORD_MAX bytes):
 * action; sandbox; from req: profile, limits, ttl_s, network, argv, cwd,
 * timeout_s, output_bytes, background, an archive's format; argv as argv_bytes, argv_sha256 (SHA-256 of every element
 * followed by a NUL byte) and, when cut, argv_truncated and argv_count;
 * the env view as env (name -> value or null) and env_names, and when
 * names were dropped env_truncated and env_count; an exec's
 * stdin as stdin_bytes and its head; a file as path, size, sha256;
 * the hosts granted as network: {"mode": "allowlist", "hosts": [...],
 * "needs_approval": [...]} (below); the credentials attached as
 * credentials: {"attach": [NAME...], "needs_approval": [NAME...],
 * "hosts": [HOST...]} (the hosts the operator's bindings send them to,
 * as the helper said them, or words when it has not; a review summary
 * adds "bindings": each one's host, header, variable and path; never a
 * value, which the gateway never holds); irreversible and
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
 * The environment an audit record keeps: base (the sandbox's env; may be
 * NULL) with env (a request's name -> value object; may be NULL) over
 * it.  Every name is in it; a
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

/*
 * The environment a reviewer sees: base (the sandbox's env, whole) with
 * env (a request's) over it, every name with its value; *flagged: a new
 * array of the names dangerous(name) says are not inert, sorted.  NULL
 * on failure.
 */
json_t *ngx_http_veto_sandbox_env_review(json_t *base, json_t *env,
    ngx_http_veto_sandbox_env_dangerous_pt dangerous, void *data,
    json_t **flagged);

/*
 * Does a review summary's input carry a value that looks like a
 * credential (the redaction detectors, ngx_http_veto_sandbox_redact.h,
 * would change it)?  NGX_DECLINED, with where it is in where ("argv[2]",
 * "env.GH_TOKEN", "stdin", "cwd", "path"; NUL ended), NGX_OK when none,
 * NGX_ERROR on failure.  in->env is the review env (values whole).
 */
ngx_int_t ngx_http_veto_sandbox_summary_credential(ngx_pool_t *pool,
    ngx_http_veto_sandbox_summary_in_t *in, u_char *where, size_t size);

/* the same for one env variable (value a string, else NGX_OK) */
ngx_int_t ngx_http_veto_sandbox_env_secret(ngx_pool_t *pool,
    const char *name, json_t *value);

/*
 * record (a record summary's text) with what ties it to the review
 * summary a human saw: reviewed_sha256 (of review's text, as the approval
 * record keeps it) and reviewed_bytes.  A new text in pool.
 */
ngx_int_t ngx_http_veto_sandbox_summary_link(ngx_pool_t *pool,
    ngx_str_t *review, ngx_str_t *record);

/* SHA-256 (hex, NUL ended) of env as compact JSON with sorted keys;
 * env NULL hashes as {} */
ngx_int_t ngx_http_veto_sandbox_env_digest(json_t *env, u_char *hex);

/*
 * The longest prefix of s (len bytes) whose JSON string escapes fit in
 * max bytes and that does not end inside a UTF-8 sequence.
 */
size_t ngx_http_veto_sandbox_json_cut(u_char *s, size_t len, size_t max);


#endif /* _NGX_HTTP_VSB_SUMMARY_H_INCLUDED_ */
