/*
 * Intercepted connections: a credential of the sandbox is bound to the
 * host, so the proxy ends the sandbox's TLS itself (a leaf minted by its
 * CA for that host, the SNI checked against the CONNECT host or the
 * ClientHello it was routed by), opens its own TLS to the upstream
 * (verified: chain and name, failing closed), and relays HTTP/1.1
 * requests one by one: each head is parsed (eg_ireq.h), its Host must be
 * the connection's host, and a request the binding covers (host and path
 * prefix) gets the binding's header in place of any the workload sent; a
 * request it does not cover that holds a placeholder is refused and
 * recorded as an exfiltration attempt.  Bodies are relayed as framed
 * (Content-Length or chunked); responses are relayed unchanged.
 *
 * Both TLS ends run over memory BIOs, so every socket read and write
 * stays in this loop's hands: each BIO holds at most EG_ICPT_BIO_MAX
 * bytes before the side feeding it stops reading.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "eg_conn.h"
#include "eg_ireq.h"
#include "eg_log.h"
#include "eg_tls.h"

#define EG_ICPT_BIO_MAX   (64 * 1024)
#define EG_ICPT_RAW       (16 * 1024)
#define EG_ICPT_TURNS     64        /* pump rounds per event */

typedef enum {
    EG_RQ_HEAD = 0,
    EG_RQ_BODY_CL,
    EG_RQ_BODY_CHUNKED,
    EG_RQ_STOP
} eg_rq_state_t;

struct eg_icpt_s {
    SSL             *cssl;          /* the sandbox's side: we serve */
    SSL             *ussl;          /* the upstream's side: we dial */
    BIO             *c_in, *c_out, *u_in, *u_out;
    int              c_hs, u_hs;    /* handshakes done */
    int              u_failed;      /* upstream TLS failed: 502 once c_hs */
    int              closing;       /* flush to the sandbox, then close */
    int              up_done;       /* upstream closed: drain, then close */

    unsigned char    craw[EG_ICPT_RAW];   /* TLS bytes for the sandbox */
    size_t           craw_off, craw_len;
    unsigned char    uraw[EG_ICPT_RAW];   /* TLS bytes for the upstream */
    size_t           uraw_off, uraw_len;

    eg_rq_state_t    rq;
    unsigned char    in[EG_HTTP_MAX_HEAD]; /* plaintext from the sandbox */
    size_t           in_len;
    uint64_t         body_left;
    eg_chunk_t       chunk;

    eg_cred_att_t    atts[EG_CRED_PER_SANDBOX];
    size_t           natts;
};

/* One request head rewritten, and its credential lines (hold secrets:
 * wiped after each use). */
static char  eg_icpt_out[EG_IREQ_OUT_MAX];
static char  eg_icpt_lines[EG_CRED_PER_SANDBOX]
                          [EG_CRED_HEADER_MAX + EG_CRED_TEMPLATE_MAX
                           + EG_CRED_VALUE_MAX + 8];


int
eg_icpt_closing(const eg_conn_t *c)
{
    return c->icpt != NULL && c->icpt->closing;
}


void
eg_icpt_free(eg_conn_t *c)
{
    eg_icpt_t  *t = c->icpt;

    if (t == NULL) {
        return;
    }
    SSL_free(t->cssl);              /* frees its BIOs */
    SSL_free(t->ussl);
    OPENSSL_cleanse(t->in, sizeof(t->in));
    free(t);
    c->icpt = NULL;
}


