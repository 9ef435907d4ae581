/*
 * Veto Sandbox: what is kept of a request.  Audit records and approval
 * summaries are stored and shown to people; secrets must never reach
 * them.  Pure functions of their input: pools and JSON, no request.
 */

#ifndef _NGX_HTTP_VSB_REDACT_H_INCLUDED_
#define _NGX_HTTP_VSB_REDACT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <jansson.h>


/*
 * Redaction of free text: "Bearer <x>" and "Basic <x>", anything shaped
 * like a JWT (eyJ....), and the value of key=value / key: value / "key":
 * "value" pairs whose key names a secret (password, passwd, secret,
 * token, apikey, api_key, api-key, authorization, credential, private,
 * access_key, session, cookie) become "[redacted]".
 */
ngx_int_t ngx_http_veto_sandbox_redact(ngx_pool_t *pool,
    ngx_str_t *in, ngx_str_t *out);

/*
 * What a human (approval summary) or an auditor sees of a request body:
 * profile, limits, ttl_s, network (mode, hosts), argv, cwd, timeout_s
 * kept; env reduced to its sorted names; an exec's stdin (in, may be
 * NULL) as stdin_bytes and its first 4 KiB (a shell reads its commands
 * there); everything else (metadata) dropped; every string redacted.
 * path/size/sha256 describe a file body (PUT files/archive) and may be
 * NULL/-1.  out: JSON text.
 */
ngx_int_t ngx_http_veto_sandbox_summary(ngx_pool_t *pool,
    ngx_str_t *action, json_t *body, ngx_str_t *in, ngx_str_t *path,
    off_t size, ngx_str_t *sha256, ngx_str_t *out);


#endif /* _NGX_HTTP_VSB_REDACT_H_INCLUDED_ */
