/*
 * Ends the gateway did not ask for: a sandbox's lifetime or idle timeout
 * ran out, a limit killed it, the helper restarted.  The helper keeps an
 * ENDED record of every end (its "ended" op pages them, every tenant's,
 * by a cursor that grows within one helper run); one worker of each
 * gateway (worker 0) polls each helper it forwards to, every
 * veto_sandbox_ended_poll, and for each record runs one Redis script
 * that is idempotent across workers, gateways and replays: a marker
 * veto:{T}:sbx:end:<id> (SET NX, until the record's retention is over)
 * says it was handled, and the first to set it frees the quota slot and
 * the ownership record and puts one "sandbox.end" entry on the tenant's
 * audit stream.  The cursor moves only once every record of a page is
 * handled: with Redis out, the same page is asked again later, and
 * nothing is lost.  After a helper restart (another epoch) the cursor
 * starts over from 0; the markers make the replay harmless.
 *
 * Its timer also drives the audit's age bound (_audit_age.c).
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_redact.h"
#include "ngx_http_veto_sandbox_audit.h"


#define NGX_HTTP_VSB_ENDED_HELPERS   8
#define NGX_HTTP_VSB_ENDED_PAGE      16
#define NGX_HTTP_VSB_ENDED_TIMEOUT   5000       /* connect, send, read */
#define NGX_HTTP_VSB_ENDED_MARGIN    3600       /* s past the retention */


typedef struct {
    ngx_addr_t                *addr;
    ngx_peer_connection_t      peer;
    ngx_pool_t                *pool;        /* one page's */
    ngx_buf_t                 *out;
    u_char                     head[VSB_FRAME_HEADER_LEN];
    size_t                     head_got;
    u_char                    *in;
    size_t                     in_size;
    size_t                     in_got;

    u_char                     epoch[VSB_EPOCH_LEN + 1];
    uint64_t                   after;       /* handled up to here */
    uint64_t                   asked;       /* the page's cursor */
    uint64_t                   next;
    ngx_uint_t                 pending;     /* Redis calls in flight */
    ngx_int_t                  sandboxes;   /* live, at the last page;
                                               -1: not known */
    ngx_int_t                  sandboxes_max;
    unsigned                   more:1;
    unsigned                   failed:1;
    unsigned                   busy:1;
} ngx_http_veto_sandbox_poll_t;


static void ngx_http_veto_sandbox_ended_tick(ngx_event_t *ev);
static void ngx_http_veto_sandbox_ended_start(
    ngx_http_veto_sandbox_poll_t *p);
static void ngx_http_veto_sandbox_ended_write(ngx_event_t *wev);
static void ngx_http_veto_sandbox_ended_read(ngx_event_t *rev);
static void ngx_http_veto_sandbox_ended_page(ngx_http_veto_sandbox_poll_t *p,
    json_t *j);
static void ngx_http_veto_sandbox_ended_finish(
    ngx_http_veto_sandbox_poll_t *p, const char *failure);


/* lua/sandbox_ended.lua, after lua/prelude.lua: idempotent by its marker,
 * it frees the slot and the ownership record, keeps the routing record
 * and appends the "sandbox.end" audit entry, in one call */
NGX_HTTP_VSB_LUA(sandbox_ended);

static ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_ended_scripts[] = {
    NGX_HTTP_VSB_SCRIPT(sandbox_ended),
    { NULL, NULL, "" }
};


static ngx_http_veto_sandbox_poll_t  ngx_http_veto_sandbox_polls[
                                         NGX_HTTP_VSB_ENDED_HELPERS];
static ngx_uint_t                    ngx_http_veto_sandbox_npolls;
static ngx_event_t                   ngx_http_veto_sandbox_ended_ev;
static ngx_msec_t                    ngx_http_veto_sandbox_ended_every;
static ngx_http_veto_sandbox_main_conf_t  *ngx_http_veto_sandbox_ended_mcf;
static ngx_uint_t                    ngx_http_veto_sandbox_ended_closing;


