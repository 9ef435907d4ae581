/*
 * The relay: bytes between the sandbox and the host it was allowed to
 * reach, through two fixed buffers (no buffer grows), with the
 * sandbox's byte budgets checked before each read and the idle timer
 * reset by every byte moved.  Half-closes are propagated.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eg_conn.h"
#include "eg_http.h"
#include "eg_log.h"


/* Plain HTTP (explicit and transparent): "GET http://h/p HTTP/1.1" or
 * "GET /p HTTP/1.1" becomes "GET /p HTTP/1.1", Host is written from the
 * authority the connection was allowed for (a differing Host header was
 * refused before), hop-by-hop headers are dropped and the upstream is
 * told Connection: close.  One request per connection: of the bytes
 * after the head only the request's body (Content-Length) is forwarded;
 * whatever follows it (a pipelined or keep-alive second request) is read
 * and dropped, never relayed. */
static int
eg_relay_rewrite_head(eg_conn_t *c)
{
    eg_http_req_t   req;
    const char     *why;
    size_t          hl, rest, off = 0, pos, i;
    unsigned char   head[EG_C2U_CAP];
    int             n;
    char            hostport[EG_HOST_MAX + 16];

    hl = eg_http_head_len((const char *) c->c2u, c->c2u_len);
    if (hl == 0 || eg_http_parse((const char *) c->c2u, hl, &req, &why)
                   != 0)
    {
        return -1;
    }

    if (c->host.is_literal && c->host.addr.family == AF_INET6) {
        snprintf(hostport, sizeof(hostport), "[%s]", c->host.host);
    } else {
        snprintf(hostport, sizeof(hostport), "%s", c->host.host);
    }
    if (c->port != 80) {
        size_t  l = strlen(hostport);
        snprintf(hostport + l, sizeof(hostport) - l, ":%u", c->port);
    }

    n = snprintf((char *) head, sizeof(head), "%.*s %.*s HTTP/1.%d\r\n"
                 "Host: %s\r\n", (int) req.method.len, req.method.p,
                 (int) req.path.len, req.path.p, req.minor, hostport);
    if (n < 0 || (size_t) n >= sizeof(head)) {
        return -1;
    }
    off = (size_t) n;

    /* headers, minus the dropped lines (they are in order) */
    pos = req.headers_start;
    for (i = 0; i < req.ndrop; i++) {
        memcpy(head + off, c->c2u + pos, req.drop[i][0] - pos);
        off += req.drop[i][0] - pos;
        pos = req.drop[i][1];
    }
    memcpy(head + off, c->c2u + pos, hl - 2 - pos);
    off += hl - 2 - pos;

    if (off + sizeof("Connection: close\r\n\r\n") > sizeof(head)) {
        return -1;
    }
    memcpy(head + off, "Connection: close\r\n\r\n", 21);
    off += 21;

    rest = c->c2u_len - hl;
    if (rest > c->body_left) {
        c->discarded += rest - (size_t) c->body_left;
        rest = (size_t) c->body_left;
    }
    c->body_left -= rest;
    if (c->body_left == 0) {
        c->request_done = 1;
    }
    if (off + rest > EG_C2U_CAP) {
        return -1;
    }
    memmove(c->c2u + off, c->c2u + hl, rest);
    memcpy(c->c2u, head, off);
    c->c2u_len = off + rest;
    c->c2u_off = 0;
    return 0;
}


void
eg_relay_start(eg_conn_t *c)
{
    static const char  established[] =
        "HTTP/1.1 200 Connection established\r\n\r\n";

    c->state = EG_CS_RELAY;
    c->decision = "allowed";
    c->reason[0] = '\0';

    if (c->absolute && eg_relay_rewrite_head(c) != 0) {
        eg_refuse(c, 431, "refused", "request head too large to forward");
        return;
    }
    if (c->discarded > 0) {
        snprintf(c->reason, sizeof(c->reason), "%zu bytes after the first "
                 "request were not forwarded (one request per connection)",
                 c->discarded);
    }

    if (c->is_connect) {
        memcpy(c->u2c, established, sizeof(established) - 1);
        c->u2c_len = sizeof(established) - 1;
    }

    /* Whatever was read before the decision goes out now, within the
     * sandbox's budget like any other byte. */
    if (c->c2u_len > 0) {
        uint64_t  ok = eg_limits_allow_bytes(&c->sb->limits, &c->sb->usage,
                                             EG_DIR_OUT, c->c2u_len);
        if (ok < c->c2u_len) {
            c->decision = "refused";
            snprintf(c->reason, sizeof(c->reason), "byte limit out (%llu) "
                     "reached", (unsigned long long)
                     c->sb->limits.max_bytes_out);
            eg_conn_finish(c);
            return;
        }
        eg_limits_account(&c->sb->usage, EG_DIR_OUT, c->c2u_len);
        c->bytes_out += c->c2u_len;
    }

    c->deadline_ms = vsb_loop_time_ms() + c->sb->limits.idle_timeout_ms;
    eg_relay_update(c);
}