static void
eg_icpt_reason(eg_conn_t *c, const char *decision, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
eg_icpt_reason(eg_conn_t *c, const char *decision, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
    va_end(ap);
    c->decision = decision;
    if (strcmp(decision, "refused") == 0) {
        c->sb->usage.refused++;
    }
    eg_log(EG_LOG_INFO, "sandbox %s: %s %s %s:%u: %s", c->sb->id, decision,
           c->kind, c->host.host, c->port, c->reason);
}


/* Stops relaying: the upstream is closed, what is queued for the
 * sandbox (an answer, an alert, close_notify) is flushed, then the
 * connection ends (or at the linger deadline). */
static void
eg_icpt_close_soon(eg_conn_t *c)
{
    eg_icpt_t  *t = c->icpt;

    t->closing = 1;
    t->rq = EG_RQ_STOP;
    if (c->upstream.fd >= 0) {
        vsb_loop_del(&c->upstream);
        close(c->upstream.fd);
        c->upstream.fd = -1;
    }
    c->deadline_ms = vsb_loop_time_ms() + EG_REFUSE_LINGER_MS;
}


/* An HTTP answer from the proxy to the sandbox, then the end. */
static void
eg_icpt_answer(eg_conn_t *c, int status, const char *text)
{
    eg_icpt_t  *t = c->icpt;
    char        body[512], buf[1024];
    int         n;

    snprintf(body, sizeof(body), "Veto Sandbox egress proxy: %s:%u: %s\n",
             c->host.host, c->port, c->reason);
    n = snprintf(buf, sizeof(buf), "HTTP/1.1 %d %s\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: %zu\r\n"
                 "Connection: close\r\n"
                 "Veto-Egress: %s\r\n\r\n%s",
                 status, text, strlen(body), c->decision, body);
    if (t->c_hs && n > 0 && (size_t) n < sizeof(buf)) {
        (void) SSL_write(t->cssl, buf, n);
        (void) SSL_shutdown(t->cssl);
    }
    eg_icpt_close_soon(c);
}


static void
eg_icpt_refuse(eg_conn_t *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
eg_icpt_refuse(eg_conn_t *c, int status, const char *fmt, ...)
{
    va_list  ap;
    char     why[sizeof(c->reason)];

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    eg_icpt_reason(c, "refused", "%s", why);
    eg_icpt_answer(c, status, status == 403 ? "Forbidden" : "Bad Request");
}


void
eg_icpt_start(eg_conn_t *c)
{
    static const char  established[] =
        "HTTP/1.1 200 Connection established\r\n\r\n";
    eg_icpt_t         *t;
    eg_sandbox_t      *sb = c->sb;
    char               err[256];

    c->state = EG_CS_RELAY;
    c->decision = "allowed";
    c->reason[0] = '\0';

    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        eg_refuse(c, 502, "error", "out of memory for an intercepted "
                  "connection");
        return;
    }
    c->icpt = t;
    memcpy(t->atts, sb->creds, sb->ncreds * sizeof(sb->creds[0]));
    t->natts = sb->ncreds;

    t->cssl = eg_tls_server(c->host.host, err, sizeof(err));
    t->ussl = t->cssl ? eg_tls_client(c->host.host, err, sizeof(err)) : NULL;
    t->c_in = BIO_new(BIO_s_mem());
    t->c_out = BIO_new(BIO_s_mem());
    t->u_in = BIO_new(BIO_s_mem());
    t->u_out = BIO_new(BIO_s_mem());
    if (t->cssl == NULL || t->ussl == NULL || t->c_in == NULL
        || t->c_out == NULL || t->u_in == NULL || t->u_out == NULL)
    {
        BIO_free(t->c_in);
        BIO_free(t->c_out);
        BIO_free(t->u_in);
        BIO_free(t->u_out);
        SSL_free(t->cssl);
        SSL_free(t->ussl);
        t->cssl = t->ussl = NULL;
        eg_icpt_free(c);
        eg_refuse(c, 502, "error", "TLS setup: %s", err);
        return;
    }
    BIO_set_mem_eof_return(t->c_in, -1);
    BIO_set_mem_eof_return(t->u_in, -1);
    SSL_set_bio(t->cssl, t->c_in, t->c_out);
    SSL_set_bio(t->ussl, t->u_in, t->u_out);
    SSL_set_app_data(t->cssl, c->host.host);

    if (c->is_connect) {
        memcpy(t->craw, established, sizeof(established) - 1);
        t->craw_len = sizeof(established) - 1;
    }
    /* the ClientHello (transparent) or the tunnel's first bytes */
    if (c->c2u_len > 0) {
        if (BIO_write(t->c_in, c->c2u, (int) c->c2u_len)
            != (int) c->c2u_len)
        {
            eg_refuse(c, 502, "error", "TLS setup: BIO_write failed");
            return;
        }
        eg_limits_account(&sb->usage, EG_DIR_OUT, c->c2u_len);
        c->bytes_out += c->c2u_len;
        c->c2u_len = 0;
    }

    c->deadline_ms = vsb_loop_time_ms() + sb->limits.idle_timeout_ms;
    eg_icpt_event(c);
}


/* Reads TLS bytes from a socket into its memory BIO, within the byte
 * budget.  1 data, 0 nothing now, -1 EOF or error, -3 over budget. */
static int
eg_icpt_fill(eg_conn_t *c, int fd, BIO *bio, eg_dir_t dir)
{
    unsigned char  buf[EG_ICPT_RAW];
    ssize_t        n;

    if (BIO_ctrl_pending(bio) >= EG_ICPT_BIO_MAX) {
        return 0;
    }
    n = eg_relay_budget_read(c, fd, buf, sizeof(buf), dir);
    if (n == -3) {
        return -3;
    }
    if (n > 0) {
        if (BIO_write(bio, buf, (int) n) != (int) n) {
            return -1;
        }
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 0;
    }
    return -1;
}


/* Writes what a memory BIO holds to its socket.  0 ok; -1 error. */
static int
eg_icpt_flush(int fd, BIO *bio, unsigned char *raw, size_t *off,
    size_t *len, int *progress)
{
    ssize_t  n;
    int      r;

    for (;;) {
        if (*len == 0) {
            r = BIO_read(bio, raw, EG_ICPT_RAW);
            if (r <= 0) {
                return 0;
            }
            *off = 0;
            *len = (size_t) r;
        }
        n = write(fd, raw + *off, *len);
        if (n < 0) {
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        }
        *off += (size_t) n;
        *len -= (size_t) n;
        *progress = 1;
        if (*len > 0) {
            return 0;
        }
    }
}


/* The credential lines for a request to target, and the header names
 * they replace.  The number of lines. */
static size_t
eg_icpt_bind(eg_conn_t *c, eg_str_t target, eg_str_t *add,
    const char **drop, const eg_cred_att_t **used)
{
    eg_icpt_t  *t = c->icpt;
    size_t      i, j, n = 0, len;
    eg_cred_t  *cr;

    for (i = 0; i < t->natts; i++) {
        cr = t->atts[i].cred;
        if (!eg_cred_host_match(&cr->b, c->host.host)
            || !eg_cred_path_match(&cr->b, target.p, target.len))
        {
            continue;
        }
        for (j = 0; j < n; j++) {
            if (strcasecmp(drop[j], cr->b.header) == 0) {
                break;
            }
        }
        if (j < n) {
            continue;               /* the first binding for a header wins */
        }
        len = eg_cred_render(&cr->b, cr->value, cr->vlen, eg_icpt_lines[n],
                             sizeof(eg_icpt_lines[n]));
        if (len == 0) {
            continue;
        }
        add[n].p = eg_icpt_lines[n];
        add[n].len = len;
        drop[n] = cr->b.header;
        used[n] = &t->atts[i];
        n++;
    }
    return n;
}


/* A complete head of hl bytes at t->in.  0 relayed; -1 refused. */
static int
eg_icpt_head(eg_conn_t *c, size_t hl)
{
    eg_icpt_t            *t = c->icpt;
    eg_sandbox_t         *sb = c->sb;
    eg_ireq_t             r;
    const char           *why, *needles[EG_CRED_PER_SANDBOX];
    const char           *drop[EG_CRED_PER_SANDBOX];
    const eg_cred_att_t  *used[EG_CRED_PER_SANDBOX], *ga;
    eg_str_t              add[EG_CRED_PER_SANDBOX];
    size_t                nadd, i, out;
    int                   k;

    if (eg_ireq_parse((const char *) t->in, hl, c->host.host, &r, &why)
        != 0)
    {
        eg_icpt_refuse(c, 400, "request refused: %s", why);
        return -1;
    }

    /* what is attached now: a detach applies to open connections too */
    memcpy(t->atts, sb->creds, sb->ncreds * sizeof(sb->creds[0]));
    t->natts = sb->ncreds;

    /* a detached placeholder is refused wherever it goes */
    ga = eg_cred_placeholder_in(sb->detached, sb->ndetached,
                                (const char *) t->in, t->in_len);
    if (ga != NULL) {
        eg_conn_exfil(c, ga->cred);
        eg_icpt_refuse(c, 403, "the placeholder of credential %s was sent "
                       "after it was detached (%.*s): an exfiltration "
                       "attempt", c->cred_name,
                       (int) (r.target.len > 64 ? 64 : r.target.len),
                       r.target.p);
        return -1;
    }

    nadd = eg_icpt_bind(c, r.target, add, drop, used);
    if (nadd == 0) {
        /* not covered: its placeholders have no business here */
        for (i = 0; i < t->natts; i++) {
            needles[i] = t->atts[i].placeholder;
        }
        k = eg_ireq_find((const char *) t->in, t->in_len, needles, t->natts);
        if (k >= 0) {
            eg_conn_exfil(c, t->atts[k].cred);
            eg_icpt_refuse(c, 403, "the placeholder of credential %s was "
                           "sent in a request its binding does not cover "
                           "(%.*s): an exfiltration attempt", c->cred_name,
                           (int) (r.target.len > 64 ? 64 : r.target.len),
                           r.target.p);
            return -1;
        }
        out = hl;
        memcpy(eg_icpt_out, t->in, hl);
    } else {
        out = eg_ireq_rewrite((const char *) t->in, hl, drop, nadd, add,
                              nadd, eg_icpt_out, sizeof(eg_icpt_out));
        for (i = 0; i < nadd; i++) {
            OPENSSL_cleanse(eg_icpt_lines[i], add[i].len);
        }
        if (out == 0) {
            eg_icpt_refuse(c, 400, "request head too large with its "
                           "credential");
            return -1;
        }
        for (i = 0; i < nadd; i++) {
            used[i]->cred->injections++;
            sb->injections++;
            c->injections++;
            if (c->cred_name[0] == '\0') {
                snprintf(c->cred_name, sizeof(c->cred_name), "%s",
                         used[i]->cred->b.name);
            }
        }
    }

    k = SSL_write(t->ussl, eg_icpt_out, (int) out);
    OPENSSL_cleanse(eg_icpt_out, out);
    if (k != (int) out) {
        eg_icpt_reason(c, "error", "TLS write to the host failed");
        eg_icpt_answer(c, 502, "Bad Gateway");
        return -1;
    }

    memmove(t->in, t->in + hl, t->in_len - hl);
    t->in_len -= hl;
    if (r.chunked) {
        eg_chunk_init(&t->chunk);
        t->rq = EG_RQ_BODY_CHUNKED;
    } else if (r.content_length > 0) {
        t->body_left = r.content_length;
        t->rq = EG_RQ_BODY_CL;
    } else {
        t->rq = EG_RQ_HEAD;
    }
    return 0;
}


/* Moves what t->in holds on: heads rewritten, bodies as framed.
 * 0 go on; -1 the connection is closing. */
static int
eg_icpt_requests(eg_conn_t *c)
{
    eg_icpt_t   *t = c->icpt;
    size_t       hl, take;
    ssize_t      used;
    int          done = 0;
    const char  *why;

    while (t->in_len > 0 && !t->closing) {
        switch (t->rq) {
        case EG_RQ_HEAD:
            hl = eg_http_head_len((const char *) t->in, t->in_len);
            if (hl == 0) {
                if (t->in_len >= sizeof(t->in)) {
                    eg_icpt_refuse(c, 400, "request head larger than %d "
                                   "bytes", EG_HTTP_MAX_HEAD);
                    return -1;
                }
                return 0;
            }
            if (eg_icpt_head(c, hl) != 0) {
                return -1;
            }
            break;

        case EG_RQ_BODY_CL:
            take = t->in_len < t->body_left ? t->in_len
                                            : (size_t) t->body_left;
            goto relay;

        case EG_RQ_BODY_CHUNKED:
            used = eg_chunk_feed(&t->chunk, t->in, t->in_len, &done, &why);
            if (used < 0) {
                eg_icpt_refuse(c, 400, "malformed chunked body: %s", why);
                return -1;
            }
            take = (size_t) used;
            goto relay;

        case EG_RQ_STOP:
            return -1;
        }
        continue;

    relay:
        if (take > 0 && SSL_write(t->ussl, t->in, (int) take) != (int) take) {
            eg_icpt_reason(c, "error", "TLS write to the host failed");
            eg_icpt_answer(c, 502, "Bad Gateway");
            return -1;
        }
        memmove(t->in, t->in + take, t->in_len - take);
        t->in_len -= take;
        if (t->rq == EG_RQ_BODY_CL) {
            t->body_left -= take;
            if (t->body_left == 0) {
                t->rq = EG_RQ_HEAD;
            }
        } else if (done) {
            t->rq = EG_RQ_HEAD;
        }
    }
    return 0;
}


/* SSL_read's end: 1 more may come, 0 the peer closed, -1 error. */
static int
eg_icpt_ssl_status(SSL *ssl, int rc)
{
    switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return 1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default:
        return -1;
    }
}


