/*
 * The client side of the helper protocol (vsb_protocol.h), driven by
 * nginx's event loop: one unix socket connection per request in flight,
 * made with ngx_event_connect_peer() or taken from the worker's idle
 * connections, our own write and read handlers, and the connect, send and
 * read timeouts of the server's configuration.  The request frame is the
 * 12-byte prefix and JSON header in one buffer, followed by the payload
 * chain as given, which may be the client's request body in memory or in
 * its temporary file (sent with sendfile), so file content is never
 * copied again.
 *
 * Keepalive: the helper reads the next request on a connection once it
 * has written a reply, so a connection whose reply was read whole and
 * exactly goes back to the worker's idle set (at most
 * NGX_HTTP_VSB_HELPER_KEEPALIVE, each for NGX_HTTP_VSB_HELPER_IDLE_MS,
 * under the helper's 60 s deadline for a request's first byte).  Anything
 * else closes it: a failure, a timeout, a client gone mid-request (which
 * is how the helper learns to cancel), a byte or a hangup while idle.  The
 * helper checks a peer once, at accept: a kept connection stays the
 * worker's own, with the worker's credentials.
 *
 * A streaming request (h->event set) receives event frames before its
 * reply: each is handed to h->event as it completes, in one buffer
 * reused for all of them, so a stream of any length holds one frame.
 * The event handler may pause reading (its client is slow): the helper
 * then stops producing (vsb_protocol.h, "Flow control") until
 * ngx_http_veto_sandbox_helper_resume().
 */

#include "ngx_http_veto_sandbox_transport.h"
#include "ngx_http_veto_sandbox_metrics.h"


/* a worker's requests in flight to the helper, kept between requests:
 * fewer than the clients a worker serves at once means a connect, an
 * accept, a peer check and a close for the rest (19% of requests with 32
 * clients and 16 kept); 32 per worker stays far under the helper's 1024
 * connections for the usual worker counts */
#define NGX_HTTP_VSB_HELPER_KEEPALIVE  32
#define NGX_HTTP_VSB_HELPER_IDLE_MS    30000

/* read with a frame's header: most replies (a list, a health ping, an
 * exec's) are smaller, and arrive whole in one recv() */
#define NGX_HTTP_VSB_HELPER_AHEAD      2048


/* The worker's idle connections to helpers, by socket address. */
typedef struct {
    ngx_connection_t    *c;
    struct sockaddr     *sockaddr;
    socklen_t            socklen;
} ngx_http_veto_sandbox_idle_t;


static ngx_http_veto_sandbox_idle_t
    ngx_http_veto_sandbox_idle[NGX_HTTP_VSB_HELPER_KEEPALIVE];


/* the fence's (_fence.c): NULL, nobody listens */
ngx_http_veto_sandbox_helper_hooks_t  ngx_http_veto_sandbox_helper_hooks;


