/*
 * Starting and supervising the egress proxy (vsb_egress_proxy.h): its
 * config file, its cgroup, the process (watched by pidfd), the control
 * link's connection and first ping, restarts with backoff, and the stop
 * at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_cgroup.h"
#include "vsb_egress_ctl.h"
#include "vsb_egress_link.h"
#include "vsb_egress_proxy.h"
#include "vsb_egress_protocol.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_netns.h"
#include "vsb_storage.h"

#define VSB_EP_CGROUP          "egress-proxy"
#define VSB_EP_CONNECT_MS      10000    /* spawn to control socket */
#define VSB_EP_RETRY_MS        20       /* between connect attempts */
#define VSB_EP_PING_MS         5000
#define VSB_EP_BACKOFF_MIN_MS  200
#define VSB_EP_BACKOFF_MAX_MS  30000
#define VSB_EP_STABLE_MS       30000    /* up this long: backoff resets */
#define VSB_EP_TERM_MS         5000     /* at exit, before SIGKILL */

typedef enum {
    VSB_EP_OFF = 0,
    VSB_EP_UNAVAILABLE,
    VSB_EP_STARTING,
    VSB_EP_UP,
    VSB_EP_RESTARTING,
    VSB_EP_STOPPING
} vsb_ep_state_t;

static const char *const  vsb_ep_names[] = {
    "off", "unavailable", "starting", "up", "restarting", "stopping"
};

static struct {
    const vsb_config_t  *cf;
    vsb_ep_state_t       state;
    char                 detail[512];       /* the last problem */
    char                 conf[PATH_MAX];
    char                 sock[108];
    char                 ca_dir[PATH_MAX];
    char                 ca_cert[PATH_MAX + 8];
    vsb_cgroup_t        *cg;
    pid_t                pid;
    vsb_event_t          pid_ev;            /* its pidfd */
    vsb_timer_t          timer;             /* connect retries, backoff */
    uint64_t             spawned_ms;
    uint64_t             up_ms;
    unsigned             failures;          /* in a row, for the backoff */
    unsigned             restarts;
    int                  nft_ok;
    vsb_eproxy_up_pt     on_up;
    vsb_eproxy_dead_pt   on_dead;
} vsb_ep = { .pid = -1, .pid_ev = { .fd = -1 } };

static void vsb_ep_spawn_timer(vsb_timer_t *t);
static void vsb_ep_connect_timer(vsb_timer_t *t);


static void
vsb_ep_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
vsb_ep_problem(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(vsb_ep.detail, sizeof(vsb_ep.detail), fmt, ap);
    va_end(ap);
    vsb_log(VSB_LOG_ERR, "egress: %s", vsb_ep.detail);
}


const char *
vsb_eproxy_ca_cert(void)
{
    return vsb_ep.ca_dir[0] != '\0' && access(vsb_ep.ca_cert, R_OK) == 0
           ? vsb_ep.ca_cert : NULL;
}


int
vsb_eproxy_up(void)
{
    return vsb_ep.state == VSB_EP_UP;
}


int
vsb_eproxy_dead(void)
{
    return vsb_ep.pid == -1;
}


json_t *
vsb_eproxy_health(void)
{
    json_t  *j;

    j = json_pack("{s:b, s:s, s:b, s:I}",
                  "available", vsb_ep.state == VSB_EP_UP,
                  "state", vsb_ep_names[vsb_ep.state],
                  "nftables", vsb_ep.nft_ok,
                  "restarts", (json_int_t) vsb_ep.restarts);
    if (j != NULL && vsb_ep.detail[0] != '\0' && vsb_ep.state != VSB_EP_UP) {
        json_object_set_new(j, "detail", json_string(vsb_ep.detail));
    }
    return j;
}