static void
eg_icpt_upstream_failed(eg_conn_t *c)
{
    eg_icpt_t  *t = c->icpt;
    long        v = SSL_get_verify_result(t->ussl);
    char        e[160];

    if (v != X509_V_OK) {
        snprintf(e, sizeof(e), "the host's certificate is not trusted: %s",
                 X509_verify_cert_error_string(v));
    } else {
        unsigned long  le = ERR_peek_last_error();
        snprintf(e, sizeof(e), "TLS with the host failed: %s",
                 le ? ERR_reason_error_string(le) : "handshake error");
    }
    ERR_clear_error();
    eg_icpt_reason(c, "error", "%s (fails closed)", e);
    t->u_failed = 1;
    if (c->upstream.fd >= 0) {
        vsb_loop_del(&c->upstream);
        close(c->upstream.fd);
        c->upstream.fd = -1;
    }
    if (t->c_hs) {
        eg_icpt_answer(c, 502, "Bad Gateway");
    }
}


/* One round: sockets into BIOs, TLS both ways, BIOs into sockets.
 * 1 progress made; 0 none; -1 the connection ended (finished). */
static int
eg_icpt_turn(eg_conn_t *c)
{
    eg_icpt_t      *t = c->icpt;
    unsigned char   buf[EG_ICPT_RAW];
    int             progress = 0, rc, st;

    /* sockets -> BIOs */
    if (!c->client_eof && !t->closing) {
        rc = eg_icpt_fill(c, c->client.fd, t->c_in, EG_DIR_OUT);
        if (rc == 1) {
            progress = 1;
        } else if (rc == -1) {
            c->client_eof = 1;
        } else if (rc == -3) {
            eg_icpt_reason(c, "refused", "byte limit out (%llu) reached",
                           (unsigned long long) c->sb->limits.max_bytes_out);
            eg_conn_finish(c);
            return -1;
        }
    }
    if (c->upstream.fd >= 0 && !c->upstream_eof) {
        rc = eg_icpt_fill(c, c->upstream.fd, t->u_in, EG_DIR_IN);
        if (rc == 1) {
            progress = 1;
        } else if (rc == -1) {
            c->upstream_eof = 1;
        } else if (rc == -3) {
            eg_icpt_reason(c, "refused", "byte limit in (%llu) reached",
                           (unsigned long long) c->sb->limits.max_bytes_in);
            eg_conn_finish(c);
            return -1;
        }
    }

    /* handshakes */
    if (!t->u_hs && !t->u_failed && !t->closing) {
        rc = SSL_do_handshake(t->ussl);
        if (rc == 1) {
            t->u_hs = 1;
            progress = 1;
        } else if (eg_icpt_ssl_status(t->ussl, rc) != 1
                   || c->upstream_eof)
        {
            eg_icpt_upstream_failed(c);
            progress = 1;
        }
    }
    if (!t->c_hs && !t->closing) {
        rc = SSL_do_handshake(t->cssl);
        if (rc == 1) {
            t->c_hs = 1;
            progress = 1;
            if (t->u_failed) {
                eg_icpt_answer(c, 502, "Bad Gateway");
            }
        } else if (eg_icpt_ssl_status(t->cssl, rc) != 1 || c->client_eof) {
            ERR_clear_error();
            if (SSL_get_servername(t->cssl, TLSEXT_NAMETYPE_host_name)
                == NULL || c->client_eof)
            {
                eg_icpt_reason(c, "refused", "TLS with the sandbox failed "
                               "(no SNI, an SNI other than %s, no "
                               "http/1.1 in ALPN, or the CA not trusted)",
                               c->host.host);
            } else {
                eg_icpt_reason(c, "refused", "TLS with the sandbox failed: "
                               "its SNI must be %s and ALPN (if any) offer "
                               "http/1.1", c->host.host);
            }
            eg_icpt_close_soon(c);
            progress = 1;
        }
    }

    if (t->c_hs && t->u_hs && !t->closing) {
        /* host -> sandbox: unchanged */
        while (BIO_ctrl_pending(t->c_out) < EG_ICPT_BIO_MAX) {
            rc = SSL_read(t->ussl, buf, sizeof(buf));
            if (rc > 0) {
                if (SSL_write(t->cssl, buf, rc) != rc) {
                    eg_icpt_reason(c, "error", "TLS write to the sandbox "
                                   "failed");
                    eg_conn_finish(c);
                    return -1;
                }
                progress = 1;
                continue;
            }
            st = eg_icpt_ssl_status(t->ussl, rc);
            if (st != 1 || (c->upstream_eof
                            && BIO_ctrl_pending(t->u_in) == 0))
            {
                t->up_done = 1;
            }
            break;
        }

        /* sandbox -> host: request by request */
        while (!t->closing && BIO_ctrl_pending(t->u_out) < EG_ICPT_BIO_MAX
               && t->in_len < sizeof(t->in))
        {
            rc = SSL_read(t->cssl, t->in + t->in_len,
                          (int) (sizeof(t->in) - t->in_len));
            if (rc <= 0) {
                st = eg_icpt_ssl_status(t->cssl, rc);
                if (st != 1 || (c->client_eof
                                && BIO_ctrl_pending(t->c_in) == 0))
                {
                    /* the sandbox is done: so is the connection */
                    ERR_clear_error();
                    eg_icpt_close_soon(c);
                }
                break;
            }
            t->in_len += (size_t) rc;
            progress = 1;
            if (eg_icpt_requests(c) != 0) {
                break;
            }
        }

        if (t->up_done && !t->closing) {
            (void) SSL_shutdown(t->cssl);
            eg_icpt_close_soon(c);
            progress = 1;
        }
    }

    /* BIOs -> sockets */
    if (c->upstream.fd >= 0
        && eg_icpt_flush(c->upstream.fd, t->u_out, t->uraw, &t->uraw_off,
                         &t->uraw_len, &progress) != 0)
    {
        eg_icpt_reason(c, "error", "write to host: %s", strerror(errno));
        eg_icpt_close_soon(c);
    }
    if (eg_icpt_flush(c->client.fd, t->c_out, t->craw, &t->craw_off,
                      &t->craw_len, &progress) != 0)
    {
        eg_conn_finish(c);
        return -1;
    }

    if (t->closing && t->craw_len == 0 && BIO_ctrl_pending(t->c_out) == 0) {
        eg_conn_finish(c);
        return -1;
    }
    if (!t->closing && c->client_eof && !t->c_hs) {
        eg_conn_finish(c);
        return -1;
    }
    return progress;
}


