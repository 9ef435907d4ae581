/*
 * cgroups v1 backend (hybrid hosts): the memory, pids, cpu, cpuacct and
 * freezer hierarchies, found in /proc/self/mountinfo (any may be a joint
 * mount such as "cpu,cpuacct").  The same relative path is made in each.
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
#include "vsb_mountinfo.h"

#define VSB_CG1_FREEZE_WAIT_MS  100
#define VSB_CG1_CPU_PERIOD      100000

typedef struct {
    const char  *name;
    unsigned     bit;
} vsb_cg1_ctrl_t;

static const vsb_cg1_ctrl_t  vsb_cg1_ctrls[] = {
    { "memory",  VSB_CG_MEMORY },
    { "pids",    VSB_CG_PIDS },
    { "cpu",     VSB_CG_CPU },
    { "cpuacct", VSB_CG_CPUACCT },
    { "freezer", VSB_CG_FREEZER },
    { NULL, 0 }
};

#define VSB_CG1_NEEDED  (VSB_CG_MEMORY | VSB_CG_PIDS | VSB_CG_CPU \
                         | VSB_CG_FREEZER)

typedef struct {
    char      mount[PATH_MAX];
    unsigned  ctrl;
} vsb_cg1_mnt_t;


/* One entry per v1 hierarchy carrying a controller we use; the first
 * mount of a controller wins (bind mounts repeat it). */
static int
vsb_cg1_scan(vsb_cg1_mnt_t *mnt, size_t *nmnt, unsigned *have)
{
    char     *line, *f[12], *p, *sep, *fstype, *opts, *tok, *save;
    FILE     *fp;
    size_t    cap, nf, i;
    ssize_t   r;
    unsigned  mask;

    fp = fopen("/proc/self/mountinfo", "re");
    if (fp == NULL) {
        return -1;
    }

    line = NULL;
    cap = 0;
    *nmnt = 0;
    *have = 0;

    while ((r = getline(&line, &cap, fp)) != -1) {
        if (r > 0 && line[r - 1] == '\n') {
            line[r - 1] = '\0';
        }

        /* id parent maj:min root mountpoint opts [optional...] - fs src sopts */
        sep = strstr(line, " - ");
        if (sep == NULL) {
            continue;
        }
        *sep = '\0';
        fstype = sep + 3;

        p = strchr(fstype, ' ');
        if (p == NULL) {
            continue;
        }
        *p++ = '\0';
        if (strcmp(fstype, "cgroup") != 0) {
            continue;
        }
        opts = strchr(p, ' ');          /* after the source */
        if (opts == NULL) {
            continue;
        }
        opts++;

        nf = 0;
        for (tok = strtok_r(line, " ", &save); tok != NULL && nf < 12;
             tok = strtok_r(NULL, " ", &save))
        {
            f[nf++] = tok;
        }
        if (nf < 5) {
            continue;
        }

        mask = 0;
        for (tok = strtok_r(opts, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save))
        {
            for (i = 0; vsb_cg1_ctrls[i].name != NULL; i++) {
                if (strcmp(tok, vsb_cg1_ctrls[i].name) == 0) {
                    mask |= vsb_cg1_ctrls[i].bit;
                }
            }
        }

        if (mask == 0 || (mask & *have) != 0 || *nmnt == VSB_CG_MAX_HIER) {
            continue;
        }

        vsb_mountinfo_unescape(f[4]);
        if (strlen(f[4]) >= PATH_MAX) {
            continue;
        }

        memcpy(mnt[*nmnt].mount, f[4], strlen(f[4]) + 1);
        mnt[*nmnt].ctrl = mask;
        (*nmnt)++;
        *have |= mask;
    }

    free(line);
    fclose(fp);

    return 0;
}


int
vsb_cg1_detect(void)
{
    size_t          n;
    unsigned        have;
    vsb_cg1_mnt_t  *mnt;

    mnt = calloc(VSB_CG_MAX_HIER, sizeof(*mnt));
    if (mnt == NULL) {
        return 0;
    }

    if (vsb_cg1_scan(mnt, &n, &have) == -1) {
        free(mnt);
        return 0;
    }

    free(mnt);
    return (have & VSB_CG1_NEEDED) == VSB_CG1_NEEDED;
}


