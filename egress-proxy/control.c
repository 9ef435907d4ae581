/*
 * Control channel: framed JSON requests from the helper (descriptors by
 * SCM_RIGHTS), replies, and attempt-record events.  Strict: unknown
 * ops or fields, wrong types, descriptors where none belong, or a
 * descriptor count that does not match "listeners" are named errors,
 * and every descriptor received is either owned by a sandbox or closed.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "eg_control.h"
#include "eg_control_fields.h"
#include "eg_listen.h"
#include "eg_log.h"
#include "eg_record.h"
#include "eg_tls.h"
#include "egress.h"
#include "vsb_egress_protocol.h"
#include "vsb_frame.h"
#include "vsb_unixsock.h"

#define EG_CTL_MAX_PENDING_FDS  16

typedef struct {
    vsb_event_t         h;
    int                 open;
    vsb_frame_parser_t  fp;
    int                 fds[EG_CTL_MAX_PENDING_FDS];
    unsigned            nfds;
    int                 fd_overflow;
    unsigned char      *out;
    size_t              out_off, out_len, out_cap;
} eg_ctl_conn_t;

static vsb_event_t    eg_ctl_listen_h;
static eg_ctl_conn_t  eg_ctl;

static void eg_ctl_close(const char *why);


static int
eg_ctl_want_out(void)
{
    return vsb_loop_mod(&eg_ctl.h, EPOLLIN | (eg_ctl.out_len ? EPOLLOUT : 0));
}


/* Appends one frame; -1 if the output bound would be passed. */
static int
eg_ctl_enqueue(const char *json, size_t len)
{
    unsigned char  *head, *nb;
    size_t          hl, need, cap;

    if (eg_ctl.out_len + VSB_FRAME_HEADER_LEN + len
        > eg_proxy.cf.control_buffer_bytes)
    {
        return -1;
    }

    head = vsb_frame_encode_head(json, len, 0, &hl);
    if (head == NULL) {
        return -1;
    }

    if (eg_ctl.out_off > 0) {
        memmove(eg_ctl.out, eg_ctl.out + eg_ctl.out_off, eg_ctl.out_len);
        eg_ctl.out_off = 0;
    }
    need = eg_ctl.out_len + hl;
    if (need > eg_ctl.out_cap) {
        cap = eg_ctl.out_cap ? eg_ctl.out_cap : 16384;
        while (cap < need) {
            cap *= 2;
        }
        nb = realloc(eg_ctl.out, cap);
        if (nb == NULL) {
            free(head);
            return -1;
        }
        eg_ctl.out = nb;
        eg_ctl.out_cap = cap;
    }
    memcpy(eg_ctl.out + eg_ctl.out_len, head, hl);
    eg_ctl.out_len += hl;
    free(head);
    return 0;
}


/* Records go out before any reply (a reply is a barrier); between
 * requests only while the output is less than half full. */
static void
eg_ctl_push_records(int all)
{
    char      *s, buf[96];
    size_t     len;
    uint64_t   dropped;

    if (!eg_ctl.open) {
        return;
    }

    dropped = eg_record_take_dropped();
    if (dropped > 0) {
        len = (size_t) snprintf(buf, sizeof(buf), "{\"event\":"
                                "\"records_dropped\",\"count\":%llu}",
                                (unsigned long long) dropped);
        if (eg_ctl_enqueue(buf, len) != 0) {
            eg_log(EG_LOG_ERROR, "control: %llu dropped records not "
                   "reported", (unsigned long long) dropped);
        }
    }

    while (all || eg_ctl.out_len < eg_proxy.cf.control_buffer_bytes / 2) {
        s = eg_record_pop(&len);
        if (s == NULL) {
            break;
        }
        if (eg_ctl_enqueue(s, len) != 0) {
            eg_record_unpop(s, len);
            break;
        }
        free(s);
    }
}


