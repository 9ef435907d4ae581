/*
 * Pipelined helper requests (docs/helper-protocol.md, "Pipelining").
 *
 * A request whose op the helper answers at once (VSB_OPS_AT_ONCE in
 * vsb_protocol.h), with no payload and no event frames, is not given a
 * connection of its own: each worker keeps one connection per
 * helper (a "pipe") on which such requests are queued.  Every frame queued
 * during one turn of the event loop is written by one posted event, in one
 * send(); the helper answers them in order, and the replies are read in
 * order, each handed to the request that waits at the head of the queue.
 *
 * Each frame carries a request_id which the helper echoes: the module's
 * own ("<connection number>-<request number>", unique among the requests
 * in flight), or, for a request without one, the pipe's ("vsb-p" and a
 * sequence number).  A reply whose request_id is not the one at the head
 * of the queue (a reply out of step) fails every request on the pipe
 * with 502 and closes it, so that no request is ever answered with
 * another's reply.  That holds only while no two requests on the pipe
 * carry the same id: a caller that names its own must make it unique (a
 * fixed one, twice in flight, lets a reply out of step pass as the
 * other's).
 *
 * Failures are those of a connection of one's own, for every request on
 * the pipe at once: the helper closes the connection or dies (503, "closed
 * the connection before it answered"); the request at the head is not
 * answered within its read timeout (504 for all: the ones behind it can
 * only be answered after it); the frames cannot be written within the send
 * timeout (503); a bad frame or reply (502).  A client that goes away
 * while its request is on the pipe leaves its entry there, without a
 * request: its reply is read and dropped, then the entry is freed.
 *
 * The pipe is closed after NGX_HTTP_VSB_PIPE_IDLE_MS with nothing on it
 * (under the helper's 60 s for a request's first byte), on a byte or a
 * hangup while it is idle, and when the worker shuts down.  A kept pipe
 * that the helper had closed before any byte of what was written (it
 * restarted): the frames are written once more on a new connection.
 */

#include "ngx_http_veto_sandbox_transport.h"
#include "ngx_http_veto_sandbox_metrics.h"


#define NGX_HTTP_VSB_PIPES             4       /* helper addresses */
#define NGX_HTTP_VSB_PIPE_MAX          256     /* requests on one pipe */
/* frames written at once, without waiting for the end of the loop's
 * turn: the helper works on them while the worker reads the next
 * requests (with the whole turn's frames in one write, the two would
 * take turns, each idle while the other works) */
#ifndef NGX_HTTP_VSB_PIPE_BATCH
#define NGX_HTTP_VSB_PIPE_BATCH        8
#endif
#define NGX_HTTP_VSB_PIPE_FRAME_MAX    4096    /* a pipelined frame */
#define NGX_HTTP_VSB_PIPE_IDLE_MS      30000
#define NGX_HTTP_VSB_PIPE_RBUF         16384
#define NGX_HTTP_VSB_PIPE_RID          "vsb-p"
#define NGX_HTTP_VSB_PIPE_RID_LEN      64


typedef struct ngx_http_vsb_pipe_s  ngx_http_vsb_pipe_t;

struct ngx_http_vsb_pipe_req_s {
    ngx_queue_t                   queue;
    ngx_http_vsb_pipe_t          *pipe;
    ngx_http_request_t           *r;        /* NULL: its client went away */
    ngx_http_veto_sandbox_ctx_t  *ctx;
    ngx_http_veto_sandbox_pipe_done_pt  done;   /* its end, to its sender */
    uint64_t                      start;    /* its first byte's offset */
    uint64_t                      end;      /* past its last byte */
    ngx_msec_t                    timeout;  /* to be answered, once sent */
    ngx_msec_t                    deadline;
    size_t                        rid_len;
    u_char                        rid[NGX_HTTP_VSB_PIPE_RID_LEN];
    unsigned                      sent:1;
};


struct ngx_http_vsb_pipe_s {
    ngx_connection_t             *c;
    struct sockaddr              *sockaddr;
    socklen_t                     socklen;
    ngx_str_t                    *name;

