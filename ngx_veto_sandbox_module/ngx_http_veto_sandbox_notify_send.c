/*
 * Veto Sandbox: deliveries of approval events to webhooks.
 *
 * An attempt is a background subrequest, header only, POST, to the
 * webhook's internal location; its proxy_pass does the HTTP.  Its parent
 * is a request the delivery owns (ngx_http_alloc_request()) on a carrier:
 * a connection from the worker's pool that has no socket, is never in
 * the event loop, and is freed by this file, never by nginx.  The
 * carrier's request keeps the one reference it was made with, so that
 * nginx, finishing the subrequest, only drops the subrequest's own and
 * never closes the carrier; this file then frees the request (which runs
 * what the subrequest left, closing an upstream still in flight) and
 * gives the connection back.
 *
 * States: queued (its first attempt posted after the current event, so
 * the agent's 202 is out before any webhook work starts) -> in flight
 * (d->c set, d->timer the attempt's deadline) -> answered (the post
 * handler ends it) or timed out (the timer does) -> delivered, or waiting
 * (d->timer the backoff) -> in flight ... -> failed.  Both timers are
 * not cancelable: a worker that is shutting down (nginx -s quit or
 * reload) stays until its deliveries end, which their bounds limit; a
 * worker stopped at once (nginx -s stop) logs what it leaves as dropped.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/un.h>

#include "ngx_http_veto_sandbox_transport.h"
#include "ngx_http_veto_sandbox_notify.h"
#include "ngx_http_veto_sandbox_event.h"


/* how an attempt ended */
#define NGX_HTTP_VSB_ATTEMPT_ANSWERED   0
#define NGX_HTTP_VSB_ATTEMPT_TIMED_OUT  1
#define NGX_HTTP_VSB_ATTEMPT_NOT_SENT   2


#define ngx_http_vsb_notify_count(field)                                      \
    if (ngx_http_veto_sandbox_delivery_counters) {                           \
        (void) ngx_atomic_fetch_add(                                          \
                       &ngx_http_veto_sandbox_delivery_counters->field, 1);  \
    }


static void ngx_http_veto_sandbox_delivery_attempt(
    ngx_http_veto_sandbox_delivery_t *d);
static ngx_int_t ngx_http_veto_sandbox_delivery_send(
    ngx_http_veto_sandbox_delivery_t *d);
static ngx_int_t ngx_http_veto_sandbox_delivery_headers(
    ngx_http_veto_sandbox_delivery_t *d, ngx_http_request_t *r);
static ngx_int_t ngx_http_veto_sandbox_delivery_answered(
    ngx_http_request_t *sr, void *data, ngx_int_t rc);
static void ngx_http_veto_sandbox_delivery_end(
    ngx_http_veto_sandbox_delivery_t *d, ngx_uint_t how);
static void ngx_http_veto_sandbox_delivery_close(
    ngx_http_veto_sandbox_delivery_t *d);
static void ngx_http_veto_sandbox_delivery_post(ngx_event_t *ev);
static void ngx_http_veto_sandbox_delivery_timer(ngx_event_t *ev);
static u_char *ngx_http_veto_sandbox_delivery_log_error(ngx_log_t *log,
    u_char *buf, size_t len);


ngx_http_veto_sandbox_notify_counters_t
    *ngx_http_veto_sandbox_delivery_counters;

/* this worker's deliveries, and the bytes they count against the buffer */
static ngx_queue_t   ngx_http_veto_sandbox_deliveries;
static size_t        ngx_http_veto_sandbox_delivery_bytes;

/* the carrier's peer address: the gateway itself ("unix:") */
static struct sockaddr_un  ngx_http_veto_sandbox_carrier_addr = {
    .sun_family = AF_UNIX
};


void
ngx_http_veto_sandbox_delivery_init(void)
{
    ngx_queue_init(&ngx_http_veto_sandbox_deliveries);
    ngx_http_veto_sandbox_delivery_bytes = 0;
}


ngx_http_veto_sandbox_delivery_t *
ngx_http_veto_sandbox_delivery_create(ngx_log_t *log)
{
    ngx_pool_t                        *pool;
    ngx_http_veto_sandbox_delivery_t  *d;

    pool = ngx_create_pool(4096, log);
    if (pool == NULL) {
        return NULL;
    }

    d = ngx_pcalloc(pool, sizeof(ngx_http_veto_sandbox_delivery_t));
    if (d == NULL) {
        ngx_destroy_pool(pool);
        return NULL;
    }

    d->pool = pool;

    return d;
}