static void
eg_ctl_reply(json_t *reply, json_t *req)
{
    json_t  *rid;
    char    *s;

    if (req != NULL && (rid = json_object_get(req, "request_id")) != NULL
        && json_is_string(rid))
    {
        json_object_set(reply, "request_id", rid);
    }

    eg_ctl_push_records(1);

    s = json_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    if (s == NULL || eg_ctl_enqueue(s, strlen(s)) != 0) {
        free(s);
        eg_ctl_close("reply does not fit in the control buffer (the helper "
                     "is not reading)");
        return;
    }
    free(s);
    if (eg_ctl_want_out() != 0) {
        eg_ctl_close("epoll_ctl failed");
    }
}


static json_t *
eg_ctl_add(json_t *req)
{
    static const char *const  fields[] = {
        "op", "request_id", "sandbox", "tenant", "listeners", "allow", "ask",
        "limits", "credentials", NULL
    };
    json_t            *e, *ls, *v, *r;
    const char        *id, *tenant;
    eg_sandbox_t      *sb;
    eg_listen_kind_t   kinds[VSB_EGRESS_MAX_FDS];
    size_t             i, n;
    char               err[256];

    if ((e = eg_ctl_check_fields(req, fields)) != NULL
        || (e = eg_ctl_sandbox_id(req, "sandbox", &id)) != NULL
        || (e = eg_ctl_tenant(req, &tenant)) != NULL)
    {
        return e;
    }

    {
        eg_limits_t    lim;
        eg_cred_att_t  atts[EG_CRED_PER_SANDBOX];
        size_t         na;
        if ((e = eg_ctl_limits(req, &lim)) != NULL
            || (e = eg_ctl_credentials(req, NULL, NULL, atts, &na)) != NULL)
        {
            return e;        /* the caller closes the descriptors */
        }
    }

    ls = json_object_get(req, "listeners");
    if (ls == NULL || !json_is_array(ls)) {
        return eg_ctl_err(ls ? "bad_type" : "missing_field", "listeners",
                          "\"listeners\" must be an array naming each "
                          "descriptor sent");
    }
    n = json_array_size(ls);
    if (n == 0 || n > VSB_EGRESS_MAX_FDS || n != eg_ctl.nfds
        || eg_ctl.fd_overflow)
    {
        return eg_ctl_err(VSB_EGRESS_E_BAD_FDS, "listeners", "\"listeners\" "
                          "names %zu sockets but %u descriptors came with "
                          "the request (1 .. %d)", n, eg_ctl.nfds,
                          VSB_EGRESS_MAX_FDS);
    }
    json_array_foreach(ls, i, v) {
        if (!json_is_string(v)
            || eg_listen_kind_parse(json_string_value(v), &kinds[i]) != 0)
        {
            return eg_ctl_err("bad_value", "listeners", "listeners[%zu] must "
                              "be \"http\", \"transparent\", \"dns_udp\" or "
                              "\"dns_tcp\"", i);
        }
    }

    if (eg_sandbox_find(id) != NULL) {
        return eg_ctl_err(VSB_EGRESS_E_EXISTS, "sandbox", "sandbox %s is "
                          "already known to the proxy", id);
    }
    if (eg_proxy.nsandboxes >= eg_proxy.cf.max_sandboxes) {
        return eg_ctl_err("capacity", NULL, "the proxy serves %u sandboxes "
                          "already (max_sandboxes)", eg_proxy.nsandboxes);
    }

    sb = calloc(1, sizeof(*sb));
    if (sb == NULL) {
        return eg_ctl_err("internal", NULL, "out of memory");
    }
    snprintf(sb->id, sizeof(sb->id), "%s", id);

    if ((e = eg_ctl_entries(req, "allow", 1, &sb->allow, &sb->nallow))
        != NULL
        || (e = eg_ctl_entries(req, "ask", 0, &sb->ask, &sb->nask)) != NULL
        || (e = eg_ctl_limits(req, &sb->limits)) != NULL
        || (e = eg_ctl_credentials(req, sb->own, &sb->nown, sb->creds,
                                   &sb->ncreds)) != NULL)
    {
        eg_sandbox_own_gc(sb, 1);
        free(sb->allow);
        free(sb->ask);
        free(sb);
        return e;
    }

    sb->tenant = eg_tenant_get(tenant);
    if (sb->tenant == NULL) {
        eg_sandbox_own_gc(sb, 1);
        free(sb->allow);
        free(sb->ask);
        free(sb);
        return eg_ctl_err("internal", NULL, "out of memory");
    }

    for (i = 0; i < n; i++) {
        int  fd = eg_ctl.fds[i];
        eg_ctl.fds[i] = -1;
        if (eg_listen_attach(sb, kinds[i], fd, err, sizeof(err)) != 0) {
            for (size_t j = i + 1; j < n; j++) {
                close(eg_ctl.fds[j]);
                eg_ctl.fds[j] = -1;
            }
            eg_ctl.nfds = 0;
            eg_listen_close_all(sb);
            eg_tenant_put(sb->tenant);
            eg_sandbox_own_gc(sb, 1);
            free(sb->allow);
            free(sb->ask);
            free(sb);
            return eg_ctl_err(VSB_EGRESS_E_BAD_FDS, "listeners", "%s", err);
        }
    }
    eg_ctl.nfds = 0;

    sb->next = eg_proxy.sandboxes;
    eg_proxy.sandboxes = sb;
    eg_proxy.nsandboxes++;

    eg_log(EG_LOG_INFO, "sandbox %s of tenant %s added: %zu allowed, %zu "
           "askable, %zu sockets, %zu credentials", sb->id, sb->tenant->id,
           sb->nallow, sb->nask, n, sb->ncreds);

    r = eg_ctl_ok("add");
    json_object_set_new(r, "sandbox", json_string(sb->id));
    json_object_set_new(r, "limits", eg_ctl_limits_json(&sb->limits));
    return r;
}