    ngx_queue_t                   waiting;  /* queued or sent, in order */
    ngx_uint_t                    n;

    /* what is still to be written: the frames of every request queued
     * and not yet sent, in order */
    u_char                       *out;
    size_t                        out_len;
    size_t                        out_cap;
    uint64_t                      queued;   /* bytes ever queued */
    uint64_t                      written;  /* bytes ever written */
    ngx_event_t                   flush;
    ngx_uint_t                    unflushed; /* frames queued since */
    ngx_msec_t                    send_timeout;
    ngx_msec_t                    connect_timeout;

    /* the reply being read (for the request at the head) */
    u_char                        head[VSB_FRAME_HEADER_LEN];
    size_t                        head_got;
    u_char                       *in;       /* NULL: read and dropped */
    size_t                        in_size;
    size_t                        in_got;
    u_char                       *rbuf;

    uint32_t                      seq;
    unsigned                      kept:1;   /* has answered on this
                                               connection: not fresh */
    unsigned                      retried:1;
};


static ngx_http_vsb_pipe_t  ngx_http_vsb_pipes[NGX_HTTP_VSB_PIPES];


static ngx_http_vsb_pipe_t *ngx_http_vsb_pipe_get(ngx_addr_t *peer);
static ngx_int_t ngx_http_vsb_pipe_connect(ngx_http_vsb_pipe_t *p);
static void ngx_http_vsb_pipe_flush_handler(ngx_event_t *ev);
static void ngx_http_vsb_pipe_write(ngx_http_vsb_pipe_t *p);
static void ngx_http_vsb_pipe_sent(ngx_http_vsb_pipe_t *p, size_t n);
static void ngx_http_vsb_pipe_write_handler(ngx_event_t *wev);
static void ngx_http_vsb_pipe_read_handler(ngx_event_t *rev);
static ngx_int_t ngx_http_vsb_pipe_feed(ngx_http_vsb_pipe_t *p, u_char *buf,
    size_t len);
static ngx_int_t ngx_http_vsb_pipe_deliver(ngx_http_vsb_pipe_t *p);
static void ngx_http_vsb_pipe_arm(ngx_http_vsb_pipe_t *p);
static void ngx_http_vsb_pipe_fail(ngx_http_vsb_pipe_t *p, ngx_int_t status,
    const char *error);
static void ngx_http_vsb_pipe_close(ngx_http_vsb_pipe_t *p);
static void ngx_http_vsb_pipe_free(ngx_http_vsb_pipe_req_t *e);


/* the ops the helper answers at once, without events or a payload: the
 * protocol's word (an op's name is its VSB_OPS name) */
#define NGX_HTTP_VSB_PIPE_OP(op)  #op,

static const char  *ngx_http_vsb_pipe_ops[] = {
    VSB_OPS_AT_ONCE(NGX_HTTP_VSB_PIPE_OP) NULL
};


/*
 * Queues a request on the worker's pipe to the helper when it may be
 * (NGX_OK: the reply, or the failure, comes through done(), later, never
 * from here); NGX_DECLINED: it takes the path of a connection of its own;
 * NGX_BUSY: the helper cannot be reached; NGX_ERROR: out of memory.
 */