/* The proxy's config, rewritten at every helper start. */
static int
vsb_ep_write_conf(const vsb_config_t *cf, char *err, size_t errlen)
{
    const vsb_egress_config_t  *eg = &cf->egress;
    FILE                       *f;
    size_t                      i;
    int                         fd;

    fd = open(vsb_ep.conf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW
              | O_CLOEXEC, 0600);
    if (fd == -1 || (f = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "egress: write %s: %s", vsb_ep.conf,
                 strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    fprintf(f, "# written by sandbox-helper at each start; edit the "
            "helper's egress_* keys instead\n"
            "control_socket = %s\n"
            "control_socket_mode = 0600\n"
            "allowed_uids = 0\n"
            "user = %s\n"
            "max_sandboxes = %llu\n"
            "max_sandbox_connections = %llu\n"
            "max_bytes_out = %llu\n"
            "max_bytes_in = %llu\n"
            "log_level = %s\n",
            vsb_ep.sock, eg->user,
            (unsigned long long) cf->max_sandboxes,
            (unsigned long long) eg->max_connections,
            (unsigned long long) eg->max_bytes_out,
            (unsigned long long) eg->max_bytes_in,
            cf->log_level >= VSB_LOG_DEBUG ? "debug"
            : cf->log_level >= VSB_LOG_INFO ? "info" : "error");
    if (eg->resolver[0] != '\0') {
        fprintf(f, "resolver = %s\n", eg->resolver);
    }
    for (i = 0; i < eg->n_allow_ranges; i++) {
        fprintf(f, "allow_range = %s\n", eg->allow_ranges[i]);
    }
    if (eg->credentials[0] != '\0') {
        fprintf(f, "credentials_dir = %s\nca_dir = %s\n", eg->credentials,
                vsb_ep.ca_dir);
        if (eg->upstream_ca[0] != '\0') {
            fprintf(f, "upstream_ca_file = %s\n", eg->upstream_ca);
        }
    }

    if (fflush(f) != 0 || ferror(f)) {
        snprintf(err, errlen, "egress: write %s: %s", vsb_ep.conf,
                 strerror(errno));
        fclose(f);
        return -1;
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "egress: close %s: %s", vsb_ep.conf,
                 strerror(errno));
        return -1;
    }
    return 0;
}


/* Whether nftables works here: the full setup of a sandbox's namespace
 * (routes, ruleset, sockets) in a throwaway namespace. */
static int
vsb_ep_nft_test(const vsb_config_t *cf, char *err, size_t errlen)
{
    vsb_egress_socks_t  socks;
    int                 fd, rc, saved;

    if (unshare(CLONE_NEWNET) != 0) {
        snprintf(err, errlen, "unshare(CLONE_NEWNET): %s", strerror(errno));
        return -1;
    }
    fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    saved = errno;
    vsb_netns_leave();
    if (fd == -1) {
        snprintf(err, errlen, "open a new network namespace: %s",
                 strerror(saved));
        return -1;
    }

    rc = vsb_egress_netns_setup(fd, cf->egress.nft, &socks, err, errlen);
    vsb_egress_socks_close(&socks);
    close(fd);
    return rc;
}


/* 200 ms doubling per failure in a row, at most 30 s. */
static uint64_t
vsb_ep_backoff_ms(void)
{
    uint64_t  ms = VSB_EP_BACKOFF_MIN_MS;
    unsigned  i;

    for (i = 0; i < vsb_ep.failures && ms < VSB_EP_BACKOFF_MAX_MS; i++) {
        ms *= 2;
    }
    return ms < VSB_EP_BACKOFF_MAX_MS ? ms : VSB_EP_BACKOFF_MAX_MS;
}


static void
vsb_ep_exited(vsb_event_t *ev, uint32_t revents)
{
    siginfo_t  si;
    uint64_t   up_for;

    memset(&si, 0, sizeof(si));
    if (waitid(P_PIDFD, (id_t) ev->fd, &si, WEXITED | WNOHANG) != 0) {
        if (errno == EINTR || errno == EAGAIN) {
            return;
        }
        vsb_log_errno(VSB_LOG_ERR, "egress: waitid for the proxy %d",
                      (int) vsb_ep.pid);
    } else if (si.si_pid == 0) {
        return;                 /* spurious */
    }

    (void) vsb_loop_del(ev);
    close(ev->fd);
    ev->fd = -1;

    vsb_ep_problem("the egress proxy (pid %d) %s %d", (int) vsb_ep.pid,
                   si.si_code == CLD_EXITED ? "exited with status"
                   : "was killed by signal", si.si_status);
    vsb_ep.pid = -1;

    /* requests in flight fail; whatever the proxy held is closed */
    vsb_ectl_close("the egress proxy exited");
    if (vsb_ep.on_dead != NULL) {
        vsb_ep.on_dead();
    }

    if (vsb_ep.state == VSB_EP_STOPPING) {
        return;
    }

    up_for = vsb_ep.up_ms ? vsb_now_ms() - vsb_ep.up_ms : 0;
    if (up_for >= VSB_EP_STABLE_MS) {
        vsb_ep.failures = 0;
    }
    vsb_ep.up_ms = 0;
    vsb_ep.state = VSB_EP_RESTARTING;
    vsb_ep.timer.handler = vsb_ep_spawn_timer;
    vsb_timer_add(&vsb_ep.timer, vsb_ep_backoff_ms());
    vsb_ep.failures++;
    vsb_ep.restarts++;
}


/* The child: joins the cgroup (the parent writes it, then says go),
 * the configured network namespace, and execs the proxy. */
static void
vsb_ep_child(const vsb_config_t *cf, int go)
{
    static const char *const  pass[] = {
        "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", NULL
    };
    char        *envp[8], *argv[4];
    char         b;
    size_t       i, n = 0;
    int          fd;
    sigset_t     all;

    (void) signal(SIGTERM, SIG_DFL);
    (void) signal(SIGINT, SIG_DFL);
    (void) signal(SIGPIPE, SIG_DFL);
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

    if (read(go, &b, 1) != 1) {
        _exit(126);             /* the parent gave up on us */
    }

    if (cf->egress.netns[0] != '\0') {
        fd = open(cf->egress.netns, O_RDONLY | O_CLOEXEC);
        if (fd == -1 || setns(fd, CLONE_NEWNET) != 0) {
            dprintf(2, "sandbox-helper: error: egress: enter egress_netns "
                    "%s: %s\n", cf->egress.netns, strerror(errno));
            _exit(125);
        }
    }

    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd == -1 || dup2(fd, 0) == -1 || dup2(2, 1) == -1
        || syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
    {
        _exit(126);
    }

    envp[n++] = (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    for (i = 0; pass[i] != NULL; i++) {
        const char  *v = getenv(pass[i]);
        char        *s;

        if (v != NULL && asprintf(&s, "%s=%s", pass[i], v) != -1) {
            envp[n++] = s;
        }
    }
    envp[n] = NULL;

    argv[0] = (char *) cf->egress.proxy;
    argv[1] = (char *) "-c";
    argv[2] = vsb_ep.conf;
    argv[3] = NULL;
    execve(cf->egress.proxy, argv, envp);
    dprintf(2, "sandbox-helper: error: egress: exec %s: %s\n",
            cf->egress.proxy, strerror(errno));
    _exit(127);
}


static int
vsb_ep_spawn(void)
{
    int    go[2], pidfd;
    pid_t  pid;

    (void) unlink(vsb_ep.sock);         /* a dead proxy's */

    if (pipe2(go, O_CLOEXEC) != 0) {
        vsb_ep_problem("pipe for the proxy: %s", strerror(errno));
        return -1;
    }

    pid = fork();
    if (pid == -1) {
        vsb_ep_problem("fork for the proxy: %s", strerror(errno));
        close(go[0]);
        close(go[1]);
        return -1;
    }
    if (pid == 0) {
        close(go[1]);
        vsb_ep_child(vsb_ep.cf, go[0]);
    }
    close(go[0]);

    pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
    if (pidfd == -1 || vsb_cgroup_attach(vsb_ep.cg, pid) != 0
        || write(go[1], "g", 1) != 1)
    {
        vsb_ep_problem("start the proxy (pid %d): pidfd or cgroup: %s",
                       (int) pid, strerror(errno));
        kill(pid, SIGKILL);
        close(go[1]);
        while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
            /* void */
        }
        if (pidfd != -1) {
            close(pidfd);
        }
        return -1;
    }
    close(go[1]);

    vsb_ep.pid = pid;
    vsb_ep.pid_ev.fd = pidfd;
    vsb_ep.pid_ev.handler = vsb_ep_exited;
    if (vsb_loop_add(&vsb_ep.pid_ev, EPOLLIN) != 0) {
        /* cannot see it exit: kill it and wait here */
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
            /* void */
        }
        close(pidfd);
        vsb_ep.pid_ev.fd = -1;
        vsb_ep.pid = -1;
        vsb_ep_problem("watch the proxy: epoll_ctl failed");
        return -1;
    }

    vsb_ep.state = VSB_EP_STARTING;
    vsb_ep.spawned_ms = vsb_now_ms();
    vsb_log(VSB_LOG_INFO, "egress: started the egress proxy %s (pid %d)%s%s",
            vsb_ep.cf->egress.proxy, (int) pid,
            vsb_ep.cf->egress.netns[0] ? " in network namespace " : "",
            vsb_ep.cf->egress.netns);

    vsb_ep.timer.handler = vsb_ep_connect_timer;
    vsb_timer_add(&vsb_ep.timer, VSB_EP_RETRY_MS);
    return 0;
}


