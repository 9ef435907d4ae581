/*
 * cgroup unit tests, against the real cgroup filesystem (needs root).
 * Every run uses its own parent cgroup "vsb-test-<pid>" and removes it.
 * On a hybrid host the v2 code path is also exercised, without limits,
 * against the controller-less /sys/fs/cgroup/unified.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include <cmocka.h>

#include "vsb_cgroup.h"
#include "vsb_cgroup_int.h"
#include "vsb_config.h"
#include "vsb_log.h"

static char  test_name[64];


static void
test_sleep_ms(unsigned ms)
{
    struct timespec  ts = { ms / 1000, (long) (ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}


/* reap whatever ended (we are a subreaper for the orphans) */
static void
test_reap(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0) {
        /* next */
    }
}


static int
test_wait_empty(vsb_cgroup_t *cg, unsigned ms)
{
    unsigned  waited;
    int       p;

    for (waited = 0; waited < ms; waited += 5) {
        test_reap();
        p = vsb_cgroup_populated(cg);
        if (p <= 0) {
            test_reap();
            return p;
        }
        test_sleep_ms(5);
    }

    return vsb_cgroup_populated(cg);
}


/*
 * Forks a child that waits on a pipe until it is in cg, then runs fn.
 * Returns its pid.
 */
static pid_t
test_spawn_in(vsb_cgroup_t *cg, void (*fn)(void))
{
    int    fds[2];
    char   c;
    pid_t  pid;

    assert_int_equal(pipe(fds), 0);

    pid = fork();
    assert_true(pid >= 0);

    if (pid == 0) {
        close(fds[1]);
        if (read(fds[0], &c, 1) != 1) {
            _exit(99);
        }
        fn();
        _exit(0);
    }

    close(fds[0]);
    assert_int_equal(vsb_cgroup_attach(cg, pid), 0);
    assert_int_equal(write(fds[1], "x", 1), 1);
    close(fds[1]);

    return pid;
}


static int
setup_auto(void **state)
{
    char          err[512];
    vsb_config_t  *cf;

    cf = calloc(1, sizeof(*cf));
    assert_non_null(cf);
    snprintf(cf->cgroup_name, sizeof(cf->cgroup_name), "%s", test_name);
    snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "auto");

    if (vsb_cgroup_init(cf, err, sizeof(err)) != 0) {
        fprintf(stderr, "init: %s\n", err);
        free(cf);
        return -1;
    }
    free(cf);

    return 0;
}


static int
teardown_base(void **state)
{
    test_reap();
    if (vsb_cgroup_count() != 0) {
        fprintf(stderr, "leaked cgroups: %d\n", vsb_cgroup_count());
        (void) vsb_cgroup_cleanup_stale();
    }
    return vsb_cgroup_remove_base();
}


static void
test_detect(void **state)
{
    struct statfs  sf;

    assert_int_equal(statfs("/sys/fs/cgroup", &sf), 0);

    if (sf.f_type == CGROUP2_SUPER_MAGIC) {
        assert_int_equal(vsb_cgroup_mode(), VSB_CGROUP_V2);
    } else {
        /* this (hybrid) host */
        assert_int_equal(vsb_cgroup_mode(), VSB_CGROUP_V1);
        assert_true(vsb_cg.nhier >= 4);
    }

    assert_int_equal(vsb_cgroup_count(), 0);
}


