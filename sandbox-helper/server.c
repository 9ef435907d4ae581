/*
 * Listener and connections.  Only peers on the allowlist are served; a
 * request is read completely before it is handled, the next one only after
 * the reply is written, and every wait on the client has a deadline.
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
#include "vsb_server.h"

#define VSB_READ_CHUNK      65536
#define VSB_READS_PER_EVENT 16        /* fairness: 1 MiB, then yield */

static vsb_event_t     vsb_listen_ev = { .fd = -1 };
static vsb_timer_t     vsb_accept_timer;
static char            vsb_socket_path[108];
static vsb_conn_t     *vsb_conns;
static unsigned        vsb_nconns;
static unsigned long   vsb_conn_seq;
static size_t          vsb_buffered;       /* held_in + held_out, all */
static size_t          vsb_buffered_max;
static vsb_server_dispatch_pt  vsb_dispatch;
static vsb_server_detach_pt    vsb_detach;

static void vsb_conn_read(vsb_conn_t *c);
static void vsb_conn_write(vsb_conn_t *c);


int
vsb_server_can_buffer(size_t n)
{
    /* exec replies are counted without asking: we may be over */
    return vsb_buffered <= vsb_buffered_max
           && n <= vsb_buffered_max - vsb_buffered;
}


static void
vsb_conn_release_in(vsb_conn_t *c)
{
    vsb_buffered -= c->held_in;
    c->held_in = 0;
}


static void
vsb_conn_release_out(vsb_conn_t *c)
{
    vsb_buffered -= c->held_out;
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
    if (request_id != NULL) {
        json_object_set_new(r, "request_id", json_string(request_id));
    }

    return r;
}


static void
vsb_conn_close(vsb_conn_t *c)
{
    void  *op;

    (void) vsb_loop_del(&c->ev);
    vsb_timer_del(&c->timer);

    if (close(c->ev.fd) == -1) {
        vsb_log_errno(VSB_LOG_WARN, "close(connection %lu)", c->n);
    }

    op = c->op;
    c->op = NULL;
    if (op != NULL) {
        vsb_detach(op);
    }

    vsb_frame_reset(&c->in);
    free(c->out_head);
    free(c->out_payload);
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

    vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): timed out %s", c->n,
            (unsigned) c->uid,
            c->state == VSB_CONN_WRITING ? "writing a reply"
                                         : "reading a request");
    vsb_conn_close(c);
}


static void
vsb_conn_start_reading(vsb_conn_t *c)
{
    c->state = VSB_CONN_READING;
    vsb_frame_reset(&c->in);
    vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);

    if (vsb_loop_mod(&c->ev, EPOLLIN) != 0) {
        vsb_conn_close(c);
    }
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
            if (s == NULL) {
                vsb_log(VSB_LOG_ERR, "connection %lu: out of memory", c->n);
                (void) vsb_loop_mod(&c->ev, EPOLLOUT);
                c->state = VSB_CONN_WRITING;
                return;
            }
        }
        len = strlen(s);
    }

    free(c->out_head);
    c->out_head = vsb_frame_encode_head(s, len, payload_len,
                                        &c->out_head_len);
    free(s);
    c->out_payload = payload;
    c->out_payload_len = payload ? payload_len : 0;
    c->out_sent = 0;
    c->state = VSB_CONN_WRITING;

    /* counted, not refused: ops check vsb_server_can_buffer() first */
    vsb_conn_release_out(c);
    c->held_out = c->out_head_len + c->out_payload_len;
    vsb_buffered += c->held_out;

    if (c->out_head == NULL) {
        vsb_log(VSB_LOG_ERR, "connection %lu: cannot encode reply", c->n);
        c->close_after = 1;
    }

    vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);

    /* Written from the loop, never from inside a handler's call chain. */
    if (vsb_loop_mod(&c->ev, EPOLLOUT) != 0) {
        c->close_after = 1;
    }
}


void
vsb_conn_reply_error(vsb_conn_t *c, const char *request_id,
    const vsb_error_t *e)
{
    vsb_conn_reply(c, vsb_error_json(request_id, e), NULL, 0);
}


static void
vsb_conn_write(vsb_conn_t *c)
{
    struct iovec  iov[2];
    size_t        total;
    ssize_t       n;
    int           cnt;

    if (c->out_head == NULL) {
        vsb_conn_close(c);
        return;
    }

    total = c->out_head_len + c->out_payload_len;

    while (c->out_sent < total) {
        cnt = 0;
        if (c->out_sent < c->out_head_len) {
            iov[cnt].iov_base = c->out_head + c->out_sent;
            iov[cnt].iov_len = c->out_head_len - c->out_sent;
            cnt++;
            if (c->out_payload_len > 0) {
                iov[cnt].iov_base = c->out_payload;
                iov[cnt].iov_len = c->out_payload_len;
                cnt++;
            }
        } else {
            iov[0].iov_base = c->out_payload + (c->out_sent
                                                - c->out_head_len);
            iov[0].iov_len = total - c->out_sent;
            cnt = 1;
        }

        n = writev(c->ev.fd, iov, cnt);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* Progress was made or not: the deadline is per stall. */
                return;
            }
            vsb_log_errno(VSB_LOG_INFO, "connection %lu: writev()", c->n);
            vsb_conn_close(c);
            return;
        }

        c->out_sent += (size_t) n;
        vsb_timer_add(&c->timer, VSB_CONN_TIMEOUT_MS);
    }

    free(c->out_head);
    free(c->out_payload);
    c->out_head = NULL;
    c->out_payload = NULL;
    c->out_head_len = c->out_payload_len = c->out_sent = 0;
    vsb_conn_release_out(c);

    if (c->close_after) {
        vsb_conn_close(c);
        return;
    }

    vsb_conn_start_reading(c);
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
 * Counts a frame whose header is in against the global budget before its
 * body is read; over budget the peer gets "busy" and, since we will not
 * read the body, the connection is closed after the reply.
 */