static void
vsb_ep_spawn_timer(vsb_timer_t *t)
{
    if (vsb_ep.state != VSB_EP_RESTARTING) {
        return;
    }
    if (vsb_ep_spawn() != 0) {
        vsb_ep.failures++;
        vsb_timer_add(&vsb_ep.timer, vsb_ep_backoff_ms());
    }
}


static void
vsb_ep_pinged(void *data, json_t *reply, const char *why)
{
    json_t  *v;

    if (vsb_ep.state != VSB_EP_STARTING) {
        return;
    }
    if (reply == NULL || !json_is_true(json_object_get(reply, "ok"))) {
        vsb_eproxy_restart(why ? why : "the proxy refused a ping");
        return;
    }
    v = json_object_get(reply, "version");
    if (!json_is_integer(v)
        || json_integer_value(v) != VSB_EGRESS_PROTOCOL_VERSION)
    {
        vsb_eproxy_restart("the proxy speaks another protocol version");
        return;
    }

    vsb_ep.state = VSB_EP_UP;
    vsb_ep.up_ms = vsb_now_ms();
    vsb_log(VSB_LOG_INFO, "egress: the egress proxy (pid %d) is up after "
            "%llu ms", (int) vsb_ep.pid,
            (unsigned long long) (vsb_ep.up_ms - vsb_ep.spawned_ms));
    if (vsb_ep.on_up != NULL) {
        vsb_ep.on_up();
    }
}


