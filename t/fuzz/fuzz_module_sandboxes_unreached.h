/*
 * What the sandboxes group's records (_sandboxes.c) call in the rest of
 * the module: the lifetime and network records, the bookkeeping call,
 * the create's detail, the quota (Redis).  The targets that include this
 * (fuzz_module_helper_reply: the group's replies; fuzz_module_parsers:
 * its builders) run no record: each aborts, so a path that did would be
 * reported.
 */

#ifndef _FUZZ_MODULE_SANDBOXES_UNREACHED_H_INCLUDED_
#define _FUZZ_MODULE_SANDBOXES_UNREACHED_H_INCLUDED_


void
ngx_http_veto_sandbox_lifetime_extend(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_int_t expires_at)
{
    abort();
}


void
ngx_http_veto_sandbox_record_network(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    abort();
}


void
ngx_http_veto_sandbox_record_snapshot_route(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *id, json_t *at)
{
    abort();
}


void
ngx_http_veto_sandbox_bookkeeping_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_redis_call_t *call, const char *what)
{
    abort();
}


void
ngx_http_veto_sandbox_create_detail(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *j, ngx_str_t *out)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_quota_acquire(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *sandbox,
    ngx_http_veto_sandbox_quota_limits_t *limits, ngx_msec_t ttl,
    ngx_http_veto_sandbox_quota_owner_t *owner)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_quota_release(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *sandbox)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_quota_release_ended(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *agent, ngx_str_t *sandbox, json_t *ended)
{
    abort();
}


/* the clock of a record's expiry (no record runs here) */
volatile ngx_time_t  *ngx_cached_time;


#endif /* _FUZZ_MODULE_SANDBOXES_UNREACHED_H_INCLUDED_ */