/* The helpers this gateway forwards to, each once. */
static ngx_int_t
ngx_http_veto_sandbox_ended_collect(ngx_cycle_t *cycle)
{
    ngx_uint_t                          i, k;
    ngx_http_core_srv_conf_t          **cscfp;
    ngx_http_core_main_conf_t          *cmcf;
    ngx_http_veto_sandbox_srv_conf_t   *vscf;

    cmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_core_module);
    if (cmcf == NULL) {
        return NGX_OK;
    }

    cscfp = cmcf->servers.elts;

    for (i = 0; i < cmcf->servers.nelts; i++) {
        vscf = cscfp[i]->ctx->srv_conf[ngx_http_veto_sandbox_module.ctx_index];

        if (vscf->helper == NULL) {
            continue;
        }

        for (k = 0; k < ngx_http_veto_sandbox_npolls; k++) {
            if (ngx_http_veto_sandbox_polls[k].addr->name.len
                    == vscf->helper->name.len
                && ngx_strncmp(ngx_http_veto_sandbox_polls[k].addr->name.data,
                               vscf->helper->name.data,
                               vscf->helper->name.len) == 0)
            {
                break;
            }
        }

        if (k < ngx_http_veto_sandbox_npolls) {
            continue;
        }

        if (ngx_http_veto_sandbox_npolls == NGX_HTTP_VSB_ENDED_HELPERS) {
            ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                          "veto_sandbox: more than %d helpers: the ends of "
                          "sandboxes of \"%V\" are not polled",
                          NGX_HTTP_VSB_ENDED_HELPERS, &vscf->helper->name);
            continue;
        }

        ngx_http_veto_sandbox_polls[ngx_http_veto_sandbox_npolls].sandboxes =
            -1;
        ngx_http_veto_sandbox_polls[ngx_http_veto_sandbox_npolls++].addr =
            vscf->helper;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_ended_init_process(ngx_cycle_t *cycle)
{
    ngx_event_t                        *ev;
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    vmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_veto_sandbox_module);

    ngx_memzero(ngx_http_veto_sandbox_polls,
                sizeof(ngx_http_veto_sandbox_polls));
    ngx_http_veto_sandbox_npolls = 0;
    ngx_http_veto_sandbox_ended_closing = 0;

    /* one worker per gateway; the markers make more harmless */
    if (vmcf == NULL || !vmcf->enabled
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE)
        || ngx_worker != 0
        || (vmcf->ended_poll == 0 && vmcf->audit_max_age == 0))
    {
        return NGX_OK;
    }

    if (ngx_http_veto_sandbox_redis_scripts_init(
                                   ngx_http_veto_sandbox_ended_scripts)
           != NGX_OK
        || ngx_http_veto_sandbox_ended_collect(cycle) != NGX_OK
        || ngx_http_veto_sandbox_audit_age_init(cycle, vmcf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_veto_sandbox_ended_mcf = vmcf;
    ngx_http_veto_sandbox_ended_every = vmcf->ended_poll
                                        ? vmcf->ended_poll
                                        : ngx_http_veto_sandbox_audit_age_every(
                                              vmcf);

    ev = &ngx_http_veto_sandbox_ended_ev;
    ngx_memzero(ev, sizeof(ngx_event_t));
    ev->handler = ngx_http_veto_sandbox_ended_tick;
    ev->log = cycle->log;
    ev->cancelable = 1;

    /* the first look soon after the start: what ended meanwhile */
    ngx_add_timer(ev, 1000);

    return NGX_OK;
}


void
ngx_http_veto_sandbox_ended_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                     i;
    ngx_http_veto_sandbox_poll_t  *p;

    ngx_http_veto_sandbox_ended_closing = 1;

    if (ngx_http_veto_sandbox_ended_ev.timer_set) {
        ngx_del_timer(&ngx_http_veto_sandbox_ended_ev);
    }

    for (i = 0; i < ngx_http_veto_sandbox_npolls; i++) {
        p = &ngx_http_veto_sandbox_polls[i];

        if (p->peer.connection) {
            ngx_close_connection(p->peer.connection);
            p->peer.connection = NULL;
        }
    }

    /* a page's pool may still be named by Redis calls in flight (they
     * are failed when the Redis connection goes, next): it goes with the
     * process */
}


