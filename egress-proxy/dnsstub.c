/*
 * DNS stub I/O: UDP datagrams and DNS over TCP (two-byte length
 * prefix), one query at a time, bounded buffers and a deadline per TCP
 * connection.  The proxy does not forward the sandbox's queries
 * anywhere: it answers from the sandbox's allowlist alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eg_dns.h"
#include "eg_dnsstub.h"
#include "eg_log.h"
#include "eg_record.h"

struct eg_dnsconn_s {
    vsb_event_t     h;
    eg_sandbox_t   *sb;
    eg_dnsconn_t   *next, *prev;
    unsigned char   in[2 + EG_DNS_MAX_MSG];
    size_t          in_len;
    unsigned char   out[2 + EG_DNS_MAX_MSG];
    size_t          out_off, out_len;
    uint64_t        deadline_ms;
};


size_t
eg_dnsstub_answer(eg_sandbox_t *sb, const unsigned char *msg, size_t len,
    unsigned char *out, size_t cap)
{
    eg_dns_query_t  q;
    int             rcode, askable;
    const char     *why;
    char            ede[EG_HOST_MAX + 96];
    eg_record_t     r;

    if (eg_dns_parse_query(msg, len, &q, &rcode, &why) != 0) {
        eg_log(EG_LOG_DEBUG, "sandbox %s: dns: %s", sb->id, why);
        if (rcode < 0) {
            return 0;
        }
        return eg_dns_build_error(msg, len, rcode, out, cap);
    }

    if (q.name[0] != '\0'
        && eg_sandbox_allows(sb, q.name, 0))
    {
        /* Served: A gets the sentinel, other types an empty answer. */
        return eg_dns_build_answer(&q, EG_DNS_NOERROR,
                                   eg_proxy.cf.dns_answer_ipv4,
                                   eg_proxy.cf.dns_ttl_s, 0, NULL, out, cap);
    }

    askable = q.name[0] != '\0'
              && eg_allow_match(sb->ask, sb->nask, q.name, 0);
    snprintf(ede, sizeof(ede), "blocked by Veto Sandbox egress policy: %s "
             "is not allowed%s", q.name[0] ? q.name : ".",
             askable ? " (askable)" : "");

    memset(&r, 0, sizeof(r));
    r.sandbox = sb->id;
    r.kind = "dns";
    r.host = q.name;
    r.decision = "refused";
    r.reason = "name not allowed";
    r.start_ms = eg_wall_ms();
    r.askable = askable;
    r.qtype = q.qtype;
    sb->usage.refused++;
    eg_record_emit(&r);

    return eg_dns_build_answer(&q, EG_DNS_NXDOMAIN, NULL, 0,
                               EG_DNS_EDE_BLOCKED, ede, out, cap);
}


void
eg_dnsstub_udp_ready(eg_sandbox_t *sb, int fd)
{
    unsigned char            msg[EG_DNS_MAX_MSG + 1], out[EG_DNS_MAX_MSG];
    struct sockaddr_storage  from;
    socklen_t                fl;
    ssize_t                  n;
    size_t                   olen;
    int                      i;

    for (i = 0; i < EG_DNS_UDP_BATCH; i++) {
        fl = sizeof(from);
        n = recvfrom(fd, msg, sizeof(msg), 0, (struct sockaddr *) &from, &fl);
        if (n < 0) {
            return;                 /* EAGAIN, or an ICMP error: next */
        }
        olen = eg_dnsstub_answer(sb, msg, (size_t) n, out, sizeof(out));
        if (olen > 0) {
            /* a full socket buffer loses this answer: the client retries */
            (void) sendto(fd, out, olen, MSG_DONTWAIT,
                          (struct sockaddr *) &from, fl);
        }
    }
}


static void
eg_dnsconn_close(eg_dnsconn_t *d)
{
    vsb_loop_del(&d->h);
    close(d->h.fd);
    if (d->prev) {
        d->prev->next = d->next;
    } else {
        d->sb->dnsconns = d->next;
    }
    if (d->next) {
        d->next->prev = d->prev;
    }
    eg_loop_defer_free(d);
}


