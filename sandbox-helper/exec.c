/*
 * One exec: the helper's side.  Pipes for stdio and status, the init's
 * pidfd and a deadline, all driven by the event loop; then confirmation
 * that every process is gone (the exec cgroup empty and removed) before
 * done is called.
 *
 *   running --(init exited, status and output at EOF)--> finishing
 *   finishing --(cgroup empty and removed)--> done, freed
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_egress.h"
#include "vsb_exec.h"
#include "vsb_exec_env.h"
#include "vsb_lifetime.h"
#include "vsb_log.h"
#include "vsb_spawn.h"

#define VSB_EXEC_READ_CHUNK     65536
#define VSB_EXEC_READS_PER_EV   16      /* then let other events run */
#define VSB_EXEC_GRACE_MS       2000    /* pipes open after the init died */
#define VSB_EXEC_POLL_MS        10      /* first wait for an empty cgroup */
#define VSB_EXEC_POLL_MAX_MS    1000
#define VSB_EXEC_DEFAULT_CWD    "/workspace"

typedef struct {
    vsb_exec_t      *ex;
    vsb_event_t      ev;
    int              which;             /* VSB_EXEC_STDOUT, _STDERR */
    vsb_outcap_t     cap;               /* kept: head and tail */
    uint64_t         streamed;          /* given to output() */
    unsigned         to_output:1;
    unsigned         eof:1;
} vsb_exec_stream_t;

struct vsb_exec_s {
    vsb_sandbox_t       *sb;
    vsb_exec_t          *next;              /* in sb->execs */
    vsb_cgroup_t        *cgroup;
    char                 cg_name[16];

    pid_t                pid;
    int                  pidfd;
    vsb_event_t          pid_ev;
    siginfo_t            init_si;

    vsb_event_t          in_ev;
    unsigned char       *in_buf;
    size_t               in_len;
    size_t               in_off;
    vsb_exec_stdin_pt    stdin_ready;

    vsb_exec_stream_t    out;
    vsb_exec_stream_t    err;
    vsb_exec_output_pt   output;

    vsb_event_t          st_ev;
    unsigned char        st_buf[sizeof(vsb_spawn_status_t)];
    size_t               st_len;
    vsb_spawn_status_t   status;            /* valid if have_status */

    vsb_timer_t          deadline;
    vsb_timer_t          grace;
    vsb_timer_t          poll;
    uint64_t             poll_ms;
    unsigned             polls;

    uint64_t             start_ms;
    uint64_t             end_ms;
    uint64_t             pids_refused;      /* the sandbox's, at start */

    vsb_egress_win_t    *egress;            /* its network attempts */
    vsb_exec_result_t    res;               /* while they are collected */

    vsb_exec_done_pt     done;
    void                *data;

    unsigned             init_exited:1;
    unsigned             status_eof:1;
    unsigned             have_status:1;
    unsigned             setup_failed:1;
    unsigned             timed_out:1;
    unsigned             cancelled:1;
    unsigned             finishing:1;
    unsigned             paused:1;          /* output: not read meanwhile */
    unsigned             in_stream:1;
};

static void vsb_exec_check(vsb_exec_t *ex);
static void vsb_exec_finish(vsb_exec_t *ex);
static void vsb_exec_poll(vsb_timer_t *t);
static void vsb_exec_network(void *data, json_t *network);


/* ---- the loop side ---- */

static void
vsb_exec_kill(vsb_exec_t *ex)
{
    if (!ex->init_exited && ex->pidfd != -1) {
        if (syscall(SYS_pidfd_send_signal, ex->pidfd, SIGKILL, NULL, 0) != 0
            && errno != ESRCH)
        {
            vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: kill init %d",
                          ex->sb->id, ex->cg_name, (int) ex->pid);
        }
    }

    if (vsb_cgroup_kill(ex->cgroup) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: kill cgroup", ex->sb->id,
                      ex->cg_name);
    }
}


static void
vsb_exec_close_event(vsb_event_t *ev)
{
    if (ev->fd == -1) {
        return;
    }

    (void) vsb_loop_del(ev);
    close(ev->fd);
    ev->fd = -1;
}


