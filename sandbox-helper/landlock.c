/*
 * Landlock for the workload.  See vsb_landlock.h.
 *
 * Debian 12's <linux/landlock.h> stops at ABI 2; the later constants are
 * defined here with the values of the kernel's UAPI, and the ruleset
 * attribute is passed with the size the running kernel's ABI knows.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_landlock.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset  444
#define __NR_landlock_add_rule        445
#define __NR_landlock_restrict_self   446
#endif

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER             (1ULL << 13)   /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE          (1ULL << 14)   /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV         (1ULL << 15)   /* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP         (1ULL << 0)    /* ABI 4 */
#define LANDLOCK_ACCESS_NET_CONNECT_TCP      (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET  (1ULL << 0)    /* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL                (1ULL << 1)
#endif

/* the newest ABI this file was reviewed against; a newer kernel is
 * used at this level (every ABI keeps the older ones' meaning) */
#define VSB_LL_ABI_REVIEWED  7

#define VSB_LL_FS_V1  (LANDLOCK_ACCESS_FS_EXECUTE                          \
                       | LANDLOCK_ACCESS_FS_WRITE_FILE                     \
                       | LANDLOCK_ACCESS_FS_READ_FILE                      \
                       | LANDLOCK_ACCESS_FS_READ_DIR                       \
                       | LANDLOCK_ACCESS_FS_REMOVE_DIR                     \
                       | LANDLOCK_ACCESS_FS_REMOVE_FILE                    \
                       | LANDLOCK_ACCESS_FS_MAKE_CHAR                      \
                       | LANDLOCK_ACCESS_FS_MAKE_DIR                       \
                       | LANDLOCK_ACCESS_FS_MAKE_REG                       \
                       | LANDLOCK_ACCESS_FS_MAKE_SOCK                      \
                       | LANDLOCK_ACCESS_FS_MAKE_FIFO                      \
                       | LANDLOCK_ACCESS_FS_MAKE_BLOCK                     \
                       | LANDLOCK_ACCESS_FS_MAKE_SYM)

#define VSB_LL_READ   (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* a writable directory: everything but device nodes; the same set on
 * each of them, so files may move between them (REFER demands it) */
#define VSB_LL_RW     (VSB_LL_READ | LANDLOCK_ACCESS_FS_EXECUTE            \
                       | LANDLOCK_ACCESS_FS_WRITE_FILE                     \
                       | LANDLOCK_ACCESS_FS_TRUNCATE                       \
                       | LANDLOCK_ACCESS_FS_REMOVE_DIR                     \
                       | LANDLOCK_ACCESS_FS_REMOVE_FILE                    \
                       | LANDLOCK_ACCESS_FS_MAKE_DIR                       \
                       | LANDLOCK_ACCESS_FS_MAKE_REG                       \
                       | LANDLOCK_ACCESS_FS_MAKE_SOCK                      \
                       | LANDLOCK_ACCESS_FS_MAKE_FIFO                      \
                       | LANDLOCK_ACCESS_FS_MAKE_SYM                       \
                       | LANDLOCK_ACCESS_FS_REFER)

/* the layout vsb_rootfs_enter() builds (rootfs.c): access on a
 * directory profile's root, and on an image's (0: no rule) */
typedef struct {
    const char  *path;
    uint64_t     access;
    uint64_t     image;
} vsb_ll_rule_t;

#define VSB_LL_SAME  (~0ULL)

static const vsb_ll_rule_t  vsb_ll_rules[] = {
    /* listing directories anywhere (ls /, find); reading files is
     * granted below, hierarchy by hierarchy.  An image's whole tree is
     * its own: read and run anywhere; writes where its top-level
     * directories allow (vsb_ll_image_dirs()), proc and dev as below */
    { "/", LANDLOCK_ACCESS_FS_READ_DIR,
      VSB_LL_READ | LANDLOCK_ACCESS_FS_EXECUTE },

    /* the read-only profile */
    { "/usr", VSB_LL_READ | LANDLOCK_ACCESS_FS_EXECUTE, 0 },
    { "/etc", VSB_LL_READ, 0 },

    /* reads only: no build tool writes procfs, and what it could write
     * there (oom_score_adj, comm of other threads) nothing needs */
    { "/proc", VSB_LL_READ, VSB_LL_SAME },

    /* null zero full random urandom tty pts/ ptmx: read, write, O_TRUNC
     * (": > /dev/null"), terminal ioctls; never a new node */
    { "/dev", VSB_LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE
              | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV,
      VSB_LL_SAME },

    /* the workload's own writable directories */
    { "/workspace", VSB_LL_RW, VSB_LL_SAME },
    { "/home/sandbox", VSB_LL_RW, VSB_LL_SAME },
    { "/tmp", VSB_LL_RW, VSB_LL_SAME },
    { "/var/tmp", VSB_LL_RW, VSB_LL_SAME },
    { "/dev/shm", VSB_LL_RW, VSB_LL_SAME },
};

