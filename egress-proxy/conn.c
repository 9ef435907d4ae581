/*
 * The decision half of a proxied connection: read what the sandbox asks
 * for (an HTTP proxy request, CONNECT, or in transparent mode a TLS
 * ClientHello or an HTTP head), check the host against the sandbox's
 * allowlist, resolve it, classify every address, and dial one that
 * passed.  The address dialled is the address checked: there is no
 * second lookup for a rebinding resolver to win.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eg_conn.h"
#include "eg_http.h"
#include "eg_ireq.h"
#include "eg_log.h"
#include "eg_record.h"
#include "eg_sni.h"
#include "eg_tls.h"

/* from <linux/netfilter_ipv4.h>, which clashes with <netinet/in.h> */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST       80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST  80
#endif

static unsigned char  eg_sni_scratch[EG_SNI_MAX_HELLO];

static void eg_conn_client_event(vsb_event_t *h, uint32_t events);
static void eg_conn_upstream_event(vsb_event_t *h, uint32_t events);
static void eg_conn_decide(eg_conn_t *c);
static void eg_conn_dial_next(eg_conn_t *c);


static void
eg_conn_orig_dst(eg_conn_t *c)
{
    struct sockaddr_storage  ss;
    socklen_t                len = sizeof(ss);

    if (getsockopt(c->client.fd, SOL_IP, SO_ORIGINAL_DST, &ss, &len) != 0) {
        len = sizeof(ss);
        if (getsockopt(c->client.fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss,
                       &len) != 0)
        {
            return;
        }
    }
    if (eg_addr_from_sockaddr((struct sockaddr *) &ss, &c->orig_dst,
                              &c->orig_port) == 0)
    {
        c->orig_valid = 1;
    }
}


static void
eg_conn_take(eg_sandbox_t *sb)
{
    eg_tenant_t  *t = sb->tenant;

    if (sb->usage.connections++ == 0) {
        t->active++;
    }
    if (t->connections++ == 0) {
        eg_proxy.active_tenants++;
    }
    eg_proxy.nconns++;
}


static void
eg_conn_release(eg_sandbox_t *sb)
{
    eg_tenant_t  *t = sb->tenant;

    eg_limits_conn_release(&sb->usage);
    if (sb->usage.connections == 0 && t->active > 0) {
        t->active--;
    }
    if (t->connections > 0 && --t->connections == 0
        && eg_proxy.active_tenants > 0)
    {
        eg_proxy.active_tenants--;
    }
    eg_proxy.nconns--;
}


void
eg_conn_head_done(eg_conn_t *c)
{
    if (c->in_head) {
        c->in_head = 0;
        if (c->sb->heads > 0) {
            c->sb->heads--;
        }
    }
}


/* May sb open one more connection?  0 yes; -1 with the reason. */
static int
eg_conn_admit(eg_sandbox_t *sb, char *why, size_t len)
{
    eg_tenant_t  *t = sb->tenant;
    eg_share_t    s;

    if (sb->heads >= eg_proxy.cf.max_head_connections) {
        snprintf(why, len, "head share exhausted: %u connections of this "
                 "sandbox are still sending their request "
                 "(max_sandbox_head_connections %u, each ended after "
                 "header_timeout_ms %u)", sb->heads,
                 eg_proxy.cf.max_head_connections,
                 eg_proxy.cf.header_timeout_ms);
        return -1;
    }
    if (sb->usage.connections >= sb->limits.max_connections) {
        snprintf(why, len, "sandbox connection limit reached (%u open, "
                 "max_connections %u)", sb->usage.connections,
                 sb->limits.max_connections);
        return -1;
    }

    s.pool = eg_proxy.cf.max_connections;
    s.used = eg_proxy.nconns;
    s.tenants = eg_proxy.active_tenants + (t->connections == 0);
    s.tenant_used = t->connections;
    s.sandboxes = t->active + (sb->usage.connections == 0);
    s.sandbox_used = sb->usage.connections;
    s.tenant_floor = eg_proxy.cf.tenant_share_floor;
    s.sandbox_floor = eg_proxy.cf.sandbox_share_floor;
    s.reserve_percent = eg_proxy.cf.borrow_reserve_percent;
    return eg_share_admit(&s, why, len);
}