static void
vsb_ep_connect_timer(vsb_timer_t *t)
{
    char     err[256];
    json_t  *ping;

    if (vsb_ep.state != VSB_EP_STARTING || vsb_ep.pid == -1) {
        return;
    }

    if (vsb_ectl_open(vsb_ep.sock, err, sizeof(err)) != 0) {
        if (vsb_now_ms() - vsb_ep.spawned_ms >= VSB_EP_CONNECT_MS) {
            vsb_eproxy_restart("no control socket within 10 s");
            return;
        }
        vsb_timer_add(&vsb_ep.timer, VSB_EP_RETRY_MS);
        return;
    }

    ping = json_pack("{s:s}", "op", VSB_EGRESS_OP_PING);
    if (ping == NULL
        || vsb_ectl_send(ping, NULL, 0, VSB_EP_PING_MS, vsb_ep_pinged, NULL)
           != 0)
    {
        json_decref(ping);
        vsb_eproxy_restart("cannot send a ping");
        return;
    }
    json_decref(ping);
}


void
vsb_eproxy_restart(const char *why)
{
    if (vsb_ep.state == VSB_EP_OFF || vsb_ep.state == VSB_EP_UNAVAILABLE
        || vsb_ep.state == VSB_EP_STOPPING)
    {
        return;
    }

    vsb_ectl_close(why);
    vsb_timer_del(&vsb_ep.timer);

    if (vsb_ep.pid != -1) {
        vsb_log(VSB_LOG_ERR, "egress: killing the egress proxy (pid %d): "
                "%s", (int) vsb_ep.pid, why);
        snprintf(vsb_ep.detail, sizeof(vsb_ep.detail), "%s", why);
        if (syscall(SYS_pidfd_send_signal, vsb_ep.pid_ev.fd, SIGKILL, NULL,
                    0) != 0 && errno != ESRCH)
        {
            vsb_log_errno(VSB_LOG_ERR, "egress: kill the proxy");
        }
        (void) vsb_cgroup_kill(vsb_ep.cg);
        vsb_ep.state = VSB_EP_RESTARTING;   /* the exit handler restarts */
    }
}


