/*
 * The egress proxy's control link, driven by the helper's event loop:
 * a queue of requests (one in flight), the frame reader, and a timer per
 * request.  See vsb_egress_ctl.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vsb_egress_ctl.h"
#include "vsb_egress_protocol.h"
#include "vsb_frame.h"
#include "vsb_log.h"
#include "vsb_loop.h"

#define VSB_ECTL_READS_PER_EV  32       /* then let other events run */

typedef struct vsb_ectl_req_s  vsb_ectl_req_t;

struct vsb_ectl_req_s {
    unsigned char       *frame;
    size_t               len;
    size_t               off;           /* bytes written */
    int                  fds[VSB_EGRESS_MAX_FDS];
    size_t               nfds;
    vsb_ectl_reply_pt    cb;
    void                *data;
    vsb_timer_t          timer;
    vsb_ectl_req_t      *next;
};

static struct {
    vsb_event_t          ev;
    int                  open;
    vsb_frame_parser_t   fp;
    vsb_ectl_req_t      *head, *tail;   /* head is in flight once written */
    unsigned             n;
    vsb_ectl_event_pt    on_event;
    vsb_ectl_down_pt     on_down;
} vsb_ectl;

static void vsb_ectl_fail(const char *why);


void
vsb_ectl_init(vsb_ectl_event_pt on_event, vsb_ectl_down_pt on_down)
{
    vsb_ectl.on_event = on_event;
    vsb_ectl.on_down = on_down;
    vsb_ectl.ev.fd = -1;
}


int
vsb_ectl_is_open(void)
{
    return vsb_ectl.open;
}


unsigned
vsb_ectl_queued(void)
{
    return vsb_ectl.n;
}


static void
vsb_ectl_req_free(vsb_ectl_req_t *q)
{
    size_t  i;

    vsb_timer_del(&q->timer);
    for (i = 0; i < q->nfds; i++) {
        if (q->fds[i] >= 0) {
            close(q->fds[i]);
        }
    }
    if (q->frame != NULL) {
        explicit_bzero(q->frame, q->len);
    }
    free(q->frame);
    free(q);
}


/* Unlinks q (anywhere in the queue). */
static void
vsb_ectl_unlink(vsb_ectl_req_t *q)
{
    vsb_ectl_req_t  **pp, *prev = NULL;

    for (pp = &vsb_ectl.head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == q) {
            *pp = q->next;
            if (vsb_ectl.tail == q) {
                vsb_ectl.tail = prev;
            }
            vsb_ectl.n--;
            return;
        }
        prev = *pp;
    }
}


static void
vsb_ectl_want(void)
{
    uint32_t  events = EPOLLIN;

    if (vsb_ectl.head != NULL && vsb_ectl.head->off < vsb_ectl.head->len) {
        events |= EPOLLOUT;
    }
    if (vsb_loop_mod(&vsb_ectl.ev, events) != 0) {
        vsb_ectl_fail("epoll_ctl on the control socket failed");
    }
}


/* Writes what it can of the head request. */
static void
vsb_ectl_write(void)
{
    vsb_ectl_req_t  *q = vsb_ectl.head;
    struct msghdr    msg;
    struct iovec     iov;
    struct cmsghdr  *cm;
    char             cbuf[CMSG_SPACE(VSB_EGRESS_MAX_FDS * sizeof(int))];
    ssize_t          n;

    while (q != NULL && q->off < q->len) {
        iov.iov_base = q->frame + q->off;
        iov.iov_len = q->len - q->off;
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (q->off == 0 && q->nfds > 0) {
            memset(cbuf, 0, sizeof(cbuf));
            msg.msg_control = cbuf;
            msg.msg_controllen = CMSG_SPACE(q->nfds * sizeof(int));
            cm = CMSG_FIRSTHDR(&msg);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(q->nfds * sizeof(int));
            memcpy(CMSG_DATA(cm), q->fds, q->nfds * sizeof(int));
        }

        n = sendmsg(vsb_ectl.ev.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                return;
            }
            vsb_ectl_fail(strerror(errno));
            return;
        }
        q->off += (size_t) n;
    }
}