static int
vsb_conn_hold_in(vsb_conn_t *c)
{
    size_t       n;
    vsb_error_t  e;

    n = (size_t) c->in.json_len + 1 + c->in.payload_len;

    if (vsb_server_can_buffer(n)) {
        c->held_in = n;
        vsb_buffered += n;
        return 0;
    }

    vsb_log(VSB_LOG_WARN, "connection %lu (uid %u): refusing a frame of %zu "
            "bytes: %zu of %zu bytes already buffered for all connections",
            c->n, (unsigned) c->uid, n, vsb_buffered, vsb_buffered_max);

    memset(&e, 0, sizeof(e));
    vsb_error_set(&e, VSB_E_BUSY, NULL, "the helper is buffering %zu bytes "
                  "for other requests; retry later", vsb_buffered);
    c->close_after = 1;
    vsb_conn_reply_error(c, NULL, &e);
    return -1;
}


static void
vsb_conn_read(vsb_conn_t *c)
{
    unsigned char   buf[VSB_READ_CHUNK];
    size_t          want, used;
    ssize_t         n;
    int             i;
    vsb_frame_rc_t  rc;

    for (i = 0; i < VSB_READS_PER_EVENT; i++) {
        want = vsb_frame_need(&c->in);
        if (want > sizeof(buf)) {
            want = sizeof(buf);
        }

        n = read(c->ev.fd, buf, want);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return;
            }
            vsb_log_errno(VSB_LOG_INFO, "connection %lu: read()", c->n);
            vsb_conn_close(c);
            return;
        }

        if (n == 0) {
            if (c->in.head_len > 0) {
                vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): closed in "
                        "the middle of a frame", c->n, (unsigned) c->uid);
            }
            vsb_conn_close(c);
            return;
        }

        rc = vsb_frame_feed(&c->in, buf, (size_t) n, &used);

        if (rc == VSB_FRAME_ERROR) {
            vsb_conn_frame_error(c);
            return;
        }

        if (c->held_in == 0 && c->in.head_len == VSB_FRAME_HEADER_LEN
            && vsb_conn_hold_in(c) != 0)
        {
            return;
        }

        if (rc == VSB_FRAME_DONE) {
            c->state = VSB_CONN_BUSY;
            vsb_timer_del(&c->timer);

            /* Only hangups matter while the request runs. */
            if (vsb_loop_mod(&c->ev, 0) != 0) {
                vsb_conn_close(c);
                return;
            }

            vsb_dispatch(c, vsb_frame_json(&c->in), c->in.json_len,
                         vsb_frame_payload(&c->in), c->in.payload_len);

            /* The request's bytes are no longer needed (the connection
             * may be gone: dispatch replies only through the loop). */
            vsb_frame_reset(&c->in);
            vsb_conn_release_in(c);
            return;
        }
    }
}


static void
vsb_conn_handler(vsb_event_t *ev, uint32_t revents)
{
    vsb_conn_t  *c = ev->data;

    switch (c->state) {

    case VSB_CONN_READING:
        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            vsb_conn_read(c);
        }
        return;

    case VSB_CONN_BUSY:
        if (revents & (EPOLLHUP | EPOLLERR)) {
            vsb_log(VSB_LOG_INFO, "connection %lu (uid %u): client went "
                    "away during its request", c->n, (unsigned) c->uid);
            vsb_conn_close(c);
        }
        return;

    case VSB_CONN_WRITING:
        vsb_conn_write(c);
        return;
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

    vsb_frame_init(&c->in, VSB_MAX_JSON,
                   vsb_cf.max_file_bytes < VSB_MAX_PAYLOAD
                   ? (uint32_t) vsb_cf.max_file_bytes : VSB_MAX_PAYLOAD);

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
vsb_server_init(const vsb_config_t *cf, vsb_server_dispatch_pt dispatch,
    vsb_server_detach_pt detach, char *err, size_t errlen)
{
    struct sockaddr_un  sa;
    struct stat         st;
    char                dir[sizeof(cf->socket_path)], *slash;
    int                 fd;

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

    if (lstat(cf->socket_path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "\"%s\" exists and is not a socket",
                     cf->socket_path);
            return -1;
        }
        if (unlink(cf->socket_path) == -1) {
            snprintf(err, errlen, "unlink(\"%s\"): %s", cf->socket_path,
                     strerror(errno));
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "lstat(\"%s\"): %s", cf->socket_path,
                 strerror(errno));
        return -1;
    }

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        snprintf(err, errlen, "socket(AF_UNIX): %s", strerror(errno));
        return -1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cf->socket_path);

    /* umask 077 makes it 0600 until the chown/chmod below. */
    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == -1) {
        snprintf(err, errlen, "bind(\"%s\"): %s", cf->socket_path,
                 strerror(errno));
        close(fd);
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

    if (listen(fd, 128) == -1) {
        snprintf(err, errlen, "listen(\"%s\"): %s", cf->socket_path,
                 strerror(errno));
        goto failed;
    }

    vsb_buffered_max = VSB_BUFFERED_FRAMES
        * ((cf->max_file_bytes < VSB_MAX_PAYLOAD
            ? (size_t) cf->max_file_bytes : (size_t) VSB_MAX_PAYLOAD)
           + VSB_MAX_JSON + 1 + VSB_FRAME_HEADER_LEN);

    vsb_dispatch = dispatch;
    vsb_detach = detach;
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