static void
test_modes(void **state)
{
    char           err[512];
    vsb_config_t  *cf;
    struct statfs  sf;

    cf = calloc(1, sizeof(*cf));
    assert_non_null(cf);
    snprintf(cf->cgroup_name, sizeof(cf->cgroup_name), "%s", test_name);

    snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "v3");
    assert_int_equal(vsb_cgroup_init(cf, err, sizeof(err)), -1);

    snprintf(cf->cgroup_name, sizeof(cf->cgroup_name), "..");
    snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "auto");
    assert_int_equal(vsb_cgroup_init(cf, err, sizeof(err)), -1);

    snprintf(cf->cgroup_name, sizeof(cf->cgroup_name), "%s", test_name);

    assert_int_equal(statfs("/sys/fs/cgroup", &sf), 0);

    if (sf.f_type == CGROUP2_SUPER_MAGIC) {
        /* pure v2: no v1 hierarchies, forcing v1 must say what is missing */
        snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "v1");
        err[0] = '\0';
        assert_int_equal(vsb_cgroup_init(cf, err, sizeof(err)), -1);
        fprintf(stderr, "# forced v1: %s\n", err);
        assert_non_null(strstr(err, "v1 needs"));

        snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "v2");
        assert_int_equal(vsb_cgroup_init(cf, err, sizeof(err)), 0);
        assert_int_equal(vsb_cgroup_mode(), VSB_CGROUP_V2);

    } else {
        /* hybrid: the unified tree has no controllers, forcing v2 fails */
        snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "v2");
        err[0] = '\0';
        assert_int_equal(vsb_cgroup_init(cf, err, sizeof(err)), -1);
        fprintf(stderr, "# forced v2: %s\n", err);
        assert_non_null(strstr(err, "controllers"));

        snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "v1");
        assert_int_equal(vsb_cgroup_init(cf, err, sizeof(err)), 0);
        assert_int_equal(vsb_cgroup_mode(), VSB_CGROUP_V1);
    }

    free(cf);
}


static void
test_bad_names(void **state)
{
    char          err[512];
    size_t        i;
    const char   *bad[] = { "", "..", ".", "a/b", "../x", "memory.max",
                            "cgroup.procs", "a b", "x\n",
                            "0123456789012345678901234567890123456789"
                            "0123456789012345678901234567890", NULL };

    for (i = 0; bad[i] != NULL; i++) {
        err[0] = '\0';
        assert_null(vsb_cgroup_create(NULL, bad[i], NULL, err, sizeof(err)));
        assert_non_null(strstr(err, "invalid"));
    }

    assert_null(vsb_cgroup_create(NULL, NULL, NULL, err, sizeof(err)));
    assert_int_equal(vsb_cgroup_count(), 0);
}


static void
test_limits_written(void **state)
{
    char           err[512], dir[PATH_MAX], buf[128];
    size_t         i;
    uint64_t       v;
    vsb_limits_t   lim = { .memory_mb = 64, .pids = 32, .cpu_percent = 50 };
    vsb_cgroup_t  *sb;

    sb = vsb_cgroup_create(NULL, "sb-lim", &lim, err, sizeof(err));
    assert_non_null(sb);

    /* duplicate: refused, and the existing one is left alone */
    assert_null(vsb_cgroup_create(NULL, "sb-lim", &lim, err, sizeof(err)));
    assert_non_null(strstr(err, "sb-lim"));
    assert_int_equal(vsb_cgroup_count(), 1);

    for (i = 0; i < vsb_cg.nhier; i++) {
        vsb_cg_hier_t  *h = &vsb_cg.hier[i];

        assert_int_equal(vsb_cg_path(dir, sizeof(dir), h, "sb-lim", NULL), 0);

        if (vsb_cg.mode == VSB_CGROUP_V1) {
            if (h->ctrl & VSB_CG_MEMORY) {
                assert_int_equal(vsb_cg_read_u64(dir,
                                 "memory.limit_in_bytes", &v), 0);
                assert_int_equal(v, 64ULL << 20);
                if (vsb_cg.memsw) {
                    assert_int_equal(vsb_cg_read_u64(dir,
                                     "memory.memsw.limit_in_bytes", &v), 0);
                    assert_int_equal(v, 64ULL << 20);
                }
            }
            if (h->ctrl & VSB_CG_PIDS) {
                assert_int_equal(vsb_cg_read_u64(dir, "pids.max", &v), 0);
                assert_int_equal(v, 32);
            }
            if (h->ctrl & VSB_CG_CPU) {
                assert_int_equal(vsb_cg_read_u64(dir, "cpu.cfs_quota_us", &v),
                                 0);
                assert_int_equal(v, 50000);
                assert_int_equal(vsb_cg_read_u64(dir, "cpu.cfs_period_us",
                                 &v), 0);
                assert_int_equal(v, 100000);
            }
        } else {
            assert_int_equal(vsb_cg_read_u64(dir, "memory.max", &v), 0);
            assert_int_equal(v, 64ULL << 20);
            assert_int_equal(vsb_cg_read_u64(dir, "pids.max", &v), 0);
            assert_int_equal(v, 32);
            assert_int_equal(vsb_cg_read(dir, "cpu.max", buf, sizeof(buf)),
                             0);
            assert_string_equal(buf, "50000 100000\n");
        }
    }

    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_count(), 0);
}


