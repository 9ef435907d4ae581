/*
 * Token signatures checked in an nginx thread pool
 * (veto_sandbox_jwt_thread_pool): an uncached RS256 or ES256 token holds
 * the worker's event loop for the RSA or P-256 check (20 and 78 us on the
 * development VM), and every other request on the worker waits that long.
 * With a pool the event loop parses and pins the token (_jwt.c), hands the
 * check to a thread, and goes on; the check's completion parses the
 * claims, fills the cache and resumes the request where it stopped (the
 * POST_READ phase, _identity.c).  HMAC tokens (about a microsecond) and
 * cached ones never leave the event loop.
 */

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_jwt.h"

#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <sys/resource.h>
#include <sys/syscall.h>


#if (NGX_THREADS)

static void ngx_http_veto_sandbox_jwt_thread(void *data, ngx_log_t *log);
static void ngx_http_veto_sandbox_jwt_thread_nice(ngx_int_t nice,
    ngx_log_t *log);
static void ngx_http_veto_sandbox_jwt_thread_done(ngx_event_t *ev);


/*
 * Hands job's check to vscf's thread pool.  NGX_AGAIN: posted; the task's
 * completion (on this worker's event loop) parses the claims
 * (job->finish, _jwt.c's), sets ctx->jwt_done and resumes r.
 * NGX_DECLINED: the pool's queue is full.
 *
 * Ownership: the task and its copy of the job (the signed bytes included)
 * are allocated in r->pool, and r->main->blocked is raised until the
 * completion runs: nginx frees no request while it is blocked
 * (ngx_http_close_request() returns, ngx_http_terminate_request() leaves
 * the finalizing to the write handler), as for its own aio threads.  A
 * client that goes away meanwhile is found when the request resumes.  The
 * thread reads the task's context and the key, writes job->rc, and
 * touches nothing else.
 */
ngx_int_t
ngx_http_veto_sandbox_jwt_post(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_jwt_job_t *job)
{
    u_char                           *in;
    ngx_thread_task_t                *task;
    ngx_http_veto_sandbox_jwt_job_t  *tj;

    task = ngx_thread_task_alloc(r->pool,
                                 sizeof(ngx_http_veto_sandbox_jwt_job_t)
                                 - NGX_HTTP_VSB_MAX_SIG_LEN + job->sig_len
                                 + job->in_len);
    if (task == NULL) {
        return NGX_ERROR;
    }

    tj = task->ctx;

    /* the signature is the struct's tail, the signed bytes follow it */
    ngx_memcpy(tj, job, offsetof(ngx_http_veto_sandbox_jwt_job_t, sig)
                        + job->sig_len);

    in = tj->sig + job->sig_len;
    ngx_memcpy(in, job->in, job->in_len);

    tj->in = in;
    tj->claims = in + (job->claims - job->in);
    tj->nice = vscf->jwt_nice;

    task->handler = ngx_http_veto_sandbox_jwt_thread;
    task->event.handler = ngx_http_veto_sandbox_jwt_thread_done;
    task->event.data = tj;

    if (ngx_thread_task_post(vscf->jwt_pool, task) != NGX_OK) {
        /* logged by nginx: "thread pool queue overflow" */
        return NGX_DECLINED;
    }

    r->main->blocked++;
    r->aio = 1;
    ctx->jwt_pending = 1;

    return NGX_AGAIN;
}


/*
 * nice=N of veto_sandbox_jwt_thread_pool: the thread that verifies runs N
 * levels nicer than it was made (the worker's own priority), set once per
 * thread, at its first verification.  A flood of new tokens then takes
 * the CPU the event loop leaves, not the event loop's.  Raising a nice
 * value needs no privilege; a failure is logged and verification goes on.
 */
static void
ngx_http_veto_sandbox_jwt_thread_nice(ngx_int_t nice, ngx_log_t *log)
{
    int    cur;
    pid_t  tid;

    static __thread ngx_uint_t  done;

    if (nice == 0 || done) {
        return;
    }

    done = 1;

    tid = (pid_t) syscall(SYS_gettid);

    errno = 0;
    cur = getpriority(PRIO_PROCESS, (id_t) tid);
    if (cur == -1 && errno != 0) {
        ngx_log_error(NGX_LOG_ALERT, log, errno,
                      "veto_sandbox: getpriority() of JWT thread %P failed",
                      (ngx_pid_t) tid);
        return;
    }

    if (setpriority(PRIO_PROCESS, (id_t) tid,
                    (int) ngx_min(cur + nice, 19))
        == -1)
    {
        ngx_log_error(NGX_LOG_ALERT, log, errno,
                      "veto_sandbox: setpriority(%d) of JWT thread %P "
                      "failed", (int) ngx_min(cur + nice, 19),
                      (ngx_pid_t) tid);
    }
}