void
eg_conn_accepted(eg_sandbox_t *sb, eg_listen_kind_t via, int fd)
{
    eg_conn_t  *c;
    char        why[256];

    if (eg_conn_admit(sb, why, sizeof(why)) != 0) {
        char         busy[512];
        int          n;
        eg_record_t  r = {
            .sandbox = sb->id, .kind = via == EG_L_HTTP ? "http" : "tls",
            .host = "", .decision = "refused", .reason = why,
            .start_ms = eg_wall_ms()
        };

        sb->usage.refused++;
        if (via == EG_L_HTTP) {
            n = snprintf(busy, sizeof(busy),
                         "HTTP/1.1 429 Too Many Requests\r\n"
                         "Content-Type: text/plain; charset=utf-8\r\n"
                         "Veto-Egress: refused\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n"
                         "blocked by Veto Sandbox egress policy: too many "
                         "connections\nreason: %s\n",
                         sizeof("blocked by Veto Sandbox egress policy: too "
                                "many connections\nreason: \n") - 1
                         + strlen(why), why);
            /* best effort: the socket's buffer is empty */
            if (n > 0 && (size_t) n < sizeof(busy)
                && write(fd, busy, (size_t) n) < 0)
            {
                /* nothing more to do: the client is gone */
            }
        }
        close(fd);
        eg_record_emit(&r);
        return;
    }
    eg_conn_take(sb);

    c = calloc(1, sizeof(*c));
    if (c != NULL) {
        c->c2u = malloc(EG_C2U_CAP);
        c->u2c = malloc(EG_U2C_CAP);
    }
    if (c == NULL || c->c2u == NULL || c->u2c == NULL) {
        eg_log(EG_LOG_ERROR, "sandbox %s: out of memory for a connection",
               sb->id);
        goto failed;
    }

    c->sb = sb;
    c->via = via;
    c->state = via == EG_L_HTTP ? EG_CS_HEAD : EG_CS_SNIFF;
    c->kind = via == EG_L_HTTP ? "http" : "tls";
    c->client.fd = fd;
    c->client.handler = eg_conn_client_event;
    c->client.data = c;
    c->upstream.fd = -1;
    c->upstream.handler = eg_conn_upstream_event;
    c->upstream.data = c;
    c->start_wall_ms = eg_wall_ms();
    c->start_ms = vsb_loop_time_ms();
    c->deadline_ms = vsb_loop_time_ms() + eg_proxy.cf.header_timeout_ms;
    c->decision = "error";

    if (vsb_loop_add(&c->client, EPOLLIN) != 0) {
        goto failed;
    }

    if (via == EG_L_TRANSPARENT) {
        eg_conn_orig_dst(c);
    }

    c->in_head = 1;
    sb->heads++;

    c->next = sb->conns;
    if (sb->conns) {
        sb->conns->prev = c;
    }
    sb->conns = c;
    return;

failed:

    if (c != NULL) {
        free(c->c2u);
        free(c->u2c);
        free(c);
    }
    eg_conn_release(sb);
    close(fd);
}


