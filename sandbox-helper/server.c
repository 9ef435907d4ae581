/*
 * Listener and connections.  Only peers on the allowlist are served; a
 * request is read completely before it is handled (or, for an op that
 * streams its payload, handed over as it arrives), and every wait on the
 * client has a deadline.  Requests on a connection are handled one at a
 * time, in order: a client may pipeline them (write several frames
 * before it reads a reply).  Each frame already in the socket whose op
 * answers at once is read, handled and answered in the same wake-up, and
 * the replies of that wake-up go out in one writev() (conn_out.c); the
 * next frame is read only once an op that answers later has replied.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "vsb_log.h"
#include "vsb_server_int.h"
#include "vsb_unixsock.h"

#define VSB_READ_CHUNK      65536
#define VSB_READS_PER_EVENT 16        /* fairness: 1 MiB, then yield */
/* pipelined requests answered in one wake-up: at most this many frames,
 * and no more once this many reply bytes wait to be written (then they
 * are written, and the rest of the socket waits for the next turn) */
#define VSB_PIPELINE_FRAMES 8
#define VSB_PIPELINE_BYTES  (256 * 1024)

static vsb_event_t     vsb_listen_ev = { .fd = -1 };
static vsb_timer_t     vsb_accept_timer;
static char            vsb_socket_path[108];
static vsb_conn_t     *vsb_conns;
static unsigned        vsb_nconns;
static unsigned long   vsb_conn_seq;
static size_t          vsb_buffered;       /* held_in + held_out, all */
static size_t          vsb_buffered_max;
static size_t          vsb_max_buffered_payload;   /* max_file_bytes */
vsb_server_hooks_t  vsb_server_hooks;

static int vsb_conn_read(vsb_conn_t *c);


int
vsb_server_can_buffer(size_t n)
{
    /* exec replies are counted without asking: we may be over */
    return vsb_buffered <= vsb_buffered_max
           && n <= vsb_buffered_max - vsb_buffered;
}


void
vsb_server_buffer(size_t n)
{
    vsb_buffered += n;
}


void
vsb_server_unbuffer(size_t n)
{
    vsb_buffered -= n;
}


static void
vsb_conn_release_in(vsb_conn_t *c)
{
    vsb_buffered -= c->held_in;
    c->held_in = 0;
}


void
vsb_conn_close(vsb_conn_t *c)
{
    void       *op;
    vsb_out_t  *o;

    (void) vsb_loop_del(&c->ev);
    vsb_timer_del(&c->timer);

    if (close(c->ev.fd) == -1) {
        vsb_log_errno(VSB_LOG_WARN, "close(connection %lu)", c->n);
    }

    op = c->op;
    c->op = NULL;
    if (op != NULL) {
        vsb_server_hooks.detach(op);
    }

    vsb_frame_reset(&c->in);
    while (c->out != NULL) {
        o = c->out;
        c->out = o->next;
        free(o->head);
        free(o->payload);
        free(o);
    }
    vsb_conn_release_in(c);
    vsb_conn_release_out(c);

    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        vsb_conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    vsb_nconns--;

    vsb_log(VSB_LOG_DEBUG, "connection %lu closed", c->n);
    free(c);
}


static void
vsb_conn_timeout(vsb_timer_t *t)
{
    vsb_conn_t  *c = t->data;

    if (c->close_after && c->out == NULL) {
        vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): closed: nothing "
                "could be sent", c->n, (unsigned) c->uid);
    } else {
        vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): timed out %s", c->n,
                (unsigned) c->uid,
                c->out != NULL ? "writing a reply"
                : c->state == VSB_CONN_STREAMING ? "reading a payload"
                : "reading a request");
    }
    vsb_conn_close(c);
}


/* The next request: 60 s to send all of its frame.  The parser may hold
 * the first bytes of it already (a pipelined frame read in the wake-up
 * that answered the last one): they are kept. */
int
vsb_conn_start_reading(vsb_conn_t *c)
{
    c->state = VSB_CONN_READING;
    c->replied = 0;
    c->in_paused = 0;
    c->in_left = 0;
    vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);

    if (vsb_loop_mod(&c->ev, EPOLLIN) != 0) {
        vsb_conn_close(c);
        return -1;
    }

    return 0;
}


