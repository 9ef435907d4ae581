/*
 * cgroups, the facade: version detection, the vsb_cgroup_t object, the
 * directory work that is the same in every hierarchy (mkdir, attach,
 * rmdir, stale cleanup), and the public API dispatching to
 * cgroup1.c/cgroup2.c.  File and tree helpers are in cgroup_fs.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "vsb_cgroup.h"
#include "vsb_cgroup_int.h"
#include "vsb_log.h"

#define VSB_CG_STALE_WAIT_MS  2000

static int vsb_cg_valid_name(const char *name);
static int vsb_cg_rmdir_tree(const char *dir, char *err, size_t errlen);
static int vsb_cg_remove_rel(const char *rel, char *err, size_t errlen);


/* Names come from the helper ("sb-<hex>", "e<n>", the configured
 * cgroup_name) but are checked anyway: one component, no dots, so
 * neither "..", nor a control file name like "memory.max". */
static int
vsb_cg_valid_name(const char *name)
{
    size_t  i, len;

    len = strlen(name);
    if (len == 0 || len > VSB_CG_NAME_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        char  c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '-' || c == '_'))
        {
            return 0;
        }
    }

    return 1;
}

static int
vsb_cg_init_common(const vsb_config_t *cf, char *err, size_t errlen)
{
    memset(&vsb_cg, 0, sizeof(vsb_cg));

    if (!vsb_cg_valid_name(cf->cgroup_name)) {
        snprintf(err, errlen, "cgroup: invalid cgroup_name \"%s\" (letters, "
                 "digits, '-', '_', at most %d)", cf->cgroup_name,
                 VSB_CG_NAME_MAX);
        return -1;
    }

    memcpy(vsb_cg.name, cf->cgroup_name, strlen(cf->cgroup_name) + 1);
    return 0;
}


int
vsb_cgroup_init(const vsb_config_t *cf, char *err, size_t errlen)
{
    int            rc;
    struct statfs  sf;
    const char    *mode = cf->cgroup_mode;

    if (vsb_cg_init_common(cf, err, errlen) == -1) {
        return -1;
    }

    if (mode[0] == '\0' || strcmp(mode, "auto") == 0) {
        if (statfs("/sys/fs/cgroup", &sf) == -1) {
            snprintf(err, errlen, "cgroup: statfs /sys/fs/cgroup: %s",
                     strerror(errno));
            return -1;
        }

        if (sf.f_type == CGROUP2_SUPER_MAGIC) {
            rc = vsb_cg2_init("/sys/fs/cgroup", 1, err, errlen);

        } else if (vsb_cg1_detect()) {
            rc = vsb_cg1_init(err, errlen);

        } else {
            /* hybrid without usable v1 trees: the unified one may do */
            rc = vsb_cg2_init(NULL, 1, err, errlen);
        }

    } else if (strcmp(mode, "v1") == 0) {
        rc = vsb_cg1_init(err, errlen);

    } else if (strcmp(mode, "v2") == 0) {
        rc = vsb_cg2_init(NULL, 1, err, errlen);

    } else {
        snprintf(err, errlen, "cgroup: cgroup_mode \"%s\": expected auto, v1 "
                 "or v2", mode);
        return -1;
    }

    if (rc == -1) {
        vsb_cg.mode = 0;
        return -1;
    }

    vsb_log(VSB_LOG_INFO, "cgroup: using cgroup %s, parent %s%s",
            vsb_cg.mode == VSB_CGROUP_V2 ? "v2" : "v1", vsb_cg.hier[0].base,
            vsb_cg.nhier > 1 ? " (and the same in each v1 hierarchy)" : "");
    return 0;
}


int
vsb_cgroup_init_v2_at(const char *path, const char *cgroup_name, char *err,
    size_t errlen)
{
    vsb_config_t  *cf;
    int            rc;

    /* vsb_config_t is large; only its cgroup_name matters here */
    cf = calloc(1, sizeof(*cf));
    if (cf == NULL) {
        snprintf(err, errlen, "cgroup: out of memory");
        return -1;
    }
    snprintf(cf->cgroup_name, sizeof(cf->cgroup_name), "%s", cgroup_name);

    rc = vsb_cg_init_common(cf, err, errlen);
    free(cf);

    if (rc == -1 || vsb_cg2_init(path, 0, err, errlen) == -1) {
        vsb_cg.mode = 0;
        return -1;
    }

    return 0;
}