static ngx_int_t ngx_http_veto_sandbox_helper_connect(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_connection_t *ngx_http_veto_sandbox_idle_get(ngx_addr_t *peer);
static void ngx_http_veto_sandbox_idle_put(ngx_connection_t *c,
    ngx_addr_t *peer, ngx_uint_t drained);
static void ngx_http_veto_sandbox_idle_handler(ngx_event_t *ev);
static void ngx_http_veto_sandbox_helper_handler(ngx_event_t *ev);
static void ngx_http_veto_sandbox_helper_write_handler(ngx_event_t *wev);
static void ngx_http_veto_sandbox_helper_read_handler(ngx_event_t *rev);
static ngx_int_t ngx_http_veto_sandbox_helper_event(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_helper_done(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t status, const char *error);
static void ngx_http_veto_sandbox_helper_cleanup(void *data);


ngx_int_t
ngx_http_veto_sandbox_helper_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, ngx_chain_t *payload,
    size_t payload_len, ngx_http_veto_sandbox_reply_pt handler)
{
    u_char                          *p;
    size_t                           len;
    ngx_buf_t                       *b;
    ngx_chain_t                     *cl, **ll;
    ngx_pool_cleanup_t              *cln;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    h->handler = handler;
    h->status = NGX_OK;

    /* a request may call the helper more than once */
    h->reused = 0;
    h->retried = 0;
    h->send_failed = 0;
    h->paused = 0;
    h->sent = 0;
    h->ahead_pos = 0;
    h->ahead_len = 0;
    h->drained = 0;

    h->sent_req = req;
    h->sent_payload = payload;
    h->sent_payload_len = payload_len;
    h->pipe = NULL;

    if (ngx_http_veto_sandbox_helper_hooks.send
        && ngx_http_veto_sandbox_helper_hooks.send(ctx, req) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_veto_sandbox_metrics_helper_start(ctx, req);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_helper_cleanup;
    cln->data = h;

    /* a quick request: on the worker's pipe, with the others of this
     * turn of the event loop (_pipe.c) */
    switch (ngx_http_veto_sandbox_pipe_send(r, ctx, req, payload_len,
                                            ngx_http_veto_sandbox_helper_done))
    {
    case NGX_OK:
        return NGX_OK;
    case NGX_BUSY:
        return NGX_DECLINED;
    case NGX_ERROR:
        return NGX_ERROR;
    default: /* NGX_DECLINED: a connection of its own */
        break;
    }

    p = ngx_http_veto_sandbox_json_dump(r->pool, req, VSB_FRAME_HEADER_LEN,
                                        0, &len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (len == 0 || len > VSB_MAX_JSON
        || payload_len > (h->stream_payload ? VSB_MAX_STREAM_PAYLOAD
                                            : VSB_MAX_PAYLOAD))
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "veto_sandbox: helper request too large: json %uz, "
                      "payload %uz", len, payload_len);
        return NGX_ERROR;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    vsb_frame_header_encode(p, (uint32_t) len, (uint32_t) payload_len);

    b->start = p;
    b->pos = p;
    b->last = p + VSB_FRAME_HEADER_LEN + len;
    b->end = b->last;
    b->temporary = 1;

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf = b;
    h->out = cl;
    ll = &cl->next;

    /* the payload's data is sent as it is, through links and buf
     * descriptors of ours: sending moves a buf's pos, and the caller's
     * bufs are read again once the helper answered (an exec's record
     * summarises its stdin) */
    for ( /* void */ ; payload; payload = payload->next) {
        if (ngx_buf_size(payload->buf) == 0) {
            continue;
        }

        cl = ngx_alloc_chain_link(r->pool);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = ngx_calloc_buf(r->pool);
        if (cl->buf == NULL) {
            return NGX_ERROR;
        }

        *cl->buf = *payload->buf;
        *ll = cl;
        ll = &cl->next;
    }

    *ll = NULL;

    h->request = h->out;

    return ngx_http_veto_sandbox_helper_connect(r, ctx);
}


/* A kept connection to the helper, or a new one; then the request. */
static ngx_int_t
ngx_http_veto_sandbox_helper_connect(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                          rc;
    ngx_connection_t                  *c;
    ngx_http_veto_sandbox_helper_t    *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);
    h = &ctx->helper;

    c = h->retried ? NULL : ngx_http_veto_sandbox_idle_get(vscf->helper);

    h->reused = (c != NULL);

    if (c != NULL) {
        h->peer.connection = c;
        h->peer.name = &vscf->helper->name;
        rc = NGX_OK;

    } else {
        ngx_memzero(&h->peer, sizeof(ngx_peer_connection_t));

        h->peer.sockaddr = vscf->helper->sockaddr;
        h->peer.socklen = vscf->helper->socklen;
        h->peer.name = &vscf->helper->name;
        h->peer.get = ngx_event_get_peer;
        h->peer.log = r->connection->log;
        h->peer.log_error = NGX_ERROR_ERR;

        rc = ngx_event_connect_peer(&h->peer);

        if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "veto_sandbox: connecting to helper %V failed",
                          h->peer.name);

            ngx_http_veto_sandbox_metrics_helper_error("connect");

            if (h->peer.connection) {
                ngx_close_connection(h->peer.connection);
                h->peer.connection = NULL;
            }

            return NGX_DECLINED;
        }

        c = h->peer.connection;
    }

    h->sent_before = c->sent;

    c->data = r;
    c->pool = r->pool;
    c->log = r->connection->log;
    c->read->log = c->log;
    c->write->log = c->log;

    c->read->handler = ngx_http_veto_sandbox_helper_handler;
    c->write->handler = ngx_http_veto_sandbox_helper_handler;

    /* a client that goes away ends the request; its pool cleanup closes
     * this connection, and the helper cancels what it was doing; a body
     * still being discarded keeps its own handler */
    if (!r->discard_body) {
        r->read_event_handler = ngx_http_test_reading;
    }

    if (rc == NGX_AGAIN) {
        ngx_add_timer(c->write, vscf->connect_timeout);
        return NGX_OK;
    }

    ngx_http_veto_sandbox_helper_write_handler(c->write);

    return NGX_OK;
}