static void
vsb_ectl_frame(const char *text, size_t len)
{
    json_t          *o;
    json_error_t     je;
    vsb_ectl_req_t  *q;

    o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (o == NULL || !json_is_object(o)) {
        json_decref(o);
        vsb_ectl_fail("a frame from the proxy is not a JSON object");
        return;
    }

    if (json_object_get(o, "event") != NULL) {
        if (vsb_ectl.on_event != NULL) {
            vsb_ectl.on_event(o);
        }
        json_decref(o);
        return;
    }

    q = vsb_ectl.head;
    if (q == NULL || q->off < q->len) {
        json_decref(o);
        vsb_ectl_fail("a reply from the proxy nobody asked for");
        return;
    }

    vsb_ectl_unlink(q);
    if (q->cb != NULL) {
        q->cb(q->data, o, NULL);
    }
    json_decref(o);
    vsb_ectl_req_free(q);

    if (vsb_ectl.open && vsb_ectl.head != NULL) {
        vsb_ectl_write();
    }
}


static void
vsb_ectl_read(void)
{
    unsigned char   buf[16384];
    ssize_t         n;
    size_t          off, used;
    unsigned        i;
    vsb_frame_rc_t  rc;

    for (i = 0; i < VSB_ECTL_READS_PER_EV && vsb_ectl.open; i++) {
        n = read(vsb_ectl.ev.fd, buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN) {
                vsb_ectl_fail(strerror(errno));
            }
            return;
        }
        if (n == 0) {
            vsb_ectl_fail("the proxy closed the control connection");
            return;
        }

        for (off = 0; off < (size_t) n && vsb_ectl.open; off += used) {
            rc = vsb_frame_feed(&vsb_ectl.fp, buf + off, (size_t) n - off,
                                &used);
            if (rc == VSB_FRAME_ERROR) {
                vsb_log(VSB_LOG_ERR, "egress: bad frame from the proxy: %s",
                        vsb_ectl.fp.detail);
                vsb_ectl_fail("bad frame from the proxy");
                return;
            }
            if (rc == VSB_FRAME_DONE) {
                /* the parser is reset first: the handler may close */
                unsigned char  *f = vsb_frame_steal(&vsb_ectl.fp);
                size_t          jl = vsb_ectl.fp.json_len;

                vsb_frame_reset(&vsb_ectl.fp);
                vsb_ectl_frame((const char *) f, jl);
                free(f);
            }
        }
    }
}


static void
vsb_ectl_handler(vsb_event_t *ev, uint32_t revents)
{
    if (revents & EPOLLOUT) {
        vsb_ectl_write();
    }
    if (vsb_ectl.open && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        vsb_ectl_read();
    }
    if (vsb_ectl.open) {
        vsb_ectl_want();
    }
}


static void
vsb_ectl_timeout(vsb_timer_t *t)
{
    vsb_ectl_req_t  *q = t->data;
    char             why[128];

    if (q == vsb_ectl.head && q->off > 0) {
        /* in flight: the proxy is stuck */
        vsb_ectl_fail("the proxy did not answer in time");
        return;
    }

    snprintf(why, sizeof(why), "queued behind %u requests to the proxy, "
             "not sent in time", vsb_ectl.n - 1);
    vsb_ectl_unlink(q);
    if (q->cb != NULL) {
        q->cb(q->data, NULL, why);
    }
    vsb_ectl_req_free(q);
}


/* Closes and fails every request; callbacks may queue new requests (they
 * fail: the link is closed). */