void
eg_icpt_event(eg_conn_t *c)
{
    eg_icpt_t  *t = c->icpt;
    uint32_t    ce = 0, ue = 0;
    int         i, rc;

    c->deadline_ms = vsb_loop_time_ms() + (t->closing ? EG_REFUSE_LINGER_MS
                                        : c->sb->limits.idle_timeout_ms);
    for (i = 0; i < EG_ICPT_TURNS; i++) {
        rc = eg_icpt_turn(c);
        if (rc < 0) {
            return;                 /* finished */
        }
        if (rc == 0) {
            break;
        }
    }

    if (!c->client_eof && !t->closing
        && BIO_ctrl_pending(t->c_in) < EG_ICPT_BIO_MAX)
    {
        ce |= EPOLLIN;
    }
    if (t->craw_len > 0) {
        ce |= EPOLLOUT;
    }
    if (t->closing && !c->client_eof) {
        ce |= EPOLLIN;              /* read and drop: see the peer go */
    }
    if (c->upstream.fd >= 0) {
        if (!c->upstream_eof && BIO_ctrl_pending(t->u_in) < EG_ICPT_BIO_MAX) {
            ue |= EPOLLIN;
        }
        if (t->uraw_len > 0) {
            ue |= EPOLLOUT;
        }
        if (c->upstream.events != ue && vsb_loop_mod(&c->upstream, ue) != 0) {
            eg_conn_finish(c);
            return;
        }
    }
    if (c->client.events != ce && vsb_loop_mod(&c->client, ce) != 0) {
        eg_conn_finish(c);
        return;
    }

    if (t->closing && !c->client_eof) {
        unsigned char  junk[4096];
        ssize_t        n = read(c->client.fd, junk, sizeof(junk));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            eg_conn_finish(c);
        }
    }
}