static void
eg_dnsconn_event(vsb_event_t *h, uint32_t events)
{
    eg_dnsconn_t  *d = h->data;
    ssize_t        n;
    size_t         want, olen;

    if ((events & EPOLLOUT) && d->out_len > 0) {
        n = write(h->fd, d->out + d->out_off, d->out_len);
        if (n < 0 && errno != EAGAIN) {
            eg_dnsconn_close(d);
            return;
        }
        if (n > 0) {
            d->out_off += (size_t) n;
            d->out_len -= (size_t) n;
        }
        if (d->out_len == 0 && vsb_loop_mod(h, EPOLLIN) != 0) {
            eg_dnsconn_close(d);
            return;
        }
        return;
    }

    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || d->out_len > 0) {
        return;
    }

    want = d->in_len < 2 ? 2 - d->in_len
           : 2 + (((size_t) d->in[0] << 8) | d->in[1]) - d->in_len;
    n = read(h->fd, d->in + d->in_len, want);
    if (n == 0 || (n < 0 && errno != EAGAIN)) {
        eg_dnsconn_close(d);
        return;
    }
    if (n < 0) {
        return;
    }
    d->in_len += (size_t) n;

    if (d->in_len == 2) {
        size_t  ml = ((size_t) d->in[0] << 8) | d->in[1];
        if (ml == 0 || ml > EG_DNS_MAX_MSG) {
            eg_dnsconn_close(d);     /* nothing sane to answer */
            return;
        }
        return;
    }
    if (d->in_len < 2 + (((size_t) d->in[0] << 8) | d->in[1])) {
        return;
    }

    olen = eg_dnsstub_answer(d->sb, d->in + 2, d->in_len - 2, d->out + 2,
                             sizeof(d->out) - 2);
    d->in_len = 0;
    if (olen == 0) {
        eg_dnsconn_close(d);
        return;
    }
    d->out[0] = (unsigned char) (olen >> 8);
    d->out[1] = (unsigned char) olen;
    d->out_off = 0;
    d->out_len = olen + 2;
    d->deadline_ms = vsb_loop_time_ms() + EG_DNS_TCP_TIMEOUT_MS;
    if (vsb_loop_mod(h, EPOLLOUT) != 0) {
        eg_dnsconn_close(d);
    }
}


void
eg_dnsstub_tcp_accepted(eg_sandbox_t *sb, int fd)
{
    eg_dnsconn_t  *d;
    unsigned       n = 0;

    for (d = sb->dnsconns; d != NULL; d = d->next) {
        n++;
    }
    if (n >= EG_DNS_TCP_MAX_PER_SANDBOX) {
        close(fd);
        return;
    }

    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        close(fd);
        return;
    }
    d->sb = sb;
    d->h.fd = fd;
    d->h.handler = eg_dnsconn_event;
    d->h.data = d;
    d->deadline_ms = vsb_loop_time_ms() + EG_DNS_TCP_TIMEOUT_MS;

    if (vsb_loop_add(&d->h, EPOLLIN) != 0) {
        close(fd);
        free(d);
        return;
    }
    d->next = sb->dnsconns;
    if (sb->dnsconns) {
        sb->dnsconns->prev = d;
    }
    sb->dnsconns = d;
}


void
eg_dnsstub_sweep(eg_sandbox_t *sb, uint64_t now)
{
    eg_dnsconn_t  *d, *next;

    for (d = sb->dnsconns; d != NULL; d = next) {
        next = d->next;
        if (now >= d->deadline_ms) {
            eg_dnsconn_close(d);
        }
    }
}


void
eg_dnsstub_close_all(eg_sandbox_t *sb)
{
    while (sb->dnsconns != NULL) {
        eg_dnsconn_close(sb->dnsconns);
    }
}
