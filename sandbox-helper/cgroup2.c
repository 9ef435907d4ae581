/*
 * cgroup v2 backend: one unified hierarchy.  The parent cgroup is
 * <own cgroup>/<cgroup_name>; controllers are enabled level by level, and
 * a sandbox cgroup hands them down only when it gets its first exec child
 * (so it may hold processes until then: "no internal processes").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vsb_cgroup.h"
#include "vsb_cgroup_int.h"
#include "vsb_log.h"

#define VSB_CG2_FREEZE_WAIT_MS  100
#define VSB_CG2_CPU_PERIOD      100000
#define VSB_CG2_LEAF            "helper"

static char  vsb_cg2_enable[64];        /* "+memory +pids +cpu" as available */


/* the cgroup2 mount: the given one or the first in mountinfo, and the
 * root of the hierarchy it shows */
static int
vsb_cg2_find_mount(const char *want, char *mount, char *root, size_t len)
{
    int       found;
    char     *line, *f[8], *sep, *tok, *save;
    FILE     *fp;
    size_t    cap, nf;
    ssize_t   r;

    fp = fopen("/proc/self/mountinfo", "re");
    if (fp == NULL) {
        return -1;
    }

    line = NULL;
    cap = 0;
    found = 0;

    while (!found && (r = getline(&line, &cap, fp)) != -1) {
        if (r > 0 && line[r - 1] == '\n') {
            line[r - 1] = '\0';
        }

        sep = strstr(line, " - ");
        if (sep == NULL || strncmp(sep + 3, "cgroup2 ", 8) != 0) {
            continue;
        }
        *sep = '\0';

        nf = 0;
        for (tok = strtok_r(line, " ", &save); tok != NULL && nf < 8;
             tok = strtok_r(NULL, " ", &save))
        {
            f[nf++] = tok;
        }
        /* mount points with escaped characters are not supported here */
        if (nf < 5 || strlen(f[4]) >= len || strlen(f[3]) >= len
            || strchr(f[4], '\\') != NULL || strchr(f[3], '\\') != NULL)
        {
            continue;
        }

        if (want != NULL && strcmp(f[4], want) != 0) {
            continue;
        }

        memcpy(mount, f[4], strlen(f[4]) + 1);
        memcpy(root, f[3], strlen(f[3]) + 1);
        found = 1;
    }

    free(line);
    fclose(fp);

    if (!found) {
        errno = ENOENT;
        return -1;
    }

    return 0;
}


static int
vsb_cg2_has_word(const char *list, const char *word)
{
    size_t       len = strlen(word);
    const char  *p;

    for (p = list; (p = strstr(p, word)) != NULL; p += len) {
        if ((p == list || p[-1] == ' ')
            && (p[len] == ' ' || p[len] == '\n' || p[len] == '\0'))
        {
            return 1;
        }
    }

    return 0;
}


static int
vsb_cg2_exists(const char *dir, const char *file)
{
    char         path[PATH_MAX];
    struct stat  st;

    if (snprintf(path, sizeof(path), "%s/%s", dir, file)
        >= (int) sizeof(path))
    {
        return 0;
    }

    return stat(path, &st) == 0;
}


/*
 * A non-root cgroup with processes cannot enable controllers for its
 * children.  When the helper runs in such a cgroup (a systemd service),
 * everything in it moves to the leaf <own>/helper first.
 */
static int
vsb_cg2_move_to_leaf(vsb_cg_hier_t *h, char *err, size_t errlen)
{
    int     pid, moved, round;
    char    leaf[PATH_MAX], val[32], procs[PATH_MAX];
    FILE   *f;

    if (snprintf(leaf, sizeof(leaf), "%s/%s", h->own, VSB_CG2_LEAF)
        >= (int) sizeof(leaf)
        || snprintf(procs, sizeof(procs), "%s/cgroup.procs", h->own)
           >= (int) sizeof(procs))
    {
        snprintf(err, errlen, "cgroup: path too long in %s", h->own);
        return -1;
    }

    if (mkdir(leaf, 0755) == -1 && errno != EEXIST) {
        snprintf(err, errlen, "cgroup: mkdir %s: %s", leaf, strerror(errno));
        return -1;
    }

    for (round = 0; round < 10; round++) {
        f = fopen(procs, "re");
        if (f == NULL) {
            snprintf(err, errlen, "cgroup: open %s: %s", procs,
                     strerror(errno));
            return -1;
        }

        moved = 0;
        while (fscanf(f, "%d", &pid) == 1) {
            snprintf(val, sizeof(val), "%d", pid);
            if (vsb_cg_write(leaf, "cgroup.procs", val, err, errlen) == -1) {
                if (errno == ESRCH) {
                    continue;
                }
                fclose(f);
                return -1;
            }
            moved++;
        }
        fclose(f);

        if (moved == 0) {
            break;
        }
        vsb_log(VSB_LOG_INFO, "cgroup: moved %d processes from %s into %s",
                moved, h->own, leaf);
    }

    return 0;
}