ngx_int_t
ngx_http_veto_sandbox_pipe_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, size_t payload_len,
    ngx_http_veto_sandbox_pipe_done_pt done)
{
    u_char                            *frame, *nb;
    size_t                             len, cap;
    json_t                            *op;
    ngx_uint_t                         i;
    const char                        *name;
    ngx_http_vsb_pipe_t               *p;
    ngx_http_vsb_pipe_req_t           *e;
    ngx_http_veto_sandbox_helper_t    *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;
    u_char                             rid[NGX_HTTP_VSB_PIPE_RID_LEN];
    u_char                            *last;
    size_t                             rid_len;
    json_t                            *v;
    ssize_t                            n;
    ngx_uint_t                         own;

    h = &ctx->helper;

    if (h->event != NULL || payload_len != 0 || h->stream_payload
        || h->extra_read_ms != 0 || ngx_exiting || ngx_terminate)
    {
        return NGX_DECLINED;
    }

    op = json_object_get(req, "op");
    name = json_string_value(op);
    if (name == NULL) {
        return NGX_DECLINED;
    }

    for (i = 0; ngx_http_vsb_pipe_ops[i]; i++) {
        if (ngx_strcmp(name, ngx_http_vsb_pipe_ops[i]) == 0) {
            break;
        }
    }

    if (ngx_http_vsb_pipe_ops[i] == NULL) {
        return NGX_DECLINED;
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    p = ngx_http_vsb_pipe_get(vscf->helper);
    if (p == NULL || p->n >= NGX_HTTP_VSB_PIPE_MAX) {
        return NGX_DECLINED;
    }

    if (p->c == NULL && ngx_http_vsb_pipe_connect(p) != NGX_OK) {
        /* as a connection of its own would have: not reachable */
        return NGX_BUSY;
    }

    /* the request_id the reply must echo: the request's own, or one of
     * the pipe's for the frame (req itself is kept as it was: the fence
     * may send it again) */
    v = json_object_get(req, "request_id");
    own = (v == NULL);

    if (own) {
        last = ngx_snprintf(rid, sizeof(rid), NGX_HTTP_VSB_PIPE_RID "%uD",
                            (uint32_t) (p->seq + 1));
        v = json_stringn((char *) rid, last - rid);

        if (v == NULL || json_object_set_new(req, "request_id", v) != 0) {
            return NGX_DECLINED;
        }
    }

    if (!json_is_string(v)
        || json_string_length(v) > NGX_HTTP_VSB_PIPE_RID_LEN)
    {
        if (own) {
            (void) json_object_del(req, "request_id");
        }
        return NGX_DECLINED;
    }

    rid_len = json_string_length(v);
    ngx_memcpy(rid, json_string_value(v), rid_len);

    frame = ngx_http_veto_sandbox_json_dump(r->pool, req, VSB_FRAME_HEADER_LEN,
                                            0, &len);

    if (own) {
        (void) json_object_del(req, "request_id");
    }

    if (frame == NULL) {
        return NGX_ERROR;
    }

    if (len == 0 || len + VSB_FRAME_HEADER_LEN > NGX_HTTP_VSB_PIPE_FRAME_MAX) {
        return NGX_DECLINED;
    }

    vsb_frame_header_encode(frame, (uint32_t) len, 0);
    len += VSB_FRAME_HEADER_LEN;

    if (p->out_len + len > p->out_cap) {
        cap = ngx_max(p->out_cap * 2, 4096);
        while (cap < p->out_len + len) {
            cap *= 2;
        }

        nb = ngx_alloc(cap, ngx_cycle->log);
        if (nb == NULL) {
            return NGX_DECLINED;
        }

        if (p->out_len) {
            ngx_memcpy(nb, p->out, p->out_len);
        }

        if (p->out) {
            ngx_free(p->out);
        }

        p->out = nb;
        p->out_cap = cap;
    }

    e = ngx_alloc(sizeof(ngx_http_vsb_pipe_req_t), ngx_cycle->log);
    if (e == NULL) {
        return NGX_DECLINED;
    }

    ngx_memcpy(p->out + p->out_len, frame, len);
    p->out_len += len;
    p->queued += len;

    e->pipe = p;
    e->r = r;
    e->ctx = ctx;
    e->done = done;
    e->start = p->queued - len;
    e->end = p->queued;
    e->timeout = vscf->read_timeout;
    e->deadline = 0;
    e->rid_len = rid_len;
    ngx_memcpy(e->rid, rid, rid_len);
    e->sent = 0;
    p->seq++;

    ngx_queue_insert_tail(&p->waiting, &e->queue);
    p->n++;

    p->send_timeout = vscf->send_timeout;
    p->connect_timeout = vscf->connect_timeout;

    h->pipe = e;
    h->peer.connection = NULL;
    p->c->idle = 0;
    h->peer.name = &vscf->helper->name;

    /* a client that goes away ends the request; its pool cleanup takes
     * it off the pipe (ngx_http_veto_sandbox_pipe_forget()) */
    if (!r->discard_body) {
        r->read_event_handler = ngx_http_test_reading;
    }

    if (p->c->write->timer_set) {
        return NGX_OK;          /* connecting, or the socket is full */
    }

    if (++p->unflushed >= NGX_HTTP_VSB_PIPE_BATCH) {
        /* a batch goes now (what cannot be written, or a failure, is
         * the posted write's: requests are never failed from here) */
        p->unflushed = 0;
        n = p->c->send(p->c, p->out, p->out_len);
        if (n > 0) {
            ngx_http_vsb_pipe_sent(p, n);
        }
    }

    if (p->out_len && !p->flush.posted) {
        ngx_post_event(&p->flush, &ngx_posted_events);
    }

    return NGX_OK;
}


/* The request's client went away (its pool is being destroyed): its
 * reply, when it comes, is dropped. */
void
ngx_http_veto_sandbox_pipe_forget(ngx_http_veto_sandbox_helper_t *h)
{
    ngx_http_vsb_pipe_t      *p;
    ngx_http_vsb_pipe_req_t  *e;

    e = h->pipe;
    h->pipe = NULL;

    if (e == NULL) {
        return;
    }

    p = e->pipe;

    /* its reply may be half read into its pool: read the rest nowhere */
    if (!ngx_queue_empty(&p->waiting)
        && ngx_queue_data(ngx_queue_head(&p->waiting),
                          ngx_http_vsb_pipe_req_t, queue) == e
        && p->head_got == VSB_FRAME_HEADER_LEN)
    {
        p->in = NULL;
    }

    e->r = NULL;
    e->ctx = NULL;
}


static ngx_http_vsb_pipe_t *
ngx_http_vsb_pipe_get(ngx_addr_t *peer)
{
    ngx_uint_t            i;
    ngx_http_vsb_pipe_t  *p;

    for (i = 0; i < NGX_HTTP_VSB_PIPES; i++) {
        p = &ngx_http_vsb_pipes[i];

        if (p->sockaddr == NULL) {
            p->sockaddr = peer->sockaddr;
            p->socklen = peer->socklen;
            p->name = &peer->name;
            ngx_queue_init(&p->waiting);
            p->flush.handler = ngx_http_vsb_pipe_flush_handler;
            p->flush.data = p;
            p->flush.log = ngx_cycle->log;
            return p;
        }

        if (p->socklen == peer->socklen
            && ngx_memcmp(p->sockaddr, peer->sockaddr, peer->socklen) == 0)
        {
            return p;
        }
    }

    return NULL;
}


static ngx_int_t
ngx_http_vsb_pipe_connect(ngx_http_vsb_pipe_t *p)
{
    ngx_int_t               rc;
    ngx_connection_t       *c;
    ngx_peer_connection_t   pc;

    if (p->rbuf == NULL) {
        p->rbuf = ngx_alloc(NGX_HTTP_VSB_PIPE_RBUF, ngx_cycle->log);
        if (p->rbuf == NULL) {
            return NGX_ERROR;
        }
    }

    ngx_memzero(&pc, sizeof(ngx_peer_connection_t));

    pc.sockaddr = p->sockaddr;
    pc.socklen = p->socklen;
    pc.name = p->name;
    pc.get = ngx_event_get_peer;
    pc.log = ngx_cycle->log;
    pc.log_error = NGX_ERROR_ERR;

    rc = ngx_event_connect_peer(&pc);

    if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "veto_sandbox: connecting to helper %V failed",
                      p->name);

        ngx_http_veto_sandbox_metrics_helper_error("connect");

        if (pc.connection) {
            ngx_close_connection(pc.connection);
        }

        return NGX_ERROR;
    }

    c = pc.connection;
    c->data = p;
    c->pool = NULL;
    c->log = ngx_cycle->log;
    c->read->log = c->log;
    c->write->log = c->log;
    c->read->handler = ngx_http_vsb_pipe_read_handler;
    c->write->handler = ngx_http_vsb_pipe_write_handler;

    p->c = c;
    p->kept = 0;
    p->head_got = 0;
    p->in = NULL;
    p->in_size = 0;
    p->in_got = 0;

    if (rc == NGX_AGAIN) {
        /* the helper's backlog is full: written once it accepts */
        ngx_add_timer(c->write, p->connect_timeout ? p->connect_timeout
                                                   : 60000);
    }

    return NGX_OK;
}


