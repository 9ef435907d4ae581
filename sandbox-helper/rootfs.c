/*
 * The sandbox's root filesystem: the skeleton laid out at create time
 * (helper, host root) and the mounts made per exec (the exec's init, in
 * its own user and mount namespaces).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_rootfs.h"

#define VSB_ROOTFS_DEV_OPTS   "mode=0755,size=64k,nr_inodes=64"
#define VSB_ROOTFS_SHM_OPTS   "mode=1777,size=64m"
#define VSB_ROOTFS_PTS_OPTS   "newinstance,ptmxmode=0666,mode=0620"
#define VSB_ROOTFS_MASK_OPTS  "mode=0555,size=0k,nr_inodes=1"

typedef struct {
    const char  *path;
    mode_t       mode;
    uid_t        uid;          /* inside the sandbox */
} vsb_rootfs_dir_t;

typedef struct {
    const char  *path;
    const char  *content;
} vsb_rootfs_file_t;


/* "/" and what the workload may write: its workspace, home and tmp */
static const vsb_rootfs_dir_t  vsb_rootfs_dirs[] = {
    { "usr", 0755, 0 },
    { "etc", 0755, 0 },
    { "etc/ssl", 0755, 0 },
    { "proc", 0555, 0 },
    { "dev", 0755, 0 },
    { "run", 0755, 0 },
    { "var", 0755, 0 },
    { "var/tmp", 01777, 0 },
    { "tmp", 01777, 0 },
    { "home", 0755, 0 },
    { "home/sandbox", 0750, VSB_WORKLOAD_UID },
    { "workspace", 0755, VSB_WORKLOAD_UID },
};

/* merged-/usr layout; made only if the profile has the target */
static const char  *vsb_rootfs_links[] = {
    "bin", "sbin", "lib", "lib64", "lib32", "libx32",
};

