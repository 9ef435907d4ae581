/*
 * A token's verification between _jwt.c (the checks before and after the
 * signature, on the event loop) and _jwt_thread.c (the signature's check
 * in an nginx thread pool).
 */

#ifndef _NGX_HTTP_VETO_SANDBOX_JWT_H_INCLUDED_
#define _NGX_HTTP_VETO_SANDBOX_JWT_H_INCLUDED_


typedef struct ngx_http_veto_sandbox_jwt_job_s
    ngx_http_veto_sandbox_jwt_job_t;

/* After the check (job->rc): the claims and the cache, on the event loop
 * (_jwt.c's; a thread's completion calls it through job->finish) */
typedef ngx_int_t (*ngx_http_veto_sandbox_jwt_finish_pt)(
    ngx_http_request_t *r, ngx_http_veto_sandbox_srv_conf_t *vscf,
    ngx_http_veto_sandbox_jwt_job_t *job, ngx_http_veto_sandbox_ctx_t *ctx,
    const char **reason);

/*
 * A token whose signature is to be checked: what the check reads (a copy
 * of the signed bytes, the signature as OpenSSL takes it, the key) and
 * what the claims' parse needs after it.  Inline it lives on the stack;
 * for a thread it is the task's context, in r->pool, and the thread reads
 * and writes nothing else but the key (configuration, read only).
 */
struct ngx_http_veto_sandbox_jwt_job_s {
    ngx_http_request_t           *r;
    ngx_http_veto_sandbox_key_t  *key;
    u_char                       *in;         /* header.claims */
    size_t                        in_len;
    u_char                       *claims;     /* base64url, within in */
    size_t                        claims_len;
    size_t                        sig_len;
    ngx_int_t                     rc;         /* the check's verdict */
    ngx_int_t                     nice;       /* the pool's nice=, or 0 */
    ngx_http_veto_sandbox_jwt_finish_pt  finish;  /* once rc is known */
    unsigned                      hashed:1;   /* hash is the cache's key */
    u_char                        hash[32];
    u_char                        sig[NGX_HTTP_VSB_MAX_SIG_LEN];
};

#if (NGX_THREADS)
/* _jwt_thread.c: NGX_AGAIN (posted: the completion calls job->finish),
 * NGX_DECLINED (the pool's queue is full: check inline), NGX_ERROR */
ngx_int_t ngx_http_veto_sandbox_jwt_post(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_jwt_job_t *job);
#endif


#endif /* _NGX_HTTP_VETO_SANDBOX_JWT_H_INCLUDED_ */
