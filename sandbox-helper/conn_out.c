/*
 * Writing to a client: the reply, and the event frames a streaming op
 * sends before it, queued in order and written from the loop (never from
 * inside a handler's call chain), each byte counted in the global budget
 * until it is sent.  After the reply the connection reads the next
 * request (or closes: close_after).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "vsb_log.h"
#include "vsb_server_int.h"

/* frames per writev(): two iovecs each (prefix and JSON, payload) */
#define VSB_WRITE_IOV  64


void
vsb_conn_release_out(vsb_conn_t *c)
{
    vsb_server_unbuffer(c->held_out);
    c->held_out = 0;
}


json_t *
vsb_error_json(const char *request_id, const vsb_error_t *e)
{
    json_t  *r;

    r = json_pack("{s:b, s:s, s:s}", "ok", 0,
                  "error", e->error ? e->error : VSB_E_INTERNAL,
                  "detail", e->detail);
    if (r == NULL) {
        return NULL;
    }

    if (e->field != NULL) {
        json_object_set_new(r, "field", json_string(e->field));
    }
    if (e->limit != NULL) {
        json_object_set_new(r, "limit", json_string(e->limit));
    }
    if (e->step != NULL) {
        json_object_set_new(r, "step", json_string(e->step));
    }
    if (e->end_reason != NULL) {
        json_object_set_new(r, "end_reason", json_string(e->end_reason));
    }
    if (e->epoch != NULL) {
        json_object_set_new(r, "epoch", json_string(e->epoch));
    }
    if (request_id != NULL) {
        json_object_set_new(r, "request_id", json_string(request_id));
    }

    return r;
}


/*
 * Which events to wait for, and whether we wait on the client (then a
 * stall of VSB_CONN_TIMEOUT_MS ends the connection): reading a streamed
 * payload, or writing what is queued.  An op that has the client wait
 * (an exec running) has no deadline here.
 */
void
vsb_conn_update(vsb_conn_t *c)
{
    uint32_t  events = 0;
    int       waiting = 0;

    if (c->state == VSB_CONN_READING) {
        return;                 /* its own deadline, set once */
    }

    if (c->dispatching) {
        return;                 /* vsb_conn_read() updates after dispatch */
    }

    if (c->close_after && c->out == NULL) {
        return;                 /* aborted: closed by its timer */
    }

    if (c->state == VSB_CONN_STREAMING && !c->in_paused) {
        events |= EPOLLIN;
        waiting = 1;
    }

    if (c->out != NULL) {
        events |= EPOLLOUT;
        waiting = 1;
    }

    if (!waiting) {
        vsb_timer_del(&c->timer);
    } else if (!c->timer.armed) {
        vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);
    }

    /* only hangups matter otherwise (reported whatever the mask) */
    if (vsb_loop_mod(&c->ev, events) != 0) {
        c->close_after = 1;
    }
}


/* Nothing sensible can be sent (out of memory): close from the loop, never
 * from inside a handler's call chain. */
static void
vsb_conn_abort(vsb_conn_t *c)
{
    c->close_after = 1;
    vsb_timer_add(&c->timer, 0);
}


/* Builds a frame and appends it to c's queue; counted in the budget. */
static int
vsb_conn_queue(vsb_conn_t *c, const char *json, size_t len,
    unsigned char *payload, size_t payload_len, int reply)
{
    vsb_out_t  *o;

    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        return -1;
    }

    o->head = vsb_frame_encode_head(json, len, payload_len, &o->head_len);
    if (o->head == NULL) {
        free(o);
        return -1;
    }

    o->payload = payload;
    o->payload_len = payload ? payload_len : 0;
    o->reply = reply;

    if (c->out_last != NULL) {
        c->out_last->next = o;
    } else {
        c->out = o;
    }
    c->out_last = o;

    /* counted, not refused: ops check vsb_server_can_buffer() first and
     * bound what they stream */
    c->out_queued += o->head_len + o->payload_len;
    c->held_out += o->head_len + o->payload_len;
    vsb_server_buffer(o->head_len + o->payload_len);
    return 0;
}


void
vsb_conn_reply(vsb_conn_t *c, json_t *reply, unsigned char *payload,
    size_t payload_len)
{
    vsb_error_t   e;
    char         *s = NULL;
    size_t        len = 0;

    if (reply != NULL) {
        s = json_dumps(reply, JSON_COMPACT);
        json_decref(reply);
    }

    if (s != NULL) {
        len = strlen(s);
        if (len > VSB_MAX_JSON) {
            free(s);
            s = NULL;
        }
    }

    if (s == NULL) {
        /* Out of memory or an oversize reply: say so, small. */
        free(payload);
        payload = NULL;
        payload_len = 0;
        memset(&e, 0, sizeof(e));
        vsb_error_set(&e, VSB_E_INTERNAL, NULL,
                      "reply could not be encoded or exceeds %d bytes",
                      VSB_MAX_JSON);
        reply = vsb_error_json(NULL, &e);
        s = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
        json_decref(reply);
        if (s == NULL) {
            c->close_after = 1;
            s = strdup("{\"ok\":false,\"error\":\"internal\","
                       "\"detail\":\"out of memory\"}");
        }
        len = s ? strlen(s) : 0;
    }

    c->replied = 1;

    if (s == NULL || vsb_conn_queue(c, s, len, payload, payload_len, 1) != 0)
    {
        vsb_log(VSB_LOG_ERR, "connection %lu: cannot queue a reply", c->n);
        free(payload);
        free(s);
        vsb_conn_abort(c);
        return;
    }

    free(s);

    if (c->state != VSB_CONN_STREAMING) {
        c->state = VSB_CONN_WRITING;
    }

    /* Written from the loop, never from inside a handler's call chain. */
    vsb_conn_update(c);
}


