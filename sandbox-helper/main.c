/*
 * sandbox-helper: the privileged daemon.
 *
 *     sandbox-helper [-c CONFIG] [-t]
 *
 * Start-up order matters: config, root check, cgroups, removal of
 * whatever a previous run left, and only then the socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vsb_cgroup.h"
#include "vsb_config.h"
#include "vsb_destroy.h"
#include "vsb_durable.h"
#include "vsb_egress.h"
#include "vsb_ended.h"
#include "vsb_landlock.h"
#include "vsb_lifeclock.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_netns.h"
#include "vsb_ops.h"
#include "vsb_profile.h"
#include "vsb_recover.h"
#include "vsb_registry.h"
#include "vsb_sbstate.h"
#include "vsb_seccomp.h"
#include "vsb_snap_store.h"
#include "vsb_server.h"
#include "vsb_spawn_ns.h"
#include "vsb_storage.h"

#define VSB_DEFAULT_CONF  "/etc/veto-sandbox/sandbox-helper.conf"

static volatile sig_atomic_t  vsb_stop;
static volatile sig_atomic_t  vsb_drained;
static int                    vsb_sigpipe[2] = { -1, -1 };
static vsb_event_t            vsb_sig_ev;


static volatile sig_atomic_t  vsb_stop_signo, vsb_stop_pid;


static void
vsb_on_signal(int signo, siginfo_t *si, void *uc)
{
    int  saved = errno;

    (void) uc;

    if (!vsb_stop) {
        vsb_stop_signo = signo;
        vsb_stop_pid = si != NULL ? (sig_atomic_t) si->si_pid : 0;
    }
    vsb_stop = 1;

    /* Wakes epoll_wait; a full pipe already has a wakeup pending. */
    if (write(vsb_sigpipe[1], "x", 1) == -1) {
        /* nothing to do */
    }

    errno = saved;
}


static void
vsb_sig_handler(vsb_event_t *ev, uint32_t revents)
{
    char  buf[64];

    while (read(ev->fd, buf, sizeof(buf)) > 0) {
        /* drain */
    }
}


/* The loop's failed system calls, in the helper's log. */
static void
vsb_loop_failed(const char *step)
{
    vsb_log_errno(VSB_LOG_ERR, "%s", step);
}


static const vsb_loop_hooks_t  vsb_loop_hooks = {
    .error = vsb_loop_failed
};


static int
vsb_signals_init(void)
{
    struct sigaction  sa;

    if (pipe2(vsb_sigpipe, O_NONBLOCK | O_CLOEXEC) == -1) {
        vsb_log_errno(VSB_LOG_ERR, "pipe2(signal pipe)");
        return -1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = vsb_on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);

    if (sigaction(SIGTERM, &sa, NULL) == -1
        || sigaction(SIGINT, &sa, NULL) == -1)
    {
        vsb_log_errno(VSB_LOG_ERR, "sigaction(SIGTERM/SIGINT)");
        return -1;
    }

    vsb_sig_ev.fd = vsb_sigpipe[0];
    vsb_sig_ev.handler = vsb_sig_handler;

    return vsb_loop_add(&vsb_sig_ev, EPOLLIN);
}


static void
vsb_usage(void)
{
    fprintf(stderr, "usage: sandbox-helper [-c CONFIG] [-t]\n"
                    "  -c CONFIG  configuration file (default %s)\n"
                    "  -t         check the configuration and exit\n",
            VSB_DEFAULT_CONF);
}


/*
 * Started with stdin, stdout or stderr closed, the helper would hand the
 * lowest free descriptors to its socket or a client, and its log lines
 * (stderr) would then land in a peer's frame stream.  /dev/null takes
 * any free slot among 0-2 first.
 */
static int
vsb_std_fds(void)
{
    int  fd;

    for (fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
            continue;
        }

        if (open("/dev/null", O_RDWR) != fd) {
            return -1;
        }
    }

    return 0;
}