static void
vsb_conn_frame_error(vsb_conn_t *c)
{
    vsb_error_t  e;

    memset(&e, 0, sizeof(e));
    vsb_error_set(&e, c->in.error, NULL, "%s", c->in.detail);
    vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): %s: %s", c->n,
            (unsigned) c->uid, c->in.error, c->in.detail);

    /* Framing is lost: answer, then close. */
    c->close_after = 1;
    vsb_conn_reply_error(c, NULL, &e);
}


/*
 * Counts n more bytes of the frame being read against the global budget
 * before they are read: first its JSON (once the prefix is in), then its
 * payload (once the JSON says the op buffers it).  Over budget the peer
 * gets "busy" and, since we will not read the rest, the connection is
 * closed after the reply.
 */
static int
vsb_conn_hold_in(vsb_conn_t *c, size_t n)
{
    vsb_error_t  e;

    if (vsb_server_can_buffer(n)) {
        c->held_in += n;
        vsb_buffered += n;
        return 0;
    }

    vsb_log(VSB_LOG_WARN, "connection %lu (uid %u): refusing a frame of %zu "
            "bytes: %zu of %zu bytes already buffered for all connections",
            c->n, (unsigned) c->uid,
            (size_t) c->in.json_len + 1 + c->in.payload_len, vsb_buffered,
            vsb_buffered_max);

    memset(&e, 0, sizeof(e));
    vsb_error_set(&e, VSB_E_BUSY, NULL, "the helper is buffering %zu bytes "
                  "for other requests; retry later", vsb_buffered);
    c->close_after = 1;
    vsb_conn_reply_error(c, NULL, &e);
    return -1;
}


/* The JSON of a frame with a payload is in: buffer the payload (feed on),
 * or hand it to the op as it arrives.  -1: answered, stop reading. */
static int
vsb_conn_json_done(vsb_conn_t *c)
{
    vsb_error_t  e;

    if (vsb_server_hooks.streams(vsb_frame_json(&c->in), c->in.json_len)) {
        c->state = VSB_CONN_STREAMING;
        c->in_left = c->in.payload_len;
        c->in_paused = 0;
        vsb_timer_del(&c->timer);       /* per stall from now on */

        vsb_server_hooks.dispatch(c, vsb_frame_json(&c->in), c->in.json_len, NULL,
                           c->in.payload_len);

        vsb_frame_reset(&c->in);
        vsb_conn_release_in(c);
        vsb_conn_update(c);
        return -1;
    }

    if (c->in.payload_len > vsb_max_buffered_payload) {
        memset(&e, 0, sizeof(e));
        vsb_error_set(&e, VSB_E_FRAME_TOO_LARGE, NULL,
                      "payload of %u bytes exceeds max_file_bytes %zu",
                      c->in.payload_len, vsb_max_buffered_payload);
        vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): %s", c->n,
                (unsigned) c->uid, e.detail);
        c->close_after = 1;
        vsb_conn_reply_error(c, NULL, &e);
        return -1;
    }

    return vsb_conn_hold_in(c, c->in.payload_len);
}


/* A streamed payload's bytes, to the op (or nowhere once it replied). */
static int
vsb_conn_read_stream(vsb_conn_t *c)
{
    unsigned char   buf[VSB_READ_CHUNK];
    size_t          want, room;
    ssize_t         n;
    int             i;

    for (i = 0; i < VSB_READS_PER_EVENT && c->in_left > 0; i++) {
        want = c->in_left < sizeof(buf) ? (size_t) c->in_left : sizeof(buf);

        if (c->op != NULL) {
            room = vsb_server_hooks.room(c->op);
            if (room == 0) {
                c->in_paused = 1;
                vsb_conn_update(c);
                return 0;
            }
            if (want > room) {
                want = room;
            }
        }

        n = read(c->ev.fd, buf, want);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            vsb_log_errno(VSB_LOG_INFO, "connection %lu: read()", c->n);
            vsb_conn_close(c);
            return -1;
        }

        if (n == 0) {
            vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): closed with %llu "
                    "payload bytes unsent", c->n, (unsigned) c->uid,
                    (unsigned long long) c->in_left);
            vsb_conn_close(c);
            return -1;
        }

        c->in_left -= (uint64_t) n;
        vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);

        if (c->op != NULL) {
            vsb_server_hooks.input(c->op, buf, (size_t) n, c->in_left == 0);
        }
    }

    if (c->in_left > 0) {
        return 0;
    }

    /* all in: the op works on, or its reply is queued or written */
    if (c->close_after && c->out == NULL) {
        vsb_conn_close(c);
        return -1;
    }

    if (!c->replied) {
        c->state = VSB_CONN_BUSY;
        vsb_conn_update(c);
        return 0;
    }

    if (c->out == NULL) {
        return vsb_conn_start_reading(c);
    }

    c->state = VSB_CONN_WRITING;
    vsb_conn_update(c);
    return 0;
}


