/*
 * Veto Sandbox: redaction.  Audit records and approval summaries
 * (ngx_http_veto_sandbox_summary.h) are stored and shown to people;
 * secrets must never reach them.  Pure functions of their input.
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

#endif /* _NGX_HTTP_VSB_REDACT_H_INCLUDED_ */