/* The attachments of sb that atts no longer holds join its detached
 * ones (the oldest of those go when there are too many). */
static void
eg_ctl_detached(eg_sandbox_t *sb, const eg_cred_att_t *atts, size_t natts)
{
    size_t  i, j;

    for (i = 0; i < sb->ncreds; i++) {
        for (j = 0; j < natts; j++) {
            if (strcmp(atts[j].placeholder, sb->creds[i].placeholder) == 0) {
                break;
            }
        }
        if (j < natts) {
            continue;
        }
        if (sb->ndetached == EG_CRED_PER_SANDBOX) {
            memmove(&sb->detached[0], &sb->detached[1],
                    (EG_CRED_PER_SANDBOX - 1) * sizeof(sb->detached[0]));
            sb->ndetached--;
        }
        sb->detached[sb->ndetached++] = sb->creds[i];
        eg_log(EG_LOG_INFO, "sandbox %s: credential %s detached", sb->id,
               sb->creds[i].cred->b.name);
    }
}


static json_t *
eg_ctl_update(json_t *req)
{
    static const char *const  fields[] = {
        "op", "request_id", "sandbox", "allow", "ask", "credentials", NULL
    };
    json_t            *e, *r;
    const char        *id;
    eg_sandbox_t      *sb;
    eg_allow_entry_t  *allow, *ask;
    size_t             nallow, nask, natts = 0;
    eg_cred_att_t      atts[EG_CRED_PER_SANDBOX];

    if ((e = eg_ctl_check_fields(req, fields)) != NULL
        || (e = eg_ctl_sandbox_id(req, "sandbox", &id)) != NULL)
    {
        return e;
    }
    if ((sb = eg_sandbox_find(id)) == NULL) {
        return eg_ctl_err("not_found", "sandbox", "no sandbox %s", id);
    }
    if ((e = eg_ctl_entries(req, "allow", 1, &allow, &nallow)) != NULL) {
        return e;
    }
    if ((e = eg_ctl_entries(req, "ask", 0, &ask, &nask)) != NULL
        || (e = eg_ctl_credentials(req, sb->own, &sb->nown, atts, &natts))
           != NULL)
    {
        free(allow);
        free(ask);
        return e;
    }

    /* Applies to new connections; open ones were checked when made. */
    free(sb->allow);
    free(sb->ask);
    sb->allow = allow;
    sb->nallow = nallow;
    sb->ask = ask;
    sb->nask = nask;
    if (json_object_get(req, "credentials") != NULL) {
        /* attach and detach: every request from now on sees the new
         * list; a detached placeholder is refused from now on */
        eg_ctl_detached(sb, atts, natts);
        memcpy(sb->creds, atts, natts * sizeof(atts[0]));
        sb->ncreds = natts;
        eg_log(EG_LOG_INFO, "sandbox %s: %zu credentials attached", sb->id,
               natts);
    }
    eg_sandbox_own_gc(sb, 0);

    r = eg_ctl_ok("update");
    json_object_set_new(r, "sandbox", json_string(sb->id));
    return r;
}