void
eg_conn_finish(eg_conn_t *c)
{
    eg_sandbox_t  *sb = c->sb;
    char           addr[EG_ADDR_STRLEN];
    eg_record_t    r;

    /* A connection that never said anything is no attempt. */
    if (c->have_host || c->c2u_len > 0 || c->bytes_out > 0
        || c->state == EG_CS_REFUSING)
    {
        memset(&r, 0, sizeof(r));
        r.sandbox = sb->id;
        r.kind = c->kind;
        r.host = c->have_host ? c->host.host : "";
        r.port = c->have_host ? c->port : 0;
        if (c->have_dialled) {
            eg_addr_format(&c->dialled, addr, sizeof(addr));
            r.address = addr;
        }
        r.decision = c->decision;
        r.reason = c->reason[0] ? c->reason : NULL;
        r.bytes_out = c->bytes_out;
        r.bytes_in = c->bytes_in;
        r.start_ms = c->start_wall_ms;
        r.duration_ms = vsb_loop_time_ms() - c->start_ms;
        r.askable = c->askable;
        r.credential = c->cred_name[0] ? c->cred_name : NULL;
        r.exfiltration = c->exfil;
        r.injections = c->injections;
        eg_record_emit(&r);
    }

    if (c->resolve != NULL) {
        eg_resolve_cancel(c->resolve);
    }
    eg_icpt_free(c);
    if (c->client.fd >= 0) {
        vsb_loop_del(&c->client);
        close(c->client.fd);
    }
    if (c->upstream.fd >= 0) {
        vsb_loop_del(&c->upstream);
        close(c->upstream.fd);
    }

    if (c->prev) {
        c->prev->next = c->next;
    } else {
        sb->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }

    eg_conn_head_done(c);
    eg_conn_release(sb);
    free(c->c2u);
    free(c->u2c);
    c->c2u = c->u2c = NULL;
    eg_loop_defer_free(c);
}


void
eg_conn_close_all(eg_sandbox_t *sb, const char *reason)
{
    while (sb->conns != NULL) {
        eg_conn_t  *c = sb->conns;
        if (c->state != EG_CS_RELAY && c->state != EG_CS_REFUSING) {
            c->decision = "error";
        }
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        eg_conn_finish(c);
    }
}


void
eg_conn_sweep(eg_sandbox_t *sb, uint64_t now)
{
    eg_conn_t  *c, *next;

    for (c = sb->conns; c != NULL; c = next) {
        next = c->next;
        if (now < c->deadline_ms) {
            continue;
        }

        switch (c->state) {
        case EG_CS_HEAD:
        case EG_CS_SNIFF:
            eg_refuse(c, 408, "refused",
                      "request not received within %u ms",
                      eg_proxy.cf.header_timeout_ms);
            break;
        case EG_CS_RESOLVING:
        case EG_CS_CONNECTING:
            eg_refuse(c, 504, "error", "no connection within %u ms",
                      sb->limits.connect_timeout_ms);
            break;
        case EG_CS_RELAY:
            if (c->icpt != NULL && (eg_icpt_closing(c)
                                    || strcmp(c->decision, "allowed") != 0))
            {
                eg_conn_finish(c);
                break;
            }
            c->decision = "allowed";
            snprintf(c->reason, sizeof(c->reason),
                     "idle for %u ms, closed", sb->limits.idle_timeout_ms);
            eg_conn_finish(c);
            break;
        case EG_CS_REFUSING:
            eg_conn_finish(c);
            break;
        }
    }
}


/* Reads what the client sent into c2u, up to max bytes in all.
 * 1: data, 0: EOF, -1: error or nothing (errno EAGAIN). */
static int
eg_conn_read_head(eg_conn_t *c, size_t max)
{
    ssize_t  n;

    if (c->c2u_len >= max) {
        errno = ENOBUFS;
        return -1;
    }
    n = read(c->client.fd, c->c2u + c->c2u_len, max - c->c2u_len);
    if (n > 0) {
        c->c2u_len += (size_t) n;
        return 1;
    }
    if (n == 0) {
        return 0;
    }
    return -1;
}


void
eg_conn_exfil(eg_conn_t *c, eg_cred_t *cred)
{
    snprintf(c->cred_name, sizeof(c->cred_name), "%s", cred->b.name);
    c->exfil = 1;
    c->sb->placeholders_refused++;
    cred->placeholders_refused++;
}