int
vsb_eproxy_init(const vsb_config_t *cf, vsb_eproxy_up_pt on_up,
    vsb_eproxy_dead_pt on_dead, char *err, size_t errlen)
{
    char           dir[PATH_MAX], nerr[512];
    struct rlimit  rl;
    int            n;

    vsb_ep.cf = cf;
    vsb_ep.on_up = on_up;
    vsb_ep.on_dead = on_dead;

    if (!cf->egress.enabled) {
        vsb_ep.state = VSB_EP_OFF;
        snprintf(vsb_ep.detail, sizeof(vsb_ep.detail), "egress = off in "
                 "the helper's configuration");
        return 0;
    }

    if (access(cf->egress.proxy, X_OK) != 0) {
        snprintf(err, errlen, "egress: egress_proxy %s: %s",
                 cf->egress.proxy, strerror(errno));
        return -1;
    }
    if (getpwnam(cf->egress.user) == NULL) {
        snprintf(err, errlen, "egress: egress_user \"%s\": no such user",
                 cf->egress.user);
        return -1;
    }
    if (cf->egress.netns[0] != '\0' && access(cf->egress.netns, R_OK) != 0) {
        snprintf(err, errlen, "egress: egress_netns %s: %s",
                 cf->egress.netns, strerror(errno));
        return -1;
    }

    if (vsb_storage_state_subdir("egress", 0700, dir, sizeof(dir), err,
                                 errlen) != 0)
    {
        return -1;
    }
    n = snprintf(vsb_ep.sock, sizeof(vsb_ep.sock), "%s/control.sock", dir);
    if (n < 0 || (size_t) n >= sizeof(vsb_ep.sock)) {
        snprintf(err, errlen, "egress: %s/control.sock is longer than a "
                 "unix socket path may be (%zu bytes): use a shorter "
                 "state_dir", dir, sizeof(vsb_ep.sock) - 1);
        return -1;
    }
    n = snprintf(vsb_ep.conf, sizeof(vsb_ep.conf), "%s/proxy.conf", dir);
    if (n < 0 || (size_t) n >= sizeof(vsb_ep.conf)) {
        snprintf(err, errlen, "egress: state_dir too long");
        return -1;
    }
    /* the interception CA: made by the proxy at its first start */
    n = snprintf(vsb_ep.ca_dir, sizeof(vsb_ep.ca_dir), "%s/ca", dir);
    if (n < 0 || (size_t) n >= 256) {
        snprintf(err, errlen, "egress: %s/ca is longer than 255 bytes: use "
                 "a shorter state_dir", dir);
        return -1;
    }
    snprintf(vsb_ep.ca_cert, sizeof(vsb_ep.ca_cert), "%s/ca.pem",
             vsb_ep.ca_dir);
    if (vsb_ep_write_conf(cf, err, errlen) != 0) {
        return -1;
    }

    /* each allowlist sandbox holds five sockets in the helper (and in
     * the proxy, which inherits this limit) */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            vsb_log_errno(VSB_LOG_WARN, "egress: raise RLIMIT_NOFILE");
        }
    }

    if (vsb_ep_nft_test(cf, nerr, sizeof(nerr)) != 0) {
        vsb_ep.state = VSB_EP_UNAVAILABLE;
        vsb_ep_problem("nftables does not work here, allowlist sandboxes are "
                       "unavailable: %s", nerr);
        return 0;
    }
    vsb_ep.nft_ok = 1;

    vsb_ep.cg = vsb_cgroup_create(NULL, VSB_EP_CGROUP, NULL, nerr,
                                  sizeof(nerr));
    if (vsb_ep.cg == NULL) {
        snprintf(err, errlen, "egress: cgroup for the proxy: %s", nerr);
        return -1;
    }

    if (vsb_ep_spawn() != 0) {
        vsb_ep.state = VSB_EP_RESTARTING;
        vsb_ep.failures++;
        vsb_ep.timer.handler = vsb_ep_spawn_timer;
        vsb_timer_add(&vsb_ep.timer, VSB_EP_BACKOFF_MIN_MS);
    }
    return 0;
}