vsb_cgroup_mode_t
vsb_cgroup_mode(void)
{
    return vsb_cg.mode;
}


vsb_cgroup_t *
vsb_cgroup_create(vsb_cgroup_t *parent, const char *name,
    const vsb_limits_t *limits, char *err, size_t errlen)
{
    int            n;
    char           path[PATH_MAX];
    size_t         i, made;
    vsb_cgroup_t  *cg;

    if (vsb_cg.mode == 0) {
        snprintf(err, errlen, "cgroup: not initialized");
        return NULL;
    }

    if (name == NULL || !vsb_cg_valid_name(name)) {
        snprintf(err, errlen, "cgroup: invalid cgroup name \"%s\"",
                 name ? name : "(null)");
        return NULL;
    }

    cg = calloc(1, sizeof(*cg));
    if (cg == NULL) {
        snprintf(err, errlen, "cgroup: out of memory");
        return NULL;
    }

    cg->parent = parent;
    n = snprintf(cg->rel, sizeof(cg->rel), "%s%s%s",
                 parent ? parent->rel : "", parent ? "/" : "", name);
    if (n < 0 || (size_t) n >= sizeof(cg->rel)) {
        snprintf(err, errlen, "cgroup: name too long: %s", name);
        free(cg);
        return NULL;
    }

    /* v2: a cgroup that gets children must hand its controllers down */
    if (parent != NULL && vsb_cg.mode == VSB_CGROUP_V2
        && vsb_cg2_prepare_child(parent, err, errlen) == -1)
    {
        free(cg);
        return NULL;
    }

    made = 0;
    for (i = 0; i < vsb_cg.nhier; i++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], cg->rel, NULL)
            == -1)
        {
            snprintf(err, errlen, "cgroup: path too long for %s", cg->rel);
            goto failed;
        }

        if (mkdir(path, 0755) == -1) {
            snprintf(err, errlen, "cgroup: mkdir %s: %s", path,
                     strerror(errno));
            goto failed;
        }
        made++;
    }

    if (limits != NULL || parent != NULL) {
        if (vsb_cg.mode == VSB_CGROUP_V2) {
            n = vsb_cg2_set_limits(cg, limits, err, errlen);
        } else {
            n = vsb_cg1_set_limits(cg, limits, err, errlen);
        }
        if (n == -1) {
            goto failed;
        }
    }

    vsb_log(VSB_LOG_DEBUG, "cgroup: created %s", cg->rel);
    return cg;

failed:

    /* only what this call made; err already says what went wrong */
    for (i = 0; i < made; i++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], cg->rel, NULL)
            == 0 && rmdir(path) == -1)
        {
            vsb_log_errno(VSB_LOG_ERR, "cgroup: rmdir %s after a failed "
                          "create", path);
        }
    }

    free(cg);
    return NULL;
}


int
vsb_cgroup_attach(vsb_cgroup_t *cg, pid_t pid)
{
    char    path[PATH_MAX], val[32], err[512];
    size_t  i;

    snprintf(val, sizeof(val), "%d", (int) pid);

    for (i = 0; i < vsb_cg.nhier; i++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], cg->rel, NULL)
            == -1)
        {
            vsb_log(VSB_LOG_ERR, "cgroup: path too long for %s", cg->rel);
            return -1;
        }

        if (vsb_cg_write(path, "cgroup.procs", val, err, sizeof(err)) == -1) {
            vsb_log(VSB_LOG_ERR, "%s", err);
            return -1;
        }
    }

    return 0;
}


