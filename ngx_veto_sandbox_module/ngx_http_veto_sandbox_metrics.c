/*
 * Prometheus metrics, the nginx part: the "veto_sandbox_metrics"
 * location (like stub_status, restricted by the operator with allow and
 * deny), the shared zone of worker counters it brings (the table of
 * _metrics_store.c), the count of every API request (log phase), and
 * the scrape.  What the other files count as things happen (the helper's
 * exchanges, Redis' errors, ...) is _metrics_count.c's.
 *
 * A scrape renders the zone and the helper's own figures, which it asks
 * for with the "stats" op over the event loop: it waits at most
 * veto_sandbox_metrics_helper_timeout (1 s), and a helper that is down,
 * slow or answers nonsense makes veto_sandbox_helper_up 0, nothing else:
 * the rest of the scrape is the gateway's and is always there.
 *
 * What a scrape adds to the zone's families, the helper's figures and
 * the webhook notifier's counters, is rendered by _metrics_gauges.c.
 *
 * Without a metrics location there is no zone, and nothing is counted.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_metrics.h"


/* the zone: the table, and room for the slab allocator's own pages */
#define NGX_HTTP_VSB_METRICS_ZONE                                             \
    (sizeof(ngx_http_veto_sandbox_metrics_sh_t) + 32 * ngx_pagesize)

typedef struct {
    ngx_event_t                  timer;    /* the helper's deadline */
    unsigned                     done:1;
} ngx_http_veto_sandbox_scrape_t;


static ngx_int_t ngx_http_veto_sandbox_metrics_zone_init(
    ngx_shm_zone_t *zone, void *data);
static ngx_int_t ngx_http_veto_sandbox_metrics_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_veto_sandbox_metrics_log(ngx_http_request_t *r);
static void ngx_http_veto_sandbox_metrics_stats(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_metrics_timeout(ngx_event_t *ev);
static void ngx_http_veto_sandbox_metrics_cleanup(void *data);
static ngx_int_t ngx_http_veto_sandbox_metrics_send(ngx_http_request_t *r,
    json_t *stats);


/* the zone's tag: another module's zone of the same name is refused */
static ngx_uint_t  ngx_http_veto_sandbox_metrics_tag;


/* veto_sandbox_metrics; */
char *
ngx_http_veto_sandbox_metrics_conf(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_str_t                          *name, zone;
    ngx_http_core_loc_conf_t           *clcf;
    ngx_http_veto_sandbox_srv_conf_t   *vscf;
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->handler == ngx_http_veto_sandbox_metrics_handler) {
        return "is duplicate";
    }

    if (clcf->handler != NULL) {
        return "conflicts with another content handler in this location";
    }

    vmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_veto_sandbox_module);

    if (vmcf->metrics_zone == NULL) {
        ngx_str_set(&zone, "veto_sandbox_metrics");

        vmcf->metrics_zone = ngx_shared_memory_add(cf, &zone,
                                           NGX_HTTP_VSB_METRICS_ZONE,
                                           &ngx_http_veto_sandbox_metrics_tag);
        if (vmcf->metrics_zone == NULL) {
            return NGX_CONF_ERROR;
        }

        vmcf->metrics_zone->init = ngx_http_veto_sandbox_metrics_zone_init;
    }

    vscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_veto_sandbox_module);

    if (vscf->metrics == NULL) {
        vscf->metrics = ngx_array_create(cf->pool, 1, sizeof(ngx_str_t));
        if (vscf->metrics == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    name = ngx_array_push(vscf->metrics);
    if (name == NULL) {
        return NGX_CONF_ERROR;
    }

    *name = clcf->name;

    clcf->handler = ngx_http_veto_sandbox_metrics_handler;

    return NGX_CONF_OK;
}


/*
 * A server with a metrics location must reach a helper (its figures are
 * half the scrape), and the location must not be under the API's prefix,
 * where the identity check would ask Prometheus for a token.
 */
char *
ngx_http_veto_sandbox_metrics_merge(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *prev,
    ngx_http_veto_sandbox_srv_conf_t *conf)
{
    ngx_str_t   *m, *p;
    ngx_uint_t   i, k;

    ngx_conf_merge_msec_value(conf->metrics_timeout, prev->metrics_timeout,
                              1000);

    if (conf->metrics_timeout == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_metrics_helper_timeout\" must be "
                           "positive");
        return NGX_CONF_ERROR;
    }

    if (conf->metrics == NULL) {
        return NGX_CONF_OK;
    }

    if (conf->helper == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_metrics\" requires "
                           "\"veto_sandbox_helper\" in its server (or at "
                           "http level): a scrape asks the helper for its "
                           "figures");
        return NGX_CONF_ERROR;
    }

    if (conf->prefixes == NULL) {
        return NGX_CONF_OK;
    }

    m = conf->metrics->elts;
    p = conf->prefixes->elts;

    for (i = 0; i < conf->metrics->nelts; i++) {
        for (k = 0; k < conf->prefixes->nelts; k++) {

            if (m[i].len >= p[k].len
                && ngx_strncmp(m[i].data, p[k].data, p[k].len) == 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_metrics\" location "
                                   "\"%V\" is under the \"veto_sandbox_api\" "
                                   "location \"%V\", where every request "
                                   "needs a token: put it outside (e.g. "
                                   "\"location = /metrics\")", &m[i], &p[k]);
                return NGX_CONF_ERROR;
            }
        }
    }

    return NGX_CONF_OK;
}


