/*
 * What _execs.c (linked for an exec's reply mapper and the exec tools)
 * calls in the rest of the module: its records
 * (fuzz_module_records_unreached.h), streaming, running the op.  The
 * module targets that include this never reach them (no stream, no
 * audit, no op run by them): each aborts, so a path that did would be
 * reported.
 */

#ifndef _FUZZ_MODULE_UNREACHED_H_INCLUDED_
#define _FUZZ_MODULE_UNREACHED_H_INCLUDED_


#include "fuzz_module_records_unreached.h"


void
ngx_http_veto_sandbox_op_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
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
