/*
 * The mount namespace an exec's init is cloned from.
 *
 * clone(CLONE_NEWNS) copies every mount of the caller's namespace, and
 * the init then walks them all to make them private and detaches them
 * all again after pivot_root: work in proportion to the host's mounts,
 * two of which every live sandbox adds (its tmpfs, its pinned network
 * namespace).  With 1,000 sandboxes that doubled the time of an exec.
 *
 * So the init is cloned from a private copy of the host's mounts with
 * the sandboxes' taken out, and is handed its own sandbox's tree as a
 * detached clone (open_tree), which it attaches where the tree is in
 * the host's namespace: every path it uses stays the same.  The copy is
 * remade every VSB_SPAWN_NS_REFRESH_MS, so that what the host mounts or
 * unmounts meanwhile reaches the next execs, and nothing the host has
 * unmounted is held for longer than that.
 *
 * The helper is single-threaded: stepping into the namespace around a
 * clone (as netns.c does for the network) is seen by nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "vsb_config.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_mountinfo.h"
#include "vsb_spawn_ns.h"

#define VSB_SNS_SELF  "/proc/self/ns/mnt"

static int          vsb_sns_host = -1;     /* the helper's own */
static int          vsb_sns_cwd = -1;      /* the helper's cwd in it */
static int          vsb_sns_spawn = -1;
static long         vsb_sns_nmounts = -1;  /* in the copy, when made */
static vsb_timer_t  vsb_sns_timer;

static int vsb_sns_make(char *err, size_t errlen);
static int vsb_sns_strip(long *mounts, char *err, size_t errlen);
static void vsb_sns_refresh(vsb_timer_t *t);


/* Back into the helper's namespace; setns moves the cwd to its root. */
static void
vsb_sns_back(void)
{
    if (setns(vsb_sns_host, CLONE_NEWNS) != 0 || fchdir(vsb_sns_cwd) != 0) {
        /* every later path of the helper would resolve in the copy */
        vsb_log_errno(VSB_LOG_ERR, "setns(back to the helper's mount "
                      "namespace)");
        abort();
    }
}


/* One pass over the copy's mounts, detaching every one below the
 * prefixes (state_dir/sb/ and state_dir/netns/: what storage.c and
 * netns.c make per sandbox), children with them: how many, or -1. */
static int
vsb_sns_strip_pass(const char *sb, const char *ns, long *lines, char *err,
    size_t errlen)
{
    int      rc, count;
    char    *line, *p, *mp;
    FILE    *f;
    size_t   cap, lsb, lns, i;

    lsb = strlen(sb);
    lns = strlen(ns);

    f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL) {
        snprintf(err, errlen, "spawn namespace: open mountinfo: %s",
                 strerror(errno));
        return -1;
    }

    rc = 0;
    count = 0;
    *lines = 0;
    line = NULL;
    cap = 0;

    while (getline(&line, &cap, f) != -1) {
        (*lines)++;

        /* id parent major:minor root MOUNT-POINT ... */
        p = line;
        for (i = 0; i < 4 && p != NULL; i++) {
            p = strchr(p, ' ');
            if (p != NULL) {
                p++;
            }
        }

        if (p == NULL) {
            continue;
        }

        mp = p;
        p = strchr(mp, ' ');
        if (p == NULL) {
            continue;
        }
        *p = '\0';
        vsb_mountinfo_unescape(mp);

        if (strncmp(mp, sb, lsb) != 0 && strncmp(mp, ns, lns) != 0) {
            continue;
        }

        /* EINVAL: gone already, with a parent detached before it */
        if (umount2(mp, MNT_DETACH) != 0 && errno != EINVAL
            && errno != ENOENT)
        {
            snprintf(err, errlen, "spawn namespace: detach %.200s: %s", mp,
                     strerror(errno));
            rc = -1;
            break;
        }

        count++;
    }

    free(line);
    fclose(f);
    return rc == 0 ? count : -1;
}


/* mountinfo read while it changes may skip a line: again until a pass
 * finds nothing */
static int
vsb_sns_strip(long *mounts, char *err, size_t errlen)
{
    int   i, n;
    char  sb[PATH_MAX], ns[PATH_MAX];

    n = snprintf(sb, sizeof(sb), "%s/sb/", vsb_cf.state_dir);
    if (n < 0 || (size_t) n >= sizeof(sb)
        || (size_t) snprintf(ns, sizeof(ns), "%s/netns/", vsb_cf.state_dir)
           >= sizeof(ns))
    {
        snprintf(err, errlen, "spawn namespace: state_dir too long");
        return -1;
    }

    for (i = 0; i < 16; i++) {
        n = vsb_sns_strip_pass(sb, ns, mounts, err, errlen);
        if (n <= 0) {
            return n;
        }
    }

    snprintf(err, errlen, "spawn namespace: sandbox mounts left after %d "
             "passes", i);
    return -1;
}