static int
vsb_cg1_file_exists(const vsb_cg_hier_t *h, const char *file)
{
    char         path[PATH_MAX];
    struct stat  st;

    return vsb_cg_path(path, sizeof(path), h, NULL, file) == 0
           && stat(path, &st) == 0;
}


static const vsb_cg_hier_t *
vsb_cg1_hier(unsigned bit)
{
    size_t  i;

    for (i = 0; i < vsb_cg.nhier; i++) {
        if (vsb_cg.hier[i].ctrl & bit) {
            return &vsb_cg.hier[i];
        }
    }

    return NULL;
}


int
vsb_cg1_init(char *err, size_t errlen)
{
    size_t              i, n;
    unsigned            have;
    vsb_cg_hier_t      *h;
    vsb_cg1_mnt_t      *mnt;
    const vsb_cg_hier_t *mh, *ph;

    mnt = calloc(VSB_CG_MAX_HIER, sizeof(*mnt));
    if (mnt == NULL) {
        snprintf(err, errlen, "cgroup: out of memory");
        return -1;
    }

    if (vsb_cg1_scan(mnt, &n, &have) == -1) {
        snprintf(err, errlen, "cgroup: read /proc/self/mountinfo: %s",
                 strerror(errno));
        free(mnt);
        return -1;
    }

    if ((have & VSB_CG1_NEEDED) != VSB_CG1_NEEDED) {
        snprintf(err, errlen, "cgroup: v1 needs the memory, pids, cpu and "
                 "freezer hierarchies mounted; missing:%s%s%s%s",
                 (have & VSB_CG_MEMORY) ? "" : " memory",
                 (have & VSB_CG_PIDS) ? "" : " pids",
                 (have & VSB_CG_CPU) ? "" : " cpu",
                 (have & VSB_CG_FREEZER) ? "" : " freezer");
        free(mnt);
        return -1;
    }

    vsb_cg.mode = VSB_CGROUP_V1;

    for (i = 0; i < n; i++) {
        h = &vsb_cg.hier[i];
        memcpy(h->mount, mnt[i].mount, sizeof(h->mount));
        h->ctrl = mnt[i].ctrl;

        /*
         * v1 has no delegation rules, and the helper's own v1 cgroup may be
         * wherever its launcher happened to be (a shell, a CI job): the
         * parent goes at the visible root of each hierarchy, so a restarted
         * helper finds, and cleans, what the previous run left.
         */
        memcpy(h->own, h->mount, sizeof(h->own));

        if (vsb_cg_mkdir_base(h, err, errlen) == -1) {
            free(mnt);
            return -1;
        }

        vsb_cg.nhier++;
        vsb_cg.ctrl |= h->ctrl;

        vsb_log(VSB_LOG_DEBUG, "cgroup: v1 hierarchy %s, parent %s",
                h->mount, h->base);
    }

    free(mnt);

    mh = vsb_cg1_hier(VSB_CG_MEMORY);
    ph = vsb_cg1_hier(VSB_CG_PIDS);

    vsb_cg.memsw = vsb_cg1_file_exists(mh, "memory.memsw.limit_in_bytes");
    vsb_cg.pids_peak = vsb_cg1_file_exists(ph, "pids.peak");

    if (!vsb_cg.memsw) {
        vsb_log(VSB_LOG_WARN, "cgroup: no memory.memsw.* (swap accounting "
                "off): swap use of sandboxes is not limited");
    }
    if (!(vsb_cg.ctrl & VSB_CG_CPUACCT)) {
        vsb_log(VSB_LOG_WARN, "cgroup: no cpuacct hierarchy: cpu usage will "
                "read as 0");
    }

    return 0;
}


static int
vsb_cg1_write(unsigned bit, vsb_cgroup_t *cg, const char *file,
    uint64_t v, char *err, size_t errlen)
{
    char                 dir[PATH_MAX], val[32];
    const vsb_cg_hier_t  *h;

    h = vsb_cg1_hier(bit);
    if (h == NULL || vsb_cg_path(dir, sizeof(dir), h, cg->rel, NULL) == -1) {
        snprintf(err, errlen, "cgroup: no hierarchy or path for %s of %s",
                 file, cg->rel);
        return -1;
    }

    snprintf(val, sizeof(val), "%llu", (unsigned long long) v);

    return vsb_cg_write(dir, file, val, err, errlen);
}