/* an image root's top-level directories that keep the rules above */
static const char  *vsb_ll_image_kept[] = { "proc", "dev", "sys" };

#define VSB_LL_IMAGE_DIRS_MAX  128

/* struct landlock_ruleset_attr as of ABI 6; older kernels get a prefix */
typedef struct {
    uint64_t  handled_access_fs;
    uint64_t  handled_access_net;
    uint64_t  scoped;
} vsb_ll_ruleset_attr_t;

static int  vsb_ll_abi;


int
vsb_landlock_init(char *msg, size_t msglen)
{
    long  abi;

    abi = syscall(__NR_landlock_create_ruleset, NULL, 0,
                  LANDLOCK_CREATE_RULESET_VERSION);

    if (abi < 1) {
        vsb_ll_abi = 0;
        snprintf(msg, msglen, "landlock: not available (%s); workloads run "
                 "without it, the other layers remain",
                 errno == EOPNOTSUPP ? "disabled at boot"
                 : errno == ENOSYS ? "kernel built without it"
                 : strerror(errno));
        return 0;
    }

    vsb_ll_abi = abi > VSB_LL_ABI_REVIEWED ? VSB_LL_ABI_REVIEWED : (int) abi;

    snprintf(msg, msglen, "landlock: kernel ABI %ld, used at %d (%s%s%s%s)",
             abi, vsb_ll_abi, "files",
             vsb_ll_abi >= 5 ? ", device ioctls" : "",
             vsb_ll_abi >= 6 ? ", abstract unix sockets and signals scoped"
                             : "",
             ", TCP left to the network namespace");
    return vsb_ll_abi;
}


int
vsb_landlock_abi(void)
{
    return vsb_ll_abi;
}


void
vsb_landlock_handled(int abi, vsb_landlock_handled_t *h)
{
    memset(h, 0, sizeof(*h));

    if (abi < 1) {
        return;
    }

    h->fs = VSB_LL_FS_V1;

    if (abi >= 2) {
        h->fs |= LANDLOCK_ACCESS_FS_REFER;
    }

    if (abi >= 3) {
        h->fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    }

    /*
     * abi >= 4 could handle TCP bind and connect, but its rules name
     * ports, not addresses.  In network mode "none" everything reachable
     * is the sandbox's own loopback, where servers and clients on any
     * port are legitimate (test fixtures, dev servers): what the mode
     * needs is every port, and the network namespace already keeps the
     * rest out of reach.  h->net stays 0.
     */

    if (abi >= 5) {
        h->fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    }

    if (abi >= 6) {
        h->scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
                    | LANDLOCK_SCOPE_SIGNAL;
    }
}


/* One path-beneath rule; closes fd. */
static int
vsb_ll_rule(int ruleset, int fd, uint64_t access, const char *what,
    char *err, size_t errlen)
{
    struct landlock_path_beneath_attr  pb;

    memset(&pb, 0, sizeof(pb));
    pb.allowed_access = access;
    pb.parent_fd = fd;

    if (syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
                &pb, 0) != 0)
    {
        snprintf(err, errlen, "landlock: rule for %s: %s", what,
                 strerror(errno));
        close(fd);
        return -1;
    }

    close(fd);
    return 0;
}


/*
 * An image root: writes wherever its permissions allow them, in every
 * top-level directory but proc, dev and sys (the overlay copies them up
 * into the sandbox's own layer).  Read with getdents64 into the stack:
 * the workload allocates nothing between clone and exec.
 */