ngx_int_t
ngx_http_veto_sandbox_delivery_queue(ngx_http_veto_sandbox_delivery_t *d,
    size_t limit)
{
    ngx_http_core_loc_conf_t  *clcf;

    if (ngx_queue_next(&ngx_http_veto_sandbox_deliveries) == NULL) {
        ngx_http_veto_sandbox_delivery_init();
    }

    /* the server's error log, with what this delivery is about */
    clcf = d->conf_ctx->loc_conf[ngx_http_core_module.ctx_index];

    d->log = *clcf->error_log;
    d->log.connection = 0;
    d->log.handler = ngx_http_veto_sandbox_delivery_log_error;
    d->log.data = &d->log_ctx;
    d->log.action = NULL;
    d->pool->log = &d->log;

    d->timer.handler = ngx_http_veto_sandbox_delivery_timer;
    d->timer.data = d;
    d->timer.log = &d->log;
    d->timer.cancelable = 0;

    d->post.handler = ngx_http_veto_sandbox_delivery_post;
    d->post.data = d;
    d->post.log = &d->log;

    d->size = d->body.len + NGX_HTTP_VSB_DELIVERY_OVERHEAD;

    if (ngx_http_veto_sandbox_delivery_bytes + d->size > limit) {
        ngx_log_error(NGX_LOG_ERR, &d->log, 0,
                      "veto_sandbox: webhook event dropped: %uz bytes of "
                      "events already wait in this worker, "
                      "\"veto_sandbox_webhook_buffer\" is %uz",
                      ngx_http_veto_sandbox_delivery_bytes, limit);
        ngx_http_vsb_notify_count(dropped);
        ngx_destroy_pool(d->pool);
        return NGX_DECLINED;
    }

    ngx_http_veto_sandbox_delivery_bytes += d->size;
    ngx_queue_insert_tail(&ngx_http_veto_sandbox_deliveries, &d->queue);

    ngx_http_vsb_notify_count(queued);

    ngx_post_event(&d->post, &ngx_posted_events);

    return NGX_OK;
}


void
ngx_http_veto_sandbox_delivery_free(ngx_http_veto_sandbox_delivery_t *d)
{
    ngx_http_veto_sandbox_delivery_close(d);

    if (d->timer.timer_set) {
        ngx_del_timer(&d->timer);
    }

    if (d->post.posted) {
        ngx_delete_posted_event(&d->post);
    }

    ngx_queue_remove(&d->queue);
    ngx_http_veto_sandbox_delivery_bytes -= d->size;

    ngx_destroy_pool(d->pool);
}


void
ngx_http_veto_sandbox_delivery_dropped(void)
{
    ngx_http_vsb_notify_count(dropped);
}


/* The post handler: an attempt to start, or one that was answered. */
static void
ngx_http_veto_sandbox_delivery_post(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_delivery_t  *d = ev->data;

    if (d->c) {
        ngx_http_veto_sandbox_delivery_end(d, NGX_HTTP_VSB_ATTEMPT_ANSWERED);
        return;
    }

    ngx_http_veto_sandbox_delivery_attempt(d);
}


/* The timer: an attempt's deadline, or the end of a wait. */
static void
ngx_http_veto_sandbox_delivery_timer(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_delivery_t  *d = ev->data;

    if (d->c) {
        ngx_http_veto_sandbox_delivery_end(d, NGX_HTTP_VSB_ATTEMPT_TIMED_OUT);
        return;
    }

    ngx_http_veto_sandbox_delivery_attempt(d);
}


static void
ngx_http_veto_sandbox_delivery_attempt(ngx_http_veto_sandbox_delivery_t *d)
{
    d->attempts++;
    d->answered = 0;
    d->proxied = 0;
    d->rc = NGX_ERROR;
    d->status = 0;

    if (d->attempts > 1) {
        ngx_http_vsb_notify_count(retries);
    }

    if (ngx_http_veto_sandbox_delivery_send(d) == NGX_OK) {
        return;
    }

    /* could not even start: a failed attempt (retried if allowed) */
    ngx_http_veto_sandbox_delivery_end(d, NGX_HTTP_VSB_ATTEMPT_NOT_SENT);
}