static const vsb_rootfs_file_t  vsb_rootfs_files[] = {
    { "etc/passwd",
      "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
      "sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n"
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" },
    { "etc/group",
      "root:x:0:\n"
      "sandbox:x:1000:\n"
      "nogroup:x:65534:\n" },
    { "etc/hosts",
      "127.0.0.1\tlocalhost sandbox\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n" },
    { "etc/hostname", "sandbox\n" },
    { "etc/resolv.conf", "# no network\n" },
    { "etc/nsswitch.conf",
      "passwd: files\n"
      "group: files\n"
      "shadow: files\n"
      "hosts: files dns\n"
      "networks: files\n"
      "protocols: files\n"
      "services: files\n" },
};

/*
 * Harmless files of the profile's /etc that programs need to work
 * (dynamic linker cache, alternatives symlinks, time zone, CA
 * certificates, protocol and service names), bound read-only.  Never
 * secrets: no shadow, passwd, ssl/private, ssh, machine-id.
 */
static const char  *vsb_rootfs_etc_binds[] = {
    "etc/ld.so.cache",
    "etc/alternatives",
    "etc/localtime",
    "etc/ssl/certs",
    "etc/ca-certificates.conf",
    "etc/protocols",
    "etc/services",
    "etc/mime.types",
};

/* /proc entries with host-wide information or kernel control */
static const char  *vsb_rootfs_proc_null[] = {
    "proc/kcore", "proc/keys", "proc/key-users", "proc/timer_list",
    "proc/timer_stats", "proc/sched_debug", "proc/latency_stats",
    "proc/kallsyms", "proc/kmsg", "proc/kpagecount", "proc/kpageflags",
    "proc/kpagecgroup", "proc/vmallocinfo", "proc/pagetypeinfo",
    "proc/slabinfo", "proc/config.gz",
};

static const char  *vsb_rootfs_proc_empty[] = {
    "proc/acpi", "proc/asound", "proc/scsi", "proc/driver", "proc/tty",
};

static const char  *vsb_rootfs_proc_ro[] = {
    "proc/sys", "proc/bus", "proc/fs", "proc/irq", "proc/sysrq-trigger",
};

static const char  *vsb_rootfs_devices[] = {
    "null", "zero", "full", "random", "urandom", "tty",
};


static int vsb_rootfs_open_in(const char *root, const char *path, int flags);
static int vsb_rootfs_bind_ro(const char *src, const char *dst, int rec,
    char *err, size_t errlen);
static int vsb_rootfs_setattr(const char *path, uint64_t set, int rec,
    char *err, size_t errlen);
static int vsb_rootfs_proc(char *err, size_t errlen);
static int vsb_rootfs_dev(char *err, size_t errlen);


/* Opens path below root with symlinks resolved inside root, so a
 * profile's absolute symlink cannot reach the host. */
static int
vsb_rootfs_open_in(const char *root, const char *path, int flags)
{
    int              rfd, fd, saved;

    rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rfd == -1) {
        return -1;
    }

    fd = vsb_openat2(rfd, path, (uint64_t) flags, 0,
                     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    saved = errno;
    close(rfd);
    errno = saved;

    return fd;
}


/* ---- create time, in the helper ---- */

static int
vsb_rootfs_write_file(int rfd, const char *path, const char *content,
    uid_t uid, char *err, size_t errlen)
{
    int      fd;
    size_t   len;
    ssize_t  n;

    fd = openat(rfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW
                | O_CLOEXEC, 0644);
    if (fd == -1) {
        snprintf(err, errlen, "rootfs: create %s: %s", path, strerror(errno));
        return -1;
    }

    len = strlen(content);
    n = write(fd, content, len);
    if (n != (ssize_t) len) {
        snprintf(err, errlen, "rootfs: write %s: %s", path,
                 n == -1 ? strerror(errno) : "short write");
        close(fd);
        return -1;
    }

    if (fchown(fd, uid, uid) != 0 || fchmod(fd, 0644) != 0) {
        snprintf(err, errlen, "rootfs: chown %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }

    if (close(fd) != 0) {
        snprintf(err, errlen, "rootfs: close %s: %s", path, strerror(errno));
        return -1;
    }

    return 0;
}


static int
vsb_rootfs_placeholder(int rfd, const vsb_sandbox_t *sb, const char *path,
    char *err, size_t errlen)
{
    int          fd;
    uid_t        root;
    struct stat  st;

    root = vsb_sandbox_host_uid(sb, 0);

    fd = vsb_rootfs_open_in(sb->profile->root, path, O_PATH);
    if (fd == -1) {
        return 0;               /* the profile does not have it */
    }

    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "rootfs: stat %s/%s: %s", sb->profile->root,
                 path, strerror(errno));
        close(fd);
        return -1;
    }

    close(fd);

    if (S_ISDIR(st.st_mode)) {
        if (mkdirat(rfd, path, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "rootfs: mkdir %s: %s", path,
                     strerror(errno));
            return -1;
        }

        if (fchownat(rfd, path, root, root, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(err, errlen, "rootfs: chown %s: %s", path,
                     strerror(errno));
            return -1;
        }

        return 0;
    }

    if (!S_ISREG(st.st_mode)) {
        return 0;
    }

    return vsb_rootfs_write_file(rfd, path, "", root, err, errlen);
}


const char *
vsb_rootfs_etc_content(const char *path)
{
    size_t  i;

    for (i = 0; i < sizeof(vsb_rootfs_files) / sizeof(vsb_rootfs_files[0]);
         i++)
    {
        if (strcmp(vsb_rootfs_files[i].path, path) == 0) {
            return vsb_rootfs_files[i].content;
        }
    }

    return NULL;
}


int
vsb_rootfs_prepare(vsb_sandbox_t *sb, char *err, size_t errlen)
{
    int          rfd, fd;
    char         path[PATH_MAX], target[32];
    size_t       i;
    uid_t        uid;

    if (vsb_profile_is_image(sb->profile)) {
        return vsb_rootfs_prepare_image(sb, err, errlen);
    }

    if ((size_t) snprintf(path, sizeof(path), "%s/root", sb->dir)
        >= sizeof(path))
    {
        snprintf(err, errlen, "rootfs: path too long: %s", sb->dir);
        return -1;
    }

    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "rootfs: mkdir %s: %s", path, strerror(errno));
        return -1;
    }

    rfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd == -1) {
        snprintf(err, errlen, "rootfs: open %s: %s", path, strerror(errno));
        return -1;
    }

    uid = vsb_sandbox_host_uid(sb, 0);

    if (fchown(rfd, uid, uid) != 0 || fchmod(rfd, 0755) != 0) {
        snprintf(err, errlen, "rootfs: chown %s: %s", path, strerror(errno));
        goto failed;
    }

    for (i = 0; i < sizeof(vsb_rootfs_dirs) / sizeof(vsb_rootfs_dirs[0]);
         i++)
    {
        const vsb_rootfs_dir_t  *d = &vsb_rootfs_dirs[i];

        uid = vsb_sandbox_host_uid(sb, d->uid);

        if (mkdirat(rfd, d->path, d->mode) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "rootfs: mkdir %s: %s", d->path,
                     strerror(errno));
            goto failed;
        }

        /* mkdir applies the umask; sticky bits need an explicit chmod */
        if (fchownat(rfd, d->path, uid, uid, AT_SYMLINK_NOFOLLOW) != 0
            || fchmodat(rfd, d->path, d->mode, 0) != 0)
        {
            snprintf(err, errlen, "rootfs: chown %s: %s", d->path,
                     strerror(errno));
            goto failed;
        }
    }

    uid = vsb_sandbox_host_uid(sb, 0);

    for (i = 0; i < sizeof(vsb_rootfs_links) / sizeof(vsb_rootfs_links[0]);
         i++)
    {
        snprintf(target, sizeof(target), "usr/%s", vsb_rootfs_links[i]);

        fd = vsb_rootfs_open_in(sb->profile->root, target,
                                O_PATH | O_DIRECTORY);
        if (fd == -1) {
            continue;
        }

        close(fd);

        if (symlinkat(target, rfd, vsb_rootfs_links[i]) != 0
            && errno != EEXIST)
        {
            snprintf(err, errlen, "rootfs: symlink %s: %s",
                     vsb_rootfs_links[i], strerror(errno));
            goto failed;
        }

        if (fchownat(rfd, vsb_rootfs_links[i], uid, uid, AT_SYMLINK_NOFOLLOW)
            != 0)
        {
            snprintf(err, errlen, "rootfs: chown %s: %s",
                     vsb_rootfs_links[i], strerror(errno));
            goto failed;
        }
    }

    for (i = 0; i < sizeof(vsb_rootfs_files) / sizeof(vsb_rootfs_files[0]);
         i++)
    {
        if (vsb_rootfs_write_file(rfd, vsb_rootfs_files[i].path,
                                  vsb_rootfs_files[i].content, uid,
                                  err, errlen) != 0)
        {
            goto failed;
        }
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_etc_binds) / sizeof(vsb_rootfs_etc_binds[0]);
         i++)
    {
        if (vsb_rootfs_placeholder(rfd, sb, vsb_rootfs_etc_binds[i],
                                   err, errlen) != 0)
        {
            goto failed;
        }
    }

    close(rfd);
    return 0;