/* Sets what epoll watches on both sockets from the buffers' state, and
 * ends the connection once both directions are done. */
void
eg_relay_update(eg_conn_t *c)
{
    uint32_t  ce = 0, ue = 0;

    if (c->client_eof && c->c2u_len == 0 && !c->upstream_shut) {
        shutdown(c->upstream.fd, SHUT_WR);
        c->upstream_shut = 1;
    }
    if (c->upstream_eof && c->u2c_len == 0 && !c->client_shut) {
        shutdown(c->client.fd, SHUT_WR);
        c->client_shut = 1;
    }
    if (c->upstream_shut && c->client_shut) {
        eg_conn_finish(c);
        return;
    }

    if (!c->client_eof && c->c2u_len == 0) {
        ce |= EPOLLIN;
    }
    if (c->u2c_len > 0) {
        ce |= EPOLLOUT;
    }
    if (!c->upstream_eof && c->u2c_len == 0) {
        ue |= EPOLLIN;
    }
    if (c->c2u_len > 0) {
        ue |= EPOLLOUT;
    }

    if (c->client.events != ce && vsb_loop_mod(&c->client, ce) != 0) {
        goto fail;
    }
    if (c->upstream.events != ue && vsb_loop_mod(&c->upstream, ue) != 0) {
        goto fail;
    }
    return;

fail:
    snprintf(c->reason, sizeof(c->reason), "epoll_ctl: %s", strerror(errno));
    eg_conn_finish(c);
}


ssize_t
eg_relay_budget_read(eg_conn_t *c, int fd, unsigned char *buf, size_t cap,
    eg_dir_t dir)
{
    uint64_t  ok;
    ssize_t   n;

    ok = eg_limits_allow_bytes(&c->sb->limits, &c->sb->usage, dir, cap);
    if (ok == 0) {
        return -3;
    }
    n = read(fd, buf, (size_t) ok);
    if (n > 0) {
        eg_limits_account(&c->sb->usage, dir, (uint64_t) n);
        if (dir == EG_DIR_OUT) {
            c->bytes_out += (uint64_t) n;
        } else {
            c->bytes_in += (uint64_t) n;
        }
    }
    return n;
}


/* Reads from fd into buf (empty) within the byte budget of dir.
 * 1 data, 0 EOF, -1 would block, -2 error (reason set), -3 over budget. */
static int
eg_relay_read(eg_conn_t *c, int fd, unsigned char *buf, size_t cap,
    size_t *len, eg_dir_t dir)
{
    ssize_t  n;

    n = eg_relay_budget_read(c, fd, buf, cap, dir);
    if (n == -3) {
        return -3;
    }
    if (n > 0) {
        *len = (size_t) n;
        return 1;
    }
    if (n == 0) {
        return 0;
    }
    if (errno == EAGAIN || errno == EINTR) {
        return -1;
    }
    snprintf(c->reason, sizeof(c->reason), "%s: %s",
             dir == EG_DIR_OUT ? "read from sandbox" : "read from host",
             strerror(errno));
    return -2;
}


static int
eg_relay_write(eg_conn_t *c, int fd, unsigned char *buf, size_t *off,
    size_t *len, const char *what)
{
    ssize_t  n = write(fd, buf + *off, *len);

    if (n >= 0) {
        *off += (size_t) n;
        *len -= (size_t) n;
        if (*len == 0) {
            *off = 0;
        }
        return 0;
    }
    if (errno == EAGAIN || errno == EINTR) {
        return 0;
    }
    snprintf(c->reason, sizeof(c->reason), "write to %s: %s", what,
             strerror(errno));
    return -1;
}


