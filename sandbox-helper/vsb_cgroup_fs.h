/*
 * cgroup file and tree helpers (cgroup_fs.c) and the state they share
 * with the facade (cgroup.c) and the backends (cgroup1.c, cgroup2.c).
 * Not for other modules.
 */
#ifndef VSB_CGROUP_FS_H
#define VSB_CGROUP_FS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_cgroup.h"

#define VSB_CG_MAX_HIER      5      /* v1: memory pids cpu cpuacct freezer */
#define VSB_CG_NAME_MAX      64     /* one path component */
#define VSB_CG_MAX_DEPTH     8      /* walks below the parent cgroup */
#define VSB_CG_REL_MAX       256    /* path below the parent cgroup */

/* controllers a hierarchy carries (bit set) */
#define VSB_CG_MEMORY        0x01
#define VSB_CG_PIDS          0x02
#define VSB_CG_CPU           0x04
#define VSB_CG_CPUACCT       0x08
#define VSB_CG_FREEZER       0x10

typedef struct {
    char          mount[PATH_MAX];  /* where the hierarchy is mounted */
    char          own[PATH_MAX];    /* the helper's cgroup, absolute dir */
    char          base[PATH_MAX];   /* own/<cgroup_name>: our parent */
    unsigned      ctrl;             /* VSB_CG_* carried (v1), enabled (v2) */
} vsb_cg_hier_t;

typedef struct {
    vsb_cgroup_mode_t  mode;
    char               name[VSB_CG_NAME_MAX + 1];
    vsb_cg_hier_t      hier[VSB_CG_MAX_HIER];
    size_t             nhier;
    unsigned           ctrl;        /* union of hier[].ctrl */
    unsigned           memsw:1;     /* v1 memory.memsw.* exist */
    unsigned           swap_max:1;  /* v2 memory.swap.max exists */
    unsigned           pids_peak:1; /* pids.peak exists */
    unsigned           mem_peak:1;  /* v2 memory.peak exists */
} vsb_cg_ctx_t;

struct vsb_cgroup_s {
    vsb_cgroup_t      *parent;
    char               rel[VSB_CG_REL_MAX];   /* "sb-1f2e" or "sb-1f2e/e3" */
};

extern vsb_cg_ctx_t  vsb_cg;

/* file and tree helpers used by the facade and both backends */
int vsb_cg_path(char *buf, size_t len, const vsb_cg_hier_t *h,
    const char *rel, const char *file);
int vsb_cg_write(const char *dir, const char *file, const char *val,
    char *err, size_t errlen);
/* -1 with errno set (ENOENT when the file does not exist). */
int vsb_cg_read(const char *dir, const char *file, char *buf, size_t len);
int vsb_cg_read_u64(const char *dir, const char *file, uint64_t *v);
int vsb_cg_read_key(const char *dir, const char *file, const char *key,
    uint64_t *v);
/* SIGKILL every pid in cgroup.procs of dir and of its descendants.
 * Returns how many were signalled, -1 if a cgroup.procs could not be read. */
int vsb_cg_kill_procs(const char *dir);
/* 1 if cgroup.procs of dir or of a descendant lists a pid, 0, or -1. */
int vsb_cg_has_procs(const char *dir);
/* visit dir and every cgroup below it, parents first; stops at the
 * first non-zero return, which it returns (-1 also on a walk error) */
int vsb_cg_walk_pre(const char *dir, int (*visit)(const char *dir,
    void *data), void *data);
int vsb_cg_mkdir_base(vsb_cg_hier_t *h, char *err, size_t errlen);
int vsb_cg_own_cgroup(const char *controller, const char *mount_root,
    const char *mount, char *out, size_t len, char *err, size_t errlen);
void vsb_cg_sleep_ms(unsigned ms);

typedef int (*vsb_cg_visit_pt)(const char *dir, void *data);

/* Pre-order (pre) and post-order (post) visit of dir and every cgroup
 * below it, depth starting at 0; stops at the first callback returning
 * non-zero, which it returns (-1 also on a walk error). */
int vsb_cg_walk(const char *dir, int depth, vsb_cg_visit_pt pre,
    vsb_cg_visit_pt post, void *data);

#endif