failed:

    close(rfd);
    return -1;
}


/* ---- per exec, in the init's namespaces; cwd is the new root ---- */

static int
vsb_rootfs_setattr(const char *path, uint64_t set, int rec, char *err,
    size_t errlen)
{
    struct statvfs     sv;
    struct mount_attr  attr;
    unsigned long      flags;

    memset(&attr, 0, sizeof(attr));
    attr.attr_set = set;

    if (mount_setattr(AT_FDCWD, path, rec ? AT_RECURSIVE : 0, &attr,
                      sizeof(attr)) == 0)
    {
        return 0;
    }

    if (errno != ENOSYS) {
        snprintf(err, errlen, "rootfs: set attributes of %s: %s", path,
                 strerror(errno));
        return -1;
    }

    /* before 5.12: a bind remount must repeat every locked flag */
    if (statvfs(path, &sv) != 0) {
        snprintf(err, errlen, "rootfs: statvfs %s: %s", path,
                 strerror(errno));
        return -1;
    }

    flags = MS_BIND | MS_REMOUNT;
    flags |= (sv.f_flag & ST_RDONLY) ? MS_RDONLY : 0;
    flags |= (sv.f_flag & ST_NOSUID) ? MS_NOSUID : 0;
    flags |= (sv.f_flag & ST_NODEV) ? MS_NODEV : 0;
    flags |= (sv.f_flag & ST_NOEXEC) ? MS_NOEXEC : 0;
    flags |= (sv.f_flag & ST_NOATIME) ? MS_NOATIME : 0;
    flags |= (sv.f_flag & ST_NODIRATIME) ? MS_NODIRATIME : 0;
    flags |= (sv.f_flag & ST_RELATIME) ? MS_RELATIME : 0;
    flags |= (set & MOUNT_ATTR_RDONLY) ? MS_RDONLY : 0;
    flags |= (set & MOUNT_ATTR_NOSUID) ? MS_NOSUID : 0;
    flags |= (set & MOUNT_ATTR_NODEV) ? MS_NODEV : 0;
    flags |= (set & MOUNT_ATTR_NOEXEC) ? MS_NOEXEC : 0;

    if (mount(NULL, path, NULL, flags, NULL) != 0) {
        snprintf(err, errlen, "rootfs: remount %s: %s", path,
                 strerror(errno));
        return -1;
    }

    return 0;
}


