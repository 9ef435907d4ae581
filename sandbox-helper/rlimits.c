/*
 * Workload rlimits.  Soft and hard are set equal: lowering a hard limit
 * needs no privilege and cannot be undone without CAP_SYS_RESOURCE.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "vsb_rlimits.h"


static int
vsb_rlimit_set(int resource, const char *name, rlim_t value, char *err,
    size_t errlen)
{
    struct rlimit  rl;

    if (getrlimit(resource, &rl) != 0) {
        snprintf(err, errlen, "rlimits: get %s: %s", name, strerror(errno));
        return -1;
    }

    /* never try to raise: the host may already be stricter */
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < value) {
        value = rl.rlim_max;
    }

    rl.rlim_cur = value;
    rl.rlim_max = value;

    if (setrlimit(resource, &rl) != 0) {
        snprintf(err, errlen, "rlimits: set %s to %llu: %s", name,
                 (unsigned long long) value, strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_rlimits_apply(const vsb_limits_t *limits, char *err, size_t errlen)
{
    rlim_t  fsize;

    /* a core dump would write the workload's memory into its own disk */
    if (vsb_rlimit_set(RLIMIT_CORE, "RLIMIT_CORE", 0, err, errlen) != 0) {
        return -1;
    }

    if (vsb_rlimit_set(RLIMIT_NOFILE, "RLIMIT_NOFILE", VSB_RLIMIT_NOFILE,
                       err, errlen) != 0)
    {
        return -1;
    }

    /* the tmpfs bounds the sum; this bounds any one file, /dev/shm too */
    fsize = limits->disk_mb ? (rlim_t) limits->disk_mb * 1024 * 1024
                            : RLIM_INFINITY;

    if (vsb_rlimit_set(RLIMIT_FSIZE, "RLIMIT_FSIZE", fsize, err, errlen)
        != 0)
    {
        return -1;
    }

    return 0;
}