static void
vsb_exec_stdin(vsb_event_t *ev, uint32_t revents)
{
    ssize_t      n;
    vsb_exec_t  *ex = ev->data;

    if (ex->in_stream) {
        /* writable again (or broken: the next write says so) */
        (void) vsb_loop_mod(ev, 0);
        if (ex->stdin_ready != NULL) {
            ex->stdin_ready(ex, ex->data);
        }
        return;
    }

    while (ex->in_off < ex->in_len) {
        n = write(ev->fd, ex->in_buf + ex->in_off, ex->in_len - ex->in_off);

        if (n > 0) {
            ex->in_off += (size_t) n;
            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == -1 && errno == EAGAIN) {
            return;
        }

        break;                  /* EPIPE: the workload closed its stdin */
    }

    vsb_exec_close_event(ev);
    free(ex->in_buf);
    ex->in_buf = NULL;
}


static void
vsb_exec_output(vsb_event_t *ev, uint32_t revents)
{
    ssize_t             n;
    unsigned            i;
    vsb_exec_stream_t  *s = ev->data;
    vsb_exec_t         *ex = s->ex;
    static unsigned char  chunk[VSB_EXEC_READ_CHUNK];

    for (i = 0; i < VSB_EXEC_READS_PER_EV && !ex->paused; i++) {
        n = read(ev->fd, chunk, sizeof(chunk));

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            if (errno == EAGAIN) {
                return;
            }

            vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: read output",
                          ex->sb->id, ex->cg_name);
            n = 0;
        }

        if (n == 0) {
            s->eof = 1;
            vsb_exec_close_event(ev);
            vsb_exec_check(ex);
            return;
        }

        if (s->to_output) {
            /* the callee may pause us, or cancel the exec */
            s->streamed += (uint64_t) n;
            ex->output(ex, s->which, s->streamed - (uint64_t) n, chunk,
                       (size_t) n, ex->data);
            continue;
        }

        /* head and tail kept, the middle counted */
        vsb_outcap_add(&s->cap, chunk, (size_t) n);
    }
}


void
vsb_exec_pause(vsb_exec_t *ex, int pause)
{
    uint32_t  events = pause ? 0 : EPOLLIN;

    /* a cancelled exec is drained: its pipes hold at most their size */
    if (ex->finishing || (unsigned) !!pause == ex->paused
        || (pause && ex->cancelled))
    {
        return;
    }

    ex->paused = !!pause;

    if (ex->out.ev.fd != -1) {
        (void) vsb_loop_mod(&ex->out.ev, events);
    }
    if (ex->err.ev.fd != -1) {
        (void) vsb_loop_mod(&ex->err.ev, events);
    }

    /* unread output is no reason to give up on the pipes */
    if (pause) {
        vsb_timer_del(&ex->grace);
    } else {
        vsb_exec_check(ex);
    }
}


ssize_t
vsb_exec_stdin_write(vsb_exec_t *ex, const unsigned char *data, size_t len)
{
    ssize_t  n;

    if (!ex->in_stream || ex->in_ev.fd == -1 || ex->finishing) {
        return -1;
    }

    for ( ;; ) {
        n = write(ex->in_ev.fd, data, len);

        if (n >= 0) {
            return n;
        }

        if (errno == EINTR) {
            continue;
        }

        if (errno == EAGAIN) {
            if (vsb_loop_mod(&ex->in_ev, EPOLLOUT) != 0) {
                break;
            }
            return 0;
        }

        break;                  /* EPIPE: its stdin is closed */
    }

    vsb_exec_close_event(&ex->in_ev);
    return -1;
}


void
vsb_exec_stdin_close(vsb_exec_t *ex)
{
    vsb_exec_close_event(&ex->in_ev);
}