/*
 * An event of the helper's connection, as nginx's upstream module handles
 * one: then what the request posted meanwhile runs (a request ended from
 * here, ngx_http_terminate_request(), is closed by a posted handler: it
 * would otherwise wait for the client's next event).
 */
static void
ngx_http_veto_sandbox_helper_handler(ngx_event_t *ev)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    c = ev->data;
    r = c->data;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    if (ev->write) {
        ngx_http_veto_sandbox_helper_write_handler(ev);

    } else {
        ngx_http_veto_sandbox_helper_read_handler(ev);
    }

    ngx_http_run_posted_requests(c);
}


static void
ngx_http_veto_sandbox_helper_write_handler(ngx_event_t *wev)
{
    ngx_msec_t                         timeout;
    ngx_chain_t                       *out;
    ngx_connection_t                  *c;
    ngx_http_request_t                *r;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_helper_t    *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    c = wev->data;
    r = c->data;
    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    h = &ctx->helper;
    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (wev->timedout) {
        ngx_log_error(NGX_LOG_ERR, wev->log, NGX_ETIMEDOUT,
                      "veto_sandbox: sending to helper %V timed out",
                      h->peer.name);
        ngx_http_veto_sandbox_helper_done(r, ctx, NGX_HTTP_SERVICE_UNAVAILABLE,
                                          "the sandbox helper did not accept "
                                          "the request in time");
        return;
    }

    if (h->out == NULL) {
        return;
    }

    out = c->send_chain(c, h->out, 0);

    if (out == NGX_CHAIN_ERROR && h->reused && !h->retried
        && c->sent == h->sent_before)
    {
        /* a kept connection the helper closed before this request's
         * first byte: nothing of it reached the helper, so it is sent
         * again, once, on a new connection */
        ngx_log_error(NGX_LOG_INFO, wev->log, 0,
                      "veto_sandbox: kept connection to helper %V was "
                      "closed, connecting again", h->peer.name);

        ngx_close_connection(c);
        h->peer.connection = NULL;
        h->out = h->request;
        h->retried = 1;

        if (ngx_http_veto_sandbox_helper_connect(r, ctx) != NGX_OK) {
            ngx_http_veto_sandbox_helper_done(r, ctx,
                                              NGX_HTTP_SERVICE_UNAVAILABLE,
                                              "the sandbox helper is not "
                                              "reachable");
        }

        return;
    }

    if (out == NGX_CHAIN_ERROR) {
        h->send_failed = 1;
        /* the helper may have refused early and said why: read it */
        ngx_log_error(NGX_LOG_INFO, wev->log, 0,
                      "veto_sandbox: sending to helper %V failed, "
                      "reading its reply", h->peer.name);
        out = NULL;
    }

    h->out = out;

    if (out != NULL) {
        ngx_add_timer(wev, vscf->send_timeout);

        if (ngx_handle_write_event(wev, 0) != NGX_OK) {
            ngx_http_veto_sandbox_helper_done(r, ctx,
                                              NGX_HTTP_SERVICE_UNAVAILABLE,
                                              "the sandbox helper connection "
                                              "failed");
        }

        return;
    }

    /* all sent (or the helper refused early): now only the reply
     * matters */

    h->sent = !h->send_failed;

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    timeout = vscf->read_timeout + h->extra_read_ms;

    ngx_add_timer(c->read, timeout);

    if (c->read->ready) {
        ngx_http_veto_sandbox_helper_read_handler(c->read);
        return;
    }

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_http_veto_sandbox_helper_done(r, ctx, NGX_HTTP_SERVICE_UNAVAILABLE,
                                          "the sandbox helper connection "
                                          "failed");
    }
}