static json_t *
eg_ctl_remove(json_t *req)
{
    static const char *const  fields[] = {
        "op", "request_id", "sandbox", NULL
    };
    json_t        *e, *r;
    const char    *id;
    eg_sandbox_t  *sb;
    unsigned       nc = 0, nl = 0;
    char           idcopy[EG_SANDBOX_ID_MAX + 1];

    if ((e = eg_ctl_check_fields(req, fields)) != NULL
        || (e = eg_ctl_sandbox_id(req, "sandbox", &id)) != NULL)
    {
        return e;
    }
    if ((sb = eg_sandbox_find(id)) == NULL) {
        return eg_ctl_err("not_found", "sandbox", "no sandbox %s", id);
    }
    snprintf(idcopy, sizeof(idcopy), "%s", id);
    eg_sandbox_unlink_free(sb, &nc, &nl);
    eg_log(EG_LOG_INFO, "sandbox %s removed: %u connections, %u sockets "
           "closed", idcopy, nc, nl);

    r = eg_ctl_ok("remove");
    json_object_set_new(r, "sandbox", json_string(idcopy));
    json_object_set_new(r, "closed_connections", json_integer(nc));
    json_object_set_new(r, "closed_listeners", json_integer(nl));
    return r;
}


static json_t *
eg_ctl_sync(json_t *req)
{
    static const char *const  fields[] = {
        "op", "request_id", "sandboxes", NULL
    };
    json_t        *e, *keep, *v, *removed, *r;
    eg_sandbox_t  *sb, *next;
    size_t         i;
    int            found;

    if ((e = eg_ctl_check_fields(req, fields)) != NULL) {
        return e;
    }
    keep = json_object_get(req, "sandboxes");
    if (keep == NULL || !json_is_array(keep)) {
        return eg_ctl_err(keep ? "bad_type" : "missing_field", "sandboxes",
                          "\"sandboxes\" must be an array of ids");
    }
    json_array_foreach(keep, i, v) {
        if (!json_is_string(v)) {
            return eg_ctl_err("bad_type", "sandboxes", "sandboxes[%zu] must "
                              "be a string", i);
        }
    }

    removed = json_array();
    for (sb = eg_proxy.sandboxes; sb != NULL; sb = next) {
        next = sb->next;
        found = 0;
        json_array_foreach(keep, i, v) {
            if (strcmp(json_string_value(v), sb->id) == 0) {
                found = 1;
                break;
            }
        }
        if (!found) {
            json_array_append_new(removed, json_string(sb->id));
            eg_sandbox_unlink_free(sb, NULL, NULL);
        }
    }

    r = eg_ctl_ok("sync");
    json_object_set_new(r, "removed", removed);
    return r;
}