/* This gateway's helpers' live sandboxes and their capacity, as their
 * last pages said: NGX_DECLINED when one is not known (worker 0 only). */
ngx_int_t
ngx_http_veto_sandbox_ended_load(ngx_uint_t *live, ngx_uint_t *max)
{
    ngx_uint_t                     i;
    ngx_http_veto_sandbox_poll_t  *p;

    *live = 0;
    *max = 0;

    if (ngx_http_veto_sandbox_npolls == 0) {
        return NGX_DECLINED;
    }

    for (i = 0; i < ngx_http_veto_sandbox_npolls; i++) {
        p = &ngx_http_veto_sandbox_polls[i];

        if (p->sandboxes < 0 || p->sandboxes_max <= 0) {
            return NGX_DECLINED;
        }

        *live += p->sandboxes;
        *max += p->sandboxes_max;
    }

    return NGX_OK;
}


static void
ngx_http_veto_sandbox_ended_tick(ngx_event_t *ev)
{
    ngx_uint_t  i;

    if (ngx_exiting || ngx_quit || ngx_terminate
        || ngx_http_veto_sandbox_ended_closing)
    {
        return;
    }

    if (ngx_http_veto_sandbox_rds != NULL
        && ngx_http_veto_sandbox_redis_ready(ngx_http_veto_sandbox_rds))
    {
        if (ngx_http_veto_sandbox_ended_mcf->ended_poll) {
            for (i = 0; i < ngx_http_veto_sandbox_npolls; i++) {
                if (!ngx_http_veto_sandbox_polls[i].busy) {
                    ngx_http_veto_sandbox_ended_start(
                                             &ngx_http_veto_sandbox_polls[i]);
                }
            }
        }

        ngx_http_veto_sandbox_audit_age_tick(ev->log);
    }

    ngx_add_timer(ev, ngx_http_veto_sandbox_ended_every);
}


/* Asks the helper for the records after p->after. */
static void
ngx_http_veto_sandbox_ended_start(ngx_http_veto_sandbox_poll_t *p)
{
    size_t             len;
    json_t            *req;
    ngx_int_t          rc;
    ngx_buf_t         *b;
    ngx_connection_t  *c;

    p->busy = 1;
    p->failed = 0;
    p->more = 0;
    p->pending = 0;
    p->head_got = 0;
    p->in = NULL;
    p->in_got = 0;
    p->asked = p->after;

    p->pool = ngx_create_pool(4096, ngx_cycle->log);
    if (p->pool == NULL) {
        p->busy = 0;
        return;
    }

    req = json_pack("{s:s, s:I, s:i}", "op", VSB_OP_ENDED,
                    "after", (json_int_t) p->after,
                    "max", NGX_HTTP_VSB_ENDED_PAGE);
    len = req ? json_dumpb(req, NULL, 0, JSON_COMPACT) : 0;

    b = len ? ngx_create_temp_buf(p->pool, VSB_FRAME_HEADER_LEN + len) : NULL;

    if (b == NULL) {
        json_decref(req);
        ngx_http_veto_sandbox_ended_finish(p, "out of memory");
        return;
    }

    vsb_frame_header_encode(b->last, (uint32_t) len, 0);
    b->last += VSB_FRAME_HEADER_LEN;
    b->last += json_dumpb(req, (char *) b->last, len, JSON_COMPACT);
    json_decref(req);

    p->out = b;

    ngx_memzero(&p->peer, sizeof(ngx_peer_connection_t));
    p->peer.sockaddr = p->addr->sockaddr;
    p->peer.socklen = p->addr->socklen;
    p->peer.name = &p->addr->name;
    p->peer.get = ngx_event_get_peer;
    p->peer.log = ngx_cycle->log;
    p->peer.log_error = NGX_ERROR_ERR;

    rc = ngx_event_connect_peer(&p->peer);

    if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
        ngx_http_veto_sandbox_ended_finish(p, "cannot connect");
        return;
    }

    c = p->peer.connection;
    c->data = p;
    c->pool = p->pool;
    c->read->handler = ngx_http_veto_sandbox_ended_read;
    c->write->handler = ngx_http_veto_sandbox_ended_write;

    ngx_add_timer(c->write, NGX_HTTP_VSB_ENDED_TIMEOUT);

    if (rc == NGX_OK) {
        ngx_http_veto_sandbox_ended_write(c->write);
    }
}