static int
vsb_ll_image_dirs(int ruleset, uint64_t access, char *err, size_t errlen)
{
    uint64_t      buf[512];         /* records are 8-byte aligned */
    long          n, off;
    int           root, fd, rules = 0;
    size_t        i;
    struct stat   st;
    struct {
        uint64_t        d_ino;
        int64_t         d_off;
        unsigned short  d_reclen;
        unsigned char   d_type;
        char            d_name[];
    }            *de;

    root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root == -1) {
        snprintf(err, errlen, "landlock: open /: %s", strerror(errno));
        return -1;
    }

    while ((n = syscall(SYS_getdents64, root, buf, sizeof(buf))) > 0) {
        for (off = 0; off < n; off += de->d_reclen) {
            de = (void *) ((char *) buf + off);

            if (de->d_name[0] == '.' && (de->d_name[1] == '\0'
                || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            {
                continue;
            }

            for (i = 0;
                 i < sizeof(vsb_ll_image_kept) / sizeof(vsb_ll_image_kept[0]);
                 i++)
            {
                if (strcmp(de->d_name, vsb_ll_image_kept[i]) == 0) {
                    break;
                }
            }

            if (i < sizeof(vsb_ll_image_kept) / sizeof(vsb_ll_image_kept[0])
                || rules >= VSB_LL_IMAGE_DIRS_MAX
                || fstatat(root, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0
                || !S_ISDIR(st.st_mode))
            {
                continue;
            }

            fd = openat(root, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW
                        | O_CLOEXEC);
            if (fd == -1) {
                continue;
            }

            if (vsb_ll_rule(ruleset, fd, access, de->d_name, err, errlen)
                != 0)
            {
                close(root);
                return -1;
            }
            rules++;
        }
    }

    if (n == -1) {
        snprintf(err, errlen, "landlock: read /: %s", strerror(errno));
        close(root);
        return -1;
    }

    close(root);
    return 0;
}


int
vsb_landlock_apply(const vsb_sandbox_t *sb, char *err, size_t errlen)
{
    int                                ruleset, fd, image;
    size_t                             i, size;
    uint64_t                           access;
    vsb_ll_ruleset_attr_t              attr;
    vsb_landlock_handled_t             h;

    /* one policy per kind of root; the network mode decides TCP once a
     * mode other than "none" exists */

    if (vsb_ll_abi == 0) {
        return 0;
    }

    vsb_landlock_handled(vsb_ll_abi, &h);

    memset(&attr, 0, sizeof(attr));
    attr.handled_access_fs = h.fs;
    attr.handled_access_net = h.net;
    attr.scoped = h.scoped;

    size = vsb_ll_abi >= 6 ? sizeof(attr)
           : vsb_ll_abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);

    ruleset = (int) syscall(__NR_landlock_create_ruleset, &attr, size, 0);
    if (ruleset == -1) {
        snprintf(err, errlen, "landlock: create ruleset (ABI %d): %s",
                 vsb_ll_abi, strerror(errno));
        return -1;
    }

    image = vsb_profile_is_image(sb->profile);

    for (i = 0; i < sizeof(vsb_ll_rules) / sizeof(vsb_ll_rules[0]); i++) {
        access = vsb_ll_rules[i].access;
        if (image && vsb_ll_rules[i].image != VSB_LL_SAME) {
            access = vsb_ll_rules[i].image;
        }
        if (access == 0) {
            continue;
        }

        fd = open(vsb_ll_rules[i].path, O_PATH | O_CLOEXEC | O_DIRECTORY);
        if (fd == -1) {
            snprintf(err, errlen, "landlock: open %s: %s",
                     vsb_ll_rules[i].path, strerror(errno));
            close(ruleset);
            return -1;
        }

        if (vsb_ll_rule(ruleset, fd, access & h.fs, vsb_ll_rules[i].path,
                        err, errlen) != 0)
        {
            close(ruleset);
            return -1;
        }
    }

    if (image && vsb_ll_image_dirs(ruleset, VSB_LL_RW & h.fs, err, errlen)
                 != 0)
    {
        close(ruleset);
        return -1;
    }

    if (syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) {
        snprintf(err, errlen, "landlock: restrict: %s", strerror(errno));
        close(ruleset);
        return -1;
    }

    close(ruleset);
    return 0;
}
