/*
 * What _execs.c calls in the rest of the module to record an exec: the
 * audit record, the exec's detail and record, a detail's JSON text, a
 * stream's detail.  The module targets that include this (through
 * fuzz_module_unreached.h, or alone where the target streams:
 * fuzz_module_parsers) record nothing: each aborts, so a path that did
 * would be reported.
 */

#ifndef _FUZZ_MODULE_RECORDS_UNREACHED_H_INCLUDED_
#define _FUZZ_MODULE_RECORDS_UNREACHED_H_INCLUDED_


void
ngx_http_veto_sandbox_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *outcome,
    const char *reason, ngx_str_t *reviewer, ngx_str_t *detail,
    ngx_uint_t status)
{
    abort();
}


void
ngx_http_veto_sandbox_exec_detail(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *j, json_t *extra,
    ngx_str_t *out)
{
    abort();
}


void
ngx_http_veto_sandbox_json_text(ngx_http_request_t *r, json_t *json,
    ngx_str_t *out)
{
    abort();
}


void
ngx_http_veto_sandbox_record_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    abort();
}


json_t *
ngx_http_veto_sandbox_stream_detail(ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


#endif /* _FUZZ_MODULE_RECORDS_UNREACHED_H_INCLUDED_ */
