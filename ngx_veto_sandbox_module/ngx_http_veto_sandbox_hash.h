/*
 * Veto Sandbox: the canonical request hash (docs/approvals.md,
 * "Canonical request"), which an approval is bound to:
 *
 *     SHA-256( "veto-request-v1\n"
 *              METHOD "\n"
 *              canonical-path "\n"
 *              canonical-query "\n"
 *              hex(SHA-256(body)) "\n"
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
