/*
 * The client side of the helper protocol (vsb_protocol.h), driven by
 * nginx's event loop: one unix socket connection per request made with
 * ngx_event_connect_peer(), our own write and read handlers, and the
 * connect, send and read timeouts of the server's configuration.  The
 * request frame is the 12-byte prefix and JSON header in one buffer,
 * followed by the payload chain as given, which may be the client's
 * request body in memory or in its temporary file (sent with sendfile),
 * so file content is never copied again.
 */

#include "ngx_http_veto_sandbox_module.h"


static void ngx_http_veto_sandbox_helper_write_handler(ngx_event_t *wev);
static void ngx_http_veto_sandbox_helper_read_handler(ngx_event_t *rev);
static void ngx_http_veto_sandbox_helper_done(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t status, const char *error);
static void ngx_http_veto_sandbox_helper_cleanup(void *data);


ngx_int_t
ngx_http_veto_sandbox_helper_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, ngx_chain_t *payload,
    size_t payload_len, ngx_http_veto_sandbox_reply_pt handler)
{
    u_char                            *p;
    size_t                             len;
    ngx_int_t                          rc;
    ngx_buf_t                         *b;
    ngx_chain_t                       *cl, **ll;
    ngx_connection_t                  *c;
    ngx_pool_cleanup_t                *cln;
    ngx_http_veto_sandbox_helper_t    *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);
    h = &ctx->helper;

    h->handler = handler;
    h->status = NGX_OK;

    len = json_dumpb(req, NULL, 0, JSON_COMPACT);

    if (len == 0 || len > VSB_MAX_JSON || payload_len > VSB_MAX_PAYLOAD) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "veto_sandbox: helper request too large: json %uz, "
                      "payload %uz", len, payload_len);
        return NGX_ERROR;
    }

    b = ngx_create_temp_buf(r->pool, VSB_FRAME_HEADER_LEN + len);
    if (b == NULL) {
        return NGX_ERROR;
    }

    p = b->last;
    vsb_frame_header_encode(p, (uint32_t) len, (uint32_t) payload_len);
    b->last += VSB_FRAME_HEADER_LEN;
    b->last += json_dumpb(req, (char *) b->last, len, JSON_COMPACT);

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf = b;
    h->out = cl;
    ll = &cl->next;

    /* the payload's bufs are sent as they are, links are ours */
    for ( /* void */ ; payload; payload = payload->next) {
        if (ngx_buf_size(payload->buf) == 0) {
            continue;
        }

        cl = ngx_alloc_chain_link(r->pool);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = payload->buf;
        *ll = cl;
        ll = &cl->next;
    }

    *ll = NULL;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_helper_cleanup;
    cln->data = h;

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

        if (h->peer.connection) {
            ngx_close_connection(h->peer.connection);
            h->peer.connection = NULL;
        }

        return NGX_DECLINED;
    }

    c = h->peer.connection;

    c->data = r;
    c->pool = r->pool;

    c->read->handler = ngx_http_veto_sandbox_helper_read_handler;
    c->write->handler = ngx_http_veto_sandbox_helper_write_handler;

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

    if (out == NGX_CHAIN_ERROR) {
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

    /* all sent: now only the reply matters */

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
    u_char                          *buf;
    size_t                           size;
    ssize_t                          n;
    uint32_t                         jlen, plen;
    ngx_connection_t                *c;
    ngx_http_request_t              *r;
    ngx_http_veto_sandbox_ctx_t     *ctx;
    ngx_http_veto_sandbox_helper_t  *h;

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

    if (h->out != NULL) {
        /* still sending; the reply is read afterwards */
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

        n = c->recv(c, buf, size);

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
            ngx_log_error(NGX_LOG_ERR, rev->log, 0,
                          "veto_sandbox: helper %V closed the connection "
                          "before a complete reply", h->peer.name);
            ngx_http_veto_sandbox_helper_done(r, ctx, NGX_HTTP_BAD_GATEWAY,
                                          "the sandbox helper closed the "
                                          "connection");
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

            h->in = ngx_pnalloc(r->pool, h->in_size);
            if (h->in == NULL) {
                ngx_http_veto_sandbox_helper_done(r, ctx,
                                          NGX_HTTP_INTERNAL_SERVER_ERROR,
                                          "out of memory");
                return;
            }

            continue;
        }

        h->in_got += n;

        if (h->in_got == h->in_size) {
            break;
        }
    }

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

    ngx_http_veto_sandbox_helper_done(r, ctx, NGX_OK, NULL);
}


/* Closes the connection and hands the outcome to the operation. */
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

    h->handler(r, ctx);
}


static void
ngx_http_veto_sandbox_helper_cleanup(void *data)
{
    ngx_http_veto_sandbox_helper_t  *h = data;

    /* the request ended first (client gone, worker exiting) */
    if (h->peer.connection) {
        ngx_close_connection(h->peer.connection);
        h->peer.connection = NULL;
    }
}