int
eg_conn_placeholder_check(eg_conn_t *c, const unsigned char *buf,
    size_t len)
{
    eg_sandbox_t         *sb = c->sb;
    const eg_cred_att_t  *a;
    int                   gone = 0;

    a = eg_cred_placeholder_in(sb->creds, sb->ncreds, (const char *) buf,
                               len);
    if (a == NULL) {
        a = eg_cred_placeholder_in(sb->detached, sb->ndetached,
                                   (const char *) buf, len);
        gone = (a != NULL);
    }
    if (a == NULL) {
        return 0;
    }
    eg_conn_exfil(c, a->cred);
    eg_conn_head_done(c);
    sb->usage.attempts++;
    eg_refuse(c, 403, "refused", "the placeholder of credential %s was sent "
              "%s (over plain HTTP or CONNECT): an exfiltration attempt",
              c->cred_name, gone ? "after it was detached"
                                 : "to a host it is not bound to");
    return -1;
}


static int
eg_conn_set_target(eg_conn_t *c, const char *s, size_t len,
    uint16_t default_port)
{
    const char  *why;

    if (eg_hostport_parse(s, len, default_port, &c->host, &c->port, &why)
        != 0)
    {
        eg_refuse(c, 400, "refused", "bad host \"%.*s\": %s",
                  (int) (len > 100 ? 100 : len), s, why);
        return -1;
    }
    c->have_host = 1;
    return 0;
}


/* A plain HTTP request, its target set: Host (when sent) must name the
 * authority the connection is allowed for, and the body must have a
 * length the relay can stop at (one request per connection).  0 ok; -1
 * refused. */
static int
eg_conn_plain(eg_conn_t *c, const eg_http_req_t *req, uint16_t host_port)
{
    eg_host_t    h;
    uint16_t     port;
    const char  *why;

    if (req->host_count == 1) {
        if (eg_hostport_parse(req->host.p, req->host.len, host_port, &h,
                              &port, &why) != 0)
        {
            eg_refuse(c, 400, "refused", "bad Host header \"%.*s\": %s",
                      (int) (req->host.len > 100 ? 100 : req->host.len),
                      req->host.p, why);
            return -1;
        }
        if (strcmp(h.host, c->host.host) != 0 || port != c->port) {
            eg_refuse(c, 400, "refused", "Host header names %s:%u but the "
                      "request is for %s:%u: they must be the same",
                      h.host, port, c->host.host, c->port);
            return -1;
        }
    }
    if (req->has_te) {
        eg_refuse(c, 411, "refused", "a request body with Transfer-Encoding "
                  "is not forwarded over plain HTTP: send a Content-Length "
                  "(or use HTTPS)");
        return -1;
    }
    c->absolute = 1;
    c->body_left = req->has_cl ? req->content_length : 0;
    return 0;
}


/* The client's request head, once complete, parsed into req: its length;
 * 0 while it is still coming, or when it was refused (431 past
 * EG_HTTP_MAX_HEAD, 400 malformed). */
static size_t
eg_conn_parse_head(eg_conn_t *c, eg_http_req_t *req)
{
    const char  *why;
    size_t       hl;

    hl = eg_http_head_len((const char *) c->c2u, c->c2u_len);
    if (hl == 0) {
        if (c->c2u_len >= EG_HTTP_MAX_HEAD) {
            eg_refuse(c, 431, "refused", "request head larger than %d bytes",
                      EG_HTTP_MAX_HEAD);
        }
        return 0;
    }
    if (eg_http_parse((const char *) c->c2u, hl, req, &why) != 0) {
        eg_refuse(c, 400, "refused", "malformed request: %s", why);
        return 0;
    }
    return hl;
}