/* posted: everything queued in this turn of the event loop goes out */
static void
ngx_http_vsb_pipe_flush_handler(ngx_event_t *ev)
{
    ngx_http_vsb_pipe_write(ev->data);
}


static void
ngx_http_vsb_pipe_write_handler(ngx_event_t *wev)
{
    ngx_connection_t     *c;
    ngx_http_vsb_pipe_t  *p;

    c = wev->data;
    p = c->data;

    if (wev->timedout) {
        ngx_log_error(NGX_LOG_ERR, wev->log, NGX_ETIMEDOUT,
                      "veto_sandbox: sending to helper %V timed out",
                      p->name);
        ngx_http_vsb_pipe_fail(p, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the sandbox helper did not accept the "
                               "request in time");
        return;
    }

    ngx_http_vsb_pipe_write(p);
}


static void
ngx_http_vsb_pipe_write(ngx_http_vsb_pipe_t *p)
{
    ssize_t                   n;
    ngx_connection_t         *c;
    ngx_http_vsb_pipe_req_t  *e;

    c = p->c;

    if (c == NULL || p->out_len == 0) {
        return;
    }

    n = c->send(c, p->out, p->out_len);

    e = ngx_queue_empty(&p->waiting) ? NULL
        : ngx_queue_data(ngx_queue_head(&p->waiting), ngx_http_vsb_pipe_req_t,
                         queue);

    if (n == NGX_ERROR && p->kept && !p->retried && e != NULL
        && e->start == p->written)
    {
        /* a kept pipe the helper closed before this: nothing of it
         * reached the helper, so it is written again, once, on a new
         * connection */
        ngx_log_error(NGX_LOG_INFO, c->log, 0,
                      "veto_sandbox: kept pipe to helper %V was closed, "
                      "connecting again", p->name);

        ngx_close_connection(c);
        p->c = NULL;
        p->retried = 1;

        if (ngx_http_vsb_pipe_connect(p) != NGX_OK) {
            ngx_http_vsb_pipe_fail(p, NGX_HTTP_SERVICE_UNAVAILABLE,
                                   "the sandbox helper is not reachable");
            return;
        }

        if (p->c->write->timer_set) {
            return;             /* connecting */
        }

        ngx_http_vsb_pipe_write(p);
        return;
    }

    if (n == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "veto_sandbox: sending to helper %V failed", p->name);
        ngx_http_vsb_pipe_fail(p, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the sandbox helper closed the connection "
                               "before it answered");
        return;
    }

    p->unflushed = 0;

    if (n > 0) {
        ngx_http_vsb_pipe_sent(p, n);
    }

    if (p->out_len) {
        ngx_add_timer(c->write, p->send_timeout);

        if (ngx_handle_write_event(c->write, 0) != NGX_OK) {
            ngx_http_vsb_pipe_fail(p, NGX_HTTP_SERVICE_UNAVAILABLE,
                                   "the sandbox helper connection failed");
        }

        return;
    }

    if (c->write->timer_set) {
        ngx_del_timer(c->write);
    }

    if (c->read->ready) {
        ngx_http_vsb_pipe_read_handler(c->read);
        return;
    }

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_http_vsb_pipe_fail(p, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the sandbox helper connection failed");
    }
}