static void
ngx_http_veto_sandbox_helper_read_handler(ngx_event_t *rev)
{
    u_char                            *buf;
    size_t                             size;
    ssize_t                            n;
    uint32_t                           jlen, plen;
    ngx_connection_t                  *c;
    ngx_http_request_t                *r;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_helper_t    *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    c = rev->data;
    r = c->data;
    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    h = &ctx->helper;

    if (rev->timedout) {
        ngx_log_error(NGX_LOG_ERR, rev->log, NGX_ETIMEDOUT,
                      "veto_sandbox: helper %V did not answer in time",
                      h->peer.name);
        ngx_http_veto_sandbox_helper_done(r, ctx, NGX_HTTP_GATEWAY_TIME_OUT,
                                          "the sandbox helper did not answer "
                                          "in time");
        return;
    }

    if (h->out != NULL || h->paused) {
        /* still sending (the reply is read afterwards), or the client
         * has not taken the last event yet */
        return;
    }

    for ( ;; ) {

        if (h->head_got < VSB_FRAME_HEADER_LEN) {
            buf = h->head + h->head_got;
            size = VSB_FRAME_HEADER_LEN - h->head_got;

        } else {
            buf = h->in + h->in_got;
            size = h->in_size - h->in_got;
        }

        if (h->ahead_pos < h->ahead_len) {
            /* what was read with the header: the frame's, or the next
             * frame's (a stream's events) */
            n = ngx_min(size, h->ahead_len - h->ahead_pos);
            ngx_memcpy(buf, h->ahead + h->ahead_pos, n);
            h->ahead_pos += n;

        } else if (h->head_got < VSB_FRAME_HEADER_LEN) {
            /* a header with what follows it: a small reply in one recv()
             * (and no FIONREAD: nginx asks when a read fills its buffer) */
            if (h->ahead == NULL) {
                h->ahead = ngx_pnalloc(r->pool, NGX_HTTP_VSB_HELPER_AHEAD);
                if (h->ahead == NULL) {
                    ngx_http_veto_sandbox_helper_done(r, ctx,
                                              NGX_HTTP_INTERNAL_SERVER_ERROR,
                                              "out of memory");
                    return;
                }
            }

            h->ahead_pos = 0;
            h->ahead_len = 0;

            n = c->recv(c, h->ahead, NGX_HTTP_VSB_HELPER_AHEAD);

            if (n > 0) {
                h->ahead_len = n;
                h->drained = (n < NGX_HTTP_VSB_HELPER_AHEAD);
                continue;
            }

        } else {
            n = c->recv(c, buf, size);

            if (n > 0) {
                h->drained = ((size_t) n < size);
            }
        }

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_veto_sandbox_helper_done(r, ctx,
                                              NGX_HTTP_SERVICE_UNAVAILABLE,
                                              "the sandbox helper connection "
                                              "failed");
            }
            return;
        }

        if (n == NGX_ERROR || n == 0) {
            /* the helper stopped (or died) with the request: it may be
             * back soon, so 503 */
            ngx_log_error(NGX_LOG_ERR, rev->log, 0,
                          "veto_sandbox: helper %V closed the connection "
                          "before a complete reply", h->peer.name);
            ngx_http_veto_sandbox_helper_done(r, ctx,
                                          NGX_HTTP_SERVICE_UNAVAILABLE,
                                          "the sandbox helper closed the "
                                          "connection before it answered");
            return;
        }

        if (h->head_got < VSB_FRAME_HEADER_LEN) {
            h->head_got += n;

            if (h->head_got < VSB_FRAME_HEADER_LEN) {
                continue;
            }

            jlen = vsb_frame_get_u32(h->head + 4);
            plen = vsb_frame_get_u32(h->head + 8);

            if (ngx_memcmp(h->head, VSB_FRAME_MAGIC, VSB_FRAME_MAGIC_LEN)
                != 0
                || jlen == 0 || jlen > VSB_MAX_JSON
                || plen > VSB_MAX_PAYLOAD)
            {
                ngx_log_error(NGX_LOG_ERR, rev->log, 0,
                              "veto_sandbox: helper %V sent a bad frame "
                              "(json %uD, payload %uD)", h->peer.name,
                              jlen, plen);
                ngx_http_veto_sandbox_helper_done(r, ctx,
                                              NGX_HTTP_BAD_GATEWAY,
                                              "the sandbox helper sent a bad "
                                              "frame");
                return;
            }

            h->in_size = (size_t) jlen + plen;
            h->payload_len = plen;

            /* an event's frame fits the buffer of events; a reply, which
             * may be far larger, gets its own */
            if (h->event && plen <= VSB_STREAM_CHUNK) {
                if (h->ev == NULL) {
                    h->ev = ngx_pnalloc(r->pool,
                                        VSB_MAX_JSON + VSB_STREAM_CHUNK);
                }

                h->in = h->ev;

            } else {
                h->in = ngx_pnalloc(r->pool, h->in_size);
            }

            if (h->in == NULL) {
                ngx_http_veto_sandbox_helper_done(r, ctx,
                                          NGX_HTTP_INTERNAL_SERVER_ERROR,
                                          "out of memory");
                return;
            }

            continue;
        }

        h->in_got += n;

        if (h->in_got < h->in_size) {
            continue;
        }

        if (h->event == NULL) {
            break;
        }

        switch (ngx_http_veto_sandbox_helper_event(r, ctx)) {

        case NGX_DECLINED:
            /* the reply */
            goto reply;

        case NGX_OK:
            /* progress: the read timeout starts again */
            vscf = ngx_http_get_module_srv_conf(r,
                                                ngx_http_veto_sandbox_module);
            ngx_add_timer(rev, vscf->read_timeout + h->extra_read_ms);
            continue;

        case NGX_AGAIN:
            /* the client is slow: so is the helper, until it is not */
            h->paused = 1;

            if (rev->timer_set) {
                ngx_del_timer(rev);
            }

            return;

        default: /* NGX_ERROR: h->status and h->error say why */
            ngx_http_veto_sandbox_helper_done(r, ctx, h->status, h->error);
            return;
        }
    }

