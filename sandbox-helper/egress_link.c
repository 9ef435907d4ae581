/*
 * The helper's side of network egress: configuring a sandbox's network
 * namespace (routes, nftables, listening sockets) and the control
 * protocol to the egress proxy (vsb_egress_protocol.h).  The namespace
 * never gets a link to the outside: its only way out is the sockets
 * created here and served by the unprivileged proxy in the host's
 * namespace.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vsb_egress_link.h"
#include "vsb_fdio.h"
#include "vsb_frame.h"
#include "vsb_net.h"

#define VSB_EG_NFT_ERR_MAX  1024

/* Ports are fixed: the namespace is the sandbox's own, and the sockets
 * exist before any workload runs, so nothing else can hold them. */
static const char  vsb_egress_ruleset[] =
    "table inet veto_egress {\n"
    "    chain nat_output {\n"
    "        type nat hook output priority -100; policy accept;\n"
    "        ip daddr 127.0.0.0/8 return\n"
    "        ip6 daddr ::1 return\n"
    "        meta l4proto tcp tcp dport { 80, 443 } redirect to :3129\n"
    "    }\n"
    "    chain filter_output {\n"
    "        type filter hook output priority 0; policy drop;\n"
    "        ip daddr 127.0.0.0/8 accept\n"
    "        ip6 daddr ::1 accept\n"
    "        meta l4proto tcp reject with tcp reset\n"
    "        reject with icmpx admin-prohibited\n"
    "    }\n"
    "}\n";

static const char *const  vsb_egress_envv[] = {
    "HTTP_PROXY=http://127.0.0.1:3128",
    "HTTPS_PROXY=http://127.0.0.1:3128",
    "ALL_PROXY=http://127.0.0.1:3128",
    "http_proxy=http://127.0.0.1:3128",
    "https_proxy=http://127.0.0.1:3128",
    "all_proxy=http://127.0.0.1:3128",
    "NO_PROXY=localhost,127.0.0.1",
    "no_proxy=localhost,127.0.0.1",
    NULL
};

struct vsb_egress_link_s {
    int                 fd;
    int                 timeout_ms;
    vsb_frame_parser_t  fp;
    unsigned char       rbuf[16384];
    size_t              roff, rlen;
    json_t             *events;
    size_t              event_bytes;
    uint64_t            dropped;
};


const char *
vsb_egress_nft_ruleset(void)
{
    return vsb_egress_ruleset;
}


const char *const *
vsb_egress_env(void)
{
    return vsb_egress_envv;
}


const char *
vsb_egress_resolv_conf(void)
{
    return "# Veto Sandbox: the egress proxy's DNS stub; names outside the\n"
           "# sandbox's allowlist answer NXDOMAIN at once.\n"
           "nameserver " VSB_EGRESS_DNS_ADDR "\n"
           "options timeout:2 attempts:2\n";
}


void
vsb_egress_socks_init(vsb_egress_socks_t *s)
{
    s->http_fd = s->transparent_fd = s->transparent6_fd = -1;
    s->dns_udp_fd = s->dns_tcp_fd = -1;
}


void
vsb_egress_socks_close(vsb_egress_socks_t *s)
{
    int  *fds[] = { &s->http_fd, &s->transparent_fd, &s->transparent6_fd,
                    &s->dns_udp_fd, &s->dns_tcp_fd };
    size_t  i;

    for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
    }
}


/* RTM_NEWROUTE: default route of family through lo, with the loopback
 * address as source (so redirected connections come from 127.0.0.1). */