/* postconfiguration: with metrics, every API request is counted */
ngx_int_t
ngx_http_veto_sandbox_metrics_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt                *h;
    ngx_http_core_main_conf_t          *cmcf;
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    vmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_veto_sandbox_module);

    if (vmcf->metrics_zone == NULL) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_veto_sandbox_metrics_log;

    return NGX_OK;
}


/* A new table, or the previous configuration's when it is of this
 * layout: a reload keeps the counts going. */
static ngx_int_t
ngx_http_veto_sandbox_metrics_zone_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_uint_t                           fresh;
    ngx_http_veto_sandbox_metrics_sh_t  *sh;

    if (data) {
        sh = data;

        if (sh->magic != NGX_HTTP_VSB_M_MAGIC) {
            ngx_http_veto_sandbox_metrics_reset(sh);
        }

        zone->data = sh;
        return NGX_OK;
    }

    sh = ngx_http_veto_sandbox_shm_data(zone,
                                 sizeof(ngx_http_veto_sandbox_metrics_sh_t),
                                 "veto_sandbox_metrics", &fresh);
    if (sh == NULL) {
        return NGX_ERROR;
    }

    if (fresh) {
        ngx_http_veto_sandbox_metrics_reset(sh);
    }

    zone->data = sh;

    return NGX_OK;
}


/* ---- every API request, once it is over ---- */


