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
#include <sys/types.h>

#include "vsb_outcap.h"
#include "vsb_sandbox.h"
#include "vsb_seccomp.h"

#define VSB_EXEC_STDOUT  1
#define VSB_EXEC_STDERR  2

/* Output of a streamed stream (VSB_EXEC_STDOUT or _STDERR) as it is
 * read, offset its position in the stream; data is valid during the call
 * only.  The callee may pause or cancel the exec. */
typedef void (*vsb_exec_output_pt)(vsb_exec_t *ex, int stream,
    uint64_t offset, const unsigned char *data, size_t len, void *udata);
/* A streamed stdin that would block can take bytes again. */
typedef void (*vsb_exec_stdin_pt)(vsb_exec_t *ex, void *udata);

typedef struct {
    json_t          *argv;          /* array of strings, borrowed */
    const char      *cwd;           /* absolute, inside the sandbox */
    json_t          *env;           /* object of strings, borrowed;
                                       added over the sandbox's env */
    uint64_t         timeout_s;     /* the request's; 0: the sandbox's */
    uint64_t         timeout_cap;   /* the gateway's cap on the sandbox's
                                       (0: none) */
    const unsigned char *stdin_data;    /* copied by vsb_exec_start() */
    size_t           stdin_len;

    uint64_t         output_bytes;  /* kept per captured stream, head and
                                       tail; 0: the sandbox's limit */
    uint64_t         output_cap;    /* the gateway's cap on the sandbox's
                                       limit (0: none) */
    unsigned         stream_stdout:1;   /* to output(), not kept */
    unsigned         stream_stderr:1;
    unsigned         stdin_stream:1;    /* fed by vsb_exec_stdin_write() */
    unsigned         own_env:1;         /* env only: not the sandbox's (the
                                           helper's own tools) */
    vsb_exec_output_pt  output;
    vsb_exec_stdin_pt   stdin_ready;
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
    int              pids_limit_hit;    /* a fork was refused: the
                                           sandbox's pids limit */

    /* what was kept of each stream (valid during the callback only); a
     * streamed stream keeps nothing: its total is what output() got */
    vsb_outcap_view_t  out;
    vsb_outcap_view_t  err;

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
/* Every exec of sb (a destroy has begun). */
void vsb_exec_cancel_all(vsb_sandbox_t *sb);

/* Streamed output: stop (1) or resume (0) reading the workload's pipes;
 * a workload that writes more blocks meanwhile.  Its deadline runs on. */
void vsb_exec_pause(vsb_exec_t *ex, int pause);

/* Streamed stdin: bytes written (0: the pipe is full, stdin_ready comes
 * when it is not), or -1 when the workload's stdin is closed (it exited
 * or closed it): the caller drops the rest. */
ssize_t vsb_exec_stdin_write(vsb_exec_t *ex, const unsigned char *data,
    size_t len);
void vsb_exec_stdin_close(vsb_exec_t *ex);

#endif