int
vsb_cg2_init(const char *mount, int need_ctrl, char *err, size_t errlen)
{
    char            root[PATH_MAX], ctrls[256], *slash;
    vsb_cg_hier_t  *h = &vsb_cg.hier[0];
    unsigned        mask;

    vsb_cg.mode = VSB_CGROUP_V2;
    vsb_cg.nhier = 1;

    if (vsb_cg2_find_mount(mount, h->mount, root, sizeof(root)) == -1) {
        snprintf(err, errlen, "cgroup: no cgroup2 mount%s%s in "
                 "/proc/self/mountinfo", mount ? " at " : "",
                 mount ? mount : "");
        return -1;
    }

    if (vsb_cg_own_cgroup("", root, h->mount, h->own, sizeof(h->own), err,
                          errlen) == -1)
    {
        return -1;
    }

    /* restarted from within the leaf we made last time */
    slash = strrchr(h->own, '/');
    if (slash != NULL && strcmp(slash + 1, VSB_CG2_LEAF) == 0
        && strcmp(h->own, h->mount) != 0)
    {
        *slash = '\0';
    }

    if (vsb_cg_read(h->own, "cgroup.controllers", ctrls, sizeof(ctrls))
        == -1)
    {
        snprintf(err, errlen, "cgroup: read %s/cgroup.controllers: %s",
                 h->own, strerror(errno));
        return -1;
    }

    mask = 0;
    vsb_cg2_enable[0] = '\0';

    if (vsb_cg2_has_word(ctrls, "memory")) {
        mask |= VSB_CG_MEMORY;
        strcat(vsb_cg2_enable, "+memory ");
    }
    if (vsb_cg2_has_word(ctrls, "pids")) {
        mask |= VSB_CG_PIDS;
        strcat(vsb_cg2_enable, "+pids ");
    }
    if (vsb_cg2_has_word(ctrls, "cpu")) {
        mask |= VSB_CG_CPU;
        strcat(vsb_cg2_enable, "+cpu ");
    }

    if (need_ctrl && mask != (VSB_CG_MEMORY | VSB_CG_PIDS | VSB_CG_CPU)) {
        snprintf(err, errlen, "cgroup: v2 at %s: controllers memory, pids and "
                 "cpu are needed, %s/cgroup.controllers has \"%.*s\" (hybrid "
                 "host: use cgroup_mode v1; systemd: Delegate=yes)",
                 h->mount, h->own, (int) strcspn(ctrls, "\n"), ctrls);
        return -1;
    }

    h->ctrl = mask;
    vsb_cg.ctrl = mask;

    if (vsb_cg_mkdir_base(h, err, errlen) == -1) {
        return -1;
    }

    if (mask != 0) {
        vsb_cg2_enable[strlen(vsb_cg2_enable) - 1] = '\0';

        if (vsb_cg_write(h->own, "cgroup.subtree_control", vsb_cg2_enable,
                         err, errlen) == -1)
        {
            /* EBUSY: processes in a non-root cgroup.  That includes the
             * root of a container's cgroup namespace (own == mount): only
             * the host's real root may enable controllers with processes */
            if (errno != EBUSY) {
                return -1;
            }

            if (vsb_cg2_move_to_leaf(h, err, errlen) == -1
                || vsb_cg_write(h->own, "cgroup.subtree_control",
                                vsb_cg2_enable, err, errlen) == -1)
            {
                return -1;
            }
        }

        if (vsb_cg_write(h->base, "cgroup.subtree_control", vsb_cg2_enable,
                         err, errlen) == -1)
        {
            return -1;
        }
    }

    vsb_cg.swap_max = vsb_cg2_exists(h->base, "memory.swap.max");
    vsb_cg.mem_peak = vsb_cg2_exists(h->base, "memory.peak");
    vsb_cg.pids_peak = vsb_cg2_exists(h->base, "pids.peak");

    if ((mask & VSB_CG_MEMORY) && !vsb_cg.swap_max) {
        vsb_log(VSB_LOG_WARN, "cgroup: no memory.swap.max (swap accounting "
                "off): swap use of sandboxes is not limited");
    }

    return 0;
}


