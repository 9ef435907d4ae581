/*
 * The exec's init as pid 1, once setup is done: it reaps every child and
 * answers the syscalls the workload's seccomp filter hands it (EPERM or
 * ENOSYS, see vsb_seccomp.h), recording their numbers, until the
 * workload itself exits.  Runs inside the sandbox, under the init's own
 * filter, with no capabilities: a flood of refused calls costs the
 * exec's own cgroup, never the helper.  Allocation-free.
 */
#ifndef VSB_SUPERVISE_H
#define VSB_SUPERVISE_H

#include <stddef.h>
#include <sys/types.h>

#include "vsb_seccomp.h"

/*
 * notify_sock: the init's end of the socket the workload sends its
 * listener over (closed here).  Returns 0 with the workload's wait status
 * in *wstatus and what was refused in *refused, or -1 with err filled.
 */
int vsb_supervise(int notify_sock, pid_t workload, int *wstatus,
    vsb_sc_refused_t *refused, char *err, size_t errlen);

#endif
