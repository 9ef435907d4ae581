/*
 * Veto Sandbox: Prometheus metrics.
 *
 * The worker counters live in one shared memory zone, made when the
 * configuration has a "veto_sandbox_metrics" location (sized by the
 * module, nothing to declare): a fixed table of series, each a family,
 * its label text and its values.  A series is found by a hash of its
 * family and labels with linear probing; a free slot is claimed with one
 * compare-and-swap and never freed, so lookups take no lock, and counting
 * is one atomic add (a histogram: its bucket and its sum).  A full table
 * counts what it could not place in veto_sandbox_metrics_series_dropped_
 * total.  The zone survives a reload of the same layout: counters go on.
 *
 * The store part (_metrics_store.c) is pure: it knows the table, the
 * families and the text format.  _metrics_count.c counts: the calls other
 * files make as things happen, each an add to the zone's table.
 * _metrics.c is the nginx part: the directive, the zone, the per-request
 * count (log phase) and the scrape, which asks the helper for its own
 * figures (the "stats" op) over the event loop and answers even when the
 * helper cannot.
 */

#ifndef _NGX_HTTP_VSB_METRICS_H_INCLUDED_
#define _NGX_HTTP_VSB_METRICS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>


/* Families kept in the zone (gauges from the helper are not kept). */
enum {
    NGX_HTTP_VSB_M_REQUESTS = 0,     /* route, decision */
    NGX_HTTP_VSB_M_APPROVALS,        /* state */
    NGX_HTTP_VSB_M_HELPER_DURATION,  /* op; histogram */
    NGX_HTTP_VSB_M_HELPER_ERRORS,    /* kind */
    NGX_HTTP_VSB_M_EXEC_DURATION,    /* histogram */
    NGX_HTTP_VSB_M_EGRESS,           /* outcome */
    NGX_HTTP_VSB_M_REDIS_ERRORS,     /* kind */
    NGX_HTTP_VSB_M_JWT_CACHE,        /* result */
    NGX_HTTP_VSB_M_NFAMILIES
};

#define NGX_HTTP_VSB_M_SERIES       1024  /* slots in the zone */
#define NGX_HTTP_VSB_M_LABELS       120   /* bytes of one series' labels */
#define NGX_HTTP_VSB_M_BUCKETS      14    /* a histogram's finite buckets */
/* a histogram: its buckets, the one above the last ("+Inf" only), and
 * the sum of what it observed, in microseconds */
#define NGX_HTTP_VSB_M_VALUES       (NGX_HTTP_VSB_M_BUCKETS + 2)

#define NGX_HTTP_VSB_M_MAGIC        0x76736d3100000001ULL  /* "vsm1", v1 */


typedef struct {
    ngx_atomic_t                 key;      /* 0: free; hash and family */
    ngx_atomic_t                 ready;    /* family and labels written */
    ngx_uint_t                   family;
    size_t                       labels_len;
    u_char                       labels[NGX_HTTP_VSB_M_LABELS];
    ngx_atomic_t                 v[NGX_HTTP_VSB_M_VALUES];
} ngx_http_veto_sandbox_series_t;


typedef struct {
    uint64_t                     magic;
    ngx_atomic_t                 dropped;  /* counts no slot could take */
    ngx_http_veto_sandbox_series_t  series[NGX_HTTP_VSB_M_SERIES];
} ngx_http_veto_sandbox_metrics_sh_t;


/* ---- the store (_metrics_store.c): pure, no nginx runtime ---- */

/* A fresh table, with the series every scrape should show from the
 * start (so that a first event is an increase, not a new series). */
void ngx_http_veto_sandbox_metrics_reset(ngx_http_veto_sandbox_metrics_sh_t *sh);

/* Adds n to the counter family{labels}; labels is the label text
 * ("kind=\"timeout\"", or empty), made with ..._metrics_label(). */
void ngx_http_veto_sandbox_metrics_add(ngx_http_veto_sandbox_metrics_sh_t *sh,
    ngx_uint_t family, u_char *labels, size_t len, ngx_atomic_uint_t n);

/* One observation of usec microseconds in the histogram family{labels}. */
void ngx_http_veto_sandbox_metrics_observe(
    ngx_http_veto_sandbox_metrics_sh_t *sh, ngx_uint_t family,
    u_char *labels, size_t len, uint64_t usec);

/* Appends name="value" (with a comma unless at start), escaped as the
 * text format wants; NULL when it does not fit before last. */
u_char *ngx_http_veto_sandbox_metrics_label(u_char *p, u_char *start,
    u_char *last, const char *name, u_char *value, size_t len);

/* At most how many bytes ..._metrics_render() writes now. */
size_t ngx_http_veto_sandbox_metrics_size(
    ngx_http_veto_sandbox_metrics_sh_t *sh);

/* The kept families in the text exposition format (HELP, TYPE, series);
 * p is at least ..._metrics_size() bytes.  Returns the end. */
u_char *ngx_http_veto_sandbox_metrics_render(
    ngx_http_veto_sandbox_metrics_sh_t *sh, u_char *p);

/* usec as decimal seconds ("0.0025", "30"); at most 32 bytes */
u_char *ngx_http_veto_sandbox_metrics_seconds(u_char *p, uint64_t usec);


/* ---- the counting (_metrics_count.c): no-ops without a metrics
 * location ---- */

struct ngx_http_veto_sandbox_ctx_s;

/* the zone's table in this process's cycle, or NULL (no metrics) */
ngx_http_veto_sandbox_metrics_sh_t *ngx_http_veto_sandbox_metrics_sh(void);

/* a request to the helper starts (_helper.c): its op, the clock */
void ngx_http_veto_sandbox_metrics_helper_start(
    struct ngx_http_veto_sandbox_ctx_s *ctx, void *req);
/* the helper answered a request, or failed to (_helper.c) */
void ngx_http_veto_sandbox_metrics_helper(ngx_http_request_t *r,
    struct ngx_http_veto_sandbox_ctx_s *ctx);
/* the helper could not be reached at all: kind "connect" */
void ngx_http_veto_sandbox_metrics_helper_error(const char *kind);
/* a Redis command ended with rc and reply (_redis_call.c) */
void ngx_http_veto_sandbox_metrics_redis(ngx_int_t rc, void *reply);
/* a Redis command could not be sent, or the connection is being made
 * again: kind "unavailable" or "reconnect" */
void ngx_http_veto_sandbox_metrics_redis_error(const char *kind);
/* a token looked up in the verified-token cache */
void ngx_http_veto_sandbox_metrics_jwt_cache(ngx_uint_t hit);
/* an audit record's outcome: the approvals' created, denied, expired
 * and consumed */
void ngx_http_veto_sandbox_metrics_outcome(const char *outcome);
/* a review decision left the approval in state: approved counts once,
 * when the threshold is met */
void ngx_http_veto_sandbox_metrics_approval(ngx_str_t *state);


#endif /* _NGX_HTTP_VSB_METRICS_H_INCLUDED_ */
