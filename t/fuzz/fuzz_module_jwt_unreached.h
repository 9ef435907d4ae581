/*
 * What the module's identity files (_jwt.c, _jws.c, _keys.c,
 * _identity.c) call in the rest of the module, for the targets that link
 * those four alone (fuzz_module_jwt, fuzz_module_jwt_diff), and the clock
 * they read (fixed: 1800000000).  No cache zone, thread pool or routing
 * is configured there, so each of these aborts: a path that reached one
 * would be reported.
 */

#ifndef _FUZZ_MODULE_JWT_UNREACHED_H_INCLUDED_
#define _FUZZ_MODULE_JWT_UNREACHED_H_INCLUDED_


ngx_module_t  ngx_http_veto_sandbox_module;

static ngx_time_t    fuzz_now = { 1800000000, 0, 0 };
volatile ngx_time_t *ngx_cached_time = &fuzz_now;


/* never reached: no cache zone is configured (the cache is keyed by the
 * token's hash, after all of the checks fuzzed here) */
ngx_int_t
ngx_http_veto_sandbox_cache_get(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


void
ngx_http_veto_sandbox_cache_put(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t until)
{
    abort();
}


#if (NGX_THREADS)
/* never reached: no veto_sandbox_jwt_thread_pool is configured (the
 * thread pool's glue, _jwt_thread.c, is tested by t/module/jwt-thread-pool.t)
 * */
ngx_int_t
ngx_http_veto_sandbox_jwt_post(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_jwt_job_t *job)
{
    abort();
}
#endif


/* the POST_READ handler around identify() (not fuzzed: it routes) */

ngx_module_t  ngx_http_core_module;


ngx_int_t
ngx_http_veto_sandbox_protected(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf)
{
    abort();
}


ngx_http_veto_sandbox_ctx_t *
ngx_http_veto_sandbox_get_ctx(ngx_http_request_t *r)
{
    abort();
}


ngx_http_veto_sandbox_op_t *
ngx_http_veto_sandbox_op_find(ngx_http_request_t *r, ngx_uint_t *allow,
    ngx_str_t *sandbox, ngx_str_t *approval)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


/* set by ngx_http_veto_sandbox_identity_init() (not called: it
 * registers the phase handler) */
ngx_http_veto_sandbox_deny_record_pt  ngx_http_veto_sandbox_deny_record;


void
ngx_http_veto_sandbox_audit_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status)
{
    abort();
}


void
ngx_http_finalize_request(ngx_http_request_t *r, ngx_int_t rc)
{
    abort();
}


#endif /* _FUZZ_MODULE_JWT_UNREACHED_H_INCLUDED_ */