static ngx_int_t
ngx_http_veto_sandbox_metrics_log(ngx_http_request_t *r)
{
    u_char                              *p;
    u_char                               labels[NGX_HTTP_VSB_M_LABELS];
    ngx_str_t                            route, decision, sb, apr;
    ngx_uint_t                           allow;
    ngx_http_veto_sandbox_op_t          *op;
    ngx_http_veto_sandbox_ctx_t         *ctx;
    ngx_http_veto_sandbox_srv_conf_t    *vscf;
    ngx_http_veto_sandbox_metrics_sh_t  *sh;

    sh = ngx_http_veto_sandbox_metrics_sh();
    if (sh == NULL) {
        return NGX_OK;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (!ngx_http_veto_sandbox_protected(r, vscf)) {
        return NGX_OK;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    /* refused before routing (no token: POST_READ): its row all the same */
    op = (ctx && ctx->op) ? ctx->op
                          : ngx_http_veto_sandbox_op_find(r, &allow, &sb,
                                                          &apr);
    if (op != NULL) {
        route = op->name;

    } else if (ngx_http_veto_sandbox_mcp_uri(r)) {
        /* an MCP message other than a tool call (those are their twin's) */
        ngx_str_set(&route, "mcp");

    } else {
        ngx_str_set(&route, "unmatched");
    }

    if (ctx && ctx->decision.len) {
        decision = ctx->decision;

    } else {
        ngx_str_set(&decision, "none");
    }

    p = ngx_http_veto_sandbox_metrics_label(labels, labels,
                                            labels + sizeof(labels), "route",
                                            route.data, route.len);
    p = ngx_http_veto_sandbox_metrics_label(p, labels,
                                            labels + sizeof(labels),
                                            "decision", decision.data,
                                            decision.len);
    if (p == NULL) {
        (void) ngx_atomic_fetch_add(&sh->dropped, 1);
        return NGX_OK;
    }

    ngx_http_veto_sandbox_metrics_add(sh, NGX_HTTP_VSB_M_REQUESTS, labels,
                                      p - labels, 1);

    return NGX_OK;
}


/* ---- the scrape ---- */


static ngx_int_t
ngx_http_veto_sandbox_metrics_handler(ngx_http_request_t *r)
{
    json_t                            *req;
    ngx_int_t                          rc;
    ngx_pool_cleanup_t                *cln;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_scrape_t    *st;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_veto_sandbox_metrics_sh() == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    ctx = ngx_http_veto_sandbox_get_ctx(r);
    st = ngx_pcalloc(r->pool, sizeof(ngx_http_veto_sandbox_scrape_t));
    /* no request_id of its own: on the worker's pipe it gets the pipe's,
     * unique among the scrapes in flight (a fixed one, twice on the pipe,
     * would let a reply out of step pass for the other scrape's) */
    req = json_pack("{s:s}", "op", VSB_OP_STATS);
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (ctx == NULL || st == NULL || req == NULL || cln == NULL) {
        json_decref(req);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = req;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_metrics_cleanup;
    cln->data = st;

    st->timer.handler = ngx_http_veto_sandbox_metrics_timeout;
    st->timer.data = r;
    st->timer.log = r->connection->log;

    ctx->scrape = st;

    /* the reply may come before helper_send() returns */
    r->main->count++;

    rc = ngx_http_veto_sandbox_helper_send(r, ctx, req, NULL, 0,
                                         ngx_http_veto_sandbox_metrics_stats);
    if (rc != NGX_OK) {
        st->done = 1;
        ngx_http_finalize_request(r, ngx_http_veto_sandbox_metrics_send(r,
                                                                    NULL));
        return NGX_DONE;
    }

    if (!st->done) {
        ngx_add_timer(&st->timer, vscf->metrics_timeout);
    }

    return NGX_DONE;
}


/* the helper answered, or failed to */
static void
ngx_http_veto_sandbox_metrics_stats(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *j;
    ngx_http_veto_sandbox_scrape_t  *st;

    st = ctx->scrape;

    if (st->done) {
        return;
    }

    st->done = 1;

    if (st->timer.timer_set) {
        ngx_del_timer(&st->timer);
    }

    j = ctx->helper.json;

    if (ctx->helper.status != NGX_OK || !json_is_true(json_object_get(j, "ok")))
    {
        j = NULL;
    }

    ngx_http_finalize_request(r, ngx_http_veto_sandbox_metrics_send(r, j));
}


/* the helper is too slow for a scrape: down, as far as this one knows */
static void
ngx_http_veto_sandbox_metrics_timeout(ngx_event_t *ev)
{
    ngx_connection_t                *c;
    ngx_http_request_t              *r;
    ngx_http_veto_sandbox_ctx_t     *ctx;
    ngx_http_veto_sandbox_scrape_t  *st;

    r = ev->data;
    c = r->connection;
    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    st = ctx->scrape;

    st->done = 1;

    ngx_log_error(NGX_LOG_WARN, c->log, 0,
                  "veto_sandbox: the helper did not answer the metrics "
                  "scrape in time");

    /* no reply will come for this request: the helper's side is closed */
    if (ctx->helper.peer.connection) {
        ngx_close_connection(ctx->helper.peer.connection);
        ctx->helper.peer.connection = NULL;
    }

    ngx_http_veto_sandbox_metrics_helper_error("timeout");

    ngx_http_finalize_request(r, ngx_http_veto_sandbox_metrics_send(r, NULL));
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_veto_sandbox_metrics_cleanup(void *data)
{
    ngx_http_veto_sandbox_scrape_t  *st = data;

    if (st->timer.timer_set) {
        ngx_del_timer(&st->timer);
    }
}


/* The scrape: the zone's families, then the gauges. */
static ngx_int_t
ngx_http_veto_sandbox_metrics_send(ngx_http_request_t *r, json_t *stats)
{
    u_char                              *p;
    size_t                               size;
    ngx_buf_t                           *b;
    ngx_int_t                            rc;
    ngx_chain_t                          out;
    ngx_http_veto_sandbox_metrics_sh_t  *sh;

    sh = ngx_http_veto_sandbox_metrics_sh();
    if (sh == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    size = ngx_http_veto_sandbox_metrics_size(sh)
           + NGX_HTTP_VSB_METRICS_GAUGES;

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_http_veto_sandbox_metrics_render(sh, b->last);

    p = ngx_http_veto_sandbox_metrics_helper_gauges(p, stats);

    p = ngx_http_veto_sandbox_metrics_webhooks(p);

    if (ngx_http_veto_sandbox_rds) {
        p = ngx_http_veto_sandbox_metrics_gauge(p, "veto_sandbox_redis_up",
                                 "gauge",
                                 "1 when the scraped worker's Redis "
                                 "connection is ready, else 0.",
                                 ngx_http_veto_sandbox_redis_ready(
                                     ngx_http_veto_sandbox_rds) ? 1 : 0);
    }

    b->last = p;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type,
                "text/plain; version=0.0.4; charset=utf-8");
    r->headers_out.content_type_len = sizeof("text/plain") - 1;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
