/*
 * Resource limits applied to the workload before execve: no core dumps,
 * a bounded fd table, files no larger than the sandbox's disk.  Soft and
 * hard limits are both set, so the workload cannot raise them.  Process
 * counts are bounded by the pids cgroup, not RLIMIT_NPROC.
 */
#ifndef VSB_RLIMITS_H
#define VSB_RLIMITS_H

#include <stddef.h>

#include "vsb_config.h"

#define VSB_RLIMIT_NOFILE   1024

int vsb_rlimits_apply(const vsb_limits_t *limits, char *err, size_t errlen);

#endif