static void
ngx_http_veto_sandbox_ended_write(ngx_event_t *wev)
{
    ssize_t                        n;
    ngx_connection_t              *c;
    ngx_http_veto_sandbox_poll_t  *p;

    c = wev->data;
    p = c->data;

    if (wev->timedout) {
        ngx_http_veto_sandbox_ended_finish(p, "sending timed out");
        return;
    }

    while (p->out->pos < p->out->last) {
        n = c->send(c, p->out->pos, p->out->last - p->out->pos);

        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(wev, 0) != NGX_OK) {
                ngx_http_veto_sandbox_ended_finish(p, "connection failed");
            }
            return;
        }

        if (n == NGX_ERROR) {
            ngx_http_veto_sandbox_ended_finish(p, "sending failed");
            return;
        }

        p->out->pos += n;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    if (!c->read->timer_set) {
        ngx_add_timer(c->read, NGX_HTTP_VSB_ENDED_TIMEOUT);
    }

    ngx_http_veto_sandbox_ended_read(c->read);
}


static void
ngx_http_veto_sandbox_ended_read(ngx_event_t *rev)
{
    u_char                        *buf;
    size_t                         size;
    ssize_t                        n;
    json_t                        *j;
    uint32_t                       jlen, plen;
    ngx_connection_t              *c;
    ngx_http_veto_sandbox_poll_t  *p;

    c = rev->data;
    p = c->data;

    if (rev->timedout) {
        ngx_http_veto_sandbox_ended_finish(p, "the helper did not answer");
        return;
    }

    if (p->out->pos < p->out->last) {
        return;
    }

    for ( ;; ) {
        if (p->head_got < VSB_FRAME_HEADER_LEN) {
            buf = p->head + p->head_got;
            size = VSB_FRAME_HEADER_LEN - p->head_got;

        } else {
            buf = p->in + p->in_got;
            size = p->in_size - p->in_got;
        }

        n = c->recv(c, buf, size);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_veto_sandbox_ended_finish(p, "connection failed");
            }
            return;
        }

        if (n == NGX_ERROR || n == 0) {
            ngx_http_veto_sandbox_ended_finish(p, "the helper closed the "
                                               "connection");
            return;
        }

        if (p->head_got < VSB_FRAME_HEADER_LEN) {
            p->head_got += n;

            if (p->head_got < VSB_FRAME_HEADER_LEN) {
                continue;
            }

            jlen = vsb_frame_get_u32(p->head + 4);
            plen = vsb_frame_get_u32(p->head + 8);

            /* a reply of the ended op has no payload */
            if (ngx_memcmp(p->head, VSB_FRAME_MAGIC, VSB_FRAME_MAGIC_LEN) != 0
                || jlen == 0 || jlen > VSB_MAX_JSON || plen != 0)
            {
                ngx_http_veto_sandbox_ended_finish(p, "a bad frame");
                return;
            }

            p->in_size = jlen;
            p->in = ngx_pnalloc(p->pool, jlen);
            if (p->in == NULL) {
                ngx_http_veto_sandbox_ended_finish(p, "out of memory");
                return;
            }

            continue;
        }

        p->in_got += n;

        if (p->in_got == p->in_size) {
            break;
        }
    }

    ngx_close_connection(c);
    p->peer.connection = NULL;

    j = json_loadb((char *) p->in, p->in_size, JSON_REJECT_DUPLICATES, NULL);

    ngx_http_veto_sandbox_ended_page(p, j);

    json_decref(j);
}


/* The script answered for one record (and, the first time, put it on
 * the audit stream). */
static void
ngx_http_veto_sandbox_ended_handled(ngx_int_t rc, redisReply *reply,
    void *data)
{
    ngx_http_veto_sandbox_poll_t  *p = data;

    if (rc != NGX_OK || reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        p->failed = 1;
    }

    if (--p->pending == 0) {
        ngx_http_veto_sandbox_ended_finish(p, p->failed ? "redis" : NULL);
    }
}