int
vsb_cg2_prepare_child(vsb_cgroup_t *parent, char *err, size_t errlen)
{
    char  dir[PATH_MAX];

    if (vsb_cg.ctrl == 0) {
        return 0;
    }

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], parent->rel, NULL)
        == -1)
    {
        snprintf(err, errlen, "cgroup: path too long for %s", parent->rel);
        return -1;
    }

    /* EBUSY here: the parent still holds processes of its own */
    return vsb_cg_write(dir, "cgroup.subtree_control", vsb_cg2_enable, err,
                        errlen);
}


int
vsb_cg2_set_limits(vsb_cgroup_t *cg, const vsb_limits_t *limits, char *err,
    size_t errlen)
{
    char  dir[PATH_MAX], val[64];

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1) {
        snprintf(err, errlen, "cgroup: path too long for %s", cg->rel);
        return -1;
    }

    /* an OOM kill in an exec takes the whole exec, not one process */
    if (cg->parent != NULL && (vsb_cg.ctrl & VSB_CG_MEMORY)
        && vsb_cg_write(dir, "memory.oom.group", "1", err, errlen) == -1)
    {
        return -1;
    }

    if (limits == NULL) {
        return 0;
    }

    if ((limits->memory_mb && !(vsb_cg.ctrl & VSB_CG_MEMORY))
        || (limits->pids && !(vsb_cg.ctrl & VSB_CG_PIDS))
        || (limits->cpu_percent && !(vsb_cg.ctrl & VSB_CG_CPU)))
    {
        snprintf(err, errlen, "cgroup: %s: a limit was asked for whose "
                 "controller is not enabled in %s", cg->rel,
                 vsb_cg.hier[0].mount);
        return -1;
    }

    if (limits->memory_mb != 0) {
        snprintf(val, sizeof(val), "%llu",
                 (unsigned long long) limits->memory_mb * 1024 * 1024);
        if (vsb_cg_write(dir, "memory.max", val, err, errlen) == -1) {
            return -1;
        }
        if (vsb_cg.swap_max
            && vsb_cg_write(dir, "memory.swap.max", "0", err, errlen) == -1)
        {
            return -1;
        }
    }

    if (limits->pids != 0) {
        snprintf(val, sizeof(val), "%llu", (unsigned long long) limits->pids);
        if (vsb_cg_write(dir, "pids.max", val, err, errlen) == -1) {
            return -1;
        }
    }

    if (limits->cpu_percent != 0) {
        snprintf(val, sizeof(val), "%llu %d",
                 (unsigned long long) limits->cpu_percent
                 * VSB_CG2_CPU_PERIOD / 100, VSB_CG2_CPU_PERIOD);
        if (vsb_cg_write(dir, "cpu.max", val, err, errlen) == -1) {
            return -1;
        }
    }

    return 0;
}


/* kernels before 5.14 have no cgroup.kill: freeze, kill, thaw */
static int
vsb_cg2_kill_frozen(const char *dir)
{
    int       k;
    char      err[512];
    uint64_t  frozen;
    unsigned  waited;

    if (vsb_cg_write(dir, "cgroup.freeze", "1", err, sizeof(err)) == -1) {
        vsb_log(VSB_LOG_WARN, "%s", err);
    } else {
        for (waited = 0; waited <= VSB_CG2_FREEZE_WAIT_MS; waited++) {
            if (vsb_cg_read_key(dir, "cgroup.events", "frozen", &frozen) == 0
                && frozen == 1)
            {
                break;
            }
            vsb_cg_sleep_ms(1);
        }
    }

    k = vsb_cg_kill_procs(dir);
    if (k > 0) {
        (void) vsb_cg_kill_procs(dir);
    }

    if (vsb_cg_write(dir, "cgroup.freeze", "0", err, sizeof(err)) == -1) {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return -1;
    }

    return (k == -1) ? -1 : 0;
}


