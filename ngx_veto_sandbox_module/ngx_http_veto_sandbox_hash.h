/*
 * Veto Sandbox: the canonical request hash (docs/approvals.md,
 * "Canonical request"), which an approval is bound to:
 *
 *     SHA-256( "veto-request-v1\n"
 *              METHOD "\n"
 *              canonical-path "\n"
 *              canonical-query "\n"
 *              hex(SHA-256(body)) "\n"       a JSON body: its JCS form
 *              decimal(body length) "\n"
 *              [context "\n"] )
 *
 * and the reading of a route's query argument that must agree with it.
 * Nothing here knows a request: pools, strings and buffers only.
 */

#ifndef _NGX_HTTP_VSB_HASH_H_INCLUDED_
#define _NGX_HTTP_VSB_HASH_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


/* SHA-256, lowercase hex */
#define NGX_HTTP_VSB_HASH_HEX_LEN  64


/*
 * path is the decoded, normalized path (r->uri); args the raw query
 * string (r->args).  body_sha256 is the 32-byte digest of the body bytes
 * (empty body: digest of ""), from ngx_http_veto_sandbox_hash_body().
 * context (NULL or empty: none) is a line of what the request will run
 * with besides itself, "sandbox-env <hex SHA-256>" for an exec.  out
 * receives 64 lowercase hex digits and a NUL.
 */
ngx_int_t ngx_http_veto_sandbox_hash_request(ngx_pool_t *pool,
    ngx_str_t *method, ngx_str_t *path, ngx_str_t *args,
    u_char *body_sha256, off_t body_len, ngx_str_t *context, u_char *out);

/*
 * A JSON body enters the hash in its RFC 8785 (JCS) form, so that any
 * client sending the same values matches (docs/approvals.md, "How the
 * binding is computed"): no whitespace, object keys sorted by their
 * UTF-16 code units, strings with the minimal escapes, numbers in
 * ECMAScript's shortest form (integers exactly, also beyond 2^53).  It is
 * parsed as the module parses requests: duplicate keys refused.
 *
 * ngx_http_veto_sandbox_hash_body_jcs(): md and *len are SHA-256 and
 * length of the JCS form of the body chain (at most max bytes; an empty
 * body: those of ""); NGX_DECLINED: larger than max, or not JSON.
 * ngx_http_veto_sandbox_jcs(): the JCS form itself, in the pool (at most
 * NGX_HTTP_VSB_JCS_MAX(len) bytes); NGX_DECLINED: not JSON.
 * ngx_http_veto_sandbox_jcs_number(): a double as ES writes it, at most
 * 32 bytes, not terminated; returns the length.
 */
#define NGX_HTTP_VSB_JCS_MAX(len)  (6 * (len) + 32)

ngx_int_t ngx_http_veto_sandbox_hash_body_jcs(ngx_pool_t *pool,
    ngx_chain_t *bufs, size_t max, u_char *md, off_t *len, ngx_log_t *log);
ngx_int_t ngx_http_veto_sandbox_jcs(ngx_pool_t *pool, u_char *json,
    size_t len, ngx_str_t *out);
size_t ngx_http_veto_sandbox_jcs_number(double d, u_char *out);

/* SHA-256 over a request body chain, in memory and/or in a temp file. */
ngx_int_t ngx_http_veto_sandbox_hash_body(ngx_chain_t *bufs, u_char *md,
    off_t *len, ngx_log_t *log);

/* the canonical path or query alone, for tests and debugging */
ngx_int_t ngx_http_veto_sandbox_hash_canon_path(ngx_pool_t *pool,
    ngx_str_t *path, ngx_str_t *out);
ngx_int_t ngx_http_veto_sandbox_hash_canon_query(ngx_pool_t *pool,
    ngx_str_t *args, ngx_str_t *out);

/* A query argument a route takes (ngx_http_veto_sandbox_hash_query_args). */
typedef struct {
    const char                  *name;
    ngx_str_t                    value;     /* decoded, NUL terminated;
                                               data NULL: absent */
} ngx_http_veto_sandbox_qarg_t;

/*
 * The query arguments a route takes (n of them), read as the hash reads
 * them: each at most once, no other.  NGX_OK: known[].value set;
 * NGX_ABORT: the query is ambiguous, *why says how, *at names the
 * argument at fault (empty when its name does not decode); NGX_ERROR: no
 * memory.
 */
ngx_int_t ngx_http_veto_sandbox_hash_query_args(ngx_pool_t *pool,
    ngx_str_t *args, ngx_http_veto_sandbox_qarg_t *known, ngx_uint_t n,
    const char **why, ngx_str_t *at);

/*
 * The only query argument a route takes, read as the hash reads it.
 * NGX_OK: *value is the decoded value (NUL terminated); NGX_DECLINED:
 * absent; NGX_ABORT: the query is ambiguous (*why says how); NGX_ERROR:
 * no memory.
 */
ngx_int_t ngx_http_veto_sandbox_hash_query_arg(ngx_pool_t *pool,
    ngx_str_t *args, const char *name, ngx_str_t *value, const char **why);

/*
 * %XX with two hex digits decodes; any other '%' stays as it is, or,
 * when strict, makes it fail (NULL).  dst may be src.
 */
u_char *ngx_http_veto_sandbox_pct_decode(u_char *dst, u_char *src,
    size_t len, ngx_uint_t strict);

/*
 * 1 when the len bytes at p are all lowercase hex digits (0-9, a-f), the
 * form of every id, epoch, nonce and digest the module makes or reads;
 * else 0.  Reads p in order and stops at the first other byte, so a
 * NUL-terminated string shorter than len is safe.
 */
ngx_uint_t ngx_http_veto_sandbox_hex_lower(const u_char *p, size_t len);


#endif /* _NGX_HTTP_VSB_HASH_H_INCLUDED_ */