int
vsb_cgroup_join_open(vsb_cgroup_t *cg, int *fds, size_t *n, char *err,
    size_t errlen)
{
    char    path[PATH_MAX];
    size_t  i;

    *n = 0;

    if (vsb_cg.mode != VSB_CGROUP_V1) {
        return 0;
    }

    if (vsb_cg.nhier > VSB_CGROUP_JOIN_MAX) {
        snprintf(err, errlen, "cgroup: %zu v1 hierarchies, at most %d",
                 vsb_cg.nhier, VSB_CGROUP_JOIN_MAX);
        return -1;
    }

    for (i = 0; i < vsb_cg.nhier; i++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], cg->rel, "tasks")
            == -1)
        {
            snprintf(err, errlen, "cgroup: path too long for %s", cg->rel);
            goto failed;
        }

        /* close-on-exec, and the init closes them before it runs
         * anything of the workload's */
        fds[i] = open(path, O_WRONLY | O_CLOEXEC);
        if (fds[i] == -1) {
            snprintf(err, errlen, "cgroup: open %s: %s", path,
                     strerror(errno));
            goto failed;
        }

        *n = i + 1;
    }

    return 0;

failed:

    vsb_cgroup_join_close(fds, *n);
    *n = 0;
    return -1;
}


int
vsb_cgroup_join_self(int *fds, size_t n)
{
    int      rc, saved;
    size_t   i;
    ssize_t  w;

    rc = 0;
    saved = 0;

    for (i = 0; i < n; i++) {
        if (rc == 0) {
            do {
                w = write(fds[i], "0", 1);
            } while (w == -1 && errno == EINTR);

            if (w != 1) {
                saved = (w == -1) ? errno : EIO;
                rc = -1;
            }
        }

        (void) close(fds[i]);
        fds[i] = -1;
    }

    errno = saved;
    return rc;
}


void
vsb_cgroup_join_close(int *fds, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (fds[i] != -1 && close(fds[i]) == -1) {
            vsb_log_errno(VSB_LOG_WARN, "cgroup: close a tasks descriptor");
        }
        fds[i] = -1;
    }
}


int
vsb_cgroup_kill(vsb_cgroup_t *cg)
{
    if (vsb_cg.mode == VSB_CGROUP_V2) {
        return vsb_cg2_kill(cg);
    }

    return vsb_cg1_kill(cg);
}


int
vsb_cgroup_freeze(vsb_cgroup_t *cg, int freeze, char *err, size_t errlen)
{
    if (vsb_cg.mode == VSB_CGROUP_V2) {
        return vsb_cg2_freeze(cg, freeze, err, errlen);
    }

    return vsb_cg1_freeze(cg, freeze, err, errlen);
}


int
vsb_cgroup_frozen(vsb_cgroup_t *cg)
{
    if (vsb_cg.mode == VSB_CGROUP_V2) {
        return vsb_cg2_frozen(cg);
    }

    return vsb_cg1_frozen(cg);
}


int
vsb_cgroup_populated(vsb_cgroup_t *cg)
{
    if (vsb_cg.mode == VSB_CGROUP_V2) {
        return vsb_cg2_populated(cg);
    }

    return vsb_cg1_populated(cg);
}


int
vsb_cgroup_usage(vsb_cgroup_t *cg, vsb_cgroup_usage_t *u)
{
    memset(u, 0, sizeof(*u));

    if (vsb_cg.mode == VSB_CGROUP_V2) {
        return vsb_cg2_usage(cg, u);
    }

    return vsb_cg1_usage(cg, u);
}


int
vsb_cgroup_shmem(vsb_cgroup_t *cg, uint64_t *bytes)
{
    *bytes = 0;

    if (vsb_cg.mode == VSB_CGROUP_V2) {
        return vsb_cg2_shmem(cg, bytes);
    }

    return vsb_cg1_shmem(cg, bytes);
}


int
vsb_cgroup_pids_refused(vsb_cgroup_t *cg, uint64_t *n)
{
    *n = 0;

    if (vsb_cg.mode == VSB_CGROUP_V2) {
        return vsb_cg2_pids_refused(cg, n);
    }

    return vsb_cg1_pids_refused(cg, n);
}