reply:

    jlen = vsb_frame_get_u32(h->head + 4);

    h->json = json_loadb((char *) h->in, jlen, JSON_REJECT_DUPLICATES, NULL);

    if (h->json != NULL) {
        ngx_pool_cleanup_t  *cln;

        cln = ngx_pool_cleanup_add(r->pool, 0);
        if (cln == NULL) {
            json_decref(h->json);
            h->json = NULL;

        } else {
            cln->handler = ngx_http_veto_sandbox_json_cleanup;
            cln->data = h->json;
        }
    }

    if (!json_is_object(h->json)
        || !json_is_boolean(json_object_get(h->json, "ok")))
    {
        ngx_log_error(NGX_LOG_ERR, rev->log, 0,
                      "veto_sandbox: helper %V sent a reply that is not a "
                      "JSON object with \"ok\"", h->peer.name);
        ngx_http_veto_sandbox_helper_done(r, ctx, NGX_HTTP_BAD_GATEWAY,
                                          "the sandbox helper sent a bad "
                                          "reply");
        return;
    }

    h->payload = h->in + jlen;

    /* the exchange is complete and the stream in step (nothing read
     * past the reply): keep it */
    if (!h->send_failed && h->ahead_pos == h->ahead_len) {
        vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);
        h->peer.connection = NULL;
        ngx_http_veto_sandbox_idle_put(c, vscf->helper,
                                       h->drained && !rev->pending_eof);
    }

    ngx_http_veto_sandbox_helper_done(r, ctx, NGX_OK, NULL);
}