static int
vsb_sns_make(char *err, size_t errlen)
{
    int       fd;
    long      mounts;
    uint64_t  start;

    start = vsb_now_ms();

    if (unshare(CLONE_NEWNS) != 0) {
        snprintf(err, errlen, "spawn namespace: unshare: %s", strerror(errno));
        return -1;
    }

    /* from here on the helper is in the copy: always back before return */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(err, errlen, "spawn namespace: make / private: %s",
                 strerror(errno));
        vsb_sns_back();
        return -1;
    }

    if (vsb_sns_strip(&mounts, err, errlen) != 0) {
        vsb_sns_back();
        return -1;
    }

    fd = open(VSB_SNS_SELF, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "spawn namespace: open %s: %s", VSB_SNS_SELF,
                 strerror(errno));
    }

    vsb_sns_back();

    if (fd == -1) {
        return -1;
    }

    if (vsb_sns_spawn != -1) {
        close(vsb_sns_spawn);
    }
    vsb_sns_spawn = fd;
    vsb_sns_nmounts = mounts;

    vsb_log(VSB_LOG_DEBUG, "spawn namespace: %ld mounts, made in %llu ms",
            mounts, (unsigned long long) (vsb_now_ms() - start));
    return 0;
}


long
vsb_spawn_ns_mounts(void)
{
    return vsb_sns_spawn != -1 ? vsb_sns_nmounts : -1;
}


static void
vsb_sns_refresh(vsb_timer_t *t)
{
    char  err[512];

    /* on failure the last copy serves on */
    if (vsb_sns_make(err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_WARN, "%s (the previous copy is kept)", err);
    }

    vsb_timer_add(t, VSB_SPAWN_NS_REFRESH_MS);
}


void
vsb_spawn_ns_init(void)
{
    char  err[512];

    vsb_sns_host = open(VSB_SNS_SELF, O_RDONLY | O_CLOEXEC);
    vsb_sns_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

    if (vsb_sns_host == -1 || vsb_sns_cwd == -1) {
        vsb_log_errno(VSB_LOG_WARN, "spawn namespace: open %s or the cwd; "
                      "execs are cloned from the helper's own namespace",
                      VSB_SNS_SELF);
        goto off;
    }

    if (vsb_sns_make(err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_WARN, "%s; execs are cloned from the helper's own "
                "mount namespace", err);
        goto off;
    }

    vsb_sns_timer.handler = vsb_sns_refresh;
    vsb_timer_add(&vsb_sns_timer, VSB_SPAWN_NS_REFRESH_MS);
    return;

off:

    if (vsb_sns_host != -1) {
        close(vsb_sns_host);
    }
    if (vsb_sns_cwd != -1) {
        close(vsb_sns_cwd);
    }
    vsb_sns_host = -1;
    vsb_sns_cwd = -1;
}


int
vsb_spawn_ns_tree(const vsb_sandbox_t *sb, int *tree, char *err,
    size_t errlen)
{
    *tree = -1;

    if (vsb_sns_spawn == -1) {
        return 0;
    }

    *tree = open_tree(AT_FDCWD, sb->dir, OPEN_TREE_CLONE | AT_RECURSIVE
                                         | OPEN_TREE_CLOEXEC);
    if (*tree == -1) {
        snprintf(err, errlen, "spawn: clone the tree of %s: %s", sb->dir,
                 strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_spawn_ns_enter(char *err, size_t errlen)
{
    if (setns(vsb_sns_spawn, CLONE_NEWNS) != 0) {
        snprintf(err, errlen, "spawn: setns(spawn mount namespace): %s",
                 strerror(errno));
        return -1;
    }

    return 0;
}


void
vsb_spawn_ns_leave(void)
{
    vsb_sns_back();
}


int
vsb_spawn_ns_attach(int tree, const vsb_sandbox_t *sb)
{
    if (move_mount(tree, "", AT_FDCWD, sb->dir, MOVE_MOUNT_F_EMPTY_PATH)
        != 0)
    {
        return -1;
    }

    return close(tree);
}