/*
 * The replies of one wake-up's pipelined requests, queued while reading
 * on: written now, in one writev() as far as the socket takes them.
 * What it does not take is written on EPOLLOUT, and nothing more is read
 * until it is (the client must read its replies to be heard again).
 * -1 if c was closed.
 */
static int
vsb_conn_flush(vsb_conn_t *c)
{
    if (c->out == NULL || c->state != VSB_CONN_READING) {
        return 0;
    }

    if (vsb_conn_write(c) != 0) {
        return -1;
    }

    if (c->out != NULL) {
        c->state = VSB_CONN_WRITING;
        c->replied = 1;         /* the last one: its write ends the wait */
        vsb_conn_update(c);
    }

    return 0;
}


/* -1 if c was closed. */
static int
vsb_conn_read(vsb_conn_t *c)
{
    unsigned char   buf[VSB_READ_CHUNK];
    size_t          want, used, got = 0;
    ssize_t         n;
    int             i, frames = 0;
    vsb_frame_rc_t  rc;

    if (c->state == VSB_CONN_STREAMING) {
        return vsb_conn_read_stream(c);
    }

    for (i = 0; i < VSB_READS_PER_EVENT + 2 * VSB_PIPELINE_FRAMES; i++) {
        want = vsb_frame_need(&c->in);
        if (want > sizeof(buf)) {
            want = sizeof(buf);
        }

        if (got >= VSB_READ_CHUNK * VSB_READS_PER_EVENT) {
            break;              /* fairness: 1 MiB, then yield */
        }

        n = read(c->ev.fd, buf, want);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                break;
            }
            vsb_log_errno(VSB_LOG_INFO, "connection %lu: read()", c->n);
            vsb_conn_close(c);
            return -1;
        }

        if (n == 0) {
            if (c->in.head_len > 0) {
                vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): closed in "
                        "the middle of a frame", c->n, (unsigned) c->uid);
            }

            if (c->out != NULL) {
                /* the client wrote its last request and shut its side:
                 * the replies owed are still written, then c is closed */
                c->close_after = 1;
                (void) vsb_loop_mod(&c->ev, 0);
                if (vsb_conn_flush(c) != 0) {
                    return -1;
                }
                return 0;
            }

            vsb_conn_close(c);
            return -1;
        }

        got += (size_t) n;

        rc = vsb_frame_feed(&c->in, buf, (size_t) n, &used);

        if (rc == VSB_FRAME_ERROR) {
            /* after the replies to the frames before it */
            vsb_conn_frame_error(c);
            return 0;
        }

        if (c->held_in == 0 && c->in.head_len == VSB_FRAME_HEADER_LEN
            && vsb_conn_hold_in(c, (size_t) c->in.json_len + 1) != 0)
        {
            return 0;
        }

        if (rc == VSB_FRAME_JSON) {
            if (vsb_conn_json_done(c) != 0) {
                return 0;
            }
            continue;
        }

        if (rc == VSB_FRAME_DONE) {
            c->state = VSB_CONN_BUSY;
            vsb_timer_del(&c->timer);
            frames++;

            /* What c waits for is set once dispatch returns: most ops
             * reply at once, and then neither the "hangups only" mask
             * nor EPOLLOUT and a loop turn to write are needed. */
            c->dispatching = 1;
            vsb_server_hooks.dispatch(c, vsb_frame_json(&c->in), c->in.json_len,
                               vsb_frame_payload(&c->in), c->in.payload_len);
            c->dispatching = 0;

            /* The request's bytes are no longer needed (dispatch replies
             * only through the loop: c is still ours here). */
            vsb_frame_reset(&c->in);
            vsb_conn_release_in(c);

            if (c->replied && c->op == NULL && !c->close_after
                && frames < VSB_PIPELINE_FRAMES
                && c->out_queued < VSB_PIPELINE_BYTES)
            {
                /* answered at once: the next frame, if the client
                 * pipelined one, in this same wake-up; the replies are
                 * written together once the socket is empty */
                c->state = VSB_CONN_READING;
                c->replied = 0;
                vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);
                continue;
            }

            /* answered: written from c's own handler, as EPOLLOUT would
             * (a full socket leaves the rest to EPOLLOUT) */
            if (c->replied && c->out != NULL) {
                if (vsb_conn_write(c) != 0) {
                    return -1;
                }
                if (c->out == NULL) {
                    return 0;   /* reading the next request */
                }
            }

            /* Still running (the replies before it go out meanwhile), or
             * a reply not all written: only hangups and, with a reply
             * queued, EPOLLOUT matter now. */
            if (!c->replied && c->out != NULL) {
                if (vsb_conn_write(c) != 0) {
                    return -1;
                }
            }
            vsb_conn_update(c);
            return 0;
        }
    }

    return vsb_conn_flush(c);
}