static int
vsb_rootfs_bind_ro(const char *src, const char *dst, int rec, char *err,
    size_t errlen)
{
    if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) != 0) {
        snprintf(err, errlen, "rootfs: bind %s onto %s: %s", src, dst,
                 strerror(errno));
        return -1;
    }

    return vsb_rootfs_setattr(dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID
                              | MOUNT_ATTR_NODEV, rec, err, errlen);
}


static int
vsb_rootfs_proc(char *err, size_t errlen)
{
    size_t       i;
    struct stat  st;

    if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) != 0)
    {
        snprintf(err, errlen, "rootfs: mount proc: %s", strerror(errno));
        return -1;
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_proc_null) / sizeof(vsb_rootfs_proc_null[0]);
         i++)
    {
        if (lstat(vsb_rootfs_proc_null[i], &st) != 0) {
            continue;
        }

        if (mount("/dev/null", vsb_rootfs_proc_null[i], NULL, MS_BIND, NULL)
            != 0)
        {
            snprintf(err, errlen, "rootfs: mask %s: %s",
                     vsb_rootfs_proc_null[i], strerror(errno));
            return -1;
        }

        /* the mask must not become a writable, suid-capable mount */
        if (vsb_rootfs_setattr(vsb_rootfs_proc_null[i], MOUNT_ATTR_RDONLY
                               | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0,
                               err, errlen) != 0)
        {
            return -1;
        }
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_proc_empty) / sizeof(vsb_rootfs_proc_empty[0]);
         i++)
    {
        if (lstat(vsb_rootfs_proc_empty[i], &st) != 0) {
            continue;
        }

        if (mount("tmpfs", vsb_rootfs_proc_empty[i], "tmpfs",
                  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  VSB_ROOTFS_MASK_OPTS) != 0)
        {
            snprintf(err, errlen, "rootfs: mask %s: %s",
                     vsb_rootfs_proc_empty[i], strerror(errno));
            return -1;
        }
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_proc_ro) / sizeof(vsb_rootfs_proc_ro[0]);
         i++)
    {
        if (lstat(vsb_rootfs_proc_ro[i], &st) != 0) {
            continue;
        }

        if (vsb_rootfs_bind_ro(vsb_rootfs_proc_ro[i], vsb_rootfs_proc_ro[i],
                               1, err, errlen) != 0)
        {
            return -1;
        }
    }

    return 0;
}


static int
vsb_rootfs_dev(char *err, size_t errlen)
{
    int     fd;
    char    dst[32], src[32];
    size_t  i;

    if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
              VSB_ROOTFS_DEV_OPTS) != 0)
    {
        snprintf(err, errlen, "rootfs: mount tmpfs on /dev: %s",
                 strerror(errno));
        return -1;
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_devices) / sizeof(vsb_rootfs_devices[0]);
         i++)
    {
        snprintf(dst, sizeof(dst), "dev/%s", vsb_rootfs_devices[i]);
        snprintf(src, sizeof(src), "/dev/%s", vsb_rootfs_devices[i]);

        fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd == -1) {
            snprintf(err, errlen, "rootfs: create %s: %s", dst,
                     strerror(errno));
            return -1;
        }

        close(fd);

        if (mount(src, dst, NULL, MS_BIND, NULL) != 0) {
            snprintf(err, errlen, "rootfs: bind %s onto %s: %s", src, dst,
                     strerror(errno));
            return -1;
        }

        if (vsb_rootfs_setattr(dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0,
                               err, errlen) != 0)
        {
            return -1;
        }
    }

    if (symlink("/proc/self/fd", "dev/fd") != 0
        || symlink("/proc/self/fd/0", "dev/stdin") != 0
        || symlink("/proc/self/fd/1", "dev/stdout") != 0
        || symlink("/proc/self/fd/2", "dev/stderr") != 0
        || symlink("pts/ptmx", "dev/ptmx") != 0)
    {
        snprintf(err, errlen, "rootfs: symlinks in /dev: %s",
                 strerror(errno));
        return -1;
    }

    if (mkdir("dev/shm", 01777) != 0 || mkdir("dev/pts", 0755) != 0) {
        snprintf(err, errlen, "rootfs: mkdir in /dev: %s", strerror(errno));
        return -1;
    }

    if (mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              VSB_ROOTFS_SHM_OPTS) != 0)
    {
        snprintf(err, errlen, "rootfs: mount tmpfs on /dev/shm: %s",
                 strerror(errno));
        return -1;
    }

    if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              VSB_ROOTFS_PTS_OPTS) != 0)
    {
        snprintf(err, errlen, "rootfs: mount devpts on /dev/pts: %s",
                 strerror(errno));
        return -1;
    }

    /* the nodes are in place; nothing else may appear in /dev */
    return vsb_rootfs_setattr("dev", MOUNT_ATTR_RDONLY, 0, err, errlen);
}


