/*
 * c-ares on the epoll loop.  c-ares tells us which sockets it wants
 * watched (sock_state_cb); we register them and call ares_process_fd()
 * on events and on timeouts.  Results are delivered from the loop.
 */
#include <ares.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "egress.h"
#include "eg_log.h"
#include "eg_resolve.h"

#define EG_ARES_SOCKS  32

struct eg_resolve_req_s {
    eg_resolve_cb   cb;
    void           *arg;
    int             cancelled;
    int             in_start;       /* inside ares_getaddrinfo() */
    int             finished;
};

typedef struct {
    vsb_event_t   h;
    int           used;
} eg_ares_sock_t;

static ares_channel    eg_ares;
static int             eg_ares_ready;
static eg_ares_sock_t  eg_ares_socks[EG_ARES_SOCKS];


static void
eg_ares_event(vsb_event_t *h, uint32_t events)
{
    ares_socket_t  rfd = ARES_SOCKET_BAD, wfd = ARES_SOCKET_BAD;

    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        rfd = h->fd;
    }
    if (events & EPOLLOUT) {
        wfd = h->fd;
    }
    ares_process_fd(eg_ares, rfd, wfd);
}


static void
eg_ares_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
    eg_ares_sock_t  *s = NULL, *free_slot = NULL;
    uint32_t         ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
    size_t           i;

    (void) data;

    for (i = 0; i < EG_ARES_SOCKS; i++) {
        if (eg_ares_socks[i].used && eg_ares_socks[i].h.fd == fd) {
            s = &eg_ares_socks[i];
            break;
        }
        if (!eg_ares_socks[i].used && free_slot == NULL) {
            free_slot = &eg_ares_socks[i];
        }
    }

    if (ev == 0) {
        if (s != NULL) {
            vsb_loop_del(&s->h);
            s->used = 0;
        }
        return;
    }

    if (s == NULL) {
        if (free_slot == NULL) {
            /* More sockets than slots: c-ares' timeouts still fire. */
            eg_log(EG_LOG_ERROR, "resolver: more than %d sockets",
                   EG_ARES_SOCKS);
            return;
        }
        s = free_slot;
        memset(s, 0, sizeof(*s));
        s->used = 1;
        s->h.fd = fd;
        s->h.handler = eg_ares_event;
        if (vsb_loop_add(&s->h, ev) != 0) {
            s->used = 0;
        }
        return;
    }

    vsb_loop_mod(&s->h, ev);
}


int
eg_resolve_init(const char *servers, uint32_t timeout_ms, char *err,
    size_t errlen)
{
    struct ares_options  o;
    int                  rc, mask;
    char                 lookups[] = "b";

    rc = ares_library_init(ARES_LIB_INIT_ALL);
    if (rc != ARES_SUCCESS) {
        snprintf(err, errlen, "resolver: ares_library_init: %s",
                 ares_strerror(rc));
        return -1;
    }

    memset(&o, 0, sizeof(o));
    o.sock_state_cb = eg_ares_sock_state;
    o.timeout = (int) (timeout_ms / 2 > 0 ? timeout_ms / 2 : 1);
    o.tries = 2;
    o.ndomains = 0;
    o.domains = NULL;
    o.lookups = lookups;
    mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES
           | ARES_OPT_DOMAINS | ARES_OPT_LOOKUPS;

    rc = ares_init_options(&eg_ares, &o, mask);
    if (rc != ARES_SUCCESS) {
        snprintf(err, errlen, "resolver: ares_init_options: %s",
                 ares_strerror(rc));
        return -1;
    }

    if (servers != NULL && servers[0] != '\0') {
        rc = ares_set_servers_ports_csv(eg_ares, servers);
        if (rc != ARES_SUCCESS) {
            snprintf(err, errlen, "resolver: servers \"%s\": %s", servers,
                     ares_strerror(rc));
            return -1;
        }
    }

    eg_ares_ready = 1;
    return 0;
}


void
eg_resolve_shutdown(void)
{
    if (eg_ares_ready) {
        ares_destroy(eg_ares);
        ares_library_cleanup();
        eg_ares_ready = 0;
    }
}


static void
eg_resolve_done(void *arg, int status, int timeouts,
    struct ares_addrinfo *res)
{
    eg_resolve_req_t           *r = arg;
    eg_addr_t                   addrs[EG_RESOLVE_MAX_ADDRS];
    size_t                      n = 0;
    struct ares_addrinfo_node  *node;
    uint16_t                    port;
    char                        why[128];

    (void) timeouts;

    if (status == ARES_SUCCESS && res != NULL) {
        for (node = res->nodes; node != NULL && n < EG_RESOLVE_MAX_ADDRS;
             node = node->ai_next)
        {
            if (node->ai_addr != NULL
                && eg_addr_from_sockaddr(node->ai_addr, &addrs[n], &port)
                   == 0)
            {
                n++;
            }
        }
    }

    if (res != NULL) {
        ares_freeaddrinfo(res);
    }

    if (!r->cancelled) {
        if (status != ARES_SUCCESS) {
            snprintf(why, sizeof(why), "name resolution failed: %s",
                     ares_strerror(status));
            r->cb(r->arg, NULL, 0, why);
        } else if (n == 0) {
            r->cb(r->arg, NULL, 0, "name resolution failed: no address");
        } else {
            r->cb(r->arg, addrs, n, NULL);
        }
    }

    if (r->in_start) {
        r->finished = 1;             /* eg_resolve_start() frees it */
        return;
    }
    free(r);
}


int
eg_resolve_start(const char *name, eg_resolve_cb cb, void *arg,
    eg_resolve_req_t **out)
{
    eg_resolve_req_t           *r;
    struct ares_addrinfo_hints  hints;

    *out = NULL;
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return -1;
    }
    r->cb = cb;
    r->arg = arg;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    /* no RFC 6724 sorting: it would connect() probe sockets */
    hints.ai_flags = ARES_AI_NOSORT;

    /* c-ares may call back before ares_getaddrinfo() returns (a name it
     * rejects at once): then the request is already finished. */
    r->in_start = 1;
    ares_getaddrinfo(eg_ares, name, NULL, &hints, eg_resolve_done, r);
    r->in_start = 0;
    if (r->finished) {
        free(r);
        return 0;
    }
    *out = r;
    return 0;
}


void
eg_resolve_cancel(eg_resolve_req_t *r)
{
    r->cancelled = 1;
}


int
eg_resolve_next_timeout_ms(void)
{
    struct timeval  tv, *t;

    t = ares_timeout(eg_ares, NULL, &tv);
    if (t == NULL) {
        return -1;
    }
    return (int) (t->tv_sec * 1000 + (t->tv_usec + 999) / 1000);
}


void
eg_resolve_process_timeouts(void)
{
    ares_process_fd(eg_ares, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}