/*
 * A complete frame of a streaming request: an event goes to h->event
 * (NGX_OK, NGX_AGAIN, NGX_ERROR as it said) and the next frame is read
 * into the same buffer; NGX_DECLINED: it is the reply (it has "ok").
 */
static ngx_int_t
ngx_http_veto_sandbox_helper_event(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *ev;
    uint32_t                         jlen;
    ngx_int_t                        rc;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;
    jlen = vsb_frame_get_u32(h->head + 4);

    if (h->in != h->ev) {
        return NGX_DECLINED;
    }

    ev = json_loadb((char *) h->in, jlen, JSON_REJECT_DUPLICATES, NULL);

    if (json_object_get(ev, "ok") != NULL) {
        json_decref(ev);
        return NGX_DECLINED;
    }

    if (!json_is_string(json_object_get(ev, "event"))
        || h->payload_len == 0)
    {
        json_decref(ev);

        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "veto_sandbox: helper %V sent a frame that is neither "
                      "an event nor a reply", h->peer.name);

        h->status = NGX_HTTP_BAD_GATEWAY;
        h->error = "the sandbox helper sent a bad event";
        return NGX_ERROR;
    }

    rc = h->event(r, ctx, ev, h->in + jlen, h->payload_len);

    json_decref(ev);

    /* the next frame, into the same buffer */
    h->head_got = 0;
    h->in_got = 0;
    h->in_size = 0;
    h->payload_len = 0;

    if (rc == NGX_ERROR && h->status == NGX_OK) {
        h->status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        h->error = "the event could not be passed on";
    }

    return rc;
}


void
ngx_http_veto_sandbox_helper_resume(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_connection_t                  *c;
    ngx_http_veto_sandbox_helper_t    *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    h = &ctx->helper;
    c = h->peer.connection;

    if (!h->paused || c == NULL) {
        return;
    }

    h->paused = 0;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    ngx_add_timer(c->read, vscf->read_timeout + h->extra_read_ms);

    /* what arrived meanwhile raised no event that we still wait for */
    ngx_http_veto_sandbox_helper_read_handler(c->read);
}


/* Closes the connection now, never kept: the helper cancels what the
 * request was doing (a foreground exec is killed). */
/* One exchange is over and another follows in the same request: the
 * next reply is read from scratch (the last one is freed with the pool). */
void
ngx_http_veto_sandbox_helper_reset(ngx_http_veto_sandbox_helper_t *h)
{
    h->head_got = 0;
    h->in = NULL;
    h->in_size = 0;
    h->in_got = 0;
    h->json = NULL;
    h->payload = NULL;
    h->payload_len = 0;
}


void
ngx_http_veto_sandbox_helper_close(ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    if (h->peer.connection) {
        ngx_close_connection(h->peer.connection);
        h->peer.connection = NULL;
    }
}


/* Closes the connection (if not kept) and hands the outcome to the
 * operation: metrics, the epoch fence, then h->handler.  A request on the
 * pipe ends here too (its done()). */
static void
ngx_http_veto_sandbox_helper_done(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t status, const char *error)
{
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    if (h->peer.connection) {
        ngx_close_connection(h->peer.connection);
        h->peer.connection = NULL;
    }

    h->status = status;
    h->error = error;

    ngx_http_veto_sandbox_metrics_helper(r, ctx);

    /* a stale ownership record: the fence reads it again first */
    if (ngx_http_veto_sandbox_helper_hooks.done
        && ngx_http_veto_sandbox_helper_hooks.done(r, ctx) == NGX_OK)
    {
        return;
    }

    h->handler(r, ctx);
}