int
vsb_cgroup_exists(const char *name)
{
    char          path[PATH_MAX];
    size_t        i;
    struct stat   st;
    vsb_cgroup_t  cg;

    if (!vsb_cg_valid_name(name)) {
        return -1;
    }

    for (i = 0; i < vsb_cg.nhier; i++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], name, NULL)
            == -1)
        {
            return -1;
        }

        if (lstat(path, &st) == 0) {
            memset(&cg, 0, sizeof(cg));
            snprintf(cg.rel, sizeof(cg.rel), "%s", name);
            return vsb_cgroup_populated(&cg) != 0 ? 2 : 1;
        }

        if (errno != ENOENT) {
            return -1;
        }
    }

    return 0;
}


typedef struct {
    char    *err;
    size_t   errlen;
} vsb_cg_rm_ctx_t;


/* confirmed, not assumed */
static int
vsb_cg_rmdir_confirm(const char *dir, vsb_cg_rm_ctx_t *rm)
{
    struct stat  st;

    if (stat(dir, &st) == 0 || errno != ENOENT) {
        snprintf(rm->err, rm->errlen, "cgroup: %s still exists after rmdir",
                 dir);
        return -1;
    }

    return 0;
}


static int
vsb_cg_rmdir_visit(const char *dir, void *data)
{
    vsb_cg_rm_ctx_t  *rm = data;

    if (rmdir(dir) == -1 && errno != ENOENT) {
        snprintf(rm->err, rm->errlen, "cgroup: rmdir %s: %s", dir,
                 strerror(errno));
        return -1;
    }

    return vsb_cg_rmdir_confirm(dir, rm);
}


/* dir and everything below it, children first */
static int
vsb_cg_rmdir_tree(const char *dir, char *err, size_t errlen)
{
    vsb_cg_rm_ctx_t  rm;

    rm.err = err;
    rm.errlen = errlen;
    err[0] = '\0';

    /* most are leaves (an exec's always): one rmdir, no walk; one with
     * children (or tasks) refuses it and is walked */
    if (rmdir(dir) == 0 || errno == ENOENT) {
        return vsb_cg_rmdir_confirm(dir, &rm);
    }

    if (vsb_cg_walk(dir, 0, NULL, vsb_cg_rmdir_visit, &rm) != 0) {
        if (err[0] == '\0') {
            snprintf(err, errlen, "cgroup: walk %s: %s", dir,
                     strerror(errno));
        }
        return -1;
    }

    return 0;
}


static int
vsb_cg_remove_rel(const char *rel, char *err, size_t errlen)
{
    int     rc;
    char    path[PATH_MAX];
    size_t  i;

    rc = 0;

    /* every hierarchy is tried, so a retry has less left to do */
    for (i = 0; i < vsb_cg.nhier; i++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[i], rel, NULL)
            == -1)
        {
            snprintf(err, errlen, "cgroup: path too long for %s", rel);
            return -1;
        }

        if (rc == 0) {
            rc = vsb_cg_rmdir_tree(path, err, errlen);
        } else {
            char  e2[PATH_MAX + 128];

            (void) vsb_cg_rmdir_tree(path, e2, sizeof(e2));
        }
    }

    return rc;
}


int
vsb_cgroup_destroy(vsb_cgroup_t *cg, char *err, size_t errlen)
{
    if (cg == NULL) {
        return 0;
    }

    if (vsb_cg_remove_rel(cg->rel, err, errlen) == -1) {
        return -1;
    }

    vsb_log(VSB_LOG_DEBUG, "cgroup: removed %s", cg->rel);
    free(cg);
    return 0;
}