static void
vsb_exec_status(vsb_event_t *ev, uint32_t revents)
{
    ssize_t              n;
    vsb_exec_t          *ex = ev->data;
    vsb_spawn_status_t  *st;

    for ( ;; ) {
        n = read(ev->fd, ex->st_buf + ex->st_len,
                 sizeof(ex->st_buf) - ex->st_len);

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == -1 && errno == EAGAIN) {
            return;
        }

        if (n <= 0) {
            if (n == -1) {
                vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: read status",
                              ex->sb->id, ex->cg_name);
            }

            ex->status_eof = 1;
            vsb_exec_close_event(ev);
            vsb_exec_check(ex);
            return;
        }

        ex->st_len += (size_t) n;

        if (ex->st_len < sizeof(ex->st_buf)) {
            continue;
        }

        ex->st_len = 0;
        st = (vsb_spawn_status_t *) ex->st_buf;
        st->detail[sizeof(st->detail) - 1] = '\0';

        /* the first setup failure wins; the init's exit record after a
         * workload's failed setup says nothing new */
        if (ex->setup_failed) {
            continue;
        }

        if (st->kind == VSB_SPAWN_FAILED || st->kind == VSB_SPAWN_BAD_CWD) {
            ex->setup_failed = 1;
            ex->have_status = 1;
            memcpy(&ex->status, st, sizeof(*st));

        } else if (st->kind == VSB_SPAWN_EXITED && !ex->have_status) {
            ex->have_status = 1;
            memcpy(&ex->status, st, sizeof(*st));

        } else {
            vsb_log(VSB_LOG_WARN, "exec %s/%s: bad status record kind %u",
                    ex->sb->id, ex->cg_name, (unsigned) st->kind);
        }
    }
}


static void
vsb_exec_init_exited(vsb_event_t *ev, uint32_t revents)
{
    vsb_exec_t  *ex = ev->data;

    memset(&ex->init_si, 0, sizeof(ex->init_si));

    if (waitid(P_PIDFD, (id_t) ex->pidfd, &ex->init_si,
               WEXITED | WNOHANG | __WALL) != 0)
    {
        if (errno == EINTR || errno == EAGAIN) {
            return;
        }

        vsb_log_errno(VSB_LOG_ERR, "exec %s/%s: waitid for init %d",
                      ex->sb->id, ex->cg_name, (int) ex->pid);

    } else if (ex->init_si.si_pid == 0) {
        return;                 /* spurious: not exited yet */
    }

    ex->init_exited = 1;
    ex->end_ms = vsb_now_ms();
    (void) vsb_loop_del(ev);

    vsb_exec_check(ex);
}


static void
vsb_exec_deadline(vsb_timer_t *t)
{
    vsb_exec_t  *ex = t->data;

    ex->timed_out = 1;
    vsb_exec_kill(ex);
}


/* The init is dead but something still holds a pipe: give up on it. */
static void
vsb_exec_grace(vsb_timer_t *t)
{
    vsb_exec_t  *ex = t->data;

    vsb_log(VSB_LOG_WARN, "exec %s/%s: pipes still open %d ms after the "
            "init exited; killing the cgroup", ex->sb->id, ex->cg_name,
            VSB_EXEC_GRACE_MS);

    vsb_exec_finish(ex);
}


static void
vsb_exec_check(vsb_exec_t *ex)
{
    if (ex->finishing || !ex->init_exited) {
        return;
    }

    if (ex->out.eof && ex->err.eof && ex->status_eof) {
        vsb_exec_finish(ex);
        return;
    }

    if (!ex->grace.armed && !ex->paused) {
        vsb_timer_add(&ex->grace, VSB_EXEC_GRACE_MS);
    }
}


static void
vsb_exec_finish(vsb_exec_t *ex)
{
    ex->finishing = 1;

    if (ex->end_ms == 0) {
        ex->end_ms = vsb_now_ms();
    }

    vsb_timer_del(&ex->deadline);
    vsb_timer_del(&ex->grace);

    vsb_exec_close_event(&ex->in_ev);
    vsb_exec_close_event(&ex->out.ev);
    vsb_exec_close_event(&ex->err.ev);
    vsb_exec_close_event(&ex->st_ev);

    /* the pid namespace is gone with the init; this catches anything
     * that could have escaped it (a v1 kill freezes first: skip it when
     * there is nothing to kill) */
    if (!ex->init_exited || vsb_cgroup_populated(ex->cgroup) != 0) {
        vsb_exec_kill(ex);
    }

    /* from the loop, never from inside vsb_exec_start() */
    ex->poll_ms = VSB_EXEC_POLL_MS;
    vsb_timer_add(&ex->poll, 0);
}


/* Did the pids limit refuse a fork of this exec?  Its own cgroup counts
 * it (v1, v2 before Linux 6.12), or its sandbox's counter rose while it
 * ran (v2 since 6.12: there an exec running beside the one that hit the
 * limit is told too). */