/* A directory profile's usr/ and harmless /etc files, read-only; cwd is
 * the new root.  An image root has its own. */
static int
vsb_rootfs_host_binds(const vsb_sandbox_t *sb, char *err, size_t errlen)
{
    int          fd;
    char         usr[PATH_MAX], fdpath[32];
    size_t       i;
    struct stat  st;

    if ((size_t) snprintf(usr, sizeof(usr), "%s/usr", sb->profile->root)
        >= sizeof(usr))
    {
        snprintf(err, errlen, "rootfs: path too long");
        return -1;
    }

    if (vsb_rootfs_bind_ro(usr, "usr", 1, err, errlen) != 0) {
        return -1;
    }

    for (i = 0;
         i < sizeof(vsb_rootfs_etc_binds) / sizeof(vsb_rootfs_etc_binds[0]);
         i++)
    {
        if (lstat(vsb_rootfs_etc_binds[i], &st) != 0
            || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
        {
            continue;           /* no placeholder: not in the profile */
        }

        fd = vsb_rootfs_open_in(sb->profile->root, vsb_rootfs_etc_binds[i],
                                O_PATH);
        if (fd == -1) {
            continue;           /* gone from the profile since create */
        }

        snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);

        if (vsb_rootfs_bind_ro(fdpath, vsb_rootfs_etc_binds[i],
                               S_ISDIR(st.st_mode), err, errlen) != 0)
        {
            close(fd);
            return -1;
        }

        close(fd);
    }

    return 0;
}


int
vsb_rootfs_enter(const vsb_sandbox_t *sb, char *err, size_t errlen)
{
    char         root[PATH_MAX];

    if ((size_t) snprintf(root, sizeof(root), "%s/root", sb->dir)
        >= sizeof(root))
    {
        snprintf(err, errlen, "rootfs: path too long");
        return -1;
    }

    /* nothing we mount may propagate back to the host */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(err, errlen, "rootfs: make / private: %s", strerror(errno));
        return -1;
    }

    /* pivot_root needs the new root to be a mount point */
    if (mount(root, root, NULL, MS_BIND, NULL) != 0) {
        snprintf(err, errlen, "rootfs: bind %s onto itself: %s", root,
                 strerror(errno));
        return -1;
    }

    if (chdir(root) != 0) {
        snprintf(err, errlen, "rootfs: chdir %s: %s", root, strerror(errno));
        return -1;
    }

    if (!vsb_profile_is_image(sb->profile)
        && vsb_rootfs_host_binds(sb, err, errlen) != 0)
    {
        return -1;
    }

    if (vsb_rootfs_proc(err, errlen) != 0) {
        return -1;
    }

    if (vsb_rootfs_dev(err, errlen) != 0) {
        return -1;
    }

    if (syscall(SYS_pivot_root, ".", ".") != 0) {
        snprintf(err, errlen, "rootfs: pivot_root into %s: %s", root,
                 strerror(errno));
        return -1;
    }

    /* the old root is stacked on the new one; detach it and every host
     * mount with it */
    if (umount2(".", MNT_DETACH) != 0) {
        snprintf(err, errlen, "rootfs: detach old root: %s", strerror(errno));
        return -1;
    }

    if (chdir("/") != 0) {
        snprintf(err, errlen, "rootfs: chdir /: %s", strerror(errno));
        return -1;
    }

    return 0;
}