static void
vsb_ectl_shut(const char *why)
{
    vsb_ectl_req_t  *q, *next;

    if (vsb_ectl.ev.fd != -1) {
        (void) vsb_loop_del(&vsb_ectl.ev);
        close(vsb_ectl.ev.fd);
        vsb_ectl.ev.fd = -1;
    }
    vsb_frame_reset(&vsb_ectl.fp);
    vsb_ectl.open = 0;

    q = vsb_ectl.head;
    vsb_ectl.head = vsb_ectl.tail = NULL;
    vsb_ectl.n = 0;

    for (; q != NULL; q = next) {
        next = q->next;
        if (q->cb != NULL) {
            q->cb(q->data, NULL, why);
        }
        vsb_ectl_req_free(q);
    }
}


static void
vsb_ectl_fail(const char *why)
{
    if (!vsb_ectl.open) {
        return;
    }
    vsb_log(VSB_LOG_ERR, "egress: control link to the proxy failed: %s", why);
    vsb_ectl_shut(why);
    if (vsb_ectl.on_down != NULL) {
        vsb_ectl.on_down(why);
    }
}


void
vsb_ectl_close(const char *why)
{
    vsb_ectl_shut(why);
}


int
vsb_ectl_open(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un  sa;
    int                 fd;

    if (vsb_ectl.open) {
        return 0;
    }
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "control socket path too long: %s", path);
        return -1;
    }

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd == -1) {
        snprintf(err, errlen, "socket(AF_UNIX): %s", strerror(errno));
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));

    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        snprintf(err, errlen, "connect %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }

    vsb_frame_init(&vsb_ectl.fp, VSB_EGRESS_MAX_JSON, 0);
    vsb_ectl.ev.fd = fd;
    vsb_ectl.ev.handler = vsb_ectl_handler;
    vsb_ectl.ev.data = NULL;
    if (vsb_loop_add(&vsb_ectl.ev, EPOLLIN) != 0) {
        snprintf(err, errlen, "epoll_ctl on the control socket failed");
        close(fd);
        vsb_ectl.ev.fd = -1;
        return -1;
    }
    vsb_ectl.open = 1;
    return 0;
}


int
vsb_ectl_send(json_t *req, const int *fds, size_t nfds, uint64_t timeout_ms,
    vsb_ectl_reply_pt cb, void *data)
{
    vsb_ectl_req_t  *q;
    char            *s;
    size_t           i;

    if (!vsb_ectl.open || nfds > VSB_EGRESS_MAX_FDS) {
        return -1;
    }

    q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return -1;
    }

    s = json_dumps(req, JSON_COMPACT);
    if (s != NULL) {
        q->frame = vsb_frame_encode_head(s, strlen(s), 0, &q->len);
        explicit_bzero(s, strlen(s));   /* may hold an agent's secret */
        free(s);
    }
    if (q->frame == NULL) {
        free(q);
        return -1;
    }

    for (i = 0; i < nfds; i++) {
        q->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        q->nfds = i + 1;
        if (q->fds[i] == -1) {
            vsb_log_errno(VSB_LOG_ERR, "egress: dup of a sandbox socket");
            vsb_ectl_req_free(q);
            return -1;
        }
    }

    q->cb = cb;
    q->data = data;
    q->timer.handler = vsb_ectl_timeout;
    q->timer.data = q;
    vsb_timer_add(&q->timer, timeout_ms);

    if (vsb_ectl.tail != NULL) {
        vsb_ectl.tail->next = q;
    } else {
        vsb_ectl.head = q;
    }
    vsb_ectl.tail = q;
    vsb_ectl.n++;

    /* written from the loop: no callback runs before this returns */
    if (q == vsb_ectl.head
        && vsb_loop_mod(&vsb_ectl.ev, EPOLLIN | EPOLLOUT) != 0)
    {
        vsb_ectl_unlink(q);
        vsb_ectl_req_free(q);
        return -1;
    }
    return 0;
}


void
vsb_ectl_forget(void *data)
{
    vsb_ectl_req_t  *q;

    for (q = vsb_ectl.head; q != NULL; q = q->next) {
        if (q->data == data) {
            q->cb = NULL;
        }
    }
}