static int
vsb_exec_pids_hit(vsb_exec_t *ex)
{
    uint64_t  n;

    if (vsb_cgroup_pids_refused(ex->cgroup, &n) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: read pids.events",
                      ex->sb->id, ex->cg_name);
        n = 0;
    }

    if (n > 0) {
        return 1;
    }

    if (ex->sb->cgroup == NULL
        || vsb_cgroup_pids_refused(ex->sb->cgroup, &n) != 0)
    {
        vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: read the sandbox's "
                      "pids.events", ex->sb->id, ex->cg_name);
        return 0;
    }

    return n > ex->pids_refused;
}


static void
vsb_exec_result(vsb_exec_t *ex, vsb_exec_result_t *res)
{
    int                 ws;
    vsb_cgroup_usage_t  u;

    res->timed_out = ex->timed_out;
    res->wall_ms = ex->end_ms - ex->start_ms;

    memset(&u, 0, sizeof(u));

    if (vsb_cgroup_usage(ex->cgroup, &u) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: read cgroup usage",
                      ex->sb->id, ex->cg_name);
    }

    res->cpu_ms = u.cpu_usec / 1000;
    res->peak_memory_bytes = u.memory_peak;
    res->peak_pids = u.pids_peak;

    /* the kernel raises pids.peak before it checks pids.max and undoes
     * the charge of a refused fork: the peak can read limit + 1 although
     * that process never existed */
    if (ex->sb->limits.pids > 0 && res->peak_pids > ex->sb->limits.pids) {
        res->peak_pids = ex->sb->limits.pids;
    }

    res->oom_killed = u.oom_kills > 0;
    res->pids_limit_hit = vsb_exec_pids_hit(ex);

    vsb_outcap_view(&ex->out.cap, &res->out);
    vsb_outcap_view(&ex->err.cap, &res->err);
    res->out.total += ex->out.streamed;
    res->err.total += ex->err.streamed;

    if (ex->setup_failed) {
        /* the workload's chdir: the request's cwd, not the host */
        res->error = ex->status.kind == VSB_SPAWN_BAD_CWD
                     ? VSB_E_BAD_CWD : VSB_E_EXEC_FAILED;
        snprintf(res->detail, sizeof(res->detail), "%s", ex->status.detail);
        return;
    }

    if (ex->have_status) {
        ws = ex->status.status;
        res->refused = ex->status.refused;

        if (WIFEXITED(ws)) {
            res->exited = 1;
            res->exit_code = WEXITSTATUS(ws);

        } else if (WIFSIGNALED(ws)) {
            res->signaled = 1;
            res->signo = WTERMSIG(ws);
        }

        return;
    }

    /* no report: the init was killed (deadline, cancel, OOM) */
    if (ex->timed_out || ex->cancelled || ex->init_si.si_code == CLD_KILLED
        || ex->init_si.si_code == CLD_DUMPED)
    {
        res->signaled = 1;
        res->signo = (ex->init_si.si_code == CLD_KILLED
                      || ex->init_si.si_code == CLD_DUMPED)
                     ? ex->init_si.si_status : SIGKILL;
        return;
    }

    res->error = VSB_E_EXEC_FAILED;
    snprintf(res->detail, sizeof(res->detail),
             "sandbox init exited with status %d without a report",
             ex->init_si.si_status);
}


static void
vsb_exec_unlink(vsb_exec_t *ex)
{
    vsb_exec_t  **pp;

    for (pp = &ex->sb->execs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == ex) {
            *pp = ex->next;
            break;
        }
    }

    ex->sb->execs_running--;
}


static void
vsb_exec_free(vsb_exec_t *ex)
{
    if (ex->pidfd != -1) {
        close(ex->pidfd);
    }

    free(ex->in_buf);
    vsb_outcap_free(&ex->out.cap);
    vsb_outcap_free(&ex->err.cap);
    free(ex);
}