/* In a pool's thread: the signature's check, nothing else. */
static void
ngx_http_veto_sandbox_jwt_thread(void *data, ngx_log_t *log)
{
    ngx_http_veto_sandbox_jwt_job_t  *job = data;

    EVP_PKEY_CTX  *pctx;

    ngx_http_veto_sandbox_jwt_thread_nice(job->nice, log);

    pctx = ngx_http_veto_sandbox_jws_thread_pctx(job->key, log);
    if (pctx == NULL) {
        job->rc = NGX_ERROR;
        return;
    }

    job->rc = ngx_http_veto_sandbox_jws_check(job->key, pctx, job->in,
                                              job->in_len, job->sig,
                                              job->sig_len);

    /*
     * The thread keeps no OpenSSL thread state between tasks (its error
     * queue, its handler list; the next check makes them anew: a few
     * allocations beside a signature's 30-80 us).  A worker that exits
     * tells each pool thread to end and goes on once the thread has said
     * so, not once it is gone: OpenSSL's thread-exit destructor would
     * then free that state while exit() runs OPENSSL_cleanup() on the
     * same structures ("double free or corruption", SIGABRT, seen after
     * a reload under load).  With nothing left, no destructor runs.
     */
    OPENSSL_thread_stop();
}


/* Back on the event loop: the claims, the cache, and r goes on. */
static void
ngx_http_veto_sandbox_jwt_thread_done(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_jwt_job_t  *job = ev->data;

    ngx_connection_t                  *c;
    ngx_http_request_t                *r;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    r = job->r;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    r->main->blocked--;
    r->aio = 0;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    ctx->jwt_pending = 0;
    ctx->jwt_done = 1;
    ctx->jwt_rc = job->finish(r, vscf, job, ctx, &ctx->jwt_reason);

    /* the phases again (POST_READ: ngx_http_veto_sandbox_identify() takes
     * the outcome), or nginx's finalizer when r was terminated meanwhile */
    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}


typedef struct {
    ngx_thread_pool_t  *pool;
    ngx_int_t           nice;
} ngx_http_veto_sandbox_pool_t;


/* veto_sandbox_jwt_thread_pool <name> [nice=<n>] | off */
char *
ngx_http_veto_sandbox_jwt_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    ngx_int_t                           n;
    ngx_str_t                          *value;
    ngx_uint_t                          i;
    ngx_http_veto_sandbox_pool_t       *pools, *pool;
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    if (vscf->jwt_pool != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        if (cf->args->nelts > 2) {
            return "takes no parameter after \"off\"";
        }

        vscf->jwt_pool = NULL;
        return NGX_CONF_OK;
    }

    vscf->jwt_nice = 0;

    if (cf->args->nelts > 2) {
        if (value[2].len <= 5
            || ngx_strncmp(value[2].data, "nice=", 5) != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" (nice=0..19)",
                               &value[2]);
            return NGX_CONF_ERROR;
        }

        n = ngx_atoi(value[2].data + 5, value[2].len - 5);
        if (n == NGX_ERROR || n > 19) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid nice value \"%V\" (0..19)",
                               &value[2]);
            return NGX_CONF_ERROR;
        }

        vscf->jwt_nice = n;
    }

    /* a pool of the "thread_pool" directive, or nginx's "default" (32
     * threads) when none is named so; nginx refuses an unknown name */
    vscf->jwt_pool = ngx_thread_pool_add(cf, &value[1]);
    if (vscf->jwt_pool == NULL) {
        return NGX_CONF_ERROR;
    }

    /* nice= is the pool's threads': one value per pool */
    vmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_veto_sandbox_module);

    if (vmcf->jwt_pools == NULL) {
        vmcf->jwt_pools = ngx_array_create(cf->pool, 2,
                                        sizeof(ngx_http_veto_sandbox_pool_t));
        if (vmcf->jwt_pools == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    pools = vmcf->jwt_pools->elts;

    for (i = 0; i < vmcf->jwt_pools->nelts; i++) {
        if (pools[i].pool != vscf->jwt_pool) {
            continue;
        }

        if (pools[i].nice != vscf->jwt_nice) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "thread pool \"%V\" verifies with nice=%i "
                               "elsewhere: one nice value per pool",
                               &value[1], pools[i].nice);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    pool = ngx_array_push(vmcf->jwt_pools);
    if (pool == NULL) {
        return NGX_CONF_ERROR;
    }

    pool->pool = vscf->jwt_pool;
    pool->nice = vscf->jwt_nice;

    return NGX_CONF_OK;
}

#else

char *
ngx_http_veto_sandbox_jwt_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_str_t  *value;

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        return NGX_CONF_OK;
    }

    return "needs an nginx built --with-threads";
}

#endif