static void
eg_conn_head(eg_conn_t *c)
{
    eg_http_req_t  req;
    size_t         hl;

    hl = eg_conn_parse_head(c, &req);
    if (hl == 0) {
        return;
    }

    if (req.form == EG_HTTP_FORM_AUTHORITY) {
        c->kind = "connect";
        c->is_connect = 1;
        if (eg_conn_set_target(c, req.authority.p, req.authority.len, 0)
            != 0
            || eg_conn_placeholder_check(c, c->c2u, hl) != 0)
        {
            return;
        }
        /* Anything after the CONNECT head is the tunnel's first bytes. */
        memmove(c->c2u, c->c2u + hl, c->c2u_len - hl);
        c->c2u_len -= hl;
    } else if (req.form == EG_HTTP_FORM_ABSOLUTE) {
        c->kind = "http";
        if (eg_conn_set_target(c, req.authority.p, req.authority.len, 80)
            != 0
            || eg_conn_plain(c, &req, 80) != 0
            || eg_conn_placeholder_check(c, c->c2u, c->c2u_len) != 0)
        {
            return;
        }
    } else {
        eg_refuse(c, 400, "refused", "not a proxy request (origin-form "
                  "target); send an absolute URI or CONNECT");
        return;
    }

    eg_conn_decide(c);
}


static void
eg_conn_sniff(eg_conn_t *c)
{
    const char     *name, *why;
    size_t          nlen, hl;
    eg_sni_rc_t     rc;
    eg_http_req_t   req;
    uint16_t        port = c->orig_valid ? c->orig_port : 443;

    if (c->c2u[0] == 22) {
        c->kind = "tls";
        rc = eg_sni_parse(c->c2u, c->c2u_len, eg_sni_scratch, &name, &nlen,
                          &why);
        switch (rc) {
        case EG_SNI_NEED_MORE:
            if (c->c2u_len >= EG_SNIFF_MAX) {
                eg_refuse(c, 0, "refused", "ClientHello too large");
            }
            return;
        case EG_SNI_NONE:
            eg_refuse(c, 0, "refused", "TLS without a server name (SNI): "
                      "the destination is unknown");
            return;
        case EG_SNI_ERROR:
            eg_refuse(c, 0, "refused", "not a valid TLS ClientHello: %s",
                      why);
            return;
        case EG_SNI_FOUND:
            if (eg_host_parse(name, nlen, &c->host, &why) != 0) {
                eg_refuse(c, 0, "refused", "bad server name: %s", why);
                return;
            }
            c->have_host = 1;
            c->port = port;
            eg_conn_decide(c);
            return;
        }
        return;
    }

    c->kind = "http";
    hl = eg_conn_parse_head(c, &req);
    if (hl == 0) {
        return;
    }
    if (req.form == EG_HTTP_FORM_AUTHORITY) {
        eg_refuse(c, 400, "refused", "CONNECT on a transparent connection");
        return;
    }
    if (req.form == EG_HTTP_FORM_ABSOLUTE) {
        if (eg_conn_set_target(c, req.authority.p, req.authority.len, port)
            != 0)
        {
            return;
        }
    } else if (eg_conn_set_target(c, req.host.p, req.host.len, port) != 0) {
        return;
    }
    if (c->port != port) {
        eg_refuse(c, 400, "refused", "the request names port %u but the "
                  "connection was to port %u", c->port, port);
        return;
    }
    if (eg_conn_plain(c, &req, port) != 0
        || eg_conn_placeholder_check(c, c->c2u, c->c2u_len) != 0)
    {
        return;
    }
    eg_conn_decide(c);
}


static void
eg_conn_client_event(vsb_event_t *h, uint32_t events)
{
    eg_conn_t  *c = h->data;
    int         rc;

    switch (c->state) {
    case EG_CS_HEAD:
    case EG_CS_SNIFF:
        rc = eg_conn_read_head(c, c->state == EG_CS_HEAD ? EG_HTTP_MAX_HEAD
                                                         : EG_SNIFF_MAX);
        if (rc == 0 || (rc < 0 && errno != EAGAIN)) {
            c->decision = "error";
            if (c->c2u_len > 0) {
                snprintf(c->reason, sizeof(c->reason), "client closed "
                         "before its request was complete");
            }
            eg_conn_finish(c);
            return;
        }
        if (rc < 0) {
            return;
        }
        if (c->state == EG_CS_HEAD) {
            eg_conn_head(c);
        } else {
            eg_conn_sniff(c);
        }
        return;

    case EG_CS_RESOLVING:
    case EG_CS_CONNECTING:
        /* Not reading while deciding; a hangup ends the attempt. */
        if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
            c->decision = "error";
            snprintf(c->reason, sizeof(c->reason), "client went away");
            eg_conn_finish(c);
        }
        return;

    case EG_CS_RELAY:
        if (c->icpt != NULL) {
            eg_icpt_event(c);
        } else {
            eg_relay_client_event(c, events);
        }
        return;

    case EG_CS_REFUSING:
        eg_refuse_client_event(c, events);
        return;
    }
}