static void
vsb_conn_handler(vsb_event_t *ev, uint32_t revents)
{
    vsb_conn_t  *c = ev->data;

    if ((revents & EPOLLOUT) && c->out != NULL) {
        if (vsb_conn_write(c) != 0) {
            return;
        }
    }

    if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
        && (c->state == VSB_CONN_READING
            || (c->state == VSB_CONN_STREAMING && !c->in_paused)))
    {
        (void) vsb_conn_read(c);
        return;
    }

    /* both directions down: nobody will read a reply */
    if (revents & (EPOLLHUP | EPOLLERR)) {
        vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): client went away "
                "during its request", c->n, (unsigned) c->uid);
        vsb_conn_close(c);
    }
}


static int
vsb_uid_allowed(uid_t uid)
{
    size_t  i;

    for (i = 0; i < vsb_cf.n_allowed_uids; i++) {
        if (vsb_cf.allowed_uids[i] == uid) {
            return 1;
        }
    }

    return 0;
}


static void
vsb_accept_resume(vsb_timer_t *t)
{
    if (vsb_listen_ev.fd != -1) {
        (void) vsb_loop_mod(&vsb_listen_ev, EPOLLIN);
    }
}


static void
vsb_accept_one(int fd)
{
    struct ucred  cr;
    socklen_t     crlen = sizeof(cr);
    vsb_conn_t   *c;
    vsb_error_t   e;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == -1) {
        vsb_log_errno(VSB_LOG_WARN, "getsockopt(SO_PEERCRED)");
        close(fd);
        return;
    }

    if (vsb_nconns >= VSB_MAX_CONNS) {
        vsb_log(VSB_LOG_WARN, "refusing connection from uid %u pid %d: "
                "%d connections open", (unsigned) cr.uid, (int) cr.pid,
                VSB_MAX_CONNS);
        close(fd);
        return;
    }

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        vsb_log(VSB_LOG_ERR, "out of memory for a connection");
        close(fd);
        return;
    }

    c->n = ++vsb_conn_seq;
    c->uid = cr.uid;
    c->pid = cr.pid;
    c->ev.fd = fd;
    c->ev.handler = vsb_conn_handler;
    c->ev.data = c;
    c->timer.handler = vsb_conn_timeout;
    c->timer.data = c;

    /* any length here: the op's bound applies once its JSON is in */
    vsb_frame_init(&c->in, VSB_MAX_JSON, VSB_MAX_STREAM_PAYLOAD);
    c->in.split = 1;

    c->next = vsb_conns;
    if (vsb_conns != NULL) {
        vsb_conns->prev = c;
    }
    vsb_conns = c;
    vsb_nconns++;

    if (vsb_loop_add(&c->ev, 0) != 0) {
        vsb_conn_close(c);
        return;
    }

    if (!vsb_uid_allowed(cr.uid)) {
        vsb_log(VSB_LOG_WARN, "connection %lu: refused uid %u (pid %d): "
                "not in allowed_uids", c->n, (unsigned) cr.uid, (int) cr.pid);
        memset(&e, 0, sizeof(e));
        vsb_error_set(&e, VSB_E_NOT_PERMITTED, NULL,
                      "uid %u may not use this helper", (unsigned) cr.uid);
        c->close_after = 1;
        vsb_conn_reply_error(c, NULL, &e);
        return;
    }

    vsb_log(VSB_LOG_DEBUG, "connection %lu from uid %u pid %d", c->n,
            (unsigned) cr.uid, (int) cr.pid);
    vsb_conn_start_reading(c);
}