static void
eg_relay_over_budget(eg_conn_t *c, eg_dir_t dir)
{
    snprintf(c->reason, sizeof(c->reason), "byte limit %s (%llu) reached",
             dir == EG_DIR_OUT ? "out" : "in",
             (unsigned long long) (dir == EG_DIR_OUT
                                   ? c->sb->limits.max_bytes_out
                                   : c->sb->limits.max_bytes_in));
    eg_conn_finish(c);
}


/* Plain HTTP after the first request: what the client sends is read and
 * dropped (at most EG_REFUSE_DISCARD bytes, then the connection ends).
 * 0 go on (client_eof set at EOF); -1 end the connection. */
static int
eg_relay_drop(eg_conn_t *c)
{
    unsigned char  junk[4096];
    ssize_t        n = read(c->client.fd, junk, sizeof(junk));

    if (n == 0) {
        c->client_eof = 1;
        return 0;
    }
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) {
            return 0;
        }
        snprintf(c->reason, sizeof(c->reason), "read from sandbox: %s",
                 strerror(errno));
        return -1;
    }
    c->discarded += (size_t) n;
    snprintf(c->reason, sizeof(c->reason), "%zu bytes after the first "
             "request were not forwarded (one request per connection)",
             c->discarded);
    return c->discarded > EG_REFUSE_DISCARD ? -1 : 0;
}


void
eg_relay_client_event(eg_conn_t *c, uint32_t events)
{
    int  rc;

    c->deadline_ms = vsb_loop_time_ms() + c->sb->limits.idle_timeout_ms;

    if ((events & EPOLLOUT) && c->u2c_len > 0) {
        if (eg_relay_write(c, c->client.fd, c->u2c, &c->u2c_off, &c->u2c_len,
                           "sandbox") != 0)
        {
            eg_conn_finish(c);
            return;
        }
    }

    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->client_eof
        && c->c2u_len == 0 && c->absolute && c->request_done)
    {
        if (eg_relay_drop(c) != 0) {
            eg_conn_finish(c);
            return;
        }
    } else if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->client_eof
        && c->c2u_len == 0)
    {
        rc = eg_relay_read(c, c->client.fd, c->c2u,
                           c->absolute && c->body_left < EG_C2U_CAP
                           ? (size_t) c->body_left : EG_C2U_CAP,
                           &c->c2u_len, EG_DIR_OUT);
        if (rc == 1 && c->absolute) {
            c->body_left -= c->c2u_len;
            c->request_done = c->body_left == 0;
        }
        if (rc == 0) {
            c->client_eof = 1;
        } else if (rc == -2) {
            eg_conn_finish(c);
            return;
        } else if (rc == -3) {
            eg_relay_over_budget(c, EG_DIR_OUT);
            return;
        }
        c->c2u_off = 0;
    }

    /* HUP/ERR are reported whatever we watch: a peer that is gone while
     * we have nothing to read from it ends the connection (no spinning). */
    if ((events & EPOLLERR)
        || ((events & EPOLLHUP) && (c->client_eof || c->c2u_len > 0)))
    {
        eg_conn_finish(c);
        return;
    }

    eg_relay_update(c);
}


void
eg_relay_upstream_event(eg_conn_t *c, uint32_t events)
{
    int  rc;

    c->deadline_ms = vsb_loop_time_ms() + c->sb->limits.idle_timeout_ms;

    if ((events & EPOLLOUT) && c->c2u_len > 0) {
        if (eg_relay_write(c, c->upstream.fd, c->c2u, &c->c2u_off,
                           &c->c2u_len, "host") != 0)
        {
            eg_conn_finish(c);
            return;
        }
    }

    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->upstream_eof
        && c->u2c_len == 0)
    {
        rc = eg_relay_read(c, c->upstream.fd, c->u2c, EG_U2C_CAP,
                           &c->u2c_len, EG_DIR_IN);
        if (rc == 0) {
            c->upstream_eof = 1;
        } else if (rc == -2) {
            eg_conn_finish(c);
            return;
        } else if (rc == -3) {
            eg_relay_over_budget(c, EG_DIR_IN);
            return;
        }
        c->u2c_off = 0;
    }

    if ((events & EPOLLERR)
        || ((events & EPOLLHUP) && (c->upstream_eof || c->u2c_len > 0)))
    {
        eg_conn_finish(c);
        return;
    }

    eg_relay_update(c);
}
