/*
 * The two backends, cgroup1.c and cgroup2.c, as the facade (cgroup.c)
 * calls them.  Not for other modules; the test-only entry point at the
 * end is for t/unit/test_cgroup.c.
 */
#ifndef VSB_CGROUP_INT_H
#define VSB_CGROUP_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_cgroup.h"
#include "vsb_cgroup_fs.h"
#include "vsb_config.h"

/* cgroup1.c */
int vsb_cg1_detect(void);           /* 1 if the v1 hierarchies are there */
int vsb_cg1_init(char *err, size_t errlen);
int vsb_cg1_set_limits(vsb_cgroup_t *cg, const vsb_limits_t *limits,
    char *err, size_t errlen);
int vsb_cg1_kill(vsb_cgroup_t *cg);
int vsb_cg1_populated(vsb_cgroup_t *cg);
int vsb_cg1_usage(vsb_cgroup_t *cg, vsb_cgroup_usage_t *u);
int vsb_cg1_shmem(vsb_cgroup_t *cg, uint64_t *bytes);
int vsb_cg1_pids_refused(vsb_cgroup_t *cg, uint64_t *n);
int vsb_cg1_freeze(vsb_cgroup_t *cg, int freeze, char *err, size_t errlen);
int vsb_cg1_frozen(vsb_cgroup_t *cg);

/* cgroup2.c; mount NULL: find the cgroup2 mount (/sys/fs/cgroup first).
 * need_ctrl: fail unless memory, pids and cpu are all available. */
int vsb_cg2_init(const char *mount, int need_ctrl, char *err, size_t errlen);
int vsb_cg2_prepare_child(vsb_cgroup_t *parent, char *err, size_t errlen);
int vsb_cg2_set_limits(vsb_cgroup_t *cg, const vsb_limits_t *limits,
    char *err, size_t errlen);
int vsb_cg2_kill(vsb_cgroup_t *cg);
int vsb_cg2_populated(vsb_cgroup_t *cg);
int vsb_cg2_usage(vsb_cgroup_t *cg, vsb_cgroup_usage_t *u);
int vsb_cg2_shmem(vsb_cgroup_t *cg, uint64_t *bytes);
int vsb_cg2_pids_refused(vsb_cgroup_t *cg, uint64_t *n);
int vsb_cg2_freeze(vsb_cgroup_t *cg, int freeze, char *err, size_t errlen);
int vsb_cg2_frozen(vsb_cgroup_t *cg);

/* test-only: use the cgroup2 hierarchy mounted at path (e.g. the empty
 * /sys/fs/cgroup/unified of a hybrid host) whatever controllers it has. */
int vsb_cgroup_init_v2_at(const char *path, const char *cgroup_name,
    char *err, size_t errlen);

#endif