int
main(int argc, char **argv)
{
    const char      *conf = VSB_DEFAULT_CONF;
    char             err[1024];
    int              opt, test = 0, rc = 0;
    vsb_sandbox_t   *sb;

    if (vsb_std_fds() != 0) {
        return 1;       /* no stderr to say it on */
    }

    while ((opt = getopt(argc, argv, "c:th")) != -1) {
        switch (opt) {
        case 'c':
            conf = optarg;
            break;
        case 't':
            test = 1;
            break;
        default:
            vsb_usage();
            return 2;
        }
    }

    if (optind != argc) {
        vsb_usage();
        return 2;
    }

    umask(077);

    /* a build whose op table does not hold together serves nothing */
    if (vsb_ops_check(err, sizeof(err)) != 0) {
        fprintf(stderr, "sandbox-helper: %s\n", err);
        return 1;
    }

    if (vsb_config_load(conf, &vsb_cf, err, sizeof(err)) != 0) {
        fprintf(stderr, "sandbox-helper: %s\n", err);
        if (test) {
            fprintf(stderr, "sandbox-helper: configuration file %s test "
                    "failed\n", conf);
        }
        return 1;
    }

    if (test) {
        fprintf(stderr, "sandbox-helper: configuration file %s test is "
                "successful\n", conf);
        return 0;
    }

    vsb_log_level = vsb_cf.log_level;

    if (geteuid() != 0) {
        vsb_log(VSB_LOG_ERR, "must run as root (euid is %u)",
                (unsigned) geteuid());
        return 1;
    }

    /* fs-uid switching in files.c must not keep root's extra groups. */
    if (setgroups(0, NULL) == -1) {
        vsb_log_errno(VSB_LOG_ERR, "setgroups(0)");
        return 1;
    }

    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
        vsb_log_errno(VSB_LOG_ERR, "signal(SIGPIPE)");
        return 1;
    }

    if (vsb_loop_init(&vsb_loop_hooks) != 0 || vsb_signals_init() != 0) {
        return 1;
    }

    if (vsb_registry_init((unsigned) vsb_cf.max_sandboxes) != 0) {
        vsb_log_errno(VSB_LOG_ERR, "registry (slot table, boot epoch)");
        return 1;
    }

    if (vsb_cgroup_init(&vsb_cf, err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "cgroup setup: %s", err);
        return 1;
    }

    if (vsb_storage_init(err, sizeof(err)) != 0
        || vsb_netns_init(err, sizeof(err)) != 0
        || vsb_ended_init(err, sizeof(err)) != 0
        || vsb_sbstate_init(err, sizeof(err)) != 0)
    {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return 1;
    }

    /* A previous run may have died: nothing of it may survive, and each
     * sandbox it had ends on record. */
    if (vsb_recover() != 0) {
        vsb_log(VSB_LOG_ERR, "what a previous run left could not all be "
                "removed: not starting");
        return 1;
    }

    /* image profiles: the store open, every image present */
    if (vsb_profiles_init(err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return 1;
    }

    /* snapshots outlive a run (their forks do not): the store loaded,
     * leftovers of an interrupted make or delete removed */
    if (vsb_snap_store_init(err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "snapshot store: %s", err);
        return 1;
    }

    /* after recovery: the mounts execs are cloned from, without the
     * sandboxes' (a failure leaves execs cloned from ours) */
    vsb_spawn_ns_init();

    /* the workload's boundary: a filter that cannot be built stops the
     * start, not the first exec; without Landlock the helper carries on */
    if (vsb_seccomp_prepare(err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return 1;
    }

    vsb_log(vsb_landlock_init(err, sizeof(err)) > 0
            ? VSB_LOG_INFO : VSB_LOG_WARN, "%s", err);

    /* the egress proxy (egress = on); a stale one died with its cgroup */
    if (vsb_egress_init(err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return 1;
    }

    if (vsb_server_init(&vsb_cf, &vsb_ops_hooks, err, sizeof(err)) != 0)
    {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return 1;
    }

    vsb_log(VSB_LOG_INFO, "started: epoch %s, cgroup %s, state %s, %zu "
            "allowed uids", vsb_registry_epoch(),
            vsb_cgroup_mode() == VSB_CGROUP_V1 ? "v1" : "v2",
            vsb_cf.state_dir, vsb_cf.n_allowed_uids);
    vsb_life_init(vsb_cf.test_clock);

    if (vsb_loop_run(&vsb_stop) != 0) {
        rc = 1;
    }

    /* who asked, for a stop nobody expected */
    vsb_log(VSB_LOG_INFO, "stopping (%s from pid %d): destroying %u "
            "sandboxes", vsb_stop_signo == SIGINT ? "SIGINT" : "SIGTERM",
            (int) vsb_stop_pid, vsb_registry_count());

    vsb_server_stop_listening();
    vsb_destroy_shutdown(&vsb_drained);

    if (vsb_loop_run(&vsb_drained) != 0) {
        rc = 1;
    }

    vsb_server_close_all();
    vsb_egress_shutdown();

    /* the last ENDED records on disk, the last state files removed */
    if (vsb_durable_flush() != 0) {
        rc = 1;
    }
    vsb_durable_stop();

    for (sb = vsb_registry_first(); sb != NULL; sb = sb->next) {
        vsb_log(VSB_LOG_ERR, "sandbox %s could not be destroyed at exit",
                sb->id);
        rc = 1;
    }

    if (vsb_registry_first() == NULL && vsb_cgroup_remove_base() != 0) {
        rc = 1;
    }

    vsb_profiles_cleanup();
    vsb_log(VSB_LOG_INFO, "stopped");
    return rc;
}