static json_t *
eg_ctl_stats(json_t *req)
{
    static const char *const  fields[] = {
        "op", "request_id", "sandbox", NULL
    };
    json_t        *e, *arr, *r;
    const char    *id = NULL;
    eg_sandbox_t  *sb;

    if ((e = eg_ctl_check_fields(req, fields)) != NULL) {
        return e;
    }
    if (json_object_get(req, "sandbox") != NULL
        && (e = eg_ctl_sandbox_id(req, "sandbox", &id)) != NULL)
    {
        return e;
    }
    if (id != NULL && eg_sandbox_find(id) == NULL) {
        return eg_ctl_err("not_found", "sandbox", "no sandbox %s", id);
    }

    arr = json_array();
    for (sb = eg_proxy.sandboxes; sb != NULL; sb = sb->next) {
        if (id != NULL && strcmp(id, sb->id) != 0) {
            continue;
        }
        json_array_append_new(arr, json_pack(
            "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
            "sandbox", sb->id, "tenant", sb->tenant->id,
            "connections", (json_int_t) sb->usage.connections,
            "head_connections", (json_int_t) sb->heads,
            "bytes_out", (json_int_t) sb->usage.bytes_out,
            "bytes_in", (json_int_t) sb->usage.bytes_in,
            "attempts", (json_int_t) sb->usage.attempts,
            "refused", (json_int_t) sb->usage.refused,
            "listeners", (json_int_t) sb->nlisteners,
            "injections", (json_int_t) sb->injections,
            "placeholders_refused", (json_int_t) sb->placeholders_refused));
    }

    r = eg_ctl_ok("stats");
    json_object_set_new(r, "sandboxes", arr);
    {
        json_t     *ca = json_array();
        eg_cred_t  *cr;
        size_t      i;
        for (i = 0; ca != NULL && (cr = eg_cred_at(i)) != NULL; i++) {
            json_array_append_new(ca, json_pack("{s:s, s:b, s:I, s:I}",
                "name", cr->b.name, "loaded", cr->value != NULL,
                "injections", (json_int_t) cr->injections,
                "placeholders_refused",
                (json_int_t) cr->placeholders_refused));
        }
        json_object_set_new(r, "credentials", ca);
        json_object_set_new(r, "leaf_certificates",
                            json_integer((json_int_t) eg_tls_minted()));
    }
    json_object_set_new(r, "connections", json_integer(eg_proxy.nconns));
    json_object_set_new(r, "records_queued",
                        json_integer((json_int_t) eg_record_queued()));
    json_object_set_new(r, "records_dropped",
                        json_integer((json_int_t) eg_record_dropped_total()));
    return r;
}


static void
eg_ctl_close_pending_fds(void)
{
    unsigned  i;

    for (i = 0; i < eg_ctl.nfds; i++) {
        if (eg_ctl.fds[i] >= 0) {
            close(eg_ctl.fds[i]);
        }
    }
    eg_ctl.nfds = 0;
    eg_ctl.fd_overflow = 0;
}


static void
eg_ctl_request(const char *text, size_t len)
{
    json_t        *req, *op, *r;
    json_error_t   je;
    const char    *o;

    req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (req == NULL || !json_is_object(req)) {
        eg_ctl_close_pending_fds();
        eg_ctl_reply(eg_ctl_err("bad_json", NULL, "request is not a JSON "
                                "object: %s", req ? "not an object"
                                                  : je.text), NULL);
        json_decref(req);
        return;
    }

    op = json_object_get(req, "op");
    o = op && json_is_string(op) ? json_string_value(op) : NULL;

    if (o == NULL) {
        r = eg_ctl_err("missing_field", "op", "\"op\" (a string) is "
                       "required");
    } else if (strcmp(o, VSB_EGRESS_OP_ADD) == 0) {
        r = eg_ctl_add(req);
    } else if (eg_ctl.nfds > 0) {
        r = eg_ctl_err(VSB_EGRESS_E_BAD_FDS, NULL, "descriptors sent with "
                       "\"%s\", which takes none", o);
    } else if (strcmp(o, VSB_EGRESS_OP_PING) == 0) {
        static const char *const  fields[] = { "op", "request_id", NULL };
        r = eg_ctl_check_fields(req, fields);
        if (r == NULL) {
            r = eg_ctl_ok("ping");
            json_object_set_new(r, "version",
                                json_integer(VSB_EGRESS_PROTOCOL_VERSION));
        }
    } else if (strcmp(o, VSB_EGRESS_OP_UPDATE) == 0) {
        r = eg_ctl_update(req);
    } else if (strcmp(o, VSB_EGRESS_OP_REMOVE) == 0) {
        r = eg_ctl_remove(req);
    } else if (strcmp(o, VSB_EGRESS_OP_SYNC) == 0) {
        r = eg_ctl_sync(req);
    } else if (strcmp(o, VSB_EGRESS_OP_STATS) == 0) {
        r = eg_ctl_stats(req);
    } else {
        r = eg_ctl_err("unknown_op", "op", "unknown op \"%.64s\"", o);
    }

    eg_ctl_close_pending_fds();
    if (r == NULL) {
        r = eg_ctl_err("internal", NULL, "out of memory");
    }
    eg_ctl_reply(r, req);
    json_decref(req);
}