/* Makes the carrier and its request, and starts the subrequest. */
static ngx_int_t
ngx_http_veto_sandbox_delivery_send(ngx_http_veto_sandbox_delivery_t *d)
{
    ngx_buf_t                 *b;
    ngx_chain_t               *cl;
    ngx_connection_t          *c, *saved;
    ngx_http_request_t        *r, *sr;
    ngx_http_request_body_t   *rb;

    /*
     * ngx_get_connection() wants a descriptor only to index the cycle's
     * files (the event methods that have them): lend it 0, put files[0]
     * back, and keep -1, which nothing polls or closes
     */
    saved = ngx_cycle->files ? ngx_cycle->files[0] : NULL;

    c = ngx_get_connection(0, &d->log);

    if (ngx_cycle->files) {
        ngx_cycle->files[0] = saved;
    }

    if (c == NULL) {
        return NGX_ERROR;
    }

    c->fd = (ngx_socket_t) -1;
    d->c = c;

    c->pool = d->pool;
    c->number = ngx_atomic_fetch_add(ngx_connection_counter, 1);
    c->start_time = ngx_current_msec;
    c->listening = d->listening;
    c->sockaddr = (struct sockaddr *) &ngx_http_veto_sandbox_carrier_addr;
    c->socklen = offsetof(struct sockaddr_un, sun_path);
    c->local_sockaddr = c->sockaddr;
    c->local_socklen = c->socklen;
    ngx_str_set(&c->addr_text, "unix:");

    /* as if in the event loop already, so that nothing adds it there */
    c->read->active = 1;
    c->write->active = 1;
    c->read->log = c->log;
    c->write->log = c->log;

    ngx_memzero(&d->hc, sizeof(ngx_http_connection_t));
    d->hc.conf_ctx = d->conf_ctx;
    c->data = &d->hc;

    d->log_ctx.connection = c;
    d->log_ctx.request = NULL;
    d->log_ctx.current_request = NULL;

    /* sets d->log_ctx's request (c->log's data) */
    r = ngx_http_create_request(c);
    if (r == NULL) {
        return NGX_ERROR;
    }

    d->r = r;
    c->data = r;

#if (NGX_STAT_STUB)
    /* no client's connection reads it */
    if (r->stat_reading) {
        (void) ngx_atomic_fetch_add(ngx_stat_reading, -1);
        r->stat_reading = 0;
    }
#endif

    /* not a client's request: no access log line of its own */
    r->logged = 1;

    if (ngx_http_veto_sandbox_delivery_headers(d, r) != NGX_OK) {
        return NGX_ERROR;
    }

    rb = ngx_pcalloc(r->pool, sizeof(ngx_http_request_body_t));
    b = ngx_calloc_buf(r->pool);
    cl = ngx_alloc_chain_link(r->pool);

    if (rb == NULL || b == NULL || cl == NULL) {
        return NGX_ERROR;
    }

    b->pos = d->body.data;
    b->last = d->body.data + d->body.len;
    b->memory = 1;
    b->last_buf = 1;

    cl->buf = b;
    cl->next = NULL;

    rb->bufs = cl;
    r->request_body = rb;
    r->headers_in.content_length_n = d->body.len;

    d->ps.handler = ngx_http_veto_sandbox_delivery_answered;
    d->ps.data = d;

    if (ngx_http_subrequest(r, &d->hook->uri, NULL, &sr, &d->ps,
                            NGX_HTTP_SUBREQUEST_BACKGROUND)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the receiver's status is all that counts: its body is not read */
    sr->header_only = 1;
    sr->method = NGX_HTTP_POST;
    ngx_str_set(&sr->method_name, "POST");

    ngx_add_timer(&d->timer, d->timeout);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "veto webhook \"%V\" attempt %ui, %uz bytes",
                   &d->hook->uri, d->attempts, d->body.len);

    /* may answer at once (a refused connection, a local error) */
    ngx_http_run_posted_requests(c);

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_delivery_header(ngx_http_request_t *r,
    const char *name, u_char *value, size_t len)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value.data = value;
    h->value.len = len;

    h->lowcase_key = ngx_pnalloc(r->pool, h->key.len);
    if (h->lowcase_key == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(h->lowcase_key, h->key.data, h->key.len);

    return NGX_OK;
}


/* What the subrequest proxies: the carrier's request headers. */
static ngx_int_t
ngx_http_veto_sandbox_delivery_headers(ngx_http_veto_sandbox_delivery_t *d,
    ngx_http_request_t *r)
{
    u_char  *sig, *value, *last, attempt[NGX_INT_T_LEN];

    if (ngx_list_init(&r->headers_in.headers, r->pool, 4,
                      sizeof(ngx_table_elt_t))
        != NGX_OK
        || ngx_http_veto_sandbox_delivery_header(r, "Content-Type",
                                        (u_char *) "application/json",
                                        sizeof("application/json") - 1)
           != NGX_OK
        || ngx_http_veto_sandbox_delivery_header(r, "User-Agent",
                                        (u_char *) "veto-sandbox-webhook/1",
                                        sizeof("veto-sandbox-webhook/1") - 1)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    last = ngx_sprintf(attempt, "%ui", d->attempts);
    value = ngx_pnalloc(r->pool, last - attempt);
    if (value == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(value, attempt, last - attempt);

    if (ngx_http_veto_sandbox_delivery_header(r, "Veto-Delivery-Attempt",
                                              value, last - attempt)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (d->hook->secret.len == 0) {
        return NGX_OK;
    }

    /* signed now: the receiver judges a replay by this attempt's time */
    sig = ngx_pnalloc(r->pool, NGX_HTTP_VSB_EVENT_SIG_LEN);
    if (sig == NULL) {
        return NGX_ERROR;
    }

    last = ngx_http_veto_sandbox_event_sign(r->pool, sig, &d->hook->secret,
                                            ngx_time(), &d->body);
    if (last == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_delivery_header(r, "Veto-Signature", sig,
                                                 last - sig);
}


/*
 * The subrequest's end (ngx_http_post_subrequest_t).  Notes the result
 * and posts the attempt's end: the subrequest is still being finalized
 * here, its memory is the carrier's request's.
 */
static ngx_int_t
ngx_http_veto_sandbox_delivery_answered(ngx_http_request_t *sr, void *data,
    ngx_int_t rc)
{
    ngx_http_veto_sandbox_delivery_t  *d = data;

    if (!d->answered) {
        d->answered = 1;
        d->rc = rc;
        d->status = sr->headers_out.status;
        d->proxied = (sr->upstream != NULL);

        if (d->timer.timer_set) {
            ngx_del_timer(&d->timer);
        }

        ngx_post_event(&d->post, &ngx_posted_events);
    }

    /* nothing to send for it: the subrequest only ends, and never makes
     * nginx terminate the carrier's request */
    return NGX_OK;
}


/* Frees the attempt's request and carrier, if any. */
static void
ngx_http_veto_sandbox_delivery_close(ngx_http_veto_sandbox_delivery_t *d)
{
    ngx_connection_t    *c, *saved;
    ngx_http_request_t  *r;

    if (d->r) {
        r = d->r;
        d->r = NULL;

        /* runs the cleanups a subrequest still in flight left (the
         * upstream's: its connection closed), then frees the pool */
        r->logged = 1;
        ngx_http_free_request(r, 0);
    }

    if (d->c) {
        c = d->c;
        d->c = NULL;

        if (c->read->timer_set) {
            ngx_del_timer(c->read);
        }

        if (c->write->timer_set) {
            ngx_del_timer(c->write);
        }

        if (c->read->posted) {
            ngx_delete_posted_event(c->read);
        }

        if (c->write->posted) {
            ngx_delete_posted_event(c->write);
        }

        c->read->closed = 1;
        c->write->closed = 1;
        c->destroyed = 1;

        saved = ngx_cycle->files ? ngx_cycle->files[0] : NULL;
        c->fd = 0;

        ngx_free_connection(c);

        c->fd = (ngx_socket_t) -1;

        if (ngx_cycle->files) {
            ngx_cycle->files[0] = saved;
        }
    }

    d->log_ctx.connection = NULL;
    d->log_ctx.request = NULL;
    d->log_ctx.current_request = NULL;
    d->log.action = NULL;
}


/* An attempt ended: delivered, another one later, or given up. */
static void
ngx_http_veto_sandbox_delivery_end(ngx_http_veto_sandbox_delivery_t *d,
    ngx_uint_t how)
{
    u_char      why[512], *p;
    ngx_int_t   rc;
    ngx_uint_t  status, shift, refused;
    ngx_msec_t  wait;

    rc = d->rc;
    status = d->status;

    ngx_http_veto_sandbox_delivery_close(d);

    if (d->post.posted) {
        ngx_delete_posted_event(&d->post);
    }

    if (d->timer.timer_set) {
        ngx_del_timer(&d->timer);
    }

    if (how == NGX_HTTP_VSB_ATTEMPT_ANSWERED && d->proxied
        && rc != NGX_ERROR && rc < NGX_HTTP_SPECIAL_RESPONSE
        && status >= NGX_HTTP_OK && status < NGX_HTTP_SPECIAL_RESPONSE)
    {
        ngx_log_error(NGX_LOG_INFO, &d->log, 0,
                      "veto_sandbox: webhook event delivered, status %ui, "
                      "attempt %ui", status, d->attempts);
        ngx_http_vsb_notify_count(delivered);
        ngx_http_veto_sandbox_delivery_free(d);
        return;
    }

    /* a receiver's refusal is final, except what asks to come back */
    refused = 0;

    if (how == NGX_HTTP_VSB_ATTEMPT_TIMED_OUT) {
        p = ngx_snprintf(why, sizeof(why), "no answer within %M ms",
                         d->timeout);

    } else if (how == NGX_HTTP_VSB_ATTEMPT_NOT_SENT) {
        p = ngx_snprintf(why, sizeof(why), "could not start the attempt");

    } else if (!d->proxied) {
        /* nginx itself answered: a location that does not proxy, or
         * none (the server's default), which no retry mends */
        p = ngx_snprintf(why, sizeof(why), "answered %i without proxying: "
                         "is \"%V\" a location with proxy_pass?",
                         status ? (ngx_int_t) status : rc, &d->hook->uri);
        refused = 1;

    } else if (rc >= NGX_HTTP_SPECIAL_RESPONSE || rc == NGX_ERROR
               || status == 0)
    {
        p = ngx_snprintf(why, sizeof(why), "no valid answer (%i)", rc);

    } else {
        p = ngx_snprintf(why, sizeof(why), "the location answered %ui",
                         status);

        refused = status >= NGX_HTTP_BAD_REQUEST
                  && status < NGX_HTTP_INTERNAL_SERVER_ERROR
                  && status != NGX_HTTP_REQUEST_TIME_OUT
                  && status != 425
                  && status != 429;
    }

    if (!refused && d->attempts <= d->retries) {
        shift = ngx_min(d->attempts - 1, 16);
        wait = ngx_min(d->backoff << shift,
                       (ngx_msec_t) NGX_HTTP_VSB_WEBHOOK_WAIT_MAX);

        ngx_log_error(NGX_LOG_WARN, &d->log, 0,
                      "veto_sandbox: webhook attempt %ui of %ui failed: %*s; "
                      "next in %M ms", d->attempts, d->retries + 1,
                      p - why, why, wait);

        ngx_add_timer(&d->timer, wait);
        return;
    }

    ngx_log_error(NGX_LOG_ERR, &d->log, 0,
                  "veto_sandbox: webhook event not delivered after %ui "
                  "attempt%s: %*s%s", d->attempts,
                  d->attempts == 1 ? "" : "s", p - why, why,
                  refused ? " (a refusal: not retried)" : "");

    ngx_http_vsb_notify_count(failed);
    ngx_http_veto_sandbox_delivery_free(d);
}


void
ngx_http_veto_sandbox_delivery_exit(ngx_cycle_t *cycle)
{
    ngx_queue_t                       *q;
    ngx_http_veto_sandbox_delivery_t  *d;

    if (ngx_queue_next(&ngx_http_veto_sandbox_deliveries) == NULL) {
        return;
    }

    /* a graceful stop waits for them (their timers are not cancelable):
     * what is left here was stopped at once */
    for (q = ngx_queue_head(&ngx_http_veto_sandbox_deliveries);
         q != ngx_queue_sentinel(&ngx_http_veto_sandbox_deliveries);
         q = ngx_queue_next(q))
    {
        d = ngx_queue_data(q, ngx_http_veto_sandbox_delivery_t, queue);

        ngx_log_error(NGX_LOG_ERR, &d->log, 0,
                      "veto_sandbox: webhook event dropped: the worker "
                      "stopped after %ui attempt%s", d->attempts,
                      d->attempts == 1 ? "" : "s");

        ngx_http_vsb_notify_count(dropped);
    }
}


/*
 * ", webhook: …, approval: …", and the receiver's address: never the
 * path proxy_pass sends to, which may hold a credential (a Slack
 * webhook's does), as nginx's own context would print it.
 */
static u_char *
ngx_http_veto_sandbox_delivery_log_error(ngx_log_t *log, u_char *buf,
    size_t len)
{
    u_char                            *p;
    ngx_http_request_t                *sr;
    ngx_http_upstream_t               *u;
    ngx_http_log_ctx_t                *ctx;
    ngx_http_veto_sandbox_delivery_t  *d;

    if (log->action) {
        p = ngx_snprintf(buf, len, " while %s", log->action);
        len -= p - buf;
        buf = p;
    }

    ctx = log->data;
    d = (ngx_http_veto_sandbox_delivery_t *)
            ((u_char *) ctx - offsetof(ngx_http_veto_sandbox_delivery_t,
                                       log_ctx));

    p = ngx_snprintf(buf, len, ", webhook: \"%V\", approval: %V",
                     &d->hook->uri, &d->approval);
    len -= p - buf;

    sr = ctx->request ? ctx->current_request : NULL;
    u = sr ? sr->upstream : NULL;

    if (u && u->peer.name) {
        p = ngx_snprintf(p, len, ", upstream: \"%V%V\"", &u->schema,
                         u->peer.name);
    }

    return p;
}