static int
vsb_egress_route(int family, char *err, size_t errlen)
{
    struct {
        struct nlmsghdr  n;
        struct rtmsg     r;
        char             buf[64];
    } req;
    struct {
        struct nlmsghdr  n;
        struct nlmsgerr  e;
        char             pad[256];
    } ack;
    struct rtattr       *rta;
    struct sockaddr_nl   sa;
    int                  fd, ifindex;
    unsigned char        src[16];
    size_t               srclen;
    ssize_t              n;

    ifindex = (int) if_nametoindex("lo");
    if (ifindex == 0) {
        snprintf(err, errlen, "egress: if_nametoindex(lo): %s",
                 strerror(errno));
        return -1;
    }

    memset(src, 0, sizeof(src));
    if (family == AF_INET) {
        inet_pton(AF_INET, "127.0.0.1", src);
        srclen = 4;
    } else {
        src[15] = 1;
        srclen = 16;
    }

    memset(&req, 0, sizeof(req));
    req.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    req.n.nlmsg_type = RTM_NEWROUTE;
    req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
    req.n.nlmsg_seq = 1;
    req.r.rtm_family = (unsigned char) family;
    req.r.rtm_table = RT_TABLE_MAIN;
    req.r.rtm_protocol = RTPROT_BOOT;
    req.r.rtm_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
    req.r.rtm_type = RTN_UNICAST;

    rta = (struct rtattr *) ((char *) &req + NLMSG_ALIGN(req.n.nlmsg_len));
    rta->rta_type = RTA_OIF;
    rta->rta_len = RTA_LENGTH(sizeof(int));
    memcpy(RTA_DATA(rta), &ifindex, sizeof(int));
    req.n.nlmsg_len = NLMSG_ALIGN(req.n.nlmsg_len) + RTA_ALIGN(rta->rta_len);

    rta = (struct rtattr *) ((char *) &req + NLMSG_ALIGN(req.n.nlmsg_len));
    rta->rta_type = RTA_PREFSRC;
    rta->rta_len = (unsigned short) RTA_LENGTH(srclen);
    memcpy(RTA_DATA(rta), src, srclen);
    req.n.nlmsg_len = NLMSG_ALIGN(req.n.nlmsg_len) + RTA_ALIGN(rta->rta_len);

    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd == -1) {
        snprintf(err, errlen, "egress: netlink socket: %s", strerror(errno));
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.nl_family = AF_NETLINK;
    if (sendto(fd, &req, req.n.nlmsg_len, 0, (struct sockaddr *) &sa,
               sizeof(sa)) < 0)
    {
        snprintf(err, errlen, "egress: netlink send: %s", strerror(errno));
        close(fd);
        return -1;
    }
    n = recv(fd, &ack, sizeof(ack), 0);
    close(fd);
    if (n < (ssize_t) (NLMSG_HDRLEN + sizeof(struct nlmsgerr))
        || ack.n.nlmsg_type != NLMSG_ERROR)
    {
        snprintf(err, errlen, "egress: netlink: no acknowledgement for the "
                 "IPv%d default route", family == AF_INET ? 4 : 6);
        return -1;
    }
    if (ack.e.error != 0) {
        errno = -ack.e.error;
        snprintf(err, errlen, "egress: add IPv%d default route via lo: %s",
                 family == AF_INET ? 4 : 6, strerror(-ack.e.error));
        return -1;
    }
    return 0;
}