int
vsb_cg2_kill(vsb_cgroup_t *cg)
{
    char  dir[PATH_MAX], err[512];

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1) {
        vsb_log(VSB_LOG_ERR, "cgroup: path too long for %s", cg->rel);
        return -1;
    }

    if (vsb_cg_write(dir, "cgroup.kill", "1", err, sizeof(err)) == -1) {
        if (errno == ENOENT) {
            if (!vsb_cg2_exists(dir, "")) {
                return 0;       /* gone: nothing left to kill */
            }
            if (vsb_cg2_exists(dir, "cgroup.procs")) {
                return vsb_cg2_kill_frozen(dir);
            }
        }
        vsb_log(VSB_LOG_ERR, "%s", err);
        return -1;
    }

    return 0;
}


int
vsb_cg2_populated(vsb_cgroup_t *cg)
{
    char      dir[PATH_MAX];
    uint64_t  v;

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1) {
        return -1;
    }

    if (vsb_cg_read_key(dir, "cgroup.events", "populated", &v) == -1) {
        if (errno == ENOENT && !vsb_cg2_exists(dir, "")) {
            return 0;           /* the cgroup itself is gone */
        }
        vsb_log_errno(VSB_LOG_ERR, "cgroup: read %s/cgroup.events", dir);
        return -1;
    }

    return v != 0;
}


/* a file of a controller that is not enabled reads as 0 */
static int
vsb_cg2_get(const char *dir, const char *file, const char *key, uint64_t *v)
{
    *v = 0;

    if ((key ? vsb_cg_read_key(dir, file, key, v)
             : vsb_cg_read_u64(dir, file, v)) == -1)
    {
        if (errno == ENOENT && !vsb_cg2_exists(dir, file)) {
            *v = 0;
            return 0;
        }
        vsb_log_errno(VSB_LOG_ERR, "cgroup: read %s/%s%s%s", dir, file,
                      key ? " " : "", key ? key : "");
        return -1;
    }

    return 0;
}


int
vsb_cg2_usage(vsb_cgroup_t *cg, vsb_cgroup_usage_t *u)
{
    char  dir[PATH_MAX];

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1) {
        return -1;
    }

    if (vsb_cg2_get(dir, "cpu.stat", "usage_usec", &u->cpu_usec) == -1
        || vsb_cg2_get(dir, "memory.current", NULL, &u->memory_current) == -1
        || vsb_cg2_get(dir, "memory.events", "oom_kill", &u->oom_kills) == -1
        || vsb_cg2_get(dir, "pids.current", NULL, &u->pids_current) == -1)
    {
        return -1;
    }

    if (vsb_cg.mem_peak) {
        if (vsb_cg2_get(dir, "memory.peak", NULL, &u->memory_peak) == -1) {
            return -1;
        }
    }
    if (u->memory_peak < u->memory_current) {
        u->memory_peak = u->memory_current;
    }

    if (vsb_cg.pids_peak) {
        if (vsb_cg2_get(dir, "pids.peak", NULL, &u->pids_peak) == -1) {
            return -1;
        }
    }
    if (u->pids_peak < u->pids_current) {
        u->pids_peak = u->pids_current;
    }

    return 0;
}


int
vsb_cg2_shmem(vsb_cgroup_t *cg, uint64_t *bytes)
{
    char  dir[PATH_MAX];

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1) {
        return -1;
    }

    /* memory.stat counts the whole subtree on v2 */
    return vsb_cg2_get(dir, "memory.stat", "shmem", bytes);
}


int
vsb_cg2_pids_refused(vsb_cgroup_t *cg, uint64_t *n)
{
    char  dir[PATH_MAX];

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1) {
        return -1;
    }

    /* no pids controller here: no file, 0 */
    return vsb_cg2_get(dir, "pids.events", "max", n);
}


/* cgroup.freeze of cg (op_pause.c). */
int
vsb_cg2_freeze(vsb_cgroup_t *cg, int freeze, char *err, size_t errlen)
{
    char  dir[PATH_MAX];

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1) {
        snprintf(err, errlen, "cgroup: path too long for %s", cg->rel);
        return -1;
    }

    return vsb_cg_write(dir, "cgroup.freeze", freeze ? "1" : "0", err,
                        errlen);
}


/* 1: cg and below are frozen (cgroup.events "frozen 1"), 0: not (yet). */
int
vsb_cg2_frozen(vsb_cgroup_t *cg)
{
    char      dir[PATH_MAX];
    uint64_t  frozen;

    if (vsb_cg_path(dir, sizeof(dir), &vsb_cg.hier[0], cg->rel, NULL) == -1
        || vsb_cg_read_key(dir, "cgroup.events", "frozen", &frozen) != 0)
    {
        return -1;
    }

    return frozen == 1;
}
