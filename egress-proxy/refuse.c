/*
 * Refusals.  Explicit HTTP and CONNECT get an HTTP answer whose body
 * starts "blocked by Veto Sandbox egress policy: <host>:<port> is not
 * allowed" (403) or says what went wrong (4xx/5xx), with the reason on
 * its own line and, where the sandbox's policy makes the host askable,
 * what to ask for.  Transparent TLS gets a TLS access_denied alert.
 * The answer is written, the socket half-closed, and what the client
 * still sends is read and discarded (bounded) so that closing does not
 * reset the connection before the client has read the answer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eg_conn.h"
#include "eg_log.h"


static const char *
eg_status_text(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 504: return "Gateway Timeout";
    default:  return "Error";
    }
}


static void
eg_target_text(eg_conn_t *c, char *buf, size_t len)
{
    if (!c->have_host) {
        snprintf(buf, len, "(unknown)");
    } else if (c->host.is_literal && c->host.addr.family == AF_INET6) {
        snprintf(buf, len, "[%s]:%u", c->host.host, c->port);
    } else {
        snprintf(buf, len, "%s:%u", c->host.host, c->port);
    }
}


void
eg_refuse(eg_conn_t *c, int status, const char *decision,
    const char *fmt, ...)
{
    va_list   ap;
    char      target[EG_HOST_MAX + 16], body[1024];
    int       n, bl;
    static const unsigned char  tls_alert[] = {
        0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31   /* fatal access_denied */
    };

    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
    va_end(ap);

    eg_conn_head_done(c);
    c->decision = decision;
    if (strcmp(decision, "refused") == 0) {
        c->sb->usage.refused++;
    }

    if (c->resolve != NULL) {
        eg_resolve_cancel(c->resolve);
        c->resolve = NULL;
    }
    if (c->upstream.fd >= 0) {
        vsb_loop_del(&c->upstream);
        close(c->upstream.fd);
        c->upstream.fd = -1;
    }

    c->state = EG_CS_REFUSING;
    c->deadline_ms = vsb_loop_time_ms() + EG_REFUSE_LINGER_MS;
    c->u2c_off = 0;
    c->u2c_len = 0;

    if (c->via == EG_L_TRANSPARENT && strcmp(c->kind, "tls") == 0) {
        memcpy(c->u2c, tls_alert, sizeof(tls_alert));
        c->u2c_len = sizeof(tls_alert);
    } else if (status != 0) {
        eg_target_text(c, target, sizeof(target));
        if (status == 403) {
            bl = snprintf(body, sizeof(body),
                          "blocked by Veto Sandbox egress policy: %s is not "
                          "allowed\nreason: %s\n", target, c->reason);
            if (c->askable && bl > 0 && (size_t) bl < sizeof(body)) {
                snprintf(body + bl, sizeof(body) - (size_t) bl,
                         "askable: this host may be requested for sandbox "
                         "%s; ask for network allow \"%s\" and a human "
                         "will decide\n", c->sb->id, target);
            }
        } else {
            snprintf(body, sizeof(body), "Veto Sandbox egress proxy: %s: "
                     "%s\n", target, c->reason);
        }
        bl = (int) strlen(body);
        n = snprintf((char *) c->u2c, EG_U2C_CAP,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %d\r\n"
                     "Connection: close\r\n"
                     "Veto-Egress: %s\r\n\r\n%s",
                     status, eg_status_text(status), bl, decision, body);
        if (n > 0 && n < EG_U2C_CAP) {
            c->u2c_len = (size_t) n;
        }
    }

    eg_log(EG_LOG_INFO, "sandbox %s: %s %s %s:%u: %s", c->sb->id, decision,
           c->kind, c->have_host ? c->host.host : "?", c->port, c->reason);

    if (vsb_loop_mod(&c->client, EPOLLIN | (c->u2c_len ? EPOLLOUT : 0))
        != 0)
    {
        eg_conn_finish(c);
        return;
    }
    if (c->u2c_len == 0) {
        shutdown(c->client.fd, SHUT_WR);
        c->client_shut = 1;
    }
}


void
eg_refuse_client_event(eg_conn_t *c, uint32_t events)
{
    unsigned char  junk[4096];
    ssize_t        n;

    if ((events & EPOLLOUT) && c->u2c_len > 0) {
        n = write(c->client.fd, c->u2c + c->u2c_off, c->u2c_len);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            eg_conn_finish(c);
            return;
        }
        if (n > 0) {
            c->u2c_off += (size_t) n;
            c->u2c_len -= (size_t) n;
        }
        if (c->u2c_len == 0) {
            shutdown(c->client.fd, SHUT_WR);
            c->client_shut = 1;
            if (vsb_loop_mod(&c->client, EPOLLIN) != 0) {
                eg_conn_finish(c);
                return;
            }
        }
    }

    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        n = read(c->client.fd, junk, sizeof(junk));
        if (n > 0) {
            c->discarded += (size_t) n;
        }
        if (n == 0 && c->u2c_len > 0 && !c->client_eof) {
            /* half-closed: still deliver the answer */
            c->client_eof = 1;
            if (vsb_loop_mod(&c->client, EPOLLOUT) != 0) {
                eg_conn_finish(c);
            }
            return;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)
            || c->discarded > EG_REFUSE_DISCARD)
        {
            eg_conn_finish(c);
        }
    }
}