/* A string field of the record within max bytes, or empty. */
static ngx_str_t
ngx_http_veto_sandbox_ended_str(ngx_pool_t *pool, json_t *rec,
    const char *name, size_t max)
{
    json_t     *v;
    ngx_str_t   s;

    ngx_str_null(&s);

    v = json_object_get(rec, name);

    if (!json_is_string(v) || json_string_length(v) == 0
        || json_string_length(v) > max)
    {
        return s;
    }

    s.len = json_string_length(v);
    s.data = ngx_pnalloc(pool, s.len);

    if (s.data == NULL) {
        s.len = 0;
        return s;
    }

    ngx_memcpy(s.data, json_string_value(v), s.len);

    return s;
}


/* what the audit entry of an end keeps of the helper's record */
static const char *const  ngx_http_veto_sandbox_ended_fields[] = {
    "end_reason", "limit", "step", "cause", "detail", "epoch", "created_at",
    "expires_at", "idle_s", "ended_at", "termination_ms", "confirmed", NULL
};


/* One record: its script; NGX_DECLINED for a record that names no valid
 * owner (logged and skipped: it can never be handled). */
static ngx_int_t
ngx_http_veto_sandbox_ended_one(ngx_http_veto_sandbox_poll_t *p, json_t *rec)
{
    int                                  argc;
    u_char                              *t, *when;
    json_t                              *d, *v;
    size_t                               argvlen[40];
    ngx_tm_t                             tm;
    ngx_str_t                            tenant, agent, id, reason, mark,
                                         keys[7], why, detail, red, epoch,
                                         *host;
    ngx_uint_t                           i;
    json_int_t                           until, retained, ended_at;
    const char                          *argv[40];
    ngx_http_veto_sandbox_redis_call_t   call;

    tenant = ngx_http_veto_sandbox_ended_str(p->pool, rec, "tenant", 128);
    agent = ngx_http_veto_sandbox_ended_str(p->pool, rec, "agent", 128);
    id = ngx_http_veto_sandbox_ended_str(p->pool, rec, "id",
                                         VSB_SANDBOX_ID_LEN);
    reason = ngx_http_veto_sandbox_ended_str(p->pool, rec, "end_reason", 32);

    if (tenant.len == 0 || agent.len == 0 || reason.len == 0
        || !ngx_http_veto_sandbox_redis_key_part_valid(reason.data,
                                                       reason.len)
        || !ngx_http_veto_sandbox_id_valid(id.data, id.len)
        || !ngx_http_veto_sandbox_redis_key_part_valid(tenant.data,
                                                       tenant.len)
        || !ngx_http_veto_sandbox_redis_key_part_valid(agent.data, agent.len))
    {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: helper %V: an ENDED record without a "
                      "valid id, owner or reason is skipped", p->peer.name);
        return NGX_DECLINED;
    }

    /* which limit, or which step failed */
    why = ngx_http_veto_sandbox_ended_str(p->pool, rec, "limit", 32);
    if (why.len == 0) {
        why = ngx_http_veto_sandbox_ended_str(p->pool, rec, "step", 32);
    }

    d = json_object();

    if (d == NULL
        || ngx_http_veto_sandbox_json_pick(d, rec,
                                           ngx_http_veto_sandbox_ended_fields)
           != NGX_OK)
    {
        json_decref(d);
        return NGX_ERROR;
    }

    detail.data = ngx_http_veto_sandbox_json_dump(p->pool, d, 0, 0,
                                                  &detail.len);
    json_decref(d);

    if (detail.data == NULL || detail.len == 0) {
        return NGX_ERROR;
    }

    /* as every audit entry: secrets never enter the stream */
    if (ngx_http_veto_sandbox_redact(p->pool, &detail, &red) != NGX_OK) {
        return NGX_ERROR;
    }

    /* the marker outlives the record the helper would give again */
    v = json_object_get(rec, "retained_until");
    until = json_is_integer(v) ? json_integer_value(v) : 0;
    retained = until;

    if (until < ngx_time()) {
        until = ngx_time();
    }

    until += NGX_HTTP_VSB_ENDED_MARGIN;

    /* one marker per end reason: a failed termination, then its
     * confirmation, are two ends on record */
    mark.data = ngx_pnalloc(p->pool, id.len + 1 + reason.len);
    t = ngx_pnalloc(p->pool, 6 * NGX_INT64_LEN
                             + sizeof("1970-01-01T00:00:00.000Z"));

    if (mark.data == NULL || t == NULL) {
        return NGX_ERROR;
    }

    mark.len = ngx_sprintf(mark.data, "%V:%V", &id, &reason) - mark.data;

    if (ngx_http_veto_sandbox_tenant_key(p->pool, &keys[0], "sbx:end",
                                         &tenant, &mark) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(p->pool, &keys[1], "sbx:live",
                                            &tenant, NULL) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(p->pool, &keys[2], "sbx:live",
                                            &tenant, &agent) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(p->pool, &keys[3], "sbx:own",
                                            &tenant, &id) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(p->pool, &keys[4], "audit",
                                            &tenant, NULL) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(p->pool, &keys[5], "audit:bytes",
                                            &tenant, NULL) != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(p->pool, &keys[6], "sbx:route",
                                            &tenant, &id) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* with hosts: the routing record that outlives the ownership record
     * as long as the helper keeps this record (_where.c) */
    host = &ngx_http_veto_sandbox_ended_mcf->host;
    epoch = ngx_http_veto_sandbox_ended_str(p->pool, rec, "epoch",
                                            VSB_EPOCH_LEN);
    v = json_object_get(rec, "ended_at");
    ended_at = json_is_integer(v) ? json_integer_value(v) : ngx_time();

    argc = 0;

    for (i = 0; i < 7; i++) {
        argv[argc] = (const char *) keys[i].data;
        argvlen[argc++] = keys[i].len;
    }

#define ngx_http_vsb_arg(s, n)                                                \
    argv[argc] = (const char *) (s); argvlen[argc++] = (n)
#define ngx_http_vsb_field(name, v)                                           \
    if ((v).len) {                                                            \
        ngx_http_vsb_arg(name, sizeof(name) - 1);                             \
        ngx_http_vsb_arg((v).data, (v).len);                                  \
    }

    ngx_http_vsb_arg(id.data, id.len);

    when = t;
    t = ngx_sprintf(t, "%L", (int64_t) until);
    ngx_http_vsb_arg(when, t - when);

    ngx_http_vsb_arg(reason.data, reason.len);

    when = t;
    t = ngx_sprintf(t, "%uz", ngx_http_veto_sandbox_ended_mcf->audit_bytes);
    ngx_http_vsb_arg(when, t - when);

    when = t;
    t = ngx_sprintf(t, "%ui", ngx_http_veto_sandbox_ended_mcf->audit_maxlen);
    ngx_http_vsb_arg(when, t - when);

    if (ngx_http_veto_sandbox_ended_mcf->host_addr.len) {
        ngx_http_vsb_arg(host->data, host->len);
    } else {
        ngx_http_vsb_arg("", 0);
    }

    ngx_http_vsb_arg(epoch.data ? (char *) epoch.data : "", epoch.len);

    when = t;
    t = ngx_sprintf(t, "%L", (int64_t) ended_at);
    ngx_http_vsb_arg(when, t - when);

    when = t;
    t = ngx_sprintf(t, "%L", (int64_t) retained);
    ngx_http_vsb_arg(when, t - when);

    ngx_http_vsb_arg(agent.data, agent.len);

    /* the entry, in the fields every audit entry has */
    ngx_gmtime(ngx_time(), &tm);
    when = t;
    t = ngx_sprintf(t, "%4d-%02d-%02dT%02d:%02d:%02d.%03MZ", tm.ngx_tm_year,
                    tm.ngx_tm_mon, tm.ngx_tm_mday, tm.ngx_tm_hour,
                    tm.ngx_tm_min, tm.ngx_tm_sec, ngx_timeofday()->msec);
    ngx_http_vsb_arg("time", 4);
    ngx_http_vsb_arg(when, t - when);

    ngx_http_vsb_field("tenant", tenant);
    ngx_http_vsb_field("agent", agent);
    ngx_http_vsb_arg("action", 6);
    ngx_http_vsb_arg("sandbox.end", sizeof("sandbox.end") - 1);
    ngx_http_vsb_field("outcome", reason);
    ngx_http_vsb_field("reason", why);
    ngx_http_vsb_field("sandbox", id);
    ngx_http_vsb_field("detail", red);

#undef ngx_http_vsb_field
#undef ngx_http_vsb_arg

    call.rds = ngx_http_veto_sandbox_rds;
    call.pool = p->pool;
    call.timeout = ngx_http_veto_sandbox_ended_mcf->timeout;
    call.handler = ngx_http_veto_sandbox_ended_handled;
    call.data = p;
    call.cmdp = NULL;

    if (ngx_http_veto_sandbox_redis_eval(&call,
                                  &ngx_http_veto_sandbox_ended_scripts[0],
                                  7, argc, argv, argvlen)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    p->pending++;

    return NGX_OK;
}


/* The helper's page: each record handled, then the cursor moves. */
static void
ngx_http_veto_sandbox_ended_page(ngx_http_veto_sandbox_poll_t *p, json_t *j)
{
    size_t       i, len;
    json_t      *v, *rec;
    const char  *epoch;

    if (!json_is_true(json_object_get(j, "ok"))) {
        ngx_http_veto_sandbox_ended_finish(p, "the helper refused");
        return;
    }

    v = json_object_get(j, "epoch");
    epoch = json_is_string(v) ? json_string_value(v) : "";
    len = ngx_strlen(epoch);

    /* another run of the helper: its cursor starts over */
    if (len > VSB_EPOCH_LEN
        || ngx_strncmp(p->epoch, epoch, VSB_EPOCH_LEN + 1) != 0)
    {
        len = ngx_min(len, VSB_EPOCH_LEN);
        ngx_memcpy(p->epoch, epoch, len);
        p->epoch[len] = '\0';

        if (p->asked != 0) {
            p->after = 0;
            p->next = 0;
            p->more = 1;
            ngx_http_veto_sandbox_ended_finish(p, NULL);
            return;
        }
    }

    /* the helper's load, for this host's lease (_hosts.c) */
    v = json_object_get(j, "sandboxes");
    p->sandboxes = json_is_integer(v) && json_integer_value(v) >= 0
                   ? (ngx_int_t) json_integer_value(v) : -1;
    v = json_object_get(j, "sandboxes_max");
    p->sandboxes_max = json_is_integer(v) && json_integer_value(v) > 0
                       ? (ngx_int_t) json_integer_value(v) : -1;

    v = json_object_get(j, "next");
    p->next = json_is_integer(v) && json_integer_value(v) >= 0
              ? (uint64_t) json_integer_value(v) : p->asked;
    p->more = json_is_true(json_object_get(j, "more"));

    json_array_foreach(json_object_get(j, "ended"), i, rec) {
        if (ngx_http_veto_sandbox_ended_one(p, rec) == NGX_ERROR) {
            /* asked again next time, from the same cursor */
            p->failed = 1;
            break;
        }
    }

    if (p->pending == 0) {
        ngx_http_veto_sandbox_ended_finish(p, p->failed ? "redis" : NULL);
    }
}


/* A page is over: the cursor moves if all of it was handled; more pages
 * are asked for at once. */
static void
ngx_http_veto_sandbox_ended_finish(ngx_http_veto_sandbox_poll_t *p,
    const char *failure)
{
    ngx_uint_t  again;

    if (p->peer.connection) {
        ngx_close_connection(p->peer.connection);
        p->peer.connection = NULL;
    }

    if (failure != NULL) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "veto_sandbox: polling the ended sandboxes of helper "
                      "%V: %s; asked again later", &p->addr->name, failure);
        again = 0;

    } else {
        if (p->next > p->after) {
            p->after = p->next;
        }
        again = p->more;
    }

    if (p->pool) {
        ngx_destroy_pool(p->pool);
        p->pool = NULL;
    }

    p->next = p->after;
    p->busy = 0;

    if (again && !ngx_exiting && !ngx_quit && !ngx_terminate
        && !ngx_http_veto_sandbox_ended_closing)
    {
        ngx_http_veto_sandbox_ended_start(p);
    }
}
