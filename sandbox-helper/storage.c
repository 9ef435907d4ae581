/*
 * Per-sandbox storage: state_dir/sb/<id>, a tmpfs of disk_mb.  One tmpfs
 * holds the writable layer, /workspace and /tmp, so a single size limit
 * covers everything a workload can write.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "vsb_log.h"
#include "vsb_overlay.h"
#include "vsb_registry.h"
#include "vsb_request.h"
#include "vsb_rmtree.h"
#include "vsb_storage.h"

#define VSB_RM_MAX_DEPTH  64

/* At start, a stale sandbox whose tmpfs is busy: tried again this often,
 * this far apart (3 s in all). */
#define VSB_CLEANUP_BUSY_TRIES  150
#define VSB_CLEANUP_BUSY_MS     20

/*
 * Files per MiB of disk_mb: one inode per 4 KiB page, as many files as
 * the disk could hold if none were empty.  Every inode costs kernel
 * memory that "size=" does not count, and a million of them take seconds
 * to free at unmount; a tree of small files (node_modules, a git
 * checkout) still fits.  At least VSB_MIN_INODES.
 */
#define VSB_INODES_PER_MB 256
#define VSB_MIN_INODES    1024


/* Creates dir with mode if missing; an existing one must be a root-owned
 * directory nobody else can write, else a local user could plant links. */