static int
vsb_egress_socket(int family, int type, const char *addr, uint16_t port,
    char *err, size_t errlen)
{
    struct sockaddr_storage  ss;
    struct sockaddr_in      *s4 = (struct sockaddr_in *) &ss;
    struct sockaddr_in6     *s6 = (struct sockaddr_in6 *) &ss;
    socklen_t                sl;
    int                      fd, one = 1;

    memset(&ss, 0, sizeof(ss));
    if (family == AF_INET) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        inet_pton(AF_INET, addr, &s4->sin_addr);
        sl = sizeof(*s4);
    } else {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        inet_pton(AF_INET6, addr, &s6->sin6_addr);
        sl = sizeof(*s6);
    }

    fd = socket(family, type | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        snprintf(err, errlen, "egress: socket for %s:%u: %s", addr, port,
                 strerror(errno));
        return -1;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0
        || (family == AF_INET6
            && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))
               != 0))
    {
        snprintf(err, errlen, "egress: setsockopt for %s:%u: %s", addr, port,
                 strerror(errno));
        close(fd);
        return -1;
    }
    if (bind(fd, (struct sockaddr *) &ss, sl) != 0) {
        snprintf(err, errlen, "egress: bind %s:%u in the sandbox's "
                 "namespace: %s", addr, port, strerror(errno));
        close(fd);
        return -1;
    }
    if (type == SOCK_STREAM && listen(fd, 128) != 0) {
        snprintf(err, errlen, "egress: listen %s:%u: %s", addr, port,
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}


/* Runs "nft -f -" with the ruleset on stdin.  The child is forked from
 * this thread, which is inside the sandbox's namespace: nft configures
 * that namespace. */
static int
vsb_egress_nft(const char *nft_path, char *err, size_t errlen)
{
    int          in[2], out[2], status;
    pid_t        pid;
    char         msg[VSB_EG_NFT_ERR_MAX];
    size_t       mlen = 0, len = sizeof(vsb_egress_ruleset) - 1;
    ssize_t      n;
    char *const  argv[] = { (char *) "nft", (char *) "-f", (char *) "-",
                            NULL };
    char *const  envp[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                            NULL };

    if (pipe2(in, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "egress: pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "egress: pipe: %s", strerror(errno));
        close(in[0]);
        close(in[1]);
        return -1;
    }

    pid = fork();
    if (pid == -1) {
        snprintf(err, errlen, "egress: fork for nft: %s", strerror(errno));
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        return -1;
    }

    if (pid == 0) {
        sigset_t  all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        if (dup2(in[0], 0) == -1 || dup2(out[1], 1) == -1
            || dup2(out[1], 2) == -1)
        {
            _exit(126);
        }
        syscall(SYS_close_range, 3U, ~0U, 0U);
        execve(nft_path, argv, envp);
        dprintf(2, "exec %s: %s", nft_path, strerror(errno));
        _exit(127);
    }

    close(in[0]);
    close(out[1]);

    /* a failure: nft died, its status says why */
    (void) vsb_write_full(in[1], vsb_egress_ruleset, len);
    close(in[1]);

    for ( ;; ) {
        n = read(out[0], msg + mlen, sizeof(msg) - 1 - mlen);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        mlen += (size_t) n;
        if (mlen == sizeof(msg) - 1) {
            char  drain[256];
            while (read(out[0], drain, sizeof(drain)) > 0) { }
            break;
        }
    }
    close(out[0]);
    msg[mlen] = '\0';
    while (mlen > 0 && (msg[mlen - 1] == '\n' || msg[mlen - 1] == ' ')) {
        msg[--mlen] = '\0';
    }

    while (waitpid(pid, &status, 0) == -1) {
        if (errno != EINTR) {
            snprintf(err, errlen, "egress: waitpid nft: %s", strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "egress: %s -f - failed (status %d): %s",
                 nft_path, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                 mlen ? msg : "no message");
        return -1;
    }
    return 0;
}


int
vsb_egress_netns_setup(int netns_fd, const char *nft_path,
    vsb_egress_socks_t *s, char *err, size_t errlen)
{
    int   self, rc = -1, have6;
    char  back[256];

    vsb_egress_socks_init(s);
    if (nft_path == NULL) {
        nft_path = VSB_EGRESS_NFT_PATH;
    }

    self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self == -1) {
        snprintf(err, errlen, "egress: open /proc/thread-self/ns/net: %s",
                 strerror(errno));
        return -1;
    }
    if (setns(netns_fd, CLONE_NEWNET) != 0) {
        snprintf(err, errlen, "egress: enter the sandbox's network "
                 "namespace: %s", strerror(errno));
        close(self);
        return -1;
    }

    if (vsb_net_loopback_up(err, errlen) != 0
        || vsb_egress_route(AF_INET, err, errlen) != 0)
    {
        goto out;
    }
    /* IPv6 may be off in the namespace (sysctl): then IPv4 only. */
    have6 = vsb_egress_route(AF_INET6, err, errlen) == 0;

    if (vsb_egress_nft(nft_path, err, errlen) != 0) {
        goto out;
    }

    s->http_fd = vsb_egress_socket(AF_INET, SOCK_STREAM, "127.0.0.1",
                                   VSB_EGRESS_HTTP_PORT, err, errlen);
    if (s->http_fd < 0) {
        goto out;
    }
    s->transparent_fd = vsb_egress_socket(AF_INET, SOCK_STREAM, "127.0.0.1",
                                          VSB_EGRESS_TRANSPARENT_PORT, err,
                                          errlen);
    if (s->transparent_fd < 0) {
        goto out;
    }
    if (have6) {
        s->transparent6_fd = vsb_egress_socket(AF_INET6, SOCK_STREAM, "::1",
                                               VSB_EGRESS_TRANSPARENT_PORT,
                                               err, errlen);
        if (s->transparent6_fd < 0) {
            goto out;
        }
    }
    s->dns_udp_fd = vsb_egress_socket(AF_INET, SOCK_DGRAM,
                                      VSB_EGRESS_DNS_ADDR, 53, err, errlen);
    if (s->dns_udp_fd < 0) {
        goto out;
    }
    s->dns_tcp_fd = vsb_egress_socket(AF_INET, SOCK_STREAM,
                                      VSB_EGRESS_DNS_ADDR, 53, err, errlen);
    if (s->dns_tcp_fd < 0) {
        goto out;
    }
    err[0] = '\0';
    rc = 0;

out:
    if (setns(self, CLONE_NEWNET) != 0) {
        /* This thread would stay in the sandbox's namespace: fatal. */
        snprintf(back, sizeof(back), "egress: return to the helper's "
                 "network namespace: %s", strerror(errno));
        snprintf(err, errlen, "%s", back);
        rc = -1;
    }
    close(self);
    if (rc != 0) {
        vsb_egress_socks_close(s);
    }
    return rc;
}


/* ---- control protocol -------------------------------------------------- */

static int
vsb_egress_wait(vsb_egress_link_t *l, short what, int64_t deadline,
    char *err, size_t errlen)
{
    struct pollfd    p;
    struct timespec  ts;
    int64_t          now, left;
    int              n;

    for ( ;; ) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        left = deadline - now;
        if (left < 0) {
            left = 0;
        }
        p.fd = l->fd;
        p.events = what;
        p.revents = 0;
        n = poll(&p, 1, (int) left);
        if (n > 0) {
            return 0;
        }
        if (n == 0) {
            snprintf(err, errlen, "egress proxy: no answer within %d ms",
                     l->timeout_ms);
            return -1;
        }
        if (errno != EINTR) {
            snprintf(err, errlen, "egress proxy: poll: %s", strerror(errno));
            return -1;
        }
    }
}


static int64_t
vsb_egress_deadline(int ms)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
}


