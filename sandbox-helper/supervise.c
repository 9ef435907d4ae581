/*
 * The exec's init after setup: reaper and seccomp supervisor.  See
 * vsb_supervise.h.
 */
#include <errno.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_fdpass.h"
#include "vsb_seccomp_int.h"
#include "vsb_supervise.h"

/* static: the init allocates nothing, and is single-threaded */
static union {
    struct seccomp_notif       n;
    unsigned char              b[VSB_SC_NOTIF_BUF];
} vsb_sv_req;

static union {
    struct seccomp_notif_resp  r;
    unsigned char              b[VSB_SC_NOTIF_BUF];
} vsb_sv_resp;


/*
 * The workload's listener, or -1 if the workload ended (or failed a
 * setup step) before it loaded its filter; -2 with err filled on error.
 */
static int
vsb_sv_recv_listener(int sock, char *err, size_t errlen)
{
    int      fd;
    char     byte;
    ssize_t  n;

    n = vsb_fd_recv(sock, &byte, 1, MSG_DONTWAIT, &fd);

    if (n == 0 || (n == -1 && errno == ECONNRESET)) {
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    if (n == -1) {
        snprintf(err, errlen, "supervise: receive the seccomp listener: %s",
                 strerror(errno));
        return -2;
    }

    if (n != 1 || fd == -1) {
        if (fd != -1) {
            close(fd);
        }
        snprintf(err, errlen, "supervise: the workload sent no seccomp "
                 "listener");
        return -2;
    }

    return fd;
}


/* Answers one notification; 0, or -1 with errno set. */
static int
vsb_sv_answer(int listener, vsb_sc_refused_t *refused)
{
    int  e;

    /* the kernel insists on a zeroed request */
    memset(&vsb_sv_req, 0, sizeof(vsb_sv_req));

    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &vsb_sv_req.n) != 0) {
        /* ENOENT: the caller was interrupted or died before we read it */
        return (errno == EINTR || errno == ENOENT) ? 0 : -1;
    }

    e = vsb_seccomp_refusal_errno(vsb_sv_req.n.data.nr);
    vsb_seccomp_refused_add(refused, vsb_sv_req.n.data.nr, e);

    /* never SECCOMP_USER_NOTIF_FLAG_CONTINUE: this only refuses */
    memset(&vsb_sv_resp, 0, sizeof(vsb_sv_resp));
    vsb_sv_resp.r.id = vsb_sv_req.n.id;
    vsb_sv_resp.r.val = 0;
    vsb_sv_resp.r.error = -e;
    vsb_sv_resp.r.flags = 0;

    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &vsb_sv_resp.r) != 0) {
        return (errno == EINTR || errno == ENOENT) ? 0 : -1;
    }

    return 0;
}


/* Reaps what has ended: 1 if the workload was among it, 0 if not, -1 on
 * error. */
static int
vsb_sv_reap(pid_t workload, int *wstatus)
{
    int    status;
    pid_t  pid;

    for ( ;; ) {
        pid = waitpid(-1, &status, WNOHANG | __WALL);

        if (pid > 0) {
            if (pid == workload) {
                *wstatus = status;
                return 1;
            }
            continue;
        }

        if (pid == 0) {
            return 0;
        }

        if (errno != EINTR) {
            return -1;
        }
    }
}


int
vsb_supervise(int notify_sock, pid_t workload, int *wstatus,
    vsb_sc_refused_t *refused, char *err, size_t errlen)
{
    int                      sfd, listener, rc, n, i_sock, i_lis;
    sigset_t                 set;
    struct pollfd            pfd[3];
    struct signalfd_siginfo  si;

    memset(refused, 0, sizeof(*refused));
    listener = -1;
    rc = -1;

    /* blocked only now: the workload must not inherit the mask */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);

    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        snprintf(err, errlen, "supervise: block SIGCHLD: %s",
                 strerror(errno));
        close(notify_sock);
        return -1;
    }

    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd == -1) {
        snprintf(err, errlen, "supervise: signalfd: %s", strerror(errno));
        close(notify_sock);
        return -1;
    }

    for ( ;; ) {
        /* first: a child may have ended before the signalfd existed */
        switch (vsb_sv_reap(workload, wstatus)) {
        case 1:
            rc = 0;
            goto done;
        case 0:
            break;
        default:
            snprintf(err, errlen, "supervise: wait for workload: %s",
                     strerror(errno));
            goto done;
        }

        n = 0;
        pfd[n].fd = sfd;
        pfd[n].events = POLLIN;
        pfd[n].revents = 0;
        n++;

        i_sock = -1;
        if (notify_sock != -1) {
            i_sock = n;
            pfd[n].fd = notify_sock;
            pfd[n].events = POLLIN;
            pfd[n].revents = 0;
            n++;
        }

        i_lis = -1;
        if (listener != -1) {
            i_lis = n;
            pfd[n].fd = listener;
            pfd[n].events = POLLIN;
            pfd[n].revents = 0;
            n++;
        }

        if (poll(pfd, (nfds_t) n, -1) == -1) {
            if (errno == EINTR) {
                continue;
            }

            snprintf(err, errlen, "supervise: poll: %s", strerror(errno));
            goto done;
        }

        if (pfd[0].revents) {
            while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                /* void: the reap above reads the real state */
            }
        }

        if (i_sock != -1 && pfd[i_sock].revents) {
            listener = vsb_sv_recv_listener(notify_sock, err, errlen);
            if (listener == -2) {
                listener = -1;
                goto done;
            }

            close(notify_sock);
            notify_sock = -1;
        }

        if (i_lis != -1 && (pfd[i_lis].revents & POLLIN)) {
            if (vsb_sv_answer(listener, refused) != 0) {
                snprintf(err, errlen, "supervise: answer a refused syscall: "
                         "%s", strerror(errno));
                goto done;
            }

        } else if (i_lis != -1 && pfd[i_lis].revents) {
            /* no process uses the filter any more */
            close(listener);
            listener = -1;
        }
    }

done:

    /* on an error the caller exits at once, which kills the pid
     * namespace: the workload never outlives its listener */
    if (listener != -1) {
        close(listener);
    }

    if (notify_sock != -1) {
        close(notify_sock);
    }

    close(sfd);
    return rc;
}
