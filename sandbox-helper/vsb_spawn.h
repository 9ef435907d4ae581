/*
 * The exec's init: cloned by the helper into new user, pid, mount, ipc
 * and uts namespaces inside the sandbox's network namespace, held on a
 * sync pipe until the helper has put it into its cgroup and written its
 * uid/gid maps, then released.  It builds the sandbox (cgroup namespace,
 * hostname, root filesystem), forks the workload, drops every privilege
 * and, as pid 1, reaps children until the workload exits.  It reports
 * the workload's wait status, or the setup step that failed, as one
 * vsb_spawn_status_t on the status pipe, and exits; the kernel then
 * kills whatever else is left in the pid namespace.
 */
#ifndef VSB_SPAWN_H
#define VSB_SPAWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_sandbox.h"
#include "vsb_seccomp.h"

#define VSB_SPAWN_EXITED  1         /* status is the workload's wait status */
#define VSB_SPAWN_FAILED  2         /* errnum and detail name the step */
#define VSB_SPAWN_BAD_CWD 3         /* the workload's chdir to its cwd */

/* One record, smaller than PIPE_BUF: written and read atomically. */
typedef struct {
    uint32_t  kind;
    int32_t   status;
    int32_t   errnum;
    char      detail[244];
    vsb_sc_refused_t  refused;      /* with VSB_SPAWN_EXITED */
} vsb_spawn_status_t;

typedef struct {
    const vsb_sandbox_t  *sb;
    vsb_cgroup_t         *cgroup;   /* the exec's, the init goes in it */
    char *const          *argv;
    char *const          *envp;
    const char           *cwd;
    int                   stdin_fd; /* child ends of the pipes */
    int                   stdout_fd;
    int                   stderr_fd;
    int                   status_fd;
} vsb_spawn_t;

/*
 * Starts the init.  On success returns its pid (host pid namespace) and
 * a pidfd for it in *pidfd; the init is a "clone" child (no exit signal),
 * reap it with waitid(P_PIDFD, ..., WEXITED | __WALL).  On failure
 * returns -1 with err filled; nothing is left running.
 */
pid_t vsb_spawn(const vsb_spawn_t *sp, int *pidfd, char *err, size_t errlen);

/* The namespaces every exec runs in, by name ("user", "pid", "mount",
 * ...), NULL terminated. */
extern const char *const  vsb_spawn_namespaces[];

#endif
