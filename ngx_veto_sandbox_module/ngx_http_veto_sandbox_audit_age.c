/*
 * The audit's age bound (veto_sandbox_audit_max_age): the worker that
 * polls the helpers' ENDED records (_ended.c, its timer) drops each
 * policy tenant's audit entries older than the age, once a minute (or
 * every half of the age, when that is shorter).  The entries' bytes
 * leave the count the append script keeps (ngx_http_veto_sandbox_audit.h),
 * so the byte bound stays exact.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_audit.h"


#define NGX_HTTP_VSB_TRIM_EVERY      60000      /* ms */


/* lua/audit_trim_age.lua: the entries older than the age go, and their
 * bytes leave the count the append keeps */
NGX_HTTP_VSB_LUA(audit_trim_age);

static ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_age_scripts[] = {
    NGX_HTTP_VSB_SCRIPT(audit_trim_age),
    { NULL, NULL, "" }
};


static ngx_array_t                        *ngx_http_veto_sandbox_age_tenants;
static ngx_msec_t                          ngx_http_veto_sandbox_trimmed;
static ngx_http_veto_sandbox_main_conf_t  *ngx_http_veto_sandbox_age_mcf;


/* The policies' tenants, each once. */
ngx_int_t
ngx_http_veto_sandbox_audit_age_init(ngx_cycle_t *cycle,
    ngx_http_veto_sandbox_main_conf_t *vmcf)
{
    ngx_str_t                          *t, *s;
    ngx_uint_t                          i, k, n;
    ngx_http_core_srv_conf_t          **cscfp;
    ngx_http_core_main_conf_t          *cmcf;
    ngx_http_veto_sandbox_tenant_t     *tenant;
    ngx_http_veto_sandbox_srv_conf_t   *vscf;

    ngx_http_veto_sandbox_age_tenants = NULL;
    ngx_http_veto_sandbox_age_mcf = vmcf;
    ngx_http_veto_sandbox_trimmed = ngx_current_msec;

    if (vmcf->audit_max_age == 0) {
        return NGX_OK;
    }

    if (ngx_http_veto_sandbox_redis_scripts_init(
                                   ngx_http_veto_sandbox_age_scripts)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_core_module);
    if (cmcf == NULL) {
        return NGX_OK;
    }

    ngx_http_veto_sandbox_age_tenants = ngx_array_create(cycle->pool, 8,
                                                         sizeof(ngx_str_t));
    if (ngx_http_veto_sandbox_age_tenants == NULL) {
        return NGX_ERROR;
    }

    cscfp = cmcf->servers.elts;

    for (i = 0; i < cmcf->servers.nelts; i++) {
        vscf = cscfp[i]->ctx->srv_conf[ngx_http_veto_sandbox_module.ctx_index];

        if (vscf->policy == NULL || vscf->policy->tenants == NULL) {
            continue;
        }

        tenant = vscf->policy->tenants->elts;

        for (n = 0; n < vscf->policy->tenants->nelts; n++) {
            s = ngx_http_veto_sandbox_age_tenants->elts;

            for (k = 0; k < ngx_http_veto_sandbox_age_tenants->nelts; k++) {
                if (s[k].len == tenant[n].name.len
                    && ngx_strncmp(s[k].data, tenant[n].name.data, s[k].len)
                       == 0)
                {
                    break;
                }
            }

            if (k < ngx_http_veto_sandbox_age_tenants->nelts) {
                continue;
            }

            t = ngx_array_push(ngx_http_veto_sandbox_age_tenants);
            if (t == NULL) {
                return NGX_ERROR;
            }

            *t = tenant[n].name;
        }
    }

    return NGX_OK;
}


/* How often the age is looked at, when nothing else sets the timer. */
ngx_msec_t
ngx_http_veto_sandbox_audit_age_every(ngx_http_veto_sandbox_main_conf_t *vmcf)
{
    return ngx_max(1000, ngx_min(NGX_HTTP_VSB_TRIM_EVERY,
                                 vmcf->audit_max_age / 2));
}


static void
ngx_http_veto_sandbox_trim_logged(ngx_int_t rc, redisReply *reply,
    void *data)
{
    if (rc != NGX_OK || reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: trimming the audit stream by age "
                      "failed");
    }
}


static void
ngx_http_veto_sandbox_audit_age_trim(ngx_log_t *log)
{
    u_char                              *p;
    ngx_str_t                            a[4], *t;
    ngx_uint_t                           i;
    ngx_pool_t                          *pool;
    ngx_msec_t                           age;
    ngx_http_veto_sandbox_redis_call_t   call;

    age = ngx_http_veto_sandbox_age_mcf->audit_max_age;

    if (age == 0 || ngx_http_veto_sandbox_age_tenants == NULL
        || (time_t) (age / 1000) >= ngx_time())
    {
        return;
    }

    pool = ngx_create_pool(1024, log);
    if (pool == NULL) {
        return;
    }

    p = ngx_pnalloc(pool, 2 * NGX_INT64_LEN);
    if (p == NULL) {
        ngx_destroy_pool(pool);
        return;
    }

    /* entry ids are "<ms>-<n>" on Redis' clock; ours is close enough for
     * an age counted in minutes or more.  "<ms>" as the end of a range:
     * every entry of that millisecond and older */
    p = ngx_http_veto_sandbox_redis_arg(&a[2], p, "%uL",
                                        (uint64_t) ngx_time() * 1000
                                        - (uint64_t) age - 1);

    p = ngx_http_veto_sandbox_redis_arg(&a[3], p, "%ui",
                                        (ngx_uint_t) NGX_HTTP_VSB_AUDIT_SCAN);

    t = ngx_http_veto_sandbox_age_tenants->elts;

    for (i = 0; i < ngx_http_veto_sandbox_age_tenants->nelts; i++) {
        if (!ngx_http_veto_sandbox_redis_key_part_valid(t[i].data, t[i].len)
            || ngx_http_veto_sandbox_tenant_key(pool, &a[0], "audit", &t[i],
                                                NULL)
               != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(pool, &a[1], "audit:bytes",
                                                &t[i], NULL)
               != NGX_OK)
        {
            continue;
        }

        call.rds = ngx_http_veto_sandbox_rds;
        call.pool = pool;
        call.timeout = ngx_http_veto_sandbox_age_mcf->timeout;
        call.handler = ngx_http_veto_sandbox_trim_logged;
        call.data = NULL;
        call.cmdp = NULL;

        (void) ngx_http_veto_sandbox_redis_eval_str(&call,
                                    &ngx_http_veto_sandbox_age_scripts[0],
                                    2, 4, a);
    }

    ngx_destroy_pool(pool);
}


/* The timer's tick: trims when it is time. */
void
ngx_http_veto_sandbox_audit_age_tick(ngx_log_t *log)
{
    ngx_msec_t  age;

    if (ngx_http_veto_sandbox_age_mcf == NULL) {
        return;
    }

    age = ngx_http_veto_sandbox_age_mcf->audit_max_age;

    if (age == 0
        || ngx_current_msec - ngx_http_veto_sandbox_trimmed
           < ngx_min(NGX_HTTP_VSB_TRIM_EVERY, age / 2))
    {
        return;
    }

    ngx_http_veto_sandbox_trimmed = ngx_current_msec;
    ngx_http_veto_sandbox_audit_age_trim(log);
}