/* Waits, by timer, until the exec cgroup is empty and removed. */
static void
vsb_exec_poll(vsb_timer_t *t)
{
    int                rc;
    char               err[256];
    siginfo_t          si;
    vsb_exec_t        *ex = t->data;
    vsb_exec_result_t  res;

    /* reaped first: a v1 cgroup emptied of zombies too is one read
     * (cgroup1.c) */
    if (!ex->init_exited) {
        memset(&si, 0, sizeof(si));
        if (waitid(P_PIDFD, (id_t) ex->pidfd, &si, WEXITED | WNOHANG | __WALL)
            == 0 && si.si_pid != 0)
        {
            ex->init_exited = 1;
            ex->init_si = si;
            (void) vsb_loop_del(&ex->pid_ev);
        }
    }

    rc = vsb_cgroup_populated(ex->cgroup);

    if (rc == 0 && !ex->init_exited) {
        rc = 1;                 /* not dead yet, only out of the cgroup */
    }

    if (rc != 0) {
        if (rc == -1) {
            vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: check cgroup",
                          ex->sb->id, ex->cg_name);
        }

        /* escalating interval; keep killing: a fork racing the kill
         * lands a new process */
        if (++ex->polls % 10 == 0) {
            vsb_exec_kill(ex);
            if (ex->poll_ms < VSB_EXEC_POLL_MAX_MS) {
                ex->poll_ms *= 2;
            }
            if (ex->polls % 100 == 0) {
                vsb_log(VSB_LOG_WARN, "exec %s/%s: processes remain after "
                        "%u kill rounds", ex->sb->id, ex->cg_name,
                        ex->polls / 10);
            }
        }

        vsb_timer_add(&ex->poll, ex->poll_ms);
        return;
    }

    memset(&res, 0, sizeof(res));
    vsb_exec_result(ex, &res);

    if (vsb_cgroup_destroy(ex->cgroup, err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_WARN, "exec %s/%s: remove cgroup: %s", ex->sb->id,
                ex->cg_name, err);
        ex->polls++;
        vsb_timer_add(&ex->poll, ex->poll_ms);
        return;
    }

    ex->cgroup = NULL;

    /* every process is gone: its network attempts, then the reply */
    ex->res = res;
    vsb_egress_exec_end(ex->sb, ex->egress, vsb_exec_network, ex);
}


static void
vsb_exec_network(void *data, json_t *network)
{
    vsb_exec_t     *ex = data;
    vsb_sandbox_t  *sb = ex->sb;
    int             oom;

    ex->egress = NULL;
    ex->res.network = network;

    vsb_exec_unlink(ex);

    vsb_log(VSB_LOG_DEBUG, "exec %s/%s: done: %s exit %d signal %d%s%s%s "
            "wall %llu ms", ex->sb->id, ex->cg_name,
            ex->res.error ? ex->res.error : "ok", ex->res.exit_code,
            ex->res.signo, ex->res.timed_out ? " timed out" : "",
            ex->res.oom_killed ? " oom" : "",
            ex->res.pids_limit_hit ? " pids limit hit" : "",
            (unsigned long long) ex->res.wall_ms);

    oom = ex->res.oom_killed;
    ex->done(ex, &ex->res, ex->data);

    json_decref(network);
    vsb_exec_free(ex);

    /* activity, and a limit that may have left the sandbox unusable */
    vsb_lifetime_exec_ended(sb, oom);
}


void
vsb_exec_cancel(vsb_exec_t *ex)
{
    if (ex->finishing || ex->cancelled) {
        return;
    }

    ex->cancelled = 1;
    vsb_exec_kill(ex);

    /* nobody may want the rest of its output: do not wait on a reader */
    vsb_exec_pause(ex, 0);
}


void
vsb_exec_cancel_all(vsb_sandbox_t *sb)
{
    vsb_exec_t  *ex;

    for (ex = sb->execs; ex != NULL; ex = ex->next) {
        vsb_exec_cancel(ex);
    }
}


/* ---- start ---- */