static void
child_oom(void)
{
    size_t  i;
    char   *p;

    /* 256 MB in 1 MB steps, touched, against a 32 MB limit */
    for (i = 0; i < 256; i++) {
        p = malloc(1 << 20);
        if (p == NULL) {
            _exit(2);
        }
        memset(p, 0x5a, 1 << 20);
    }

    _exit(1);
}


static void
test_oom_counted_on_child(void **state)
{
    int                 status;
    char                err[512];
    pid_t               pid;
    vsb_limits_t        lim = { .memory_mb = 32 };
    vsb_cgroup_t       *sb, *ex;
    vsb_cgroup_usage_t  u, us;

    sb = vsb_cgroup_create(NULL, "sb-oom", &lim, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e1", NULL, err, sizeof(err));
    assert_non_null(ex);
    assert_int_equal(vsb_cgroup_count(), 2);

    pid = test_spawn_in(ex, child_oom);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    assert_int_equal(vsb_cgroup_usage(ex, &u), 0);
    assert_int_equal(vsb_cgroup_usage(sb, &us), 0);
    fprintf(stderr, "# oom: exec oom_kills %llu peak %llu, sandbox oom_kills "
            "%llu peak %llu\n", (unsigned long long) u.oom_kills,
            (unsigned long long) u.memory_peak,
            (unsigned long long) us.oom_kills,
            (unsigned long long) us.memory_peak);

    /* the limit is on the parent, the count is read on the child */
    assert_true(u.oom_kills >= 1);
    assert_true(us.oom_kills >= 1);
    assert_true(u.memory_peak > (16ULL << 20));
    /* v2: the child's watermark is charged a batch (64 pages) before
     * its limited parent refuses it, like pids.peak's +1 */
    assert_true(u.memory_peak <= (32ULL << 20) + (256ULL << 10));

    assert_int_equal(test_wait_empty(sb, 1000), 0);
    assert_int_equal(vsb_cgroup_destroy(ex, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_count(), 0);
}


static void
child_forker(void)
{
    int    i;
    pid_t  p;

    for (i = 0; i < 64; i++) {
        p = fork();
        if (p == -1) {
            _exit(errno == EAGAIN ? 42 : 43);
        }
        if (p == 0) {
            for ( ;; ) {
                pause();
            }
        }
    }

    _exit(1);
}


static void
test_pids_limit_and_kill(void **state)
{
    int                 status;
    char                err[512];
    pid_t               pid;
    vsb_limits_t        lim = { .pids = 8 };
    uint64_t            nex, nsb;
    vsb_cgroup_t       *sb, *ex;
    vsb_cgroup_usage_t  u, us;

    sb = vsb_cgroup_create(NULL, "sb-pids", &lim, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e1", NULL, err, sizeof(err));
    assert_non_null(ex);

    pid = test_spawn_in(ex, child_forker);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 42);

    assert_int_equal(vsb_cgroup_usage(ex, &u), 0);
    assert_int_equal(vsb_cgroup_usage(sb, &us), 0);
    fprintf(stderr, "# pids: exec current %llu peak %llu, sandbox peak %llu\n",
            (unsigned long long) u.pids_current,
            (unsigned long long) u.pids_peak,
            (unsigned long long) us.pids_peak);
    assert_true(u.pids_current >= 1 && u.pids_current <= 8);
    assert_true(us.pids_peak <= 8);
    /* the child is charged before its limited parent refuses: +1 */
    assert_true(u.pids_peak <= 9);
    assert_int_equal(vsb_cgroup_populated(ex), 1);
    assert_int_equal(vsb_cgroup_populated(sb), 1);

    /* the refused fork is counted: in the forker's cgroup (v1, v2 before
     * Linux 6.12), or in the cgroup whose limit it was (v2 since) */
    assert_int_equal(vsb_cgroup_pids_refused(ex, &nex), 0);
    assert_int_equal(vsb_cgroup_pids_refused(sb, &nsb), 0);
    fprintf(stderr, "# pids.events max: exec %llu, sandbox %llu\n",
            (unsigned long long) nex, (unsigned long long) nsb);
    assert_true(nex > 0 || nsb > 0);
    if (vsb_cgroup_mode() == VSB_CGROUP_V1) {
        assert_true(nex > 0);
    }

    /* killing the sandbox takes its exec's processes too */
    assert_int_equal(vsb_cgroup_kill(sb), 0);
    assert_int_equal(test_wait_empty(sb, 1000), 0);
    assert_int_equal(vsb_cgroup_populated(ex), 0);

    assert_int_equal(vsb_cgroup_destroy(ex, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_count(), 0);
}


/*
 * v1: a process joins an exec cgroup itself through tasks descriptors the
 * helper opened, from a new user namespace (where it is nobody to the
 * host's cgroup files), as an exec's init does; v2: nothing to open.
 */
static void
test_join_self(void **state)
{
    int            fds[VSB_CGROUP_JOIN_MAX], sync[2], status;
    char           err[512], c;
    size_t         n, i;
    pid_t          pid;
    vsb_cgroup_t  *sb, *ex;

    sb = vsb_cgroup_create(NULL, "sb-join", NULL, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e1", NULL, err, sizeof(err));
    assert_non_null(ex);

    assert_int_equal(vsb_cgroup_join_open(ex, fds, &n, err, sizeof(err)), 0);

    if (vsb_cgroup_mode() != VSB_CGROUP_V1) {
        assert_int_equal(n, 0);
        goto done;
    }

    assert_true(n >= 1 && n <= VSB_CGROUP_JOIN_MAX);
    assert_int_equal(vsb_cgroup_populated(ex), 0);
    assert_int_equal(pipe(sync), 0);

    pid = fork();
    assert_true(pid >= 0);

    if (pid == 0) {
        close(sync[1]);
        if (unshare(CLONE_NEWUSER) != 0) {
            _exit(10);
        }
        if (vsb_cgroup_join_self(fds, n) != 0) {
            _exit(11);
        }
        for (i = 0; i < n; i++) {
            if (fcntl(fds[i], F_GETFD) != -1) {
                _exit(12);          /* every descriptor closed */
            }
        }
        if (read(sync[0], &c, 1) != 0) {
            _exit(13);
        }
        _exit(0);
    }

    close(sync[0]);
    vsb_cgroup_join_close(fds, n);

    /* the child is in the exec cgroup (all hierarchies: populated reads
     * cgroup.procs of each) once it got past its join */
    for (i = 0; i < 200 && vsb_cgroup_populated(ex) != 1; i++) {
        test_sleep_ms(5);
    }
    assert_int_equal(vsb_cgroup_populated(ex), 1);

    close(sync[1]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(test_wait_empty(ex, 1000), 0);

done:

    assert_int_equal(vsb_cgroup_destroy(ex, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_count(), 0);
}


/* a tree that keeps forking in new sessions while it is being killed */
static void
child_tree(void)
{
    int    i;
    pid_t  p;

    for (i = 0; i < 2000; i++) {
        p = fork();
        if (p == 0) {
            (void) setsid();
            if (i % 2 == 0) {
                continue;       /* this one keeps forking too */
            }
            for ( ;; ) {
                pause();
            }
        }
        test_sleep_ms(2);
    }

    for ( ;; ) {
        pause();
    }
}


static void
test_kill_tree(void **state)
{
    int                 n;
    char                err[512];
    pid_t               pid;
    vsb_cgroup_t       *sb, *ex;
    vsb_limits_t        lim = { .pids = 200 };
    struct timespec     a, b;
    vsb_cgroup_usage_t  u;

    sb = vsb_cgroup_create(NULL, "sb-tree", &lim, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e7", NULL, err, sizeof(err));
    assert_non_null(ex);

    pid = test_spawn_in(ex, child_tree);
    (void) pid;

    /* the tree forks every 2 ms; an emulated CPU (the cgroup v2 VM) may
     * need much longer than the 60 ms a host does to grow it */
    for (n = 0; n < 500; n++) {
        test_sleep_ms(n == 0 ? 60 : 10);
        assert_int_equal(vsb_cgroup_usage(ex, &u), 0);
        if (u.pids_current > 4) {
            break;
        }
    }
    fprintf(stderr, "# tree: %llu processes before the kill\n",
            (unsigned long long) u.pids_current);
    assert_true(u.pids_current > 4);

    /* a busy cgroup is not removed; it stays valid for a retry */
    assert_int_equal(vsb_cgroup_destroy(ex, err, sizeof(err)), -1);
    fprintf(stderr, "# destroy busy: %s\n", err);
    assert_non_null(strstr(err, "e7"));

    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(vsb_cgroup_kill(ex), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    fprintf(stderr, "# tree: kill took %ld us\n",
            (long) ((b.tv_sec - a.tv_sec) * 1000000
                    + (b.tv_nsec - a.tv_nsec) / 1000));
    n = test_wait_empty(ex, 1000);
    assert_int_equal(n, 0);
    assert_int_equal(vsb_cgroup_populated(sb), 0);

    assert_int_equal(vsb_cgroup_destroy(ex, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_count(), 0);
}


static void
child_sleep(void)
{
    (void) setsid();
    if (fork() == 0) {
        for ( ;; ) {
            pause();
        }
    }
    for ( ;; ) {
        pause();
    }
}


static void
test_cleanup_stale(void **state)
{
    char           err[512];
    pid_t          pid;
    vsb_cgroup_t  *sb, *ex, *sb2;

    sb = vsb_cgroup_create(NULL, "sb-stale", NULL, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e1", NULL, err, sizeof(err));
    assert_non_null(ex);
    sb2 = vsb_cgroup_create(NULL, "sb-stale2", NULL, err, sizeof(err));
    assert_non_null(sb2);

    pid = test_spawn_in(ex, child_sleep);
    test_sleep_ms(20);
    assert_int_equal(vsb_cgroup_count(), 3);

    /* v1: a crash in the middle of an exec kill left it self-frozen */
    if (vsb_cg.mode == VSB_CGROUP_V1) {
        for (size_t i = 0; i < vsb_cg.nhier; i++) {
            char  dir[PATH_MAX];

            if (vsb_cg.hier[i].ctrl & VSB_CG_FREEZER) {
                assert_int_equal(vsb_cg_path(dir, sizeof(dir),
                                 &vsb_cg.hier[i], "sb-stale/e1", NULL), 0);
                assert_int_equal(vsb_cg_write(dir, "freezer.state", "FROZEN",
                                 err, sizeof(err)), 0);
            }
        }
        test_sleep_ms(20);
    }

    /* a previous run died here: its objects are gone, its cgroups not */
    free(ex);
    free(sb);
    free(sb2);

    assert_int_equal(vsb_cgroup_cleanup_stale(), 2);
    assert_int_equal(vsb_cgroup_count(), 0);

    test_reap();
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);

    assert_int_equal(vsb_cgroup_cleanup_stale(), 0);
}


static void
test_cpu_usage(void **state)
{
    int                 n;
    char                err[512];
    pid_t               pid;
    vsb_limits_t        lim = { .cpu_percent = 100 };
    vsb_cgroup_t       *sb;
    vsb_cgroup_usage_t  u;

    sb = vsb_cgroup_create(NULL, "sb-cpu", &lim, err, sizeof(err));
    assert_non_null(sb);

    pid = test_spawn_in(sb, child_sleep);
    (void) pid;

    /* the child forks once; an emulated CPU may need more than 10 ms */
    for (n = 0; n < 500; n++) {
        test_sleep_ms(10);
        assert_int_equal(vsb_cgroup_usage(sb, &u), 0);
        if (u.pids_current >= 2) {
            break;
        }
    }
    assert_true(u.memory_current > 0);
    assert_true(u.pids_current == 2);

    assert_int_equal(vsb_cgroup_kill(sb), 0);
    assert_int_equal(test_wait_empty(sb, 1000), 0);
    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
}


static void
child_burn(void)
{
    struct timespec    a, b;
    volatile uint64_t  x = 0;

    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        x++;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000
             < 100);
    _exit(0);
}


static void
test_cpu_accounted(void **state)
{
    int                 status;
    char                err[512];
    pid_t               pid;
    vsb_cgroup_t       *sb, *ex;
    vsb_cgroup_usage_t  u;

    sb = vsb_cgroup_create(NULL, "sb-burn", NULL, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e1", NULL, err, sizeof(err));
    assert_non_null(ex);

    pid = test_spawn_in(ex, child_burn);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(vsb_cgroup_usage(ex, &u), 0);
    fprintf(stderr, "# cpu: %llu usec\n", (unsigned long long) u.cpu_usec);
    assert_true(u.cpu_usec > 10000);     /* busy host: just accounted */

    assert_int_equal(vsb_cgroup_destroy(ex, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
}


/* ---- v2 code path against the hybrid host's empty unified tree ---- */

static char  v2_private_mount[] = "/tmp/veto-cg2-XXXXXX";
static int   v2_mounted;


static int
setup_v2_unified(void **state)
{
    const char    *mnt;
    char           err[512];
    struct statfs  sf;

    if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
    {
        return setup_auto(state);           /* a real v2 host */
    }

    if (statfs("/sys/fs/cgroup/unified", &sf) == 0
        && sf.f_type == CGROUP2_SUPER_MAGIC)
    {
        mnt = "/sys/fs/cgroup/unified";

    } else {
        /* a v1-only host: the (single) v2 hierarchy, mounted for the test */
        if (mkdtemp(v2_private_mount) == NULL
            || mount("none", v2_private_mount, "cgroup2", 0, NULL) == -1)
        {
            fprintf(stderr, "mount cgroup2 on %s: %s\n", v2_private_mount,
                    strerror(errno));
            return -1;
        }

        v2_mounted = 1;
        mnt = v2_private_mount;
    }

    if (vsb_cgroup_init_v2_at(mnt, test_name, err, sizeof(err)) != 0)
    {
        fprintf(stderr, "init v2: %s\n", err);
        return -1;
    }

    return 0;
}


static int
teardown_v2(void **state)
{
    int  rc;

    rc = teardown_base(state);

    if (v2_mounted) {
        if (umount2(v2_private_mount, 0) == -1
            || rmdir(v2_private_mount) == -1)
        {
            fprintf(stderr, "unmount %s: %s\n", v2_private_mount,
                    strerror(errno));
            rc = -1;
        }

        v2_mounted = 0;
    }

    return rc;
}


static void
test_v2_path(void **state)
{
    char                err[512];
    pid_t               pid;
    vsb_cgroup_t       *sb, *ex;
    vsb_cgroup_usage_t  u;

    assert_int_equal(vsb_cgroup_mode(), VSB_CGROUP_V2);

    sb = vsb_cgroup_create(NULL, "sb-v2", NULL, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e1", NULL, err, sizeof(err));
    assert_non_null(ex);
    assert_int_equal(vsb_cgroup_count(), 2);

    assert_int_equal(vsb_cgroup_populated(ex), 0);
    pid = test_spawn_in(ex, child_tree);
    (void) pid;
    test_sleep_ms(40);
    assert_int_equal(vsb_cgroup_populated(ex), 1);
    assert_int_equal(vsb_cgroup_populated(sb), 1);
    assert_int_equal(vsb_cgroup_usage(ex, &u), 0);

    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "sb-v2"));

    assert_int_equal(vsb_cgroup_kill(sb), 0);
    assert_int_equal(test_wait_empty(sb, 1000), 0);
    assert_int_equal(vsb_cgroup_populated(ex), 0);

    /* stale tree: cleanup finds and removes it */
    free(ex);
    ex = vsb_cgroup_create(sb, "e2", NULL, err, sizeof(err));
    assert_non_null(ex);
    free(ex);
    free(sb);
    assert_int_equal(vsb_cgroup_count(), 3);
    assert_int_equal(vsb_cgroup_cleanup_stale(), 1);
    assert_int_equal(vsb_cgroup_count(), 0);
}


/* A child that counts in shared memory, as fast as it can. */
static volatile uint64_t  *freeze_count;

static void
child_count(void)
{
    for ( ;; ) {
        (*freeze_count)++;
    }
}


/* frozen (1) or thawed (0) within ms; the state then */
static int
test_wait_frozen(vsb_cgroup_t *cg, int want, unsigned ms)
{
    unsigned  waited;
    int       f = -1;

    for (waited = 0; waited < ms; waited += 2) {
        f = vsb_cgroup_frozen(cg);
        if (f == want) {
            break;
        }
        test_sleep_ms(2);
    }

    return f;
}


/* pause and resume: a sandbox's cgroup frozen with its exec cgroup below,
 * a counting process stops, thawed it goes on; SIGKILL still ends a
 * frozen one (v2) and a kill thaws (v1) */
static void
test_freeze(void **state)
{
    char           err[512];
    pid_t          pid;
    vsb_cgroup_t  *sb, *ex;
    uint64_t       a, b;

    freeze_count = mmap(NULL, sizeof(*freeze_count), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(freeze_count != MAP_FAILED);
    *freeze_count = 0;

    sb = vsb_cgroup_create(NULL, "sb-freeze", NULL, err, sizeof(err));
    assert_non_null(sb);
    ex = vsb_cgroup_create(sb, "e1", NULL, err, sizeof(err));
    assert_non_null(ex);
    pid = test_spawn_in(ex, child_count);

    for (a = 0; a < 500 && *freeze_count == 0; a++) {
        test_sleep_ms(2);
    }
    assert_true(*freeze_count > 0);
    assert_int_equal(vsb_cgroup_frozen(sb), 0);

    assert_int_equal(vsb_cgroup_freeze(sb, 1, err, sizeof(err)), 0);
    assert_int_equal(test_wait_frozen(sb, 1, 5000), 1);
    a = *freeze_count;
    test_sleep_ms(50);
    b = *freeze_count;
    fprintf(stderr, "# %s: frozen, the count stays at %llu\n",
            vsb_cgroup_mode() == VSB_CGROUP_V2 ? "v2" : "v1",
            (unsigned long long) b);
    assert_true(a == b);

    assert_int_equal(vsb_cgroup_freeze(sb, 0, err, sizeof(err)), 0);
    assert_int_equal(test_wait_frozen(sb, 0, 5000), 0);
    for (a = 0; a < 500 && *freeze_count == b; a++) {
        test_sleep_ms(2);
    }
    assert_true(*freeze_count > b);

    /* frozen again, then killed: the kill ends it all the same */
    assert_int_equal(vsb_cgroup_freeze(sb, 1, err, sizeof(err)), 0);
    assert_int_equal(test_wait_frozen(sb, 1, 5000), 1);
    assert_int_equal(vsb_cgroup_kill(sb), 0);
    if (vsb_cgroup_mode() == VSB_CGROUP_V2) {
        assert_int_equal(test_wait_empty(sb, 2000), 0);
        assert_int_equal(vsb_cgroup_freeze(sb, 0, err, sizeof(err)), 0);
    } else {
        assert_int_equal(vsb_cgroup_freeze(sb, 0, err, sizeof(err)), 0);
        assert_int_equal(test_wait_empty(sb, 2000), 0);
    }
    (void) pid;

    assert_int_equal(vsb_cgroup_destroy(ex, err, sizeof(err)), 0);
    assert_int_equal(vsb_cgroup_destroy(sb, err, sizeof(err)), 0);
    munmap((void *) freeze_count, sizeof(*freeze_count));
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(test_detect, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_modes, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_bad_names, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_limits_written, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_oom_counted_on_child, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_pids_limit_and_kill, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_join_self, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_kill_tree, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_cleanup_stale, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_cpu_usage, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_cpu_accounted, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_v2_path, setup_v2_unified,
                                        teardown_v2),
        cmocka_unit_test_setup_teardown(test_freeze, setup_auto,
                                        teardown_base),
        cmocka_unit_test_setup_teardown(test_freeze, setup_v2_unified,
                                        teardown_v2),
    };

    if (geteuid() != 0) {
        fprintf(stderr, "# test_cgroup: needs root, skipped\n");
        return 0;
    }

    /* orphans of the test workloads come back to us to be reaped */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1) {
        perror("prctl PR_SET_CHILD_SUBREAPER");
        return 1;
    }

    snprintf(test_name, sizeof(test_name), "vsb-test-%d", (int) getpid());
    vsb_log_level = VSB_LOG_WARN;

    return cmocka_run_group_tests(tests, NULL, NULL);
}
