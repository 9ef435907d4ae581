/*
 * Gateway hosts sharing one Redis: each host's identity and liveness,
 * where a sandbox is, and what becomes of a lost host's sandboxes.
 *
 * A host configured with an address ("veto_sandbox_host <name>
 * <host>:<port>") takes a boot epoch when its worker 0 starts (INCR) and
 * keeps a lease (veto_sandbox_host_lease, renewed every third of it from
 * worker 0's event loop).  Keys, under the hash tag "{:hosts}" (":" is
 * never part of a tenant's name, so no tenant's keys can meet them):
 *
 *   veto:{:hosts}:boot:<name>    the boot epoch counter (INCR)
 *   veto:{:hosts}:lease:<name>   hash addr, epoch, renewed_ms, and the
 *                                load (sandboxes, capacity, load: their
 *                                ratio; from the helper's last "ended"
 *                                page, empty when not known); PX lease
 *   veto:{:hosts}:seen           zset name -> its last renewal (ms), no
 *                                expiry: when a lease ran out
 *   veto:{:hosts}:reap:<name>    the reaper's lock (SET NX PX)
 *
 * A run under an older epoch than the lease's (the same name started
 * again elsewhere, or a run that stalled past its lease) stops renewing:
 * the newer run owns the name.
 *
 * Where a request's sandbox is, and where a create goes: _where.c.
 *
 * A host whose lease ran out more than veto_sandbox_host_grace ago is
 * lost: the first gateway to take its reap lock ends its sandboxes, one
 * tenant of the policy at a time, with one script that is idempotent (a
 * marker per sandbox): the quota slot and the ownership record go, and
 * one "sandbox.end" audit entry with outcome host_lost is written.  The
 * host leaves the seen set once every tenant is done; its files are on
 * the lost machine (no migration).
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_audit.h"


#define NGX_HTTP_VSB_HOSTS_TENANTS    256
#define NGX_HTTP_VSB_HOSTS_REAP_LOCK  30000     /* ms */
#define NGX_HTTP_VSB_HOSTS_MARK_S     86400     /* s a host_lost marker
                                                   outlives the reap */


typedef struct {
    ngx_event_t                         ev;
    ngx_http_veto_sandbox_main_conf_t  *mcf;
    ngx_str_t                           tenants[NGX_HTTP_VSB_HOSTS_TENANTS];
    ngx_uint_t                          ntenants;
    int64_t                             epoch;      /* 0: not yet known */
    ngx_pool_t                         *reap_pool;  /* one reap's */
    ngx_str_t                           reaping;    /* the lost host */
    ngx_str_t                           seen_ms;    /* its last renewal */
    ngx_uint_t                          pending;
    unsigned                            busy:1;     /* a call in flight */
    unsigned                            reap_failed:1;
    unsigned                            fenced:1;
    unsigned                            closing:1;
} ngx_http_veto_sandbox_hosts_t;


static void ngx_http_veto_sandbox_hosts_tick(ngx_event_t *ev);
static void ngx_http_veto_sandbox_hosts_booted(ngx_int_t rc,
    redisReply *reply, void *data);
static void ngx_http_veto_sandbox_hosts_renewed(ngx_int_t rc,
    redisReply *reply, void *data);
static void ngx_http_veto_sandbox_hosts_picked(ngx_int_t rc,
    redisReply *reply, void *data);
static void ngx_http_veto_sandbox_hosts_tenant_done(ngx_int_t rc,
    redisReply *reply, void *data);
static void ngx_http_veto_sandbox_hosts_reap_end(
    ngx_http_veto_sandbox_hosts_t *h);


/* a reply nobody waits for */
static void
ngx_http_veto_sandbox_hosts_ignore(ngx_int_t rc, redisReply *reply,
    void *data)
{
}


/*
 * The Lua scripts, after lua/prelude.lua: lua/host_renew.lua (the lease,
 * or "fenced" when a newer run holds the name), lua/host_pick.lua (a
 * lost host, its reap lock taken), lua/host_reaped.lua (it leaves the
 * seen set), lua/host_lost.lua (a tenant's sandboxes on the lost host
 * ended, each with its routing record and one audit entry).
 */
NGX_HTTP_VSB_LUA(host_renew);
NGX_HTTP_VSB_LUA(host_pick);
NGX_HTTP_VSB_LUA(host_reaped);
NGX_HTTP_VSB_LUA(host_lost);

static ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_hosts_scripts[] = {
    NGX_HTTP_VSB_SCRIPT(host_renew),
    NGX_HTTP_VSB_SCRIPT(host_pick),
    NGX_HTTP_VSB_SCRIPT(host_reaped),
    NGX_HTTP_VSB_SCRIPT(host_lost),
    { NULL, NULL, "" }
};

#define ngx_http_vsb_renew   (&ngx_http_veto_sandbox_hosts_scripts[0])
#define ngx_http_vsb_pick    (&ngx_http_veto_sandbox_hosts_scripts[1])
#define ngx_http_vsb_reaped  (&ngx_http_veto_sandbox_hosts_scripts[2])
#define ngx_http_vsb_lost    (&ngx_http_veto_sandbox_hosts_scripts[3])


static ngx_http_veto_sandbox_hosts_t  *ngx_http_veto_sandbox_hosts;


/* veto:{:hosts}:<what><name> */
ngx_int_t
ngx_http_veto_sandbox_hosts_key(ngx_pool_t *pool, ngx_str_t *key,
    const char *what, ngx_str_t *name)
{
    size_t  len;

    len = sizeof(NGX_HTTP_VSB_HOSTS_KEY) + ngx_strlen(what)
          + (name ? name->len : 0);

    key->data = ngx_pnalloc(pool, len);
    if (key->data == NULL) {
        return NGX_ERROR;
    }

    key->len = name ? ngx_sprintf(key->data, NGX_HTTP_VSB_HOSTS_KEY "%s%V",
                                  what, name) - key->data
                    : ngx_sprintf(key->data, NGX_HTTP_VSB_HOSTS_KEY "%s",
                                  what) - key->data;

    return NGX_OK;
}


/* The tenants every policy of this gateway names, each once: the reaper
 * looks for a lost host's sandboxes in their live sets. */
static void
ngx_http_veto_sandbox_hosts_collect(ngx_cycle_t *cycle,
    ngx_http_veto_sandbox_hosts_t *h)
{
    ngx_uint_t                          i, k, n;
    ngx_http_core_srv_conf_t          **cscfp;
    ngx_http_core_main_conf_t          *cmcf;
    ngx_http_veto_sandbox_tenant_t     *t;
    ngx_http_veto_sandbox_srv_conf_t   *vscf;

    cmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_core_module);
    if (cmcf == NULL) {
        return;
    }

    cscfp = cmcf->servers.elts;

    for (i = 0; i < cmcf->servers.nelts; i++) {
        vscf = cscfp[i]->ctx->srv_conf[ngx_http_veto_sandbox_module.ctx_index];

        if (vscf->policy == NULL || vscf->policy->tenants == NULL) {
            continue;
        }

        t = vscf->policy->tenants->elts;

        for (n = 0; n < vscf->policy->tenants->nelts; n++) {
            if (!ngx_http_veto_sandbox_redis_key_part_valid(t[n].name.data,
                                                           t[n].name.len))
            {
                continue;
            }

            for (k = 0; k < h->ntenants; k++) {
                if (h->tenants[k].len == t[n].name.len
                    && ngx_strncmp(h->tenants[k].data, t[n].name.data,
                                   t[n].name.len) == 0)
                {
                    break;
                }
            }

            if (k < h->ntenants) {
                continue;
            }

            if (h->ntenants == NGX_HTTP_VSB_HOSTS_TENANTS) {
                ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                              "veto_sandbox: more than %d tenants: a lost "
                              "host's sandboxes of tenant \"%V\" are not "
                              "ended by this gateway",
                              NGX_HTTP_VSB_HOSTS_TENANTS, &t[n].name);
                continue;
            }

            h->tenants[h->ntenants++] = t[n].name;
        }
    }
}


