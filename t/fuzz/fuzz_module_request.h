/*
 * The request a module target hands to the code it drives, as nginx
 * would have set it up for the module's handlers: allocating from pool,
 * on a connection that logs to the cycle's log, with ctx as the module's
 * context and vscf as its server configuration (the module's index is 0
 * in these targets: ctxs[0], srv[0]).  r, c, ctxs and srv are the
 * caller's; everything else in r and c is zero, for the caller to fill.
 */

#ifndef _FUZZ_MODULE_REQUEST_H_INCLUDED_
#define _FUZZ_MODULE_REQUEST_H_INCLUDED_


static void
fuzz_request_init(ngx_http_request_t *r, ngx_connection_t *c, void **ctxs,
    void **srv, ngx_pool_t *pool, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_srv_conf_t *vscf)
{
    ngx_memzero(r, sizeof(ngx_http_request_t));
    ngx_memzero(c, sizeof(ngx_connection_t));

    c->log = ngx_cycle->log;
    r->pool = pool;
    r->connection = c;
    r->ctx = ctxs;
    ctxs[0] = ctx;
    r->srv_conf = srv;
    srv[0] = vscf;
}


#endif /* _FUZZ_MODULE_REQUEST_H_INCLUDED_ */
