/*
 * One command run inside a sandbox: a fresh set of namespaces per exec
 * (user, pid, mount, net, ipc, uts, cgroup) over the sandbox's persistent
 * files, an exec cgroup under the sandbox's, pipes for stdin/stdout/
 * stderr, a deadline.  Every process the exec starts dies with it: the
 * pid namespace's init is ours, and the exec cgroup is killed at the end.
 */
#ifndef VSB_EXEC_H
#define VSB_EXEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "vsb_sandbox.h"
#include "vsb_seccomp.h"

typedef struct {
    json_t          *argv;          /* array of strings, borrowed */
    const char      *cwd;           /* absolute, inside the sandbox */
    json_t          *env;           /* object of strings, borrowed;
                                       added over the sandbox's env */
    uint64_t         timeout_ms;
    const unsigned char *stdin_data;    /* copied by vsb_exec_start() */
    size_t           stdin_len;
} vsb_exec_request_t;

typedef struct {
    /* Set when the sandbox could not be set up: error is VSB_E_* and
     * detail says which step failed and why.  Nothing else is valid. */
    const char      *error;
    char             detail[256];

    int              exited;        /* exit_code valid */
    int              exit_code;
    int              signaled;      /* signo valid */
    int              signo;
    int              timed_out;
    int              oom_killed;

    const unsigned char *out;       /* valid during the callback only */
    size_t           out_len;
    int              out_truncated;
    const unsigned char *err;
    size_t           err_len;
    int              err_truncated;

    uint64_t         cpu_ms;
    uint64_t         wall_ms;
    uint64_t         peak_memory_bytes;
    uint64_t         peak_pids;

    vsb_sc_refused_t refused;       /* syscalls the filter refused */

    json_t          *network;       /* "none" or {attempts, dropped,
                                       complete}; during the callback */
} vsb_exec_result_t;

typedef void (*vsb_exec_done_pt)(vsb_exec_t *ex,
    const vsb_exec_result_t *res, void *data);

/*
 * Starts req in sb.  done is called exactly once, from the event loop,
 * after every process of the exec is confirmed dead and its cgroup is
 * removed; sb->execs_running counts it until then.  Returns NULL with err
 * filled (nothing started, done not called) if it cannot start.
 */
vsb_exec_t *vsb_exec_start(vsb_sandbox_t *sb, const vsb_exec_request_t *req,
    vsb_exec_done_pt done, void *data, char *err, size_t errlen);

/* Kill the exec now (client gone, sandbox destroyed).  done still comes,
 * later, once termination is confirmed. */
void vsb_exec_cancel(vsb_exec_t *ex);

#endif