ngx_int_t
ngx_http_veto_sandbox_hosts_init_process(ngx_cycle_t *cycle)
{
    ngx_http_veto_sandbox_hosts_t      *h;
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    ngx_http_veto_sandbox_hosts = NULL;

    vmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_veto_sandbox_module);

    /* one renewer and reaper per host: worker 0 */
    if (vmcf == NULL || !vmcf->enabled || vmcf->host_addr.len == 0
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE)
        || ngx_worker != 0)
    {
        return NGX_OK;
    }

    h = ngx_pcalloc(cycle->pool, sizeof(ngx_http_veto_sandbox_hosts_t));
    if (h == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_veto_sandbox_redis_scripts_init(
                                   ngx_http_veto_sandbox_hosts_scripts)
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "veto_sandbox: cannot prepare the hosts' Redis "
                      "scripts");
        return NGX_ERROR;
    }

    h->mcf = vmcf;
    ngx_http_veto_sandbox_hosts_collect(cycle, h);

    h->ev.handler = ngx_http_veto_sandbox_hosts_tick;
    h->ev.data = h;
    h->ev.log = cycle->log;
    h->ev.cancelable = 1;

    ngx_http_veto_sandbox_hosts = h;

    /* the boot epoch and the first lease as soon as Redis is there */
    ngx_add_timer(&h->ev, 100);

    return NGX_OK;
}


void
ngx_http_veto_sandbox_hosts_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_veto_sandbox_hosts_t  *h = ngx_http_veto_sandbox_hosts;

    if (h == NULL) {
        return;
    }

    h->closing = 1;

    if (h->ev.timer_set) {
        ngx_del_timer(&h->ev);
    }

    /* calls in flight are failed when the Redis connection goes; their
     * handlers see "closing" */
}


static void
ngx_http_veto_sandbox_hosts_call(ngx_http_veto_sandbox_hosts_t *h,
    ngx_http_veto_sandbox_redis_call_t *call, ngx_pool_t *pool,
    ngx_http_veto_sandbox_redis_handler_pt handler)
{
    call->rds = ngx_http_veto_sandbox_rds;
    call->pool = pool;
    call->timeout = h->mcf->timeout;
    call->handler = handler;
    call->data = h;
    call->cmdp = NULL;
    call->durable = 0;
}


/* Every third of the lease: the boot epoch (once), the lease, a reap. */
static void
ngx_http_veto_sandbox_hosts_tick(ngx_event_t *ev)
{
    u_char                              *p;
    ngx_str_t                            a[9];
    ngx_int_t                            rc;
    ngx_uint_t                           live, max;
    ngx_pool_t                          *pool;
    const char                          *argv[2];
    size_t                               argvlen[2];
    ngx_http_veto_sandbox_hosts_t       *h = ev->data;
    ngx_http_veto_sandbox_redis_call_t   call;

    if (h->closing || ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    ngx_add_timer(&h->ev, ngx_max(h->mcf->host_lease / 3, 300));

    if (h->busy || h->fenced || ngx_http_veto_sandbox_rds == NULL
        || !ngx_http_veto_sandbox_redis_ready(ngx_http_veto_sandbox_rds))
    {
        return;
    }

    /* the call copies keys and arguments: this pool goes at once */
    pool = ngx_create_pool(512, ev->log);
    if (pool == NULL) {
        return;
    }

    ngx_http_veto_sandbox_hosts_call(h, &call, pool,
                                     h->epoch ? ngx_http_veto_sandbox_hosts_renewed
                                              : ngx_http_veto_sandbox_hosts_booted);
    rc = NGX_ERROR;

    if (h->epoch == 0) {
        if (ngx_http_veto_sandbox_hosts_key(pool, &a[0], "boot:",
                                            &h->mcf->host)
            == NGX_OK)
        {
            argv[0] = "INCR";
            argvlen[0] = 4;
            argv[1] = (const char *) a[0].data;
            argvlen[1] = a[0].len;

            rc = ngx_http_veto_sandbox_redis_command(&call, 2, argv,
                                                     argvlen);
        }

    } else {
        p = ngx_pnalloc(pool, 6 * NGX_INT64_LEN);

        if (p != NULL
            && ngx_http_veto_sandbox_hosts_key(pool, &a[0], "lease:",
                                               &h->mcf->host) == NGX_OK
            && ngx_http_veto_sandbox_hosts_key(pool, &a[1], "seen", NULL)
               == NGX_OK)
        {
            a[2] = h->mcf->host;
            a[3] = h->mcf->host_addr;
            a[4].data = p;
            a[4].len = ngx_sprintf(p, "%L", h->epoch) - p;
            a[5].data = a[4].data + a[4].len;
            a[5].len = ngx_sprintf(a[5].data, "%M", h->mcf->host_lease)
                       - a[5].data;

            ngx_str_null(&a[6]);
            ngx_str_null(&a[7]);
            ngx_str_null(&a[8]);

            if (ngx_http_veto_sandbox_ended_load(&live, &max) == NGX_OK) {
                a[6].data = a[5].data + a[5].len;
                a[6].len = ngx_sprintf(a[6].data, "%ui", live) - a[6].data;
                a[7].data = a[6].data + a[6].len;
                a[7].len = ngx_sprintf(a[7].data, "%ui", max) - a[7].data;
                a[8].data = a[7].data + a[7].len;
                a[8].len = ngx_sprintf(a[8].data, "%ui.%03ui",
                                       live / max,
                                       (live % max) * 1000 / max)
                           - a[8].data;
            }

            rc = ngx_http_veto_sandbox_redis_eval_str(&call,
                                                      ngx_http_vsb_renew,
                                                      2, 9, a);
        }
    }

    ngx_destroy_pool(pool);

    if (rc == NGX_OK) {
        h->busy = 1;
    }
}


static void
ngx_http_veto_sandbox_hosts_booted(ngx_int_t rc, redisReply *reply,
    void *data)
{
    ngx_http_veto_sandbox_hosts_t  *h = data;

    h->busy = 0;

    if (h->closing) {
        return;
    }

    if (rc != NGX_OK || reply == NULL || reply->type != REDIS_REPLY_INTEGER
        || reply->integer < 1)
    {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: host \"%V\": no boot epoch from Redis "
                      "yet; asked again", &h->mcf->host);
        return;
    }

    h->epoch = reply->integer;

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "veto_sandbox: host \"%V\" at %V, boot epoch %L",
                  &h->mcf->host, &h->mcf->host_addr, h->epoch);

    /* the lease at once, not a third of it later */
    if (h->ev.timer_set) {
        ngx_del_timer(&h->ev);
    }

    ngx_add_timer(&h->ev, 1);
}