/* kill, wait for empty (bounded), remove: one stale sandbox cgroup */
static int
vsb_cg_clean_one(const char *name)
{
    int           populated;
    char          err[512];
    unsigned      waited;
    vsb_cgroup_t  cg;

    memset(&cg, 0, sizeof(cg));
    snprintf(cg.rel, sizeof(cg.rel), "%s", name);

    populated = vsb_cgroup_populated(&cg);

    for (waited = 0; populated != 0 && waited < VSB_CG_STALE_WAIT_MS;
         waited += 10)
    {
        if (vsb_cgroup_kill(&cg) == -1) {
            vsb_log(VSB_LOG_WARN, "cgroup: kill stale cgroup %s failed", name);
        }
        vsb_cg_sleep_ms(10);
        populated = vsb_cgroup_populated(&cg);
    }

    if (populated != 0) {
        vsb_log(VSB_LOG_ERR, "cgroup: stale cgroup %s still has processes "
                "after %d ms", name, VSB_CG_STALE_WAIT_MS);
        return -1;
    }

    if (vsb_cg_remove_rel(name, err, sizeof(err)) == -1) {
        vsb_log(VSB_LOG_ERR, "%s", err);
        return -1;
    }

    vsb_log(VSB_LOG_INFO, "cleaned up stale cgroup %s", name);
    return 0;
}


int
vsb_cgroup_cleanup_stale(void)
{
    int             count, failed;
    DIR            *d;
    size_t          i;
    struct dirent  *de;

    if (vsb_cg.mode == 0) {
        return -1;
    }

    count = 0;
    failed = 0;

    /* a crash mid-create may leave a name in some hierarchies only */
    for (i = 0; i < vsb_cg.nhier; i++) {
        d = opendir(vsb_cg.hier[i].base);
        if (d == NULL) {
            vsb_log_errno(VSB_LOG_ERR, "cgroup: opendir %s",
                          vsb_cg.hier[i].base);
            return -1;
        }

        for ( ;; ) {
            errno = 0;
            de = readdir(d);
            if (de == NULL) {
                if (errno != 0) {
                    vsb_log_errno(VSB_LOG_ERR, "cgroup: readdir %s",
                                  vsb_cg.hier[i].base);
                    failed = 1;
                }
                break;
            }

            if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0
                || strcmp(de->d_name, "..") == 0)
            {
                continue;
            }

            /* removing entries while reading: readdir may or may not
             * return later ones, the next hierarchy or a rerun gets them */
            if (vsb_cg_clean_one(de->d_name) == -1) {
                failed = 1;
            } else {
                count++;
            }
        }

        closedir(d);
    }

    return failed ? -1 : count;
}


typedef struct {
    size_t  hier;        /* index of the hierarchy walked */
    size_t  base_len;
    int     count;
} vsb_cg_count_ctx_t;


static int
vsb_cg_count_visit(const char *dir, void *data)
{
    char                 path[PATH_MAX];
    size_t               j;
    const char          *rel;
    struct stat          st;
    vsb_cg_count_ctx_t  *cc = data;

    if (strlen(dir) <= cc->base_len) {
        return 0;               /* the parent itself */
    }
    rel = dir + cc->base_len + 1;

    /* counted once: skip what an earlier hierarchy has too */
    for (j = 0; j < cc->hier; j++) {
        if (vsb_cg_path(path, sizeof(path), &vsb_cg.hier[j], rel, NULL) == 0
            && stat(path, &st) == 0)
        {
            return 0;
        }
    }

    cc->count++;
    return 0;
}


int
vsb_cgroup_count(void)
{
    size_t              i;
    vsb_cg_count_ctx_t  cc;

    if (vsb_cg.mode == 0) {
        return -1;
    }

    cc.count = 0;

    for (i = 0; i < vsb_cg.nhier; i++) {
        cc.hier = i;
        cc.base_len = strlen(vsb_cg.hier[i].base);

        if (vsb_cg_walk(vsb_cg.hier[i].base, 0, vsb_cg_count_visit, NULL, &cc)
            != 0)
        {
            vsb_log_errno(VSB_LOG_ERR, "cgroup: walk %s", vsb_cg.hier[i].base);
            return -1;
        }
    }

    return cc.count;
}


int
vsb_cgroup_remove_base(void)
{
    int     rc;
    size_t  i;

    rc = 0;

    for (i = 0; i < vsb_cg.nhier; i++) {
        if (rmdir(vsb_cg.hier[i].base) == -1 && errno != ENOENT) {
            vsb_log_errno(VSB_LOG_ERR, "cgroup: rmdir %s",
                          vsb_cg.hier[i].base);
            rc = -1;
        }
    }

    return rc;
}