/* At exit (the loop has stopped): waits here, bounded. */
static int
vsb_ep_wait_exit(int ms)
{
    struct pollfd  p;
    siginfo_t      si;

    p.fd = vsb_ep.pid_ev.fd;
    p.events = POLLIN;
    if (poll(&p, 1, ms) <= 0) {
        return -1;
    }
    memset(&si, 0, sizeof(si));
    return waitid(P_PIDFD, (id_t) p.fd, &si, WEXITED | WNOHANG) == 0
           && si.si_pid != 0 ? 0 : -1;
}


void
vsb_eproxy_stop(void)
{
    char  err[256];
    int   i;

    if (vsb_ep.state == VSB_EP_OFF || vsb_ep.state == VSB_EP_UNAVAILABLE) {
        return;
    }
    vsb_ep.state = VSB_EP_STOPPING;
    vsb_timer_del(&vsb_ep.timer);
    vsb_ectl_close("the helper is stopping");

    if (vsb_ep.pid != -1) {
        (void) syscall(SYS_pidfd_send_signal, vsb_ep.pid_ev.fd, SIGTERM,
                       NULL, 0);
        if (vsb_ep_wait_exit(VSB_EP_TERM_MS) != 0) {
            vsb_log(VSB_LOG_WARN, "egress: the proxy did not stop within "
                    "%d ms of SIGTERM; SIGKILL", VSB_EP_TERM_MS);
            (void) syscall(SYS_pidfd_send_signal, vsb_ep.pid_ev.fd, SIGKILL,
                           NULL, 0);
            (void) vsb_ep_wait_exit(VSB_EP_TERM_MS);
        }
        (void) vsb_loop_del(&vsb_ep.pid_ev);
        close(vsb_ep.pid_ev.fd);
        vsb_ep.pid_ev.fd = -1;
        vsb_ep.pid = -1;
    }

    if (vsb_ep.cg != NULL) {
        for (i = 0; i < 100 && vsb_cgroup_populated(vsb_ep.cg) != 0; i++) {
            (void) vsb_cgroup_kill(vsb_ep.cg);
            usleep(20000);
        }
        if (vsb_cgroup_destroy(vsb_ep.cg, err, sizeof(err)) != 0) {
            vsb_log(VSB_LOG_ERR, "egress: remove the proxy's cgroup: %s",
                    err);
        } else {
            vsb_ep.cg = NULL;
        }
    }
    (void) unlink(vsb_ep.sock);
    vsb_log(VSB_LOG_INFO, "egress: the egress proxy stopped");
}