int
vsb_cg1_set_limits(vsb_cgroup_t *cg, const vsb_limits_t *limits, char *err,
    size_t errlen)
{
    uint64_t  bytes;

    /* exec cgroups live within their sandbox's limits */
    if (limits == NULL) {
        return 0;
    }

    if (limits->memory_mb != 0) {
        bytes = limits->memory_mb * 1024 * 1024;

        /* limit first: memsw may never be below it */
        if (vsb_cg1_write(VSB_CG_MEMORY, cg, "memory.limit_in_bytes", bytes,
                          err, errlen) == -1)
        {
            return -1;
        }

        if (vsb_cg.memsw
            && vsb_cg1_write(VSB_CG_MEMORY, cg, "memory.memsw.limit_in_bytes",
                             bytes, err, errlen) == -1)
        {
            return -1;
        }
    }

    if (limits->pids != 0
        && vsb_cg1_write(VSB_CG_PIDS, cg, "pids.max", limits->pids, err,
                         errlen) == -1)
    {
        return -1;
    }

    if (limits->cpu_percent != 0) {
        if (vsb_cg1_write(VSB_CG_CPU, cg, "cpu.cfs_period_us",
                          VSB_CG1_CPU_PERIOD, err, errlen) == -1
            || vsb_cg1_write(VSB_CG_CPU, cg, "cpu.cfs_quota_us",
                             limits->cpu_percent * VSB_CG1_CPU_PERIOD / 100,
                             err, errlen) == -1)
        {
            return -1;
        }
    }

    return 0;
}


static int
vsb_cg1_thaw_visit(const char *dir, void *data)
{
    char  err[PATH_MAX + 128];

    if (vsb_cg_write(dir, "freezer.state", "THAWED", err, sizeof(err)) == -1
        && errno != ENOENT)
    {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return -1;
    }

    return 0;
}


/*
 * Freeze so nothing forks or exits while the pids are read, SIGKILL them
 * all (they die once thawed), thaw.  If the freezer does not settle within
 * VSB_CG1_FREEZE_WAIT_MS we kill anyway, in a few rounds to catch forks.
 *
 * An empty subtree is left alone: a process enters a sandbox's cgroup
 * only by forking inside it or by the helper's attach (this thread), so
 * with none in it there is nothing to kill and nothing that could fork.
 * Freezing it is not free: after an exec its state reads FREEZING until
 * the exec's removed cgroup goes offline, an RCU grace period later
 * (10-15 ms measured under load), and this thread would wait for it.
 */