vsb_egress_link_t *
vsb_egress_connect(const char *path, int timeout_ms, char *err,
    size_t errlen)
{
    vsb_egress_link_t   *l;
    struct sockaddr_un   sa;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "egress proxy socket path too long: %s", path);
        return NULL;
    }

    l = calloc(1, sizeof(*l));
    if (l == NULL) {
        snprintf(err, errlen, "egress proxy: out of memory");
        return NULL;
    }
    l->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
    l->events = json_array();
    vsb_frame_init(&l->fp, VSB_EGRESS_MAX_JSON, 0);

    l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l->fd == -1 || l->events == NULL) {
        snprintf(err, errlen, "egress proxy: socket: %s", strerror(errno));
        vsb_egress_close(l);
        return NULL;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    if (connect(l->fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        snprintf(err, errlen, "egress proxy: connect %s: %s", path,
                 strerror(errno));
        vsb_egress_close(l);
        return NULL;
    }
    return l;
}


void
vsb_egress_close(vsb_egress_link_t *l)
{
    if (l == NULL) {
        return;
    }
    if (l->fd >= 0) {
        close(l->fd);
    }
    vsb_frame_reset(&l->fp);
    json_decref(l->events);
    free(l);
}


int
vsb_egress_fd(const vsb_egress_link_t *l)
{
    return l->fd;
}


static void
vsb_egress_store_event(vsb_egress_link_t *l, json_t *ev, size_t bytes)
{
    json_t  *d = json_object_get(ev, "count");

    if (strcmp(json_string_value(json_object_get(ev, "event")),
               "records_dropped") == 0)
    {
        if (json_is_integer(d) && json_integer_value(d) > 0) {
            l->dropped += (uint64_t) json_integer_value(d);
        }
        json_decref(ev);
        return;
    }

    while (json_array_size(l->events) > 0
           && l->event_bytes + bytes > VSB_EGRESS_MAX_EVENT_BYTES)
    {
        json_t  *old = json_array_get(l->events, 0);
        char    *s = json_dumps(old, JSON_COMPACT);
        l->event_bytes -= s ? strlen(s) : 0;
        free(s);
        json_array_remove(l->events, 0);
        l->dropped++;
    }
    if (bytes > VSB_EGRESS_MAX_EVENT_BYTES) {
        json_decref(ev);
        l->dropped++;
        return;
    }
    json_array_append_new(l->events, ev);
    l->event_bytes += bytes;
}


/* Reads frames until a reply (returned) or, with want_reply 0, until
 * the deadline passes (returns NULL, not an error). */
static int
vsb_egress_read(vsb_egress_link_t *l, int want_reply, int64_t deadline,
    json_t **reply, char *err, size_t errlen)
{
    vsb_frame_rc_t  rc;
    size_t          used;
    ssize_t         n;
    json_t         *o;
    json_error_t    je;

    for ( ;; ) {
        while (l->rlen > 0) {
            rc = vsb_frame_feed(&l->fp, l->rbuf + l->roff, l->rlen, &used);
            l->roff += used;
            l->rlen -= used;
            if (rc == VSB_FRAME_ERROR) {
                snprintf(err, errlen, "egress proxy: bad frame: %s",
                         l->fp.detail);
                return -1;
            }
            if (rc != VSB_FRAME_DONE) {
                continue;
            }
            o = json_loadb(vsb_frame_json(&l->fp), l->fp.json_len, 0, &je);
            used = l->fp.json_len;
            vsb_frame_reset(&l->fp);
            if (o == NULL || !json_is_object(o)) {
                json_decref(o);
                snprintf(err, errlen, "egress proxy: bad JSON in a frame");
                return -1;
            }
            if (json_is_string(json_object_get(o, "event"))) {
                vsb_egress_store_event(l, o, used);
                continue;
            }
            if (!want_reply) {
                json_decref(o);
                snprintf(err, errlen, "egress proxy: a reply nobody asked "
                         "for");
                return -1;
            }
            *reply = o;
            return 0;
        }
        l->roff = 0;

        if (vsb_egress_wait(l, POLLIN, deadline, err, errlen) != 0) {
            return want_reply ? -1 : 0;
        }
        n = read(l->fd, l->rbuf, sizeof(l->rbuf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            snprintf(err, errlen, "egress proxy: %s",
                     n == 0 ? "closed the connection" : strerror(errno));
            return -1;
        }
        l->rlen = (size_t) n;
    }
}


int
vsb_egress_request(vsb_egress_link_t *l, json_t *req, const int *fds,
    size_t nfds, json_t **reply, char *err, size_t errlen)
{
    char            *s;
    unsigned char   *frame;
    size_t           flen, off = 0;
    int64_t          deadline = vsb_egress_deadline(l->timeout_ms);
    struct msghdr    msg;
    struct iovec     iov;
    struct cmsghdr  *cm;
    char             cbuf[CMSG_SPACE(VSB_EGRESS_MAX_FDS * sizeof(int))];
    ssize_t          n;
    json_t          *r = NULL, *ok;
    int              rc;

    if (reply != NULL) {
        *reply = NULL;
    }
    if (nfds > VSB_EGRESS_MAX_FDS) {
        snprintf(err, errlen, "egress proxy: more than %d descriptors",
                 VSB_EGRESS_MAX_FDS);
        return -1;
    }

    s = json_dumps(req, JSON_COMPACT);
    if (s == NULL) {
        snprintf(err, errlen, "egress proxy: cannot encode the request");
        return -1;
    }
    frame = vsb_frame_encode_head(s, strlen(s), 0, &flen);
    free(s);
    if (frame == NULL) {
        snprintf(err, errlen, "egress proxy: request larger than %d bytes",
                 VSB_MAX_JSON);
        return -1;
    }

    while (off < flen) {
        if (vsb_egress_wait(l, POLLOUT, deadline, err, errlen) != 0) {
            free(frame);
            return -1;
        }
        iov.iov_base = frame + off;
        iov.iov_len = flen - off;
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (off == 0 && nfds > 0) {
            memset(cbuf, 0, sizeof(cbuf));
            msg.msg_control = cbuf;
            msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
            cm = CMSG_FIRSTHDR(&msg);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
            memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
        }
        n = sendmsg(l->fd, &msg, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n < 0) {
            snprintf(err, errlen, "egress proxy: send: %s", strerror(errno));
            free(frame);
            return -1;
        }
        off += (size_t) n;
    }
    free(frame);

    if (vsb_egress_read(l, 1, deadline, &r, err, errlen) != 0) {
        return -1;
    }

    ok = json_object_get(r, "ok");
    rc = json_is_true(ok) ? 0 : -1;
    if (rc != 0) {
        snprintf(err, errlen, "egress proxy: %s: %s",
                 json_string_value(json_object_get(r, "error"))
                 ? json_string_value(json_object_get(r, "error")) : "error",
                 json_string_value(json_object_get(r, "detail"))
                 ? json_string_value(json_object_get(r, "detail")) : "");
    }
    if (reply != NULL) {
        *reply = r;
    } else {
        json_decref(r);
    }
    return rc;
}


static json_t *
vsb_egress_strings(const char *const *v, size_t n)
{
    json_t  *a = json_array();
    size_t   i;

    for (i = 0; a != NULL && i < n; i++) {
        json_array_append_new(a, json_string(v[i]));
    }
    return a;
}


static int
vsb_egress_simple(vsb_egress_link_t *l, json_t *req, json_t **reply,
    char *err, size_t errlen)
{
    int  rc;

    if (req == NULL) {
        snprintf(err, errlen, "egress proxy: cannot build the request");
        return -1;
    }
    rc = vsb_egress_request(l, req, NULL, 0, reply, err, errlen);
    json_decref(req);
    return rc;
}


int
vsb_egress_ping(vsb_egress_link_t *l, json_t **reply, char *err,
    size_t errlen)
{
    return vsb_egress_simple(l, json_pack("{s:s}", "op", VSB_EGRESS_OP_PING),
                             reply, err, errlen);
}


int
vsb_egress_tenant_ok(const char *tenant)
{
    size_t  n;

    if (tenant == NULL) {
        return 0;
    }
    for (n = 0; tenant[n] != '\0'; n++) {
        if ((unsigned char) tenant[n] < 0x21
            || (unsigned char) tenant[n] > 0x7e)
        {
            return 0;
        }
    }
    return n > 0 && n <= VSB_EGRESS_MAX_TENANT;
}


static json_t *
vsb_egress_policy_req(const char *op, const vsb_egress_policy_t *p)
{
    json_t  *req = json_pack("{s:s, s:s, s:o, s:o}", "op", op,
                             "sandbox", p->sandbox,
                             "allow", vsb_egress_strings(p->allow, p->nallow),
                             "ask", vsb_egress_strings(p->ask, p->nask));
    json_t  *creds;
    size_t   i;

    if (req != NULL && p->creds != NULL) {
        creds = json_array();
        for (i = 0; creds != NULL && i < p->ncreds; i++) {
            const char  *eq = strchr(p->creds[i], '=');
            if (eq == NULL) {
                continue;
            }
            json_array_append_new(creds, json_pack("{s:s%, s:s}",
                "name", p->creds[i], (size_t) (eq - p->creds[i]),
                "placeholder", eq + 1));
        }
        json_object_set_new(req, "credentials", creds);
    }
    return req;
}


int
vsb_egress_add(vsb_egress_link_t *l, const vsb_egress_policy_t *p,
    const vsb_egress_socks_t *s, json_t **reply, char *err, size_t errlen)
{
    json_t      *req, *kinds, *lim;
    int          fds[VSB_EGRESS_MAX_FDS], rc;
    size_t       n = 0;
    const struct { int fd; const char *kind; } all[] = {
        { s->http_fd, "http" }, { s->transparent_fd, "transparent" },
        { s->transparent6_fd, "transparent" }, { s->dns_udp_fd, "dns_udp" },
        { s->dns_tcp_fd, "dns_tcp" }
    };

    if (!vsb_egress_tenant_ok(p->tenant)) {
        snprintf(err, errlen, "egress proxy: a sandbox's tenant is 1 .. %d "
                 "bytes of printable ASCII without spaces",
                 VSB_EGRESS_MAX_TENANT);
        return -1;
    }
    req = vsb_egress_policy_req(VSB_EGRESS_OP_ADD, p);
    if (req != NULL) {
        json_object_set_new(req, "tenant", json_string(p->tenant));
    }
    kinds = json_array();
    lim = json_object();
    if (req == NULL || kinds == NULL || lim == NULL) {
        json_decref(req);
        json_decref(kinds);
        json_decref(lim);
        snprintf(err, errlen, "egress proxy: out of memory");
        return -1;
    }

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (all[i].fd >= 0) {
            fds[n++] = all[i].fd;
            json_array_append_new(kinds, json_string(all[i].kind));
        }
    }
    json_object_set_new(req, "listeners", kinds);

#define VSB_EG_LIMIT(name)                                                  \
    if (p->limits.name != 0) {                                              \
        json_object_set_new(lim, #name, json_integer((json_int_t)           \
                                                     p->limits.name));      \
    }
    VSB_EG_LIMIT(max_connections)
    VSB_EG_LIMIT(max_bytes_out)
    VSB_EG_LIMIT(max_bytes_in)
    VSB_EG_LIMIT(connect_timeout_ms)
    VSB_EG_LIMIT(idle_timeout_ms)
#undef VSB_EG_LIMIT
    json_object_set_new(req, "limits", lim);

    rc = vsb_egress_request(l, req, fds, n, reply, err, errlen);
    json_decref(req);
    return rc;
}