/* The lease is renewed: look for a lost host to reap. */
static void
ngx_http_veto_sandbox_hosts_renewed(ngx_int_t rc, redisReply *reply,
    void *data)
{
    u_char                              *p;
    ngx_str_t                            a[6];
    ngx_http_veto_sandbox_hosts_t       *h = data;
    ngx_http_veto_sandbox_redis_call_t   call;

    h->busy = 0;

    if (h->closing) {
        return;
    }

    if (rc != NGX_OK || reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING)
    {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: host \"%V\": the lease was not renewed "
                      "(%s); tried again", &h->mcf->host,
                      rc != NGX_OK ? "Redis did not answer"
                                   : "unexpected reply");
        return;
    }

    if (reply->element[0]->len == 6
        && ngx_strncmp(reply->element[0]->str, "fenced", 6) == 0)
    {
        h->fenced = 1;
        ngx_log_error(NGX_LOG_CRIT, ngx_cycle->log, 0,
                      "veto_sandbox: host \"%V\": a newer run (boot epoch "
                      "%*s, this one %L) holds this host's name: this run "
                      "no longer renews its lease; give every host its own "
                      "name", &h->mcf->host,
                      (size_t) ngx_min(reply->element[1]->len, 20),
                      reply->element[1]->str, h->epoch);
        return;
    }

    if (h->reap_pool != NULL || h->ntenants == 0) {
        return;                 /* a reap is under way */
    }

    h->reap_pool = ngx_create_pool(4096, ngx_cycle->log);
    if (h->reap_pool == NULL) {
        return;
    }

    p = ngx_pnalloc(h->reap_pool, 2 * NGX_INT64_LEN);
    if (p == NULL
        || ngx_http_veto_sandbox_hosts_key(h->reap_pool, &a[0], "seen", NULL)
           != NGX_OK
        || ngx_http_veto_sandbox_hosts_key(h->reap_pool, &a[2], "lease:",
                                           NULL)
           != NGX_OK
        || ngx_http_veto_sandbox_hosts_key(h->reap_pool, &a[3], "reap:",
                                           NULL)
           != NGX_OK)
    {
        ngx_http_veto_sandbox_hosts_reap_end(h);
        return;
    }

    a[1].data = p;
    a[1].len = ngx_sprintf(p, "%M", h->mcf->host_lease + h->mcf->host_grace)
               - p;
    a[4].data = a[1].data + a[1].len;
    a[4].len = ngx_sprintf(a[4].data, "%d", NGX_HTTP_VSB_HOSTS_REAP_LOCK)
               - a[4].data;
    a[5] = h->mcf->host;

    ngx_http_veto_sandbox_hosts_call(h, &call, h->reap_pool,
                                     ngx_http_veto_sandbox_hosts_picked);

    if (ngx_http_veto_sandbox_redis_eval_str(&call, ngx_http_vsb_pick, 1, 6,
                                             a)
        != NGX_OK)
    {
        ngx_http_veto_sandbox_hosts_reap_end(h);
    }
}