/* May this address be dialled for this connection?  0 yes; -1 with the
 * reason in c->reason. */
static int
eg_conn_check_addr(eg_conn_t *c, const eg_addr_t *a)
{
    const char  *why;
    char         s[EG_ADDR_STRLEN];

    if (eg_sandbox_may_dial(a, &why) == 0) {
        return 0;
    }
    eg_addr_format(a, s, sizeof(s));
    snprintf(c->reason, sizeof(c->reason), "address %s is %s", s, why);
    return -1;
}


static void
eg_conn_resolved(void *arg, const eg_addr_t *addrs, size_t n,
    const char *err)
{
    eg_conn_t  *c = arg;
    size_t      i;
    eg_addr_t   first_bad;
    int         have_bad = 0;
    char        why[192];

    c->resolve = NULL;

    if (err != NULL) {
        eg_refuse(c, 502, "error", "%s: %s", c->host.host, err);
        return;
    }

    c->naddrs = 0;
    for (i = 0; i < n; i++) {
        if (eg_conn_check_addr(c, &addrs[i]) == 0) {
            c->addrs[c->naddrs++] = addrs[i];
        } else if (!have_bad) {
            first_bad = addrs[i];
            have_bad = 1;
            memcpy(why, c->reason, sizeof(why));
        }
    }
    c->reason[0] = '\0';

    if (c->naddrs == 0) {
        /* Name the refused address in the record. */
        c->dialled = first_bad;
        c->have_dialled = have_bad;
        eg_refuse(c, 403, "refused", "%s resolves to a refused address "
                  "(%s)", c->host.host, why);
        return;
    }

    eg_conn_dial_next(c);
}


static void
eg_conn_decide(eg_conn_t *c)
{
    eg_sandbox_t  *sb = c->sb;

    eg_conn_head_done(c);
    sb->usage.attempts++;

    if (!eg_sandbox_allows(sb, c->host.host, c->port)) {
        c->askable = eg_allow_match(sb->ask, sb->nask, c->host.host,
                                    c->port);
        eg_refuse(c, 403, "refused", "host not allowed");
        return;
    }

    c->intercept = eg_tls_enabled() && !c->absolute
                   && eg_cred_bound(sb->creds, sb->ncreds, c->host.host,
                                    c->port) != NULL;
    if (c->intercept && c->is_connect && c->c2u_len > 0 && c->c2u[0] != 22) {
        eg_refuse(c, 400, "refused", "a CONNECT to a host a credential is "
                  "bound to carries TLS only");
        return;
    }

    if (sb->usage.bytes_in >= sb->limits.max_bytes_in
        || sb->usage.bytes_out >= sb->limits.max_bytes_out)
    {
        eg_refuse(c, 403, "refused", "byte limit %s (%llu) reached",
                  sb->usage.bytes_in >= sb->limits.max_bytes_in ? "in" : "out",
                  (unsigned long long) (sb->usage.bytes_in
                                        >= sb->limits.max_bytes_in
                                        ? sb->limits.max_bytes_in
                                        : sb->limits.max_bytes_out));
        return;
    }

    c->deadline_ms = vsb_loop_time_ms() + sb->limits.connect_timeout_ms;
    vsb_loop_mod(&c->client, EPOLLRDHUP);

    if (c->host.is_literal) {
        if (eg_conn_check_addr(c, &c->host.addr) != 0) {
            char  why[192];
            memcpy(why, c->reason, sizeof(why));
            c->reason[0] = '\0';
            c->dialled = c->host.addr;
            c->have_dialled = 1;
            eg_refuse(c, 403, "refused", "%s", why);
            return;
        }
        c->addrs[0] = c->host.addr;
        c->naddrs = 1;
        eg_conn_dial_next(c);
        return;
    }

    c->state = EG_CS_RESOLVING;
    if (eg_resolve_start(c->host.host, eg_conn_resolved, c, &c->resolve)
        != 0)
    {
        eg_refuse(c, 502, "error", "out of memory for a name lookup");
    }
}


