/*
 * cgroup limits and process tracking, for cgroup v2 and for the v1
 * (hybrid) layout.  One vsb_cgroup_t names the same relative path in every
 * hierarchy the helper uses: on v2 the unified tree, on v1 the memory,
 * pids, cpu(acct) and freezer trees.  Sandbox cgroups hold the limits;
 * each exec gets a child cgroup for its usage and its kill.
 *
 *     <parent>/<cgroup_name>/<sandbox id>/            limits
 *     <parent>/<cgroup_name>/<sandbox id>/e<n>/       one exec
 */
#ifndef VSB_CGROUP_H
#define VSB_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_config.h"

typedef enum {
    VSB_CGROUP_V1 = 1,
    VSB_CGROUP_V2 = 2
} vsb_cgroup_mode_t;

typedef struct vsb_cgroup_s  vsb_cgroup_t;

typedef struct {
    uint64_t  cpu_usec;          /* user + system */
    uint64_t  memory_current;    /* bytes */
    uint64_t  memory_peak;       /* bytes, since creation */
    uint64_t  pids_current;
    uint64_t  pids_peak;
    uint64_t  oom_kills;         /* processes killed by the OOM killer */
} vsb_cgroup_usage_t;

/* Detects v2 or v1 (cf->cgroup_mode "auto"), creates the helper's parent
 * cgroup, enables controllers on v2.  -1 with err filled on failure. */
int vsb_cgroup_init(const vsb_config_t *cf, char *err, size_t errlen);
vsb_cgroup_mode_t vsb_cgroup_mode(void);

/* parent NULL: directly under the helper's parent cgroup.  limits NULL:
 * no limits of its own.  NULL with err filled on failure (nothing left
 * behind). */
vsb_cgroup_t *vsb_cgroup_create(vsb_cgroup_t *parent, const char *name,
    const vsb_limits_t *limits, char *err, size_t errlen);

int vsb_cgroup_attach(vsb_cgroup_t *cg, pid_t pid);

/*
 * v1: the init joins its exec cgroup itself.  The helper opens each
 * hierarchy's tasks file (at most VSB_CGROUP_JOIN_MAX; the kernel checks
 * the opener's credentials, so the init may write from its new user
 * namespace) and the init writes "0" to each: a thread moving itself
 * skips the write side of the kernel's cgroup threadgroup lock, which
 * waits for an RCU grace period (12-19 ms measured here for the helper's
 * write of a pid to cgroup.procs, 20-40 us for this).  On v2 (or with no
 * hierarchy) *n is 0: use vsb_cgroup_attach().  -1 with err filled.
 */
#define VSB_CGROUP_JOIN_MAX  8
int vsb_cgroup_join_open(vsb_cgroup_t *cg, int *fds, size_t *n, char *err,
    size_t errlen);
/* In the init (single-threaded, before anything else): 0, or -1 with
 * errno set; every descriptor is closed either way. */
int vsb_cgroup_join_self(int *fds, size_t n);
void vsb_cgroup_join_close(int *fds, size_t n);

/* SIGKILL every process in cg and below: cgroup.kill on v2; freeze,
 * kill, thaw on v1.  Returns 0 once the signals are sent. */
int vsb_cgroup_kill(vsb_cgroup_t *cg);

/*
 * Freezes (freeze 1) or thaws every process of cg and below: v2's
 * cgroup.freeze, v1's freezer.state.  The kernel does it
 * asynchronously: vsb_cgroup_frozen() says 1 once every task is frozen
 * (0 while some are not yet), -1 on error.  A frozen task takes no CPU
 * and no signal but SIGKILL (v2; on v1 a killed task dies when thawed:
 * vsb_cgroup_kill() thaws).
 */
int vsb_cgroup_freeze(vsb_cgroup_t *cg, int freeze, char *err,
    size_t errlen);
int vsb_cgroup_frozen(vsb_cgroup_t *cg);

/* 1 if any process is in cg or below, 0 if empty, -1 on error. */
int vsb_cgroup_populated(vsb_cgroup_t *cg);

int vsb_cgroup_usage(vsb_cgroup_t *cg, vsb_cgroup_usage_t *u);

/* Bytes of shared memory (tmpfs files) charged to cg and below: what
 * stays charged when no process runs.  -1 on error. */
int vsb_cgroup_shmem(vsb_cgroup_t *cg, uint64_t *bytes);

/*
 * The "max" counter of cg's pids.events: forks a pids limit refused.  The
 * kernels count them in two places: v1, and v2 before Linux 6.12 (or
 * mounted with pids_localevents), in the cgroup of the process that
 * forked, whichever limit refused it; v2 since 6.12 in the cgroup whose
 * pids.max was hit and its ancestors.  So a refused fork of an exec shows
 * in its exec cgroup, or as a rise in its sandbox's (exec.c reads
 * both).  0 when the pids controller does not cover cg; -1 on error.
 */
int vsb_cgroup_pids_refused(vsb_cgroup_t *cg, uint64_t *n);

/* 0 if no cgroup of that name is under the helper's parent in any
 * hierarchy; 1 if one is, 2 if it holds processes; -1 on error. */
int vsb_cgroup_exists(const char *name);

/* rmdir in every hierarchy (children first), verifies each directory is
 * gone, frees cg.  -1 with err naming the directory if one remains (cg is
 * still valid then and may be retried). */
int vsb_cgroup_destroy(vsb_cgroup_t *cg, char *err, size_t errlen);

/* At start: kill and remove whatever a previous run left under the
 * helper's parent cgroup.  Returns how many sandbox cgroups it removed,
 * -1 if one could not be removed. */
int vsb_cgroup_cleanup_stale(void);

/* At a clean exit, once every sandbox is gone: rmdir the helper's parent
 * cgroup in every hierarchy.  -1 if one remains (logged). */
int vsb_cgroup_remove_base(void);

/* Count of directories under the helper's parent cgroup (for tests and
 * status). */
int vsb_cgroup_count(void);

#endif