/* A lost host was picked (its lock is ours): each tenant's sandboxes of
 * it are ended. */
static void
ngx_http_veto_sandbox_hosts_picked(ngx_int_t rc, redisReply *reply,
    void *data)
{
    u_char                              *t;
    size_t                               al[13];
    ngx_tm_t                             tm;
    ngx_str_t                            k[7];
    ngx_uint_t                           i;
    const char                          *av[13];
    redisReply                          *name, *seen;
    ngx_http_veto_sandbox_hosts_t       *h = data;
    ngx_http_veto_sandbox_redis_call_t   call;

    if (h->closing) {
        return;
    }

    if (rc != NGX_OK || reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 2)
    {
        ngx_http_veto_sandbox_hosts_reap_end(h);
        return;
    }

    name = reply->element[0];
    seen = reply->element[1];

    if (name->type != REDIS_REPLY_STRING || seen->type != REDIS_REPLY_STRING
        || !ngx_http_veto_sandbox_redis_key_part_valid((u_char *) name->str,
                                                       name->len)
        || seen->len > NGX_INT64_LEN)
    {
        ngx_http_veto_sandbox_hosts_reap_end(h);
        return;
    }

    h->reaping.data = ngx_pnalloc(h->reap_pool, name->len + seen->len
                                  + 4 * NGX_INT64_LEN
                                  + sizeof("1970-01-01T00:00:00.000Z"));
    if (h->reaping.data == NULL) {
        ngx_http_veto_sandbox_hosts_reap_end(h);
        return;
    }

    h->reaping.len = name->len;
    ngx_memcpy(h->reaping.data, name->str, name->len);
    h->seen_ms.data = h->reaping.data + name->len;
    h->seen_ms.len = seen->len;
    ngx_memcpy(h->seen_ms.data, seen->str, seen->len);

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "veto_sandbox: host \"%V\" is lost (its lease ran out "
                  "more than %M ms ago): its sandboxes are ended as "
                  "host_lost", &h->reaping, h->mcf->host_grace);

    t = h->seen_ms.data + h->seen_ms.len;

    /* the marker's expiry, the audit's bounds, the entry's time */
    av[7] = (const char *) t;
    t = ngx_sprintf(t, "%T", ngx_time() + NGX_HTTP_VSB_HOSTS_MARK_S);
    al[7] = t - (u_char *) av[7];
    av[8] = (const char *) t;
    t = ngx_sprintf(t, "%uz", h->mcf->audit_bytes);
    al[8] = t - (u_char *) av[8];
    av[9] = (const char *) t;
    t = ngx_sprintf(t, "%ui", h->mcf->audit_maxlen);
    al[9] = t - (u_char *) av[9];

    ngx_gmtime(ngx_time(), &tm);
    av[10] = (const char *) t;
    t = ngx_sprintf(t, "%4d-%02d-%02dT%02d:%02d:%02d.%03MZ", tm.ngx_tm_year,
                    tm.ngx_tm_mon, tm.ngx_tm_mday, tm.ngx_tm_hour,
                    tm.ngx_tm_min, tm.ngx_tm_sec, ngx_timeofday()->msec);
    al[10] = t - (u_char *) av[10];

    h->pending = 0;
    h->reap_failed = 0;

    for (i = 0; i < h->ntenants; i++) {
        if (ngx_http_veto_sandbox_tenant_key(h->reap_pool, &k[0], "sbx:live",
                                             &h->tenants[i], NULL) != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(h->reap_pool, &k[1], "audit",
                                                &h->tenants[i], NULL)
               != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(h->reap_pool, &k[2],
                                                "audit:bytes",
                                                &h->tenants[i], NULL)
               != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(h->reap_pool, &k[3],
                                                "sbx:own:", &h->tenants[i],
                                                NULL) != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(h->reap_pool, &k[4],
                                                "sbx:live:", &h->tenants[i],
                                                NULL) != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(h->reap_pool, &k[5],
                                                "sbx:end:", &h->tenants[i],
                                                NULL) != NGX_OK
            || ngx_http_veto_sandbox_tenant_key(h->reap_pool, &k[6],
                                                "sbx:route:", &h->tenants[i],
                                                NULL) != NGX_OK)
        {
            h->reap_failed = 1;
            break;
        }

        /* with no part, tenant_key() ends in "what": these three are
         * the prefixes "veto:{T}:sbx:own:" and so on */
        av[0] = (const char *) k[0].data;     al[0] = k[0].len;
        av[1] = (const char *) k[1].data;     al[1] = k[1].len;
        av[2] = (const char *) k[2].data;     al[2] = k[2].len;
        av[3] = (const char *) h->reaping.data;
        al[3] = h->reaping.len;
        av[4] = (const char *) k[3].data;     al[4] = k[3].len;
        av[5] = (const char *) k[4].data;     al[5] = k[4].len;
        av[6] = (const char *) k[5].data;     al[6] = k[5].len;
        av[11] = (const char *) h->tenants[i].data;
        al[11] = h->tenants[i].len;
        av[12] = (const char *) k[6].data;    al[12] = k[6].len;

        ngx_http_veto_sandbox_hosts_call(h, &call, h->reap_pool,
                                   ngx_http_veto_sandbox_hosts_tenant_done);

        if (ngx_http_veto_sandbox_redis_eval(&call, ngx_http_vsb_lost, 3, 13,
                                             av, al)
            != NGX_OK)
        {
            h->reap_failed = 1;
            break;
        }

        h->pending++;
    }

    if (h->pending == 0) {
        ngx_http_veto_sandbox_hosts_tenant_done(NGX_DECLINED, NULL, h);
    }
}