static void
eg_ctl_read(void)
{
    unsigned char    buf[8192];
    char             cbuf[CMSG_SPACE(EG_CTL_MAX_PENDING_FDS * sizeof(int))];
    struct iovec     iov;
    struct msghdr    msg;
    struct cmsghdr  *cm;
    ssize_t          n;
    size_t           want, used, off;
    vsb_frame_rc_t   rc;

    want = vsb_frame_need(&eg_ctl.fp);
    if (want > sizeof(buf)) {
        want = sizeof(buf);
    }

    iov.iov_base = buf;
    iov.iov_len = want;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof(cbuf);

    n = recvmsg(eg_ctl.h.fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) {
            eg_ctl_close(strerror(errno));
        }
        return;
    }

    for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t  nf = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nf; i++) {
            int  fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (eg_ctl.nfds < EG_CTL_MAX_PENDING_FDS) {
                eg_ctl.fds[eg_ctl.nfds++] = fd;
            } else {
                close(fd);
                eg_ctl.fd_overflow = 1;
            }
        }
    }
    if (msg.msg_flags & MSG_CTRUNC) {
        eg_ctl.fd_overflow = 1;
    }

    if (n == 0) {
        eg_ctl_close_pending_fds();
        eg_ctl_close("helper closed the connection");
        return;
    }

    off = 0;
    while (off < (size_t) n && eg_ctl.open) {
        rc = vsb_frame_feed(&eg_ctl.fp, buf + off, (size_t) n - off, &used);
        off += used;
        if (rc == VSB_FRAME_ERROR) {
            eg_ctl_close_pending_fds();
            eg_ctl_reply(eg_ctl_err(eg_ctl.fp.error, NULL, "%s",
                                    eg_ctl.fp.detail), NULL);
            /* framing is lost: try to send the answer, then close */
            if (eg_ctl.open) {
                ssize_t  w = write(eg_ctl.h.fd, eg_ctl.out + eg_ctl.out_off,
                                   eg_ctl.out_len);
                (void) w;
            }
            eg_ctl_close("bad frame");
            return;
        }
        if (rc == VSB_FRAME_DONE) {
            eg_ctl_request(vsb_frame_json(&eg_ctl.fp), eg_ctl.fp.json_len);
            /* a request may carry an agent's secret: its text goes */
            OPENSSL_cleanse(eg_ctl.fp.buf, eg_ctl.fp.json_len);
            if (!eg_ctl.open) {
                OPENSSL_cleanse(buf, sizeof(buf));
                return;
            }
            vsb_frame_reset(&eg_ctl.fp);
        }
    }
    OPENSSL_cleanse(buf, sizeof(buf));
}