static void
ngx_http_veto_sandbox_helper_cleanup(void *data)
{
    ngx_http_veto_sandbox_helper_t  *h = data;

    /* the request ended first (client gone, worker exiting) */
    ngx_http_veto_sandbox_pipe_forget(h);

    if (h->peer.connection) {
        ngx_close_connection(h->peer.connection);
        h->peer.connection = NULL;
    }
}


static ngx_connection_t *
ngx_http_veto_sandbox_idle_get(ngx_addr_t *peer)
{
    ngx_uint_t                     i;
    ngx_connection_t              *c;
    ngx_http_veto_sandbox_idle_t  *k;

    for (i = 0; i < NGX_HTTP_VSB_HELPER_KEEPALIVE; i++) {
        k = &ngx_http_veto_sandbox_idle[i];

        if (k->c == NULL || k->socklen != peer->socklen
            || ngx_memcmp(k->sockaddr, peer->sockaddr, peer->socklen) != 0)
        {
            continue;
        }

        c = k->c;
        k->c = NULL;

        if (c->read->timer_set) {
            ngx_del_timer(c->read);
        }

        c->idle = 0;

        return c;
    }

    return NULL;
}


/* Keeps c for the next request to peer, or closes it.  drained: the
 * reply's last recv() was short, so nothing followed it then (no need
 * to ask again). */
static void
ngx_http_veto_sandbox_idle_put(ngx_connection_t *c, ngx_addr_t *peer,
    ngx_uint_t drained)
{
    u_char                         byte;
    ssize_t                        n;
    ngx_err_t                      err;
    ngx_uint_t                     i;
    ngx_http_veto_sandbox_idle_t  *k;

    if (peer == NULL || ngx_terminate || ngx_exiting) {
        goto close;
    }

    /* nothing may follow a reply: a byte or a hangup ends it here */
    if (!drained) {
        n = recv(c->fd, &byte, 1, MSG_PEEK);
        err = ngx_socket_errno;

        if (n != -1 || (err != NGX_EAGAIN && err != NGX_EINTR)) {
            goto close;
        }
    }

    for (i = 0; i < NGX_HTTP_VSB_HELPER_KEEPALIVE; i++) {
        k = &ngx_http_veto_sandbox_idle[i];

        if (k->c == NULL) {
            break;
        }
    }

    if (i == NGX_HTTP_VSB_HELPER_KEEPALIVE) {
        goto close;
    }

    if (c->write->timer_set) {
        ngx_del_timer(c->write);
    }

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    c->read->ready = 0;
    c->data = k;
    c->pool = NULL;
    c->log = ngx_cycle->log;
    c->read->log = ngx_cycle->log;
    c->write->log = ngx_cycle->log;
    c->read->handler = ngx_http_veto_sandbox_idle_handler;
    c->write->handler = ngx_http_veto_sandbox_idle_handler;

    /* graceful shutdown closes idle connections through the handler */
    c->idle = 1;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        goto close;
    }

    ngx_add_timer(c->read, NGX_HTTP_VSB_HELPER_IDLE_MS);

    k->c = c;
    k->sockaddr = peer->sockaddr;
    k->socklen = peer->socklen;

    return;

close:

    ngx_close_connection(c);
}


static void
ngx_http_veto_sandbox_idle_handler(ngx_event_t *ev)
{
    u_char                         byte;
    ssize_t                        n;
    ngx_err_t                      err;
    ngx_connection_t              *c;
    ngx_http_veto_sandbox_idle_t  *k;

    c = ev->data;
    k = c->data;

    if (ev->write && !c->close) {
        return;
    }

    if (!c->close && !ev->timedout) {
        n = recv(c->fd, &byte, 1, MSG_PEEK);
        err = ngx_socket_errno;

        if (n == -1 && (err == NGX_EAGAIN || err == NGX_EINTR)) {
            ev->ready = 0;

            if (ngx_handle_read_event(c->read, 0) == NGX_OK) {
                return;
            }
        }
    }

    /* timed out, shutting down, or the helper said something or hung up
     * while idle: either way this connection is done */
    k->c = NULL;

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    ngx_close_connection(c);
}