static void
ngx_http_veto_sandbox_hosts_tenant_done(ngx_int_t rc, redisReply *reply,
    void *data)
{
    ngx_str_t                            a[4];
    ngx_http_veto_sandbox_hosts_t       *h = data;
    ngx_http_veto_sandbox_redis_call_t   call;

    if (rc != NGX_DECLINED) {
        if (h->pending) {
            h->pending--;
        }

        if (rc != NGX_OK || reply == NULL
            || reply->type != REDIS_REPLY_INTEGER)
        {
            h->reap_failed = 1;

        } else if (reply->integer > 0) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "veto_sandbox: %L sandbox(es) of lost host \"%V\" "
                          "ended as host_lost", (int64_t) reply->integer,
                          &h->reaping);
        }
    }

    if (h->closing || h->pending) {
        return;
    }

    if (h->reap_failed) {
        /* the lock runs out; this or another gateway tries again */
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: ending the sandboxes of lost host "
                      "\"%V\" failed; tried again later", &h->reaping);
        ngx_http_veto_sandbox_hosts_reap_end(h);
        return;
    }

    if (ngx_http_veto_sandbox_hosts_key(h->reap_pool, &a[0], "seen", NULL)
        != NGX_OK
        || ngx_http_veto_sandbox_hosts_key(h->reap_pool, &a[1], "reap:",
                                           &h->reaping)
           != NGX_OK)
    {
        ngx_http_veto_sandbox_hosts_reap_end(h);
        return;
    }

    a[2] = h->reaping;
    a[3] = h->seen_ms;

    /* done whether or not this last call is answered: a host still in
     * the seen set is reaped again, harmlessly (the markers) */
    ngx_http_veto_sandbox_hosts_call(h, &call, h->reap_pool,
                                     ngx_http_veto_sandbox_hosts_ignore);

    (void) ngx_http_veto_sandbox_redis_eval_str(&call, ngx_http_vsb_reaped,
                                                2, 4, a);

    ngx_http_veto_sandbox_hosts_reap_end(h);
}


static void
ngx_http_veto_sandbox_hosts_reap_end(ngx_http_veto_sandbox_hosts_t *h)
{
    if (h->reap_pool) {
        ngx_destroy_pool(h->reap_pool);
        h->reap_pool = NULL;
    }

    ngx_str_null(&h->reaping);
    h->pending = 0;
}