static void
eg_ctl_event(vsb_event_t *h, uint32_t events)
{
    ssize_t  n;

    if ((events & EPOLLOUT) && eg_ctl.out_len > 0) {
        n = write(h->fd, eg_ctl.out + eg_ctl.out_off, eg_ctl.out_len);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            eg_ctl_close(strerror(errno));
            return;
        }
        if (n > 0) {
            eg_ctl.out_off += (size_t) n;
            eg_ctl.out_len -= (size_t) n;
            if (eg_ctl.out_len == 0) {
                eg_ctl.out_off = 0;
            }
        }
    }

    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        eg_ctl_read();
        if (!eg_ctl.open) {
            return;
        }
    }

    if (eg_ctl_want_out() != 0) {
        eg_ctl_close("epoll_ctl failed");
    }
}


static void
eg_ctl_close(const char *why)
{
    if (!eg_ctl.open) {
        return;
    }
    eg_log(EG_LOG_INFO, "control: helper connection closed: %s", why);
    vsb_loop_del(&eg_ctl.h);
    close(eg_ctl.h.fd);
    eg_ctl_close_pending_fds();
    vsb_frame_reset(&eg_ctl.fp);
    free(eg_ctl.out);
    eg_ctl.out = NULL;
    eg_ctl.out_off = eg_ctl.out_len = eg_ctl.out_cap = 0;
    eg_ctl.open = 0;
}


static void
eg_ctl_accept(vsb_event_t *h, uint32_t events)
{
    struct ucred  cred;
    socklen_t     cl = sizeof(cred);
    unsigned      i;
    int           fd;

    (void) events;

    fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd == -1) {
        return;
    }

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) {
        eg_log(EG_LOG_ERROR, "control: SO_PEERCRED: %s", strerror(errno));
        close(fd);
        return;
    }
    for (i = 0; i < eg_proxy.cf.nallowed_uids; i++) {
        if (eg_proxy.cf.allowed_uids[i] == cred.uid) {
            break;
        }
    }
    if (i == eg_proxy.cf.nallowed_uids) {
        eg_log(EG_LOG_ERROR, "control: refused peer uid %u pid %d",
               (unsigned) cred.uid, (int) cred.pid);
        close(fd);
        return;
    }

    if (eg_ctl.open) {
        eg_ctl_close("replaced by a new helper connection");
    }

    memset(&eg_ctl, 0, sizeof(eg_ctl));
    vsb_frame_init(&eg_ctl.fp, VSB_EGRESS_MAX_JSON, 0);
    eg_ctl.h.fd = fd;
    eg_ctl.h.handler = eg_ctl_event;
    if (vsb_loop_add(&eg_ctl.h, EPOLLIN) != 0) {
        close(fd);
        return;
    }
    eg_ctl.open = 1;
    eg_log(EG_LOG_INFO, "control: helper connected (uid %u pid %d); %u "
           "sandboxes, %zu records queued", (unsigned) cred.uid,
           (int) cred.pid, eg_proxy.nsandboxes, eg_record_queued());
    eg_control_flush();
}


int
eg_control_listen(const char *path, unsigned mode, char *err, size_t errlen)
{
    int  fd;

    fd = vsb_unix_bind(path, err, errlen);
    if (fd == -1) {
        return -1;
    }
    if (chmod(path, mode) != 0) {
        snprintf(err, errlen, "chmod %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (listen(fd, 8) != 0) {
        snprintf(err, errlen, "listen %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }

    eg_ctl_listen_h.fd = fd;
    eg_ctl_listen_h.handler = eg_ctl_accept;
    if (vsb_loop_add(&eg_ctl_listen_h, EPOLLIN) != 0) {
        snprintf(err, errlen, "epoll_ctl: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return 0;
}


void
eg_control_flush(void)
{
    if (!eg_ctl.open) {
        return;
    }
    if (eg_record_queued() == 0 && !eg_record_dropped_pending()) {
        return;
    }
    eg_ctl_push_records(0);
    if (eg_ctl_want_out() != 0) {
        eg_ctl_close("epoll_ctl failed");
    }
}


void
eg_control_shutdown(void)
{
    eg_ctl_close("proxy stopping");
}