/* n bytes were written: the requests written whole are due an answer */
static void
ngx_http_vsb_pipe_sent(ngx_http_vsb_pipe_t *p, size_t n)
{
    ngx_queue_t              *q;
    ngx_http_vsb_pipe_req_t  *e;

    p->written += n;
    p->out_len -= n;
    if (p->out_len) {
        ngx_memmove(p->out, p->out + n, p->out_len);
    }

    /* from the last one: those before it were sent before */
    for (q = ngx_queue_last(&p->waiting);
         q != ngx_queue_sentinel(&p->waiting);
         q = ngx_queue_prev(q))
    {
        e = ngx_queue_data(q, ngx_http_vsb_pipe_req_t, queue);

        if (e->sent) {
            break;
        }

        if (e->end > p->written) {
            continue;
        }

        e->sent = 1;
        e->deadline = ngx_current_msec + e->timeout;

        if (e->r) {
            e->ctx->helper.sent = 1;
        }
    }

    ngx_http_vsb_pipe_arm(p);
}


/* The read timer: the deadline of the request at the head, or the
 * pipe's idle time when nothing is on it. */
static void
ngx_http_vsb_pipe_arm(ngx_http_vsb_pipe_t *p)
{
    ngx_msec_t                t;
    ngx_connection_t         *c;
    ngx_http_vsb_pipe_req_t  *e;

    c = p->c;

    if (ngx_queue_empty(&p->waiting)) {
        /* kept: closed by graceful shutdown (idle), and its timer does
         * not keep an exiting worker alive (cancelable) */
        c->idle = 1;
        c->read->cancelable = 1;
        ngx_add_timer(c->read, NGX_HTTP_VSB_PIPE_IDLE_MS);
        return;
    }

    c->idle = 0;
    c->read->cancelable = 0;

    e = ngx_queue_data(ngx_queue_head(&p->waiting), ngx_http_vsb_pipe_req_t,
                       queue);

    if (!e->sent) {
        /* the send timeout covers it */
        if (c->read->timer_set) {
            ngx_del_timer(c->read);
        }
        return;
    }

    t = (ngx_msec_int_t) (e->deadline - ngx_current_msec) > 0
        ? e->deadline - ngx_current_msec : 1;

    ngx_add_timer(c->read, t);
}


