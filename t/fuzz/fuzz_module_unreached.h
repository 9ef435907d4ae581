/*
 * What _execs.c (linked for an exec's reply mapper and the exec tools)
 * calls in the rest of the module: the audit record, streaming, running
 * the op.  The module targets that include this never reach them (no
 * stream, no audit, no op run by them): each aborts, so a path that
 * did would be reported.
 */

#ifndef _FUZZ_MODULE_UNREACHED_H_INCLUDED_
#define _FUZZ_MODULE_UNREACHED_H_INCLUDED_


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
ngx_http_veto_sandbox_op_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
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


ngx_int_t
ngx_http_veto_sandbox_stream_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_stream_follow(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_stream_ndjson(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return 0;                   /* no client asks for a stream here */
}


#endif /* _FUZZ_MODULE_UNREACHED_H_INCLUDED_ */