static int
vsb_storage_mkdir(const char *dir, mode_t mode, char *err, size_t errlen)
{
    struct stat  st;

    if (mkdir(dir, mode) == -1 && errno != EEXIST) {
        snprintf(err, errlen, "mkdir(\"%s\"): %s", dir, strerror(errno));
        return -1;
    }

    if (lstat(dir, &st) == -1) {
        snprintf(err, errlen, "lstat(\"%s\"): %s", dir, strerror(errno));
        return -1;
    }

    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
        snprintf(err, errlen, "\"%s\" is not a root-owned directory "
                 "writable only by root", dir);
        return -1;
    }

    /* Workload user namespaces must traverse to their root: o+x only. */
    if ((st.st_mode & 0777) != mode && chmod(dir, mode) == -1) {
        snprintf(err, errlen, "chmod(\"%s\"): %s", dir, strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_storage_state_subdir(const char *name, mode_t mode, char *out,
    size_t len, char *err, size_t errlen)
{
    if (vsb_storage_mkdir(vsb_cf.state_dir, 0711, err, errlen) != 0) {
        return -1;
    }

    if ((size_t) snprintf(out, len, "%s/%s", vsb_cf.state_dir, name) >= len)
    {
        snprintf(err, errlen, "state_dir too long");
        return -1;
    }

    return vsb_storage_mkdir(out, mode, err, errlen);
}


static int
vsb_storage_base(char *base, size_t len, char *err, size_t errlen)
{
    return vsb_storage_state_subdir("sb", 0711, base, len, err, errlen);
}


/*
 * Every sandbox's init (an unprivileged host uid) resolves its root through
 * state_dir, so each ancestor must be searchable by "others".  Checked at
 * start so that a bad state_dir is a clear startup error, not a failure of
 * every exec.
 */
int
vsb_storage_init(char *err, size_t errlen)
{
    char         base[PATH_MAX], path[PATH_MAX];
    char        *slash;
    struct stat  st;

    if (vsb_storage_base(base, sizeof(base), err, errlen) != 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s", base);

    for ( ;; ) {
        if (stat(path, &st) == -1) {
            snprintf(err, errlen, "stat(\"%s\"): %s", path, strerror(errno));
            return -1;
        }

        if (!(st.st_mode & S_IXOTH)) {
            snprintf(err, errlen, "state_dir: \"%s\" has mode %04o: sandbox "
                     "users must be able to traverse it (chmod o+x, or pick "
                     "another state_dir)", path, (unsigned) (st.st_mode & 07777));
            return -1;
        }

        slash = strrchr(path, '/');
        if (slash == NULL || slash == path) {
            break;
        }
        *slash = '\0';
    }

    return 0;
}


int
vsb_storage_create(vsb_sandbox_t *sb, char *err, size_t errlen)
{
    char      base[PATH_MAX], opts[160];
    int       n;
    uint64_t  inodes;

    if (vsb_storage_base(base, sizeof(base), err, errlen) != 0) {
        return -1;
    }

    n = snprintf(sb->dir, sizeof(sb->dir), "%s/%s", base, sb->id);
    if (n < 0 || (size_t) n >= sizeof(sb->dir)) {
        snprintf(err, errlen, "sandbox directory path too long");
        return -1;
    }

    if (mkdir(sb->dir, 0700) == -1) {
        snprintf(err, errlen, "mkdir(\"%s\"): %s", sb->dir, strerror(errno));
        return -1;
    }

    inodes = sb->limits.disk_mb * VSB_INODES_PER_MB;
    if (inodes < VSB_MIN_INODES) {
        inodes = VSB_MIN_INODES;
    }

    snprintf(opts, sizeof(opts), "size=%llum,nr_inodes=%llu,mode=0700,"
             "uid=%u,gid=%u", (unsigned long long) sb->limits.disk_mb,
             (unsigned long long) inodes, (unsigned) sb->host_uid,
             (unsigned) sb->host_uid);

    if (mount("tmpfs", sb->dir, "tmpfs", MS_NODEV | MS_NOSUID, opts) == -1) {
        snprintf(err, errlen, "mount(tmpfs on \"%s\", %s): %s", sb->dir,
                 opts, strerror(errno));
        (void) rmdir(sb->dir);
        return -1;
    }

    vsb_log(VSB_LOG_DEBUG, "storage of %s: tmpfs %s on %s", sb->id, opts,
            sb->dir);
    return 0;
}


/* 1 if path is a mount point (its device differs from its parent's). */
static int
vsb_storage_is_mount(const char *path)
{
    char         parent[PATH_MAX + 4];
    struct stat  a, b;

    if (lstat(path, &a) == -1) {
        return errno == ENOENT ? 0 : -1;
    }

    snprintf(parent, sizeof(parent), "%s/..", path);
    if (lstat(parent, &b) == -1) {
        return -1;
    }

    return a.st_dev != b.st_dev;
}


/* Unmount (never lazily), remove, verify. */
static int
vsb_storage_remove(const char *dir, const char **step, char *err,
    size_t errlen)
{
    int  m, fd, i;

    /* An image profile's overlay root is mounted inside the tmpfs. */
    if (vsb_overlay_unmount(dir, err, errlen) != 0) {
        *step = "mounts";
        return -1;
    }

    /* Something may be stacked on our tmpfs: peel a few layers. */
    for (i = 0; i < 8; i++) {
        m = vsb_storage_is_mount(dir);
        if (m == -1) {
            *step = "mounts";
            snprintf(err, errlen, "stat(\"%s\"): %s", dir, strerror(errno));
            return -1;
        }

        if (m == 0) {
            break;
        }

        /*
         * Never MNT_DETACH: a lazy unmount succeeds while something still
         * holds the tmpfs open, and the files would live on after we had
         * reported them gone.  EBUSY is reported; destroy may be retried.
         */
        if (umount2(dir, UMOUNT_NOFOLLOW) == -1) {
            *step = "mounts";
            snprintf(err, errlen, "umount(\"%s\"): %s%s", dir,
                     strerror(errno), errno == EBUSY
                     ? " (a host process holds a file or directory there)"
                     : "");
            return -1;
        }
    }

    if (vsb_storage_is_mount(dir) != 0) {
        *step = "mounts";
        snprintf(err, errlen, "\"%s\" is still mounted", dir);
        return -1;
    }

    if (rmdir(dir) == -1 && errno != ENOENT) {
        if (errno != ENOTEMPTY && errno != EEXIST) {
            *step = "files";
            snprintf(err, errlen, "rmdir(\"%s\"): %s", dir, strerror(errno));
            return -1;
        }

        /* Not a tmpfs any more but something is inside: clear it. */
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd == -1 || vsb_rm_tree(fd, VSB_RM_MAX_DEPTH) != 0
            || rmdir(dir) == -1)
        {
            *step = "files";
            snprintf(err, errlen, "removing \"%s\": %s", dir,
                     strerror(errno));
            if (fd != -1) {
                close(fd);
            }
            return -1;
        }
        close(fd);
    }

    if (access(dir, F_OK) == 0 || errno != ENOENT) {
        *step = "files";
        snprintf(err, errlen, "\"%s\" still exists", dir);
        return -1;
    }

    return 0;
}


int
vsb_storage_delete(vsb_sandbox_t *sb, const char **step, char *err,
    size_t errlen)
{
    *step = NULL;

    if (sb->dir[0] == '\0') {
        return 0;
    }

    return vsb_storage_remove(sb->dir, step, err, errlen);
}


uint64_t
vsb_storage_used(const vsb_sandbox_t *sb)
{
    struct statfs  sf;

    if (statfs(sb->dir, &sf) == -1) {
        return 0;
    }

    return (uint64_t) (sf.f_blocks - sf.f_bfree) * (uint64_t) sf.f_bsize;
}


int
vsb_storage_cleanup_stale(void)
{
    char            base[PATH_MAX], dir[PATH_MAX + 300], err[512];
    const char     *step;
    DIR            *d;
    struct dirent  *de;
    int             removed = 0, failed = 0, tries, rc;
    struct timespec pause = { 0, VSB_CLEANUP_BUSY_MS * 1000000L };

    if (vsb_storage_base(base, sizeof(base), err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "storage cleanup: %s", err);
        return -1;
    }

    d = opendir(base);
    if (d == NULL) {
        vsb_log_errno(VSB_LOG_ERR, "opendir(\"%s\")", base);
        return -1;
    }

    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }

        snprintf(dir, sizeof(dir), "%s/%s", base, de->d_name);

        if (!vsb_req_id_ok(de->d_name)) {
            vsb_log(VSB_LOG_WARN, "storage cleanup: ignoring \"%s\"", dir);
            continue;
        }

        /* a child of the previous run (its teardown, a snapshot's
         * worker) may hold a file there while it dies of its parent's
         * death: its unmount is tried again for a while */
        for (tries = 0; ; tries++) {
            rc = vsb_storage_remove(dir, &step, err, sizeof(err));
            if (rc == 0 || strcmp(step, "mounts") != 0
                || tries >= VSB_CLEANUP_BUSY_TRIES)
            {
                break;
            }
            (void) nanosleep(&pause, NULL);
        }

        if (rc != 0) {
            vsb_log(VSB_LOG_ERR, "storage cleanup of %s failed (%s): %s",
                    de->d_name, step, err);
            failed++;
            continue;
        }

        if (tries > 0) {
            vsb_log(VSB_LOG_INFO, "storage cleanup of %s: busy for %d ms "
                    "(a process of the previous run ending)", de->d_name,
                    tries * VSB_CLEANUP_BUSY_MS);
        }

        vsb_log(VSB_LOG_INFO, "cleaned up stale sandbox %s", de->d_name);
        removed++;
    }

    closedir(d);
    return failed ? -1 : removed;
}