int
vsb_egress_update(vsb_egress_link_t *l, const vsb_egress_policy_t *p,
    json_t **reply, char *err, size_t errlen)
{
    return vsb_egress_simple(l, vsb_egress_policy_req(VSB_EGRESS_OP_UPDATE,
                                                      p),
                             reply, err, errlen);
}


int
vsb_egress_remove(vsb_egress_link_t *l, const char *sandbox, json_t **reply,
    char *err, size_t errlen)
{
    return vsb_egress_simple(l, json_pack("{s:s, s:s}", "op",
                                          VSB_EGRESS_OP_REMOVE, "sandbox",
                                          sandbox),
                             reply, err, errlen);
}


int
vsb_egress_sync(vsb_egress_link_t *l, const char *const *sandboxes,
    size_t n, json_t **reply, char *err, size_t errlen)
{
    return vsb_egress_simple(l, json_pack("{s:s, s:o}", "op",
                                          VSB_EGRESS_OP_SYNC, "sandboxes",
                                          vsb_egress_strings(sandboxes, n)),
                             reply, err, errlen);
}


int
vsb_egress_stats(vsb_egress_link_t *l, const char *sandbox, json_t **reply,
    char *err, size_t errlen)
{
    json_t  *req = json_pack("{s:s}", "op", VSB_EGRESS_OP_STATS);

    if (req != NULL && sandbox != NULL) {
        json_object_set_new(req, "sandbox", json_string(sandbox));
    }
    return vsb_egress_simple(l, req, reply, err, errlen);
}


int
vsb_egress_poll_events(vsb_egress_link_t *l, int timeout_ms, char *err,
    size_t errlen)
{
    return vsb_egress_read(l, 0, vsb_egress_deadline(timeout_ms), NULL, err,
                           errlen);
}


json_t *
vsb_egress_take_events(vsb_egress_link_t *l, uint64_t *dropped)
{
    json_t  *ev = l->events;

    l->events = json_array();
    l->event_bytes = 0;
    if (dropped != NULL) {
        *dropped = l->dropped;
    }
    l->dropped = 0;
    return ev;
}