static int
vsb_exec_pipe(int fds[2], int helper_end, char *err, size_t errlen)
{
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "exec: pipe: %s", strerror(errno));
        return -1;
    }

    if (fcntl(fds[helper_end], F_SETFL, O_NONBLOCK) != 0) {
        snprintf(err, errlen, "exec: pipe non-blocking: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }

    return 0;
}


static void
vsb_exec_close_pair(int fds[2])
{
    if (fds[0] != -1) {
        close(fds[0]);
        fds[0] = -1;
    }

    if (fds[1] != -1) {
        close(fds[1]);
        fds[1] = -1;
    }
}


/* An exec's deadline, decided here once for every kind of exec (a
 * request's, a background one, an archive's tar): the request's
 * timeout_s (0: none), else the sandbox's own within the gateway's cap,
 * within VSB_ABS_TIMEOUT_S: never no deadline. */
static uint64_t
vsb_exec_deadline_ms(const vsb_sandbox_t *sb,
    const vsb_exec_request_t *req)
{
    uint64_t  s;

    s = req->timeout_s ? req->timeout_s
                       : vsb_capped(sb->limits.timeout_s, req->timeout_cap);

    if (s == 0 || s > VSB_ABS_TIMEOUT_S) {
        s = VSB_ABS_TIMEOUT_S;
    }

    return s * 1000;
}


vsb_exec_t *
vsb_exec_start(vsb_sandbox_t *sb, const vsb_exec_request_t *req,
    vsb_exec_done_pt done, void *data, char *err, size_t errlen)
{
    int           in[2] = { -1, -1 }, out[2] = { -1, -1 };
    int           er[2] = { -1, -1 }, st[2] = { -1, -1 };
    char        **argv, **envp;
    char          cgerr[256];
    uint64_t      timeout_ms, limit;
    vsb_exec_t   *ex;
    vsb_spawn_t   sp;

    if (sb->destroying) {
        snprintf(err, errlen, "sandbox %s is being destroyed", sb->id);
        return NULL;
    }

    if (req->cwd != NULL && req->cwd[0] != '/') {
        snprintf(err, errlen, "cwd must be an absolute path");
        return NULL;
    }

    envp = NULL;

    argv = vsb_exec_argv(req, err, errlen);
    if (argv == NULL) {
        return NULL;
    }

    envp = vsb_exec_envp(sb, req, err, errlen);
    if (envp == NULL) {
        free(argv);
        return NULL;
    }

    ex = calloc(1, sizeof(vsb_exec_t));
    if (ex == NULL) {
        snprintf(err, errlen, "exec: %s", strerror(errno));
        goto failed;
    }

    ex->sb = sb;
    ex->done = done;
    ex->data = data;
    ex->pidfd = -1;
    ex->out.ex = ex;
    ex->err.ex = ex;
    ex->out.which = VSB_EXEC_STDOUT;
    ex->err.which = VSB_EXEC_STDERR;
    ex->output = req->output;
    ex->out.to_output = req->stream_stdout && req->output != NULL;
    ex->err.to_output = req->stream_stderr && req->output != NULL;
    ex->in_stream = req->stdin_stream;
    ex->stdin_ready = req->stdin_ready;

    limit = req->output_bytes ? req->output_bytes
                              : vsb_capped(sb->limits.output_bytes,
                                           req->output_cap);
    vsb_outcap_init(&ex->out.cap, (size_t) limit);
    vsb_outcap_init(&ex->err.cap, (size_t) limit);
    ex->in_ev.fd = -1;
    ex->out.ev.fd = -1;
    ex->err.ev.fd = -1;
    ex->st_ev.fd = -1;

    if (req->stdin_len > 0 && !req->stdin_stream) {
        ex->in_buf = malloc(req->stdin_len);
        if (ex->in_buf == NULL) {
            snprintf(err, errlen, "exec: stdin copy: %s", strerror(errno));
            goto failed;
        }

        memcpy(ex->in_buf, req->stdin_data, req->stdin_len);
        ex->in_len = req->stdin_len;
    }

    snprintf(ex->cg_name, sizeof(ex->cg_name), "e%u", ++sb->exec_seq);

    ex->cgroup = vsb_cgroup_create(sb->cgroup, ex->cg_name, NULL, cgerr,
                                   sizeof(cgerr));
    if (ex->cgroup == NULL) {
        snprintf(err, errlen, "exec: create cgroup %s: %s", ex->cg_name,
                 cgerr);
        goto failed;
    }

    /* what the sandbox's pids.events counted before this exec (unread:
     * no rise can be seen, the exec's own counter still can) */
    if (vsb_cgroup_pids_refused(sb->cgroup, &ex->pids_refused) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "exec %s/%s: read the sandbox's "
                      "pids.events", sb->id, ex->cg_name);
        ex->pids_refused = UINT64_MAX;
    }

    if (vsb_exec_pipe(in, 1, err, errlen) != 0
        || vsb_exec_pipe(out, 0, err, errlen) != 0
        || vsb_exec_pipe(er, 0, err, errlen) != 0
        || vsb_exec_pipe(st, 0, err, errlen) != 0)
    {
        goto failed;
    }

    sp.sb = sb;
    sp.cgroup = ex->cgroup;
    sp.argv = argv;
    sp.envp = envp;
    sp.cwd = req->cwd ? req->cwd : VSB_EXEC_DEFAULT_CWD;
    sp.stdin_fd = in[0];
    sp.stdout_fd = out[1];
    sp.stderr_fd = er[1];
    sp.status_fd = st[1];

    ex->start_ms = vsb_now_ms();

    ex->pid = vsb_spawn(&sp, &ex->pidfd, err, errlen);
    if (ex->pid == -1) {
        goto failed;
    }

    free(argv);
    vsb_exec_env_free(envp);
    argv = NULL;
    envp = NULL;

    ex->egress = vsb_egress_exec_begin(sb);

    /* the child's ends live on in the init only */
    close(in[0]);
    close(out[1]);
    close(er[1]);
    close(st[1]);

    ex->in_ev.fd = in[1];
    ex->in_ev.handler = vsb_exec_stdin;
    ex->in_ev.data = ex;
    ex->out.ev.fd = out[0];
    ex->out.ev.handler = vsb_exec_output;
    ex->out.ev.data = &ex->out;
    ex->err.ev.fd = er[0];
    ex->err.ev.handler = vsb_exec_output;
    ex->err.ev.data = &ex->err;
    ex->st_ev.fd = st[0];
    ex->st_ev.handler = vsb_exec_status;
    ex->st_ev.data = ex;
    ex->pid_ev.fd = ex->pidfd;
    ex->pid_ev.handler = vsb_exec_init_exited;
    ex->pid_ev.data = ex;

    ex->deadline.handler = vsb_exec_deadline;
    ex->deadline.data = ex;
    ex->grace.handler = vsb_exec_grace;
    ex->grace.data = ex;
    ex->poll.handler = vsb_exec_poll;
    ex->poll.data = ex;

    ex->next = sb->execs;
    sb->execs = ex;
    sb->execs_running++;

    if (ex->in_stream) {
        /* registered when a write would block */

    } else if (ex->in_len == 0) {
        vsb_exec_close_event(&ex->in_ev);     /* EOF on the workload's stdin */

    } else if (vsb_loop_add(&ex->in_ev, EPOLLOUT) != 0) {
        goto loop_failed;
    }

    if (vsb_loop_add(&ex->out.ev, EPOLLIN) != 0
        || vsb_loop_add(&ex->err.ev, EPOLLIN) != 0
        || vsb_loop_add(&ex->st_ev, EPOLLIN) != 0
        || vsb_loop_add(&ex->pid_ev, EPOLLIN) != 0)
    {
        goto loop_failed;
    }

    timeout_ms = vsb_exec_deadline_ms(sb, req);

    vsb_timer_add(&ex->deadline, timeout_ms);

    vsb_log(VSB_LOG_DEBUG, "exec %s/%s: started init %d", sb->id,
            ex->cg_name, (int) ex->pid);

    return ex;

loop_failed:

    /* the init runs: kill it and let the normal path confirm and report */
    snprintf(err, errlen, "exec: register with the event loop failed");
    vsb_log(VSB_LOG_ERR, "exec %s/%s: %s", sb->id, ex->cg_name, err);
    ex->cancelled = 1;
    vsb_exec_finish(ex);
    return ex;

failed:

    vsb_exec_close_pair(in);
    vsb_exec_close_pair(out);
    vsb_exec_close_pair(er);
    vsb_exec_close_pair(st);

    free(argv);
    vsb_exec_env_free(envp);

    if (ex != NULL) {
        if (ex->cgroup != NULL
            && vsb_cgroup_destroy(ex->cgroup, cgerr, sizeof(cgerr)) != 0)
        {
            vsb_log(VSB_LOG_ERR, "exec %s/%s: remove cgroup: %s", sb->id,
                    ex->cg_name, cgerr);
        }

        free(ex->in_buf);
        vsb_outcap_free(&ex->out.cap);
        vsb_outcap_free(&ex->err.cap);
        free(ex);
    }

    return NULL;
}