int
vsb_cg1_kill(vsb_cgroup_t *cg)
{
    int                  frozen, n, total, round;
    char                 dir[PATH_MAX], state[32], err[512];
    size_t               i;
    unsigned             waited;
    const vsb_cg_hier_t  *fh;

    if (vsb_cg1_populated(cg) == 0) {
        vsb_log(VSB_LOG_DEBUG, "cgroup: %s is empty, nothing to kill",
                cg->rel);
        return 0;
    }

    fh = vsb_cg1_hier(VSB_CG_FREEZER);
    if (fh == NULL || vsb_cg_path(dir, sizeof(dir), fh, cg->rel, NULL) == -1) {
        vsb_log(VSB_LOG_ERR, "cgroup: kill %s: no freezer path", cg->rel);
        return -1;
    }

    frozen = 0;

    if (vsb_cg_write(dir, "freezer.state", "FROZEN", err, sizeof(err)) == -1)
    {
        vsb_log(VSB_LOG_WARN, "%s", err);

    } else {
        for (waited = 0; waited <= VSB_CG1_FREEZE_WAIT_MS; waited++) {
            if (vsb_cg_read(dir, "freezer.state", state, sizeof(state)) == -1)
            {
                vsb_log_errno(VSB_LOG_WARN, "cgroup: read %s/freezer.state",
                              dir);
                break;
            }
            if (strncmp(state, "FROZEN", 6) == 0) {
                frozen = 1;
                break;
            }
            vsb_cg_sleep_ms(1);
        }

        if (!frozen) {
            vsb_log(VSB_LOG_WARN, "cgroup: %s did not freeze within %d ms, "
                    "killing anyway", dir, VSB_CG1_FREEZE_WAIT_MS);
        }
    }

    total = 0;

    for (round = 0; round < (frozen ? 1 : 3); round++) {
        n = 0;

        for (i = 0; i < vsb_cg.nhier; i++) {
            char  path[PATH_MAX];
            int   k;

            if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], cg->rel,
                            NULL) == -1)
            {
                continue;
            }

            k = vsb_cg_kill_procs(path);
            if (k == -1) {
                vsb_log_errno(VSB_LOG_WARN, "cgroup: kill processes in %s",
                              path);
                continue;
            }
            n += k;
        }

        total += n;
        if (n == 0) {
            break;
        }
    }

    /* descendants too: one left FROZEN by a crash mid-kill would keep its
     * killed processes alive, the parent's THAWED does not reach it */
    if (vsb_cg_walk_pre(dir, vsb_cg1_thaw_visit, NULL) != 0) {
        return -1;
    }

    vsb_log(VSB_LOG_DEBUG, "cgroup: killed %d processes in %s", total,
            cg->rel);
    return 0;
}


/*
 * pids.current counts every task of cg and its descendants, zombies not
 * yet reaped too: when it reads 0 the cgroup is empty in one read, not a
 * walk of every hierarchy's cgroup.procs (most of an exec's cleanup).
 * That is enough because no process is in one hierarchy's cgroup and not
 * in another's: the init joins all of them before anything runs, its
 * descendants inherit them, and nothing inside can write a host cgroup's
 * tasks.  Otherwise (a zombie counts there, cgroup.procs leaves it out)
 * the walk decides.  The rmdir that removes a cgroup still fails in any
 * hierarchy that holds a task.
 */
int
vsb_cg1_populated(vsb_cgroup_t *cg)
{
    int                  rc;
    char                 path[PATH_MAX];
    size_t               i;
    uint64_t             n;
    const vsb_cg_hier_t  *ph;

    ph = vsb_cg1_hier(VSB_CG_PIDS);

    if (ph != NULL
        && vsb_cg_path(path, sizeof(path), ph, cg->rel, NULL) == 0
        && vsb_cg_read_u64(path, "pids.current", &n) == 0
        && n == 0)
    {
        return 0;
    }

    for (i = 0; i < vsb_cg.nhier; i++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], cg->rel, NULL)
            == -1)
        {
            return -1;
        }

        rc = vsb_cg_has_procs(path);
        if (rc != 0) {
            return rc;
        }
    }

    return 0;
}


/* a missing file (controller or kernel feature absent) reads as 0 */
static int
vsb_cg1_get(unsigned bit, vsb_cgroup_t *cg, const char *file,
    const char *key, uint64_t *v)
{
    char                 dir[PATH_MAX];
    const vsb_cg_hier_t  *h;

    *v = 0;

    h = vsb_cg1_hier(bit);
    if (h == NULL) {
        return 0;
    }

    if (vsb_cg_path(dir, sizeof(dir), h, cg->rel, NULL) == -1) {
        return -1;
    }

    if ((key ? vsb_cg_read_key(dir, file, key, v)
             : vsb_cg_read_u64(dir, file, v)) == -1)
    {
        if (errno == ENOENT && key == NULL) {
            return 0;
        }
        vsb_log_errno(VSB_LOG_ERR, "cgroup: read %s/%s%s%s", dir, file,
                      key ? " " : "", key ? key : "");
        return -1;
    }

    return 0;
}


static int
vsb_cg1_oom_visit(const char *dir, void *data)
{
    uint64_t  v, *sum = data;

    if (vsb_cg_read_key(dir, "memory.oom_control", "oom_kill", &v) == -1) {
        if (errno == ENOENT) {
            return 0;           /* gone meanwhile, or an old kernel */
        }
        vsb_log_errno(VSB_LOG_ERR, "cgroup: read %s/memory.oom_control", dir);
        return -1;
    }

    *sum += v;
    return 0;
}


