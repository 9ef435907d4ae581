/*
 * Accepting on the sandbox's sockets.  Each accepted connection is
 * owned by the sandbox the listener belongs to: the proxy never has to
 * guess which sandbox a client is (no source-address mapping).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eg_conn.h"
#include "eg_dnsstub.h"
#include "eg_listen.h"
#include "eg_log.h"

#define EG_ACCEPT_BATCH  32

static const char  *eg_kind_names[EG_L_KINDS] = {
    "http", "transparent", "dns_udp", "dns_tcp"
};


const char *
eg_listen_kind_name(eg_listen_kind_t k)
{
    return k < EG_L_KINDS ? eg_kind_names[k] : "?";
}


int
eg_listen_kind_parse(const char *s, eg_listen_kind_t *k)
{
    unsigned  i;

    for (i = 0; i < EG_L_KINDS; i++) {
        if (strcmp(s, eg_kind_names[i]) == 0) {
            *k = (eg_listen_kind_t) i;
            return 0;
        }
    }
    return -1;
}


static void
eg_listen_event(vsb_event_t *h, uint32_t events)
{
    eg_listener_t  *l = h->data;
    int             fd, i;

    (void) events;

    if (l->kind == EG_L_DNS_UDP) {
        eg_dnsstub_udp_ready(l->sb, h->fd);
        return;
    }

    for (i = 0; i < EG_ACCEPT_BATCH; i++) {
        fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd == -1) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
                || errno == ENOMEM)
            {
                /* Pause until the sweep: a listener that stays readable
                 * would otherwise spin the loop. */
                eg_log(EG_LOG_ERROR, "sandbox %s: accept on %s: %s; "
                       "paused", l->sb->id, eg_listen_kind_name(l->kind),
                       strerror(errno));
                vsb_loop_mod(&l->h, 0);
                l->paused = 1;
            }
            return;
        }

        if (l->kind == EG_L_DNS_TCP) {
            eg_dnsstub_tcp_accepted(l->sb, fd);
        } else {
            eg_conn_accepted(l->sb, l->kind, fd);
        }
    }
}


int
eg_listen_attach(eg_sandbox_t *sb, eg_listen_kind_t kind, int fd,
    char *err, size_t errlen)
{
    int             type = 0, acc = 0, fl;
    socklen_t       ol = sizeof(type);
    eg_listener_t  *l;

    if (sb->nlisteners == EG_MAX_LISTENERS) {
        snprintf(err, errlen, "more than %d listeners", EG_MAX_LISTENERS);
        close(fd);
        return -1;
    }

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol) != 0) {
        snprintf(err, errlen, "%s descriptor is not a socket: %s",
                 eg_listen_kind_name(kind), strerror(errno));
        close(fd);
        return -1;
    }

    ol = sizeof(acc);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &ol) != 0) {
        acc = 0;
    }

    if (kind == EG_L_DNS_UDP ? type != SOCK_DGRAM
                             : (type != SOCK_STREAM || !acc))
    {
        snprintf(err, errlen, "%s descriptor is not a %s socket",
                 eg_listen_kind_name(kind),
                 kind == EG_L_DNS_UDP ? "datagram" : "listening stream");
        close(fd);
        return -1;
    }

    fl = fcntl(fd, F_GETFL);
    if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1
        || fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
    {
        snprintf(err, errlen, "fcntl on %s descriptor: %s",
                 eg_listen_kind_name(kind), strerror(errno));
        close(fd);
        return -1;
    }

    l = &sb->listeners[sb->nlisteners];
    memset(l, 0, sizeof(*l));
    l->h.fd = fd;
    l->h.handler = eg_listen_event;
    l->h.data = l;
    l->kind = kind;
    l->sb = sb;

    if (vsb_loop_add(&l->h, EPOLLIN) != 0) {
        snprintf(err, errlen, "epoll_ctl: %s", strerror(errno));
        close(fd);
        return -1;
    }
    sb->nlisteners++;
    return 0;
}


void
eg_listen_close_all(eg_sandbox_t *sb)
{
    unsigned  i;

    for (i = 0; i < sb->nlisteners; i++) {
        vsb_loop_del(&sb->listeners[i].h);
        close(sb->listeners[i].h.fd);
    }
    sb->nlisteners = 0;
}


void
eg_listen_resume(eg_sandbox_t *sb)
{
    unsigned  i;

    for (i = 0; i < sb->nlisteners; i++) {
        if (sb->listeners[i].paused) {
            sb->listeners[i].paused = 0;
            vsb_loop_mod(&sb->listeners[i].h, EPOLLIN);
        }
    }
}