static void
ngx_http_vsb_pipe_read_handler(ngx_event_t *rev)
{
    ssize_t               n;
    ngx_connection_t     *c;
    ngx_http_vsb_pipe_t  *p;

    c = rev->data;
    p = c->data;

    if (rev->timedout) {
        if (ngx_queue_empty(&p->waiting)) {
            ngx_http_vsb_pipe_close(p);     /* idle */
            return;
        }

        ngx_log_error(NGX_LOG_ERR, rev->log, NGX_ETIMEDOUT,
                      "veto_sandbox: helper %V did not answer in time",
                      p->name);
        ngx_http_vsb_pipe_fail(p, NGX_HTTP_GATEWAY_TIME_OUT,
                               "the sandbox helper did not answer in time");
        return;
    }

    if (c->close && ngx_queue_empty(&p->waiting)) {
        ngx_http_vsb_pipe_close(p);         /* the worker shuts down */
        return;
    }

    while (rev->ready && p->c == c) {
        n = c->recv(c, p->rbuf, NGX_HTTP_VSB_PIPE_RBUF);

        if (n == NGX_AGAIN) {
            break;
        }

        if (n == NGX_ERROR || n == 0) {
            if (ngx_queue_empty(&p->waiting) && p->head_got == 0) {
                /* the helper closed an idle pipe (it stopped): fine */
                ngx_http_vsb_pipe_close(p);
                return;
            }

            ngx_log_error(NGX_LOG_ERR, rev->log, 0,
                          "veto_sandbox: helper %V closed the connection "
                          "before a complete reply", p->name);
            ngx_http_vsb_pipe_fail(p, NGX_HTTP_SERVICE_UNAVAILABLE,
                                   "the sandbox helper closed the "
                                   "connection before it answered");
            return;
        }

        if (ngx_http_vsb_pipe_feed(p, p->rbuf, n) != NGX_OK) {
            return;             /* failed: p was reset */
        }
    }

    if (p->c != c) {
        return;                 /* closed (or another connection now) */
    }

    if (ngx_handle_read_event(p->c->read, 0) != NGX_OK) {
        ngx_http_vsb_pipe_fail(p, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the sandbox helper connection failed");
    }
}


/* The bytes of replies, in order.  NGX_ERROR: the pipe failed. */
static ngx_int_t
ngx_http_vsb_pipe_feed(ngx_http_vsb_pipe_t *p, u_char *buf, size_t len)
{
    size_t                    k;
    uint32_t                  jlen, plen;
    ngx_http_vsb_pipe_req_t  *e;

    while (len > 0) {

        if (p->head_got < VSB_FRAME_HEADER_LEN) {
            k = ngx_min(len, VSB_FRAME_HEADER_LEN - p->head_got);
            ngx_memcpy(p->head + p->head_got, buf, k);
            p->head_got += k;
            buf += k;
            len -= k;

            if (p->head_got < VSB_FRAME_HEADER_LEN) {
                return NGX_OK;
            }

            jlen = vsb_frame_get_u32(p->head + 4);
            plen = vsb_frame_get_u32(p->head + 8);

            if (ngx_queue_empty(&p->waiting)) {
                ngx_log_error(NGX_LOG_ERR, p->c->log, 0,
                              "veto_sandbox: helper %V sent a frame nobody "
                              "asked for", p->name);
                ngx_http_vsb_pipe_close(p);
                return NGX_ERROR;
            }

            if (ngx_memcmp(p->head, VSB_FRAME_MAGIC, VSB_FRAME_MAGIC_LEN) != 0
                || jlen == 0 || jlen > VSB_MAX_JSON
                || plen > VSB_MAX_PAYLOAD)
            {
                ngx_log_error(NGX_LOG_ERR, p->c->log, 0,
                              "veto_sandbox: helper %V sent a bad frame "
                              "(json %uD, payload %uD)", p->name, jlen, plen);
                ngx_http_vsb_pipe_fail(p, NGX_HTTP_BAD_GATEWAY,
                                       "the sandbox helper sent a bad frame");
                return NGX_ERROR;
            }

            e = ngx_queue_data(ngx_queue_head(&p->waiting),
                               ngx_http_vsb_pipe_req_t, queue);

            p->in_size = (size_t) jlen + plen;
            p->in_got = 0;
            p->in = NULL;

            if (e->r) {
                p->in = ngx_pnalloc(e->r->pool, p->in_size);
                if (p->in == NULL) {
                    ngx_http_vsb_pipe_fail(p, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                           "out of memory");
                    return NGX_ERROR;
                }
            }
        }

        k = ngx_min(len, p->in_size - p->in_got);

        if (p->in) {
            ngx_memcpy(p->in + p->in_got, buf, k);
        }

        p->in_got += k;
        buf += k;
        len -= k;

        if (p->in_got < p->in_size) {
            return NGX_OK;
        }

        if (ngx_http_vsb_pipe_deliver(p) != NGX_OK) {
            return NGX_ERROR;
        }

        if (p->c == NULL) {
            return NGX_ERROR;   /* closed: nothing follows */
        }
    }

    return NGX_OK;
}


/* A whole reply: to the request at the head, if it is its own. */
static ngx_int_t
ngx_http_vsb_pipe_deliver(ngx_http_vsb_pipe_t *p)
{
    json_t                          *json, *v;
    uint32_t                         jlen;
    ngx_connection_t                *rc;
    ngx_pool_cleanup_t              *cln;
    ngx_http_request_t              *r;
    ngx_http_vsb_pipe_req_t         *e;
    ngx_http_veto_sandbox_ctx_t     *ctx;
    ngx_http_veto_sandbox_helper_t  *h;
    ngx_http_veto_sandbox_pipe_done_pt  done;

    e = ngx_queue_data(ngx_queue_head(&p->waiting), ngx_http_vsb_pipe_req_t,
                       queue);

    jlen = vsb_frame_get_u32(p->head + 4);
    p->head_got = 0;

    /* (a reply may come before its frame was all written: the helper
     * refuses some from their header, and then closes) */

    if (e->r == NULL) {
        /* its client went away: dropped; its request_id is not checked
         * (the reply was not kept), the next one's is */
        ngx_queue_remove(&e->queue);
        p->n--;
        ngx_http_vsb_pipe_free(e);
        p->kept = 1;
        p->retried = 0;
        ngx_http_vsb_pipe_arm(p);
        return NGX_OK;
    }

    r = e->r;
    ctx = e->ctx;
    done = e->done;
    h = &ctx->helper;

    json = json_loadb((char *) p->in, jlen, JSON_REJECT_DUPLICATES, NULL);

    v = json_object_get(json, "request_id");

    if (!json_is_object(json)
        || !json_is_boolean(json_object_get(json, "ok"))
        || !json_is_string(v)
        || json_string_length(v) != e->rid_len
        || ngx_memcmp(json_string_value(v), e->rid, e->rid_len) != 0)
    {
        json_decref(json);

        /* not a reply, or another request's: nothing on this pipe can
         * be trusted to be in step any more */
        ngx_log_error(NGX_LOG_ERR, p->c->log, 0,
                      "veto_sandbox: helper %V sent a reply that is not a "
                      "JSON object with \"ok\" and the request's "
                      "request_id", p->name);
        ngx_http_vsb_pipe_fail(p, NGX_HTTP_BAD_GATEWAY,
                               "the sandbox helper sent a bad reply");
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        json_decref(json);
        ngx_http_vsb_pipe_fail(p, NGX_HTTP_INTERNAL_SERVER_ERROR,
                               "out of memory");
        return NGX_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = json;

    ngx_queue_remove(&e->queue);
    p->n--;
    ngx_http_vsb_pipe_free(e);
    p->kept = 1;
    p->retried = 0;

    ngx_memcpy(h->head, p->head, VSB_FRAME_HEADER_LEN);
    h->in = p->in;
    h->in_size = p->in_size;
    h->in_got = p->in_size;
    h->json = json;
    h->payload = p->in + jlen;
    h->payload_len = p->in_size - jlen;
    h->pipe = NULL;
    p->in = NULL;

    /* the next deadline, before the handler may queue more */
    ngx_http_vsb_pipe_arm(p);

    rc = r->connection;
    ngx_http_set_log_request(rc->log, r);

    done(r, ctx, NGX_OK, NULL);

    ngx_http_run_posted_requests(rc);

    return NGX_OK;
}


/*
 * Every request on the pipe fails as it would have on a connection of
 * its own, and the pipe is closed (its requests are taken off it first:
 * the handlers may queue new ones, on a new connection).
 */
static void
ngx_http_vsb_pipe_fail(ngx_http_vsb_pipe_t *p, ngx_int_t status,
    const char *error)
{
    ngx_queue_t                   failed, *q;
    ngx_connection_t             *rc;
    ngx_http_request_t           *r;
    ngx_http_vsb_pipe_req_t      *e;
    ngx_http_veto_sandbox_ctx_t  *ctx;
    ngx_http_veto_sandbox_pipe_done_pt  done;

    ngx_queue_init(&failed);

    if (!ngx_queue_empty(&p->waiting)) {
        ngx_queue_add(&failed, &p->waiting);
        ngx_queue_init(&p->waiting);
    }

    p->n = 0;
    p->out_len = 0;
    p->queued = p->written;

    ngx_http_vsb_pipe_close(p);

    while (!ngx_queue_empty(&failed)) {
        q = ngx_queue_head(&failed);
        ngx_queue_remove(q);
        e = ngx_queue_data(q, ngx_http_vsb_pipe_req_t, queue);

        r = e->r;
        ctx = e->ctx;
        done = e->done;
        ngx_http_vsb_pipe_free(e);

        if (r == NULL) {
            continue;
        }

        ctx->helper.pipe = NULL;

        rc = r->connection;
        ngx_http_set_log_request(rc->log, r);

        done(r, ctx, status, error);

        ngx_http_run_posted_requests(rc);
    }
}


/* Closes the pipe's connection; its requests must be gone already (or it
 * is idle). */
static void
ngx_http_vsb_pipe_close(ngx_http_vsb_pipe_t *p)
{
    if (p->flush.posted) {
        ngx_delete_posted_event(&p->flush);
    }

    if (p->c) {
        ngx_close_connection(p->c);
        p->c = NULL;
    }

    p->head_got = 0;
    p->in = NULL;
    p->in_size = 0;
    p->in_got = 0;

    /* requests queued on it and not sent (the idle close cannot have
     * any): none */
}


static void
ngx_http_vsb_pipe_free(ngx_http_vsb_pipe_req_t *e)
{
    ngx_free(e);
}