/*
 * v1 counts an OOM kill only in the victim's own memcg, not in the
 * ancestor whose limit was hit (v2 propagates it up).  Summing the
 * subtree gives the v2 meaning: kills in cg or below.
 */
static int
vsb_cg1_oom_kills(vsb_cgroup_t *cg, uint64_t *sum)
{
    char                 dir[PATH_MAX];
    const vsb_cg_hier_t  *h;

    *sum = 0;

    h = vsb_cg1_hier(VSB_CG_MEMORY);
    if (h == NULL || vsb_cg_path(dir, sizeof(dir), h, cg->rel, NULL) == -1) {
        return -1;
    }

    return vsb_cg_walk_pre(dir, vsb_cg1_oom_visit, sum);
}


int
vsb_cg1_usage(vsb_cgroup_t *cg, vsb_cgroup_usage_t *u)
{
    uint64_t  ns;

    if (vsb_cg1_get(VSB_CG_CPUACCT, cg, "cpuacct.usage", NULL, &ns) == -1
        || vsb_cg1_get(VSB_CG_MEMORY, cg, "memory.usage_in_bytes", NULL,
                       &u->memory_current) == -1
        || vsb_cg1_get(VSB_CG_MEMORY, cg, "memory.max_usage_in_bytes", NULL,
                       &u->memory_peak) == -1
        || vsb_cg1_oom_kills(cg, &u->oom_kills) == -1
        || vsb_cg1_get(VSB_CG_PIDS, cg, "pids.current", NULL,
                       &u->pids_current) == -1)
    {
        return -1;
    }

    u->cpu_usec = ns / 1000;

    if (vsb_cg.pids_peak) {
        if (vsb_cg1_get(VSB_CG_PIDS, cg, "pids.peak", NULL, &u->pids_peak)
            == -1)
        {
            return -1;
        }
    } else {
        u->pids_peak = u->pids_current;
    }

    if (u->memory_peak < u->memory_current) {
        u->memory_peak = u->memory_current;
    }

    return 0;
}


int
vsb_cg1_shmem(vsb_cgroup_t *cg, uint64_t *bytes)
{
    /* total_: this cgroup and below (use_hierarchy) */
    return vsb_cg1_get(VSB_CG_MEMORY, cg, "memory.stat", "total_shmem",
                       bytes);
}


int
vsb_cg1_pids_refused(vsb_cgroup_t *cg, uint64_t *n)
{
    /* v1: forks refused to the processes in cg, by any limit above */
    return vsb_cg1_get(VSB_CG_PIDS, cg, "pids.events", "max", n);
}


/* The freezer of cg: FROZEN or THAWED (op_pause.c). */
int
vsb_cg1_freeze(vsb_cgroup_t *cg, int freeze, char *err, size_t errlen)
{
    char                 dir[PATH_MAX];
    const vsb_cg_hier_t  *fh;

    fh = vsb_cg1_hier(VSB_CG_FREEZER);
    if (fh == NULL || vsb_cg_path(dir, sizeof(dir), fh, cg->rel, NULL) == -1) {
        snprintf(err, errlen, "cgroup: no freezer path for %s", cg->rel);
        return -1;
    }

    return vsb_cg_write(dir, "freezer.state", freeze ? "FROZEN" : "THAWED",
                        err, errlen);
}


/* 1: every task of cg and below is frozen, 0: not (yet), -1: error. */
int
vsb_cg1_frozen(vsb_cgroup_t *cg)
{
    char                 dir[PATH_MAX], state[32];
    const vsb_cg_hier_t  *fh;

    fh = vsb_cg1_hier(VSB_CG_FREEZER);
    if (fh == NULL || vsb_cg_path(dir, sizeof(dir), fh, cg->rel, NULL) == -1
        || vsb_cg_read(dir, "freezer.state", state, sizeof(state)) == -1)
    {
        return -1;
    }

    return strncmp(state, "FROZEN", 6) == 0;
}