static void
eg_conn_dial_next(eg_conn_t *c)
{
    struct sockaddr_storage  ss;
    socklen_t                sl;
    int                      fd;
    char                     s[EG_ADDR_STRLEN];

    if (c->upstream.fd >= 0) {
        vsb_loop_del(&c->upstream);
        close(c->upstream.fd);
        c->upstream.fd = -1;
    }

    while (c->next_addr < c->naddrs) {
        c->dialled = c->addrs[c->next_addr++];
        c->have_dialled = 1;

        fd = socket(c->dialled.family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd == -1) {
            snprintf(c->reason, sizeof(c->reason), "socket: %s",
                     strerror(errno));
            continue;
        }

        sl = eg_addr_to_sockaddr(&c->dialled, c->port, &ss);
        if (connect(fd, (struct sockaddr *) &ss, sl) == 0
            || errno == EINPROGRESS)
        {
            c->upstream.fd = fd;
            c->state = EG_CS_CONNECTING;
            if (vsb_loop_add(&c->upstream, EPOLLOUT) != 0) {
                close(fd);
                c->upstream.fd = -1;
                continue;
            }
            return;
        }

        eg_addr_format(&c->dialled, s, sizeof(s));
        snprintf(c->reason, sizeof(c->reason), "connect to %s: %s", s,
                 strerror(errno));
        close(fd);
    }

    {
        char  why[192];
        memcpy(why, c->reason, sizeof(why));
        c->reason[0] = '\0';
        eg_refuse(c, 502, "error", "could not connect: %s",
                  why[0] ? why : "no address");
    }
}


/* The socket is connected: one last check that the kernel did not route
 * it to the host itself (source == destination means a local address),
 * then the relay. */
static void
eg_conn_connected(eg_conn_t *c)
{
    struct sockaddr_storage  l, p;
    socklen_t                ll = sizeof(l), pl = sizeof(p);
    eg_addr_t                la, pa;
    uint16_t                 lp, pp;

    if (getsockname(c->upstream.fd, (struct sockaddr *) &l, &ll) == 0
        && getpeername(c->upstream.fd, (struct sockaddr *) &p, &pl) == 0
        && eg_addr_from_sockaddr((struct sockaddr *) &l, &la, &lp) == 0
        && eg_addr_from_sockaddr((struct sockaddr *) &p, &pa, &pp) == 0
        && eg_addr_equal(&la, &pa))
    {
        eg_refuse(c, 403, "refused", "address is one of the host's own");
        return;
    }

    if (c->intercept) {
        eg_icpt_start(c);
        return;
    }
    eg_relay_start(c);
}


static void
eg_conn_upstream_event(vsb_event_t *h, uint32_t events)
{
    eg_conn_t  *c = h->data;
    int         err = 0;
    socklen_t   el = sizeof(err);
    char        s[EG_ADDR_STRLEN];

    if (c->state == EG_CS_CONNECTING) {
        if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0) {
            err = errno;
        }
        if (err != 0) {
            eg_addr_format(&c->dialled, s, sizeof(s));
            snprintf(c->reason, sizeof(c->reason), "connect to %s: %s", s,
                     strerror(err));
            eg_conn_dial_next(c);
            return;
        }
        eg_conn_connected(c);
        return;
    }

    if (c->state == EG_CS_RELAY) {
        if (c->icpt != NULL) {
            eg_icpt_event(c);
        } else {
            eg_relay_upstream_event(c, events);
        }
    }
}