static void
vsb_listen_handler(vsb_event_t *ev, uint32_t revents)
{
    int  fd, i;

    for (i = 0; i < 64; i++) {
        fd = accept4(ev->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd == -1) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return;
            }
            vsb_log_errno(VSB_LOG_ERR, "accept4()");
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM
                || errno == ENOBUFS)
            {
                /* Back off instead of spinning on a readable listener. */
                (void) vsb_loop_mod(ev, 0);
                vsb_timer_add(&vsb_accept_timer, 100);
            }
            return;
        }

        vsb_accept_one(fd);
    }
}


int
vsb_server_init(const vsb_config_t *cf, const vsb_server_hooks_t *hooks,
    char *err, size_t errlen)
{
    char  dir[sizeof(cf->socket_path)], *slash;
    int   fd;

    snprintf(dir, sizeof(dir), "%s", cf->socket_path);
    slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir) {
        snprintf(dir, sizeof(dir), "/");
    } else {
        *slash = '\0';
    }

    if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
        snprintf(err, errlen, "mkdir(\"%s\"): %s", dir, strerror(errno));
        return -1;
    }

    /* umask 077 makes it 0600 until the chown/chmod below. */
    fd = vsb_unix_bind(cf->socket_path, err, errlen);
    if (fd == -1) {
        return -1;
    }

    if (cf->socket_gid != (gid_t) -1
        && chown(cf->socket_path, 0, cf->socket_gid) == -1)
    {
        snprintf(err, errlen, "chown(\"%s\", 0, %u): %s", cf->socket_path,
                 (unsigned) cf->socket_gid, strerror(errno));
        goto failed;
    }

    if (chmod(cf->socket_path, cf->socket_mode) == -1) {
        snprintf(err, errlen, "chmod(\"%s\", %o): %s", cf->socket_path,
                 (unsigned) cf->socket_mode, strerror(errno));
        goto failed;
    }

    /* as many waiting as may be open: a burst of clients (one connection
     * per request in flight from each nginx worker) waits, not EAGAIN */
    if (listen(fd, VSB_MAX_CONNS) == -1) {
        snprintf(err, errlen, "listen(\"%s\"): %s", cf->socket_path,
                 strerror(errno));
        goto failed;
    }

    vsb_max_buffered_payload = cf->max_file_bytes < VSB_MAX_PAYLOAD
                               ? (size_t) cf->max_file_bytes
                               : (size_t) VSB_MAX_PAYLOAD;
    vsb_buffered_max = VSB_BUFFERED_FRAMES
        * (vsb_max_buffered_payload + VSB_MAX_JSON + 1
           + VSB_FRAME_HEADER_LEN);

    vsb_server_hooks = *hooks;
    vsb_listen_ev.fd = fd;
    vsb_listen_ev.handler = vsb_listen_handler;
    vsb_listen_ev.data = NULL;
    vsb_accept_timer.handler = vsb_accept_resume;
    snprintf(vsb_socket_path, sizeof(vsb_socket_path), "%s",
             cf->socket_path);

    if (vsb_loop_add(&vsb_listen_ev, EPOLLIN) != 0) {
        snprintf(err, errlen, "epoll_ctl(listener): %s", strerror(errno));
        vsb_listen_ev.fd = -1;
        goto failed;
    }

    vsb_log(VSB_LOG_INFO, "listening on %s (mode %o)", cf->socket_path,
            (unsigned) cf->socket_mode);
    return 0;

failed:
    close(fd);
    (void) unlink(cf->socket_path);
    return -1;
}


void
vsb_server_stop_listening(void)
{
    if (vsb_listen_ev.fd == -1) {
        return;
    }

    (void) vsb_loop_del(&vsb_listen_ev);
    vsb_timer_del(&vsb_accept_timer);

    if (close(vsb_listen_ev.fd) == -1) {
        vsb_log_errno(VSB_LOG_WARN, "close(listener)");
    }
    vsb_listen_ev.fd = -1;

    if (unlink(vsb_socket_path) == -1 && errno != ENOENT) {
        vsb_log_errno(VSB_LOG_WARN, "unlink(\"%s\")", vsb_socket_path);
    }
}


void
vsb_server_close_all(void)
{
    while (vsb_conns != NULL) {
        vsb_conn_close(vsb_conns);
    }
}


void
vsb_server_usage(vsb_server_usage_t *u)
{
    u->connections = vsb_nconns;
    u->buffered = vsb_buffered;
    u->buffered_max = vsb_buffered_max;
}
