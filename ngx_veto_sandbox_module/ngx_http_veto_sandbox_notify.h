/*
 * Veto Sandbox: notifications.  When the gate creates an approval, each
 * webhook of the server gets the event (ngx_http_veto_sandbox_event.h),
 * POSTed through an internal location of nginx's own that proxy_passes to
 * the receiver, so TLS, timeouts, upstream blocks and the resolver are
 * nginx's proxy module as the operator configured it.
 *
 * The agent never waits: the gate's 202 is sent before the first attempt
 * starts.  A delivery is not a subrequest of the agent's request (that
 * would hold the agent's connection, and its next keepalive request,
 * until the last retry): each attempt is a background subrequest of a
 * request the module owns, on a connection without a socket (a
 * "carrier"), made for that attempt and freed after it.  Retries wait on
 * timers, with backoff; every delivery is bounded in attempts, in time
 * (a deadline per attempt, a capped wait between them) and in memory
 * (the worker's webhook buffer).  A failed or dropped notification is
 * logged and counted, and never changes what the request was answered.
 *
 * Files: _notify.c the module (directives, the gate's hook, counters and
 * variables); _notify_send.c deliveries (carriers, attempts, retries);
 * _event.c the bodies and the signature (pure).
 */

#ifndef _NGX_HTTP_VSB_NOTIFY_H_INCLUDED_
#define _NGX_HTTP_VSB_NOTIFY_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


#define NGX_HTTP_VSB_WEBHOOK_JSON     0
#define NGX_HTTP_VSB_WEBHOOK_SLACK    1

#define NGX_HTTP_VSB_WEBHOOKS_MAX     8     /* per server */
#define NGX_HTTP_VSB_WEBHOOK_RETRIES_MAX  10
#define NGX_HTTP_VSB_WEBHOOK_WAIT_MAX 60000 /* ms between two attempts */

/* what one pending delivery costs beyond its body: its pool, the
 * carrier's structures, the attempt's request */
#define NGX_HTTP_VSB_DELIVERY_OVERHEAD  8192


/* Gateway-wide counters, in shared memory (every worker adds to them). */
typedef struct {
    ngx_atomic_t                 queued;     /* deliveries accepted */
    ngx_atomic_t                 delivered;  /* a 2xx from the receiver */
    ngx_atomic_t                 retries;    /* attempts after a failed one */
    ngx_atomic_t                 failed;     /* given up: last attempt
                                                failed, or a refusal (4xx) */
    ngx_atomic_t                 dropped;    /* never (fully) tried: buffer
                                                full, no memory, worker
                                                stopped */
} ngx_http_veto_sandbox_notify_counters_t;


typedef struct {
    ngx_str_t                    uri;       /* the internal location */
    ngx_uint_t                   format;    /* NGX_HTTP_VSB_WEBHOOK_* */
    ngx_str_t                    secret;    /* empty: not signed */
} ngx_http_veto_sandbox_webhook_t;


typedef struct {
    size_t                       buffer;    /* per worker: pending bytes */
    ngx_shm_zone_t              *zone;      /* the counters; NULL: no
                                               webhook configured */
} ngx_http_veto_sandbox_notify_main_conf_t;


typedef struct {
    ngx_array_t                 *hooks;     /* ..._webhook_t; NULL: none */
    ngx_uint_t                   retries;
    ngx_msec_t                   backoff;   /* the first wait; doubles */
    ngx_msec_t                   timeout;   /* one attempt, at most */
    ngx_str_t                    page;      /* the approval page's URL */
} ngx_http_veto_sandbox_notify_srv_conf_t;


/* One event on its way to one webhook (_notify_send.c). */
typedef struct {
    ngx_queue_t                  queue;     /* the worker's pending list */
    ngx_pool_t                  *pool;      /* this, the body, the carrier's
                                               log and connection state */
    ngx_http_veto_sandbox_webhook_t *hook;
    ngx_http_conf_ctx_t         *conf_ctx;  /* the server's */
    ngx_listening_t             *listening;
    ngx_str_t                    approval;  /* for the log */
    ngx_str_t                    body;
    ngx_str_t                    content_type;
    size_t                       size;      /* what the buffer counts */

    ngx_uint_t                   attempts;  /* made so far */
    ngx_uint_t                   retries;   /* allowed after the first */
    ngx_msec_t                   backoff;
    ngx_msec_t                   timeout;

    ngx_event_t                  timer;     /* an attempt's deadline, or the
                                               wait before the next one */
    ngx_event_t                  post;      /* start an attempt, or end the
                                               one the receiver answered */

    /* the attempt in flight */
    ngx_connection_t            *c;         /* the carrier; NULL: none */
    ngx_http_request_t          *r;         /* its request */
    ngx_http_connection_t        hc;
    ngx_log_t                    log;
    ngx_http_log_ctx_t           log_ctx;
    ngx_http_post_subrequest_t   ps;
    ngx_int_t                    rc;        /* how the subrequest ended */
    ngx_uint_t                   status;    /* the receiver's status */
    unsigned                     answered:1;
    unsigned                     proxied:1; /* the location proxied */
} ngx_http_veto_sandbox_delivery_t;


/* _notify_send.c */

extern ngx_http_veto_sandbox_notify_counters_t
    *ngx_http_veto_sandbox_delivery_counters;

/* a new delivery with its own pool, or NULL */
ngx_http_veto_sandbox_delivery_t *ngx_http_veto_sandbox_delivery_create(
    ngx_log_t *log);
/* queues d (its fields set) within limit bytes of the worker's buffer and
 * starts its first attempt after the current event; d is freed (and
 * counted as dropped) when it does not fit */
ngx_int_t ngx_http_veto_sandbox_delivery_queue(
    ngx_http_veto_sandbox_delivery_t *d, size_t limit);
void ngx_http_veto_sandbox_delivery_free(ngx_http_veto_sandbox_delivery_t *d);
/* an event that never became a delivery */
void ngx_http_veto_sandbox_delivery_dropped(void);
void ngx_http_veto_sandbox_delivery_init(void);
/* the worker stops: what is still pending is logged and counted dropped */
void ngx_http_veto_sandbox_delivery_exit(ngx_cycle_t *cycle);


#endif /* _NGX_HTTP_VSB_NOTIFY_H_INCLUDED_ */