void
vsb_conn_event(vsb_conn_t *c, json_t *event, unsigned char *payload,
    size_t payload_len)
{
    char  *s;

    s = json_dumps(event, JSON_COMPACT);
    json_decref(event);

    if (c->replied || s == NULL || strlen(s) > VSB_MAX_JSON
        || vsb_conn_queue(c, s, strlen(s), payload, payload_len, 0) != 0)
    {
        /* a lost event would corrupt the stream: end the connection */
        vsb_log(VSB_LOG_ERR, "connection %lu: cannot queue an event frame",
                c->n);
        free(payload);
        free(s);
        vsb_conn_abort(c);
        return;
    }

    free(s);
    vsb_conn_update(c);
}


size_t
vsb_conn_queued(const vsb_conn_t *c)
{
    return c->out_queued;
}


void
vsb_conn_resume_input(vsb_conn_t *c)
{
    if (c->state == VSB_CONN_STREAMING && c->in_paused) {
        c->in_paused = 0;
        vsb_conn_update(c);
    }
}


void
vsb_conn_reply_error(vsb_conn_t *c, const char *request_id,
    const vsb_error_t *e)
{
    vsb_conn_reply(c, vsb_error_json(request_id, e), NULL, 0);
}


/* The reply and everything before it is written: the request is over. */
static int
vsb_conn_request_done(vsb_conn_t *c)
{
    if (c->close_after) {
        vsb_conn_close(c);
        return -1;
    }

    if (c->state == VSB_CONN_STREAMING) {
        vsb_conn_update(c);     /* the rest of its payload is discarded */
        return 0;
    }

    return vsb_conn_start_reading(c);
}


/*
 * Writes what is queued, as many frames per writev() as fit VSB_WRITE_IOV
 * (the replies of pipelined requests go out together).  Once the reply
 * of the request being handled is written, and everything queued before
 * it, the request is over.  -1 if c was closed.
 */
int
vsb_conn_write(vsb_conn_t *c)
{
    struct iovec  iov[VSB_WRITE_IOV];
    size_t        total, off, left, done;
    ssize_t       n;
    int           cnt, replies = 0, events = 0;
    vsb_out_t    *o;

    while (c->out != NULL) {
        cnt = 0;
        off = c->out_sent;

        for (o = c->out; o != NULL && cnt + 2 <= VSB_WRITE_IOV; o = o->next) {
            if (off < o->head_len) {
                iov[cnt].iov_base = o->head + off;
                iov[cnt].iov_len = o->head_len - off;
                cnt++;
                if (o->payload_len > 0) {
                    iov[cnt].iov_base = o->payload;
                    iov[cnt].iov_len = o->payload_len;
                    cnt++;
                }
            } else {
                iov[cnt].iov_base = o->payload + (off - o->head_len);
                iov[cnt].iov_len = o->head_len + o->payload_len - off;
                cnt++;
            }
            off = 0;
        }

        n = writev(c->ev.fd, iov, cnt);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* Progress was made or not: the deadline is per stall. */
                return 0;
            }
            vsb_log_errno(VSB_LOG_INFO, "connection %lu: writev()", c->n);
            vsb_conn_close(c);
            return -1;
        }

        vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);

        /* the frames written whole leave the queue */
        done = (size_t) n;
        while ((o = c->out) != NULL) {
            total = o->head_len + o->payload_len;
            left = total - c->out_sent;

            if (done < left) {
                c->out_sent += done;
                break;
            }

            done -= left;
            c->out = o->next;
            if (c->out == NULL) {
                c->out_last = NULL;
            }
            c->out_sent = 0;
            c->out_queued -= total;
            c->held_out -= total;
            vsb_server_unbuffer(total);
            if (o->reply) {
                replies++;
            } else {
                events++;
            }
            free(o->head);
            free(o->payload);
            free(o);
        }

        /* the reply of the request being handled (the last frame queued
         * when it is: replies of pipelined requests come before it) */
        if (replies > 0 && c->out == NULL && (c->replied || c->close_after))
        {
            return vsb_conn_request_done(c);
        }
    }

    if (c->close_after) {
        vsb_conn_close(c);
        return -1;
    }

    /* events written, the request goes on (or pipelined replies written
     * while the next request is read or runs) */
    vsb_conn_update(c);

    if (events > 0 && c->op != NULL) {
        vsb_server_hooks.drained(c->op);
    }

    return 0;
}
