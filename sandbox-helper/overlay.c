/*
 * The writable overlay root of an image profile's sandbox (vsb_overlay.h):
 * the image held, its tree cloned as an idmapped read-only mount, the
 * overlay mounted over the sandbox's tmpfs, and all of it undone.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_image_store.h"
#include "vsb_log.h"
#include "vsb_overlay.h"
#include "vsb_profile.h"
#include "vsb_snap_store.h"
#include "vsb_user.h"

/* Overlay options besides the layers: no index, no metacopy, no redirect
 * xattrs, so nothing the overlay finds in a layer can point it elsewhere
 * (the store keeps no xattrs either), whatever the kernel's defaults. */
#define VSB_OVERLAY_OPTS  "index=off,metacopy=off,redirect_dir=off"

struct vsb_overlay_s {
    vsb_image_ref_t  ref;
};


/*
 * A user namespace whose map is the sandbox's (inside 0-65535 = host
 * host_uid + 0-65535): what the idmapped mount is made with.  A child
 * holds it open while the helper writes its maps; the namespace outlives
 * the child through the descriptor returned.
 */
static int
vsb_overlay_userns(uid_t host_uid, char *err, size_t errlen)
{
    int        p[2], fd = -1, saved;
    char       byte, path[64];
    pid_t      pid;
    siginfo_t  si;

    if (pipe2(p, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe for the user namespace: %s",
                 strerror(errno));
        return -1;
    }

    /* no exit signal: the helper's reaping of other children skips it */
    pid = (pid_t) syscall(SYS_clone, CLONE_NEWUSER, NULL, NULL, NULL, NULL);
    if (pid == -1) {
        snprintf(err, errlen, "clone a user namespace: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }

    if (pid == 0) {
        close(p[1]);
        while (read(p[0], &byte, 1) == -1 && errno == EINTR) {
            /* void */
        }
        _exit(0);
    }

    close(p[0]);

    if (vsb_user_map(pid, host_uid, err, errlen) == 0) {
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd == -1) {
            snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        }
    }

    saved = errno;
    close(p[1]);                /* the child reads EOF and exits */

    while (waitid(P_PID, (id_t) pid, &si, WEXITED | __WALL) == -1
           && errno == EINTR)
    {
        /* void */
    }

    errno = saved;
    return fd;
}


/* An idmapped, read-only, nosuid, nodev clone of dir, not attached. */
static int
vsb_overlay_idmapped(const char *dir, int userns, char *err, size_t errlen)
{
    int                tree;
    struct mount_attr  attr;

    tree = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC
                     | AT_SYMLINK_NOFOLLOW);
    if (tree == -1) {
        snprintf(err, errlen, "clone the mount of %s: %s", dir,
                 strerror(errno));
        return -1;
    }

    memset(&attr, 0, sizeof(attr));
    attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID
                    | MOUNT_ATTR_NODEV;
    attr.userns_fd = (uint64_t) userns;

    if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
        snprintf(err, errlen, "idmapped mount of %s: %s%s", dir,
                 strerror(errno), errno == EINVAL || errno == ENOSYS
                 ? " (the kernel or this file system does not support "
                   "idmapped mounts)" : "");
        close(tree);
        return -1;
    }

    return tree;
}


int
vsb_overlay_probe_tree(const char *dir, uid_t host_uid, char *err,
    size_t errlen)
{
    int  userns, tree;

    userns = vsb_overlay_userns(host_uid, err, errlen);
    if (userns == -1) {
        return -1;
    }

    tree = vsb_overlay_idmapped(dir, userns, err, errlen);
    close(userns);

    if (tree == -1) {
        return -1;
    }

    close(tree);                /* a detached mount: gone with its fd */
    return 0;
}


int
vsb_overlay_probe(const char *dir, uid_t host_uid, char *err, size_t errlen)
{
    char  why[256];

    if (vsb_overlay_probe_tree(dir, host_uid, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "image profiles need idmapped mounts "
                 "(Linux 5.19 or later, a file system that supports them "
                 "for the image store, e.g. ext4, xfs, btrfs): %s", why);
        return -1;
    }

    return 0;
}


/* 1: path is a mount point, 0: it is not (or does not exist), -1. */
static int
vsb_overlay_is_mount(const char *path)
{
    char          parent[PATH_MAX + 4];
    struct stat   a, b;
    struct statx  sx;

    if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_INO, &sx) == -1) {
        return errno == ENOENT ? 0 : -1;
    }

    if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) {
        return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
    }

    /* before Linux 5.8: another device than the parent's */
    snprintf(parent, sizeof(parent), "%s/..", path);
    if (lstat(path, &a) == -1 || lstat(parent, &b) == -1) {
        return -1;
    }

    return a.st_dev != b.st_dev;
}


static int
vsb_overlay_umount(const char *path, char *err, size_t errlen)
{
    int  m;

    m = vsb_overlay_is_mount(path);
    if (m == 0) {
        return 0;
    }

    /* never MNT_DETACH: a lazy unmount would hide a busy overlay whose
     * upper layer then outlives the sandbox */
    if (m == 1 && umount2(path, UMOUNT_NOFOLLOW) != 0) {
        snprintf(err, errlen, "umount(\"%.300s\"): %s%s", path, strerror(errno),
                 errno == EBUSY ? " (a host process holds a file or "
                 "directory there)" : "");
        return -1;
    }

    if (vsb_overlay_is_mount(path) != 0) {
        snprintf(err, errlen, "\"%.300s\" is still mounted (or cannot be "
                 "checked: %s)", path, strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_overlay_unmount(const char *dir, char *err, size_t errlen)
{
    char  path[PATH_MAX + 16];

    snprintf(path, sizeof(path), "%s/root", dir);
    if (vsb_overlay_umount(path, err, errlen) != 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/lower", dir);
    if (vsb_overlay_umount(path, err, errlen) != 0) {
        return -1;
    }

    snprintf(path, sizeof(path), "%s/snap", dir);
    return vsb_overlay_umount(path, err, errlen);
}


static int
vsb_overlay_mkdir(int dfd, const char *name, mode_t mode, uid_t uid,
    char *err, size_t errlen)
{
    int  fd;

    if (mkdirat(dfd, name, mode) != 0) {
        snprintf(err, errlen, "mkdir %s: %s", name, strerror(errno));
        return -1;
    }

    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1 || fchown(fd, uid, uid) != 0 || fchmod(fd, mode) != 0) {
        snprintf(err, errlen, "chown %s: %s", name, strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        return -1;
    }

    return fd;
}


/* The idmapped tree of dir attached at dfd/name, and an O_PATH
 * descriptor of it in *fd. */
static int
vsb_overlay_attach(int dfd, const char *name, const char *dir, int userns,
    int *fd, char *err, size_t errlen)
{
    int  tree, m;

    tree = vsb_overlay_idmapped(dir, userns, err, errlen);
    if (tree == -1) {
        return -1;
    }

    m = vsb_overlay_mkdir(dfd, name, 0700, 0, err, errlen);
    if (m == -1) {
        close(tree);
        return -1;
    }
    close(m);

    if (move_mount(tree, "", dfd, name, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
        snprintf(err, errlen, "attach %.300s at %s: %s", dir, name,
                 strerror(errno));
        close(tree);
        return -1;
    }
    close(tree);

    *fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd == -1) {
        snprintf(err, errlen, "open %s: %s", name, strerror(errno));
        return -1;
    }

    return 0;
}


/* Unmounts and removes dir/name, a lower layer's attachment point. */
static int
vsb_overlay_detach(vsb_sandbox_t *sb, int dfd, const char *name, char *err,
    size_t errlen)
{
    char  path[PATH_MAX + 16];

    snprintf(path, sizeof(path), "%s/%s", sb->dir, name);
    if (vsb_overlay_umount(path, err, errlen) != 0) {
        return -1;
    }

    if (unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "rmdir %.300s: %s", path, strerror(errno));
        return -1;
    }

    return 0;
}


/*
 * The mounts: each lower layer's idmapped tree attached (lower/: the
 * image, snap/: the snapshot a fork is made of) only for overlayfs to
 * resolve and clone it, the overlay at root/, the attachments unmounted
 * again.  The snapshot's tree lies over the image (lowerdir is listed
 * top first).  Layers are named as /proc/self/fd/N, so no path in the
 * options needs escaping, whatever state_dir is.
 */
static int
vsb_overlay_mount(vsb_sandbox_t *sb, int dfd, const char *image,
    const char *snap, char *err, size_t errlen)
{
    int     userns, lower = -1, slower = -1, upper = -1, work = -1;
    int     root = -1, rc = -1;
    char    opts[320], lowers[96], target[64], why[512];

    userns = vsb_overlay_userns(sb->host_uid, err, errlen);
    if (userns == -1) {
        return -1;
    }

    /* the overlay root takes upper/'s owner and mode: the sandbox's root */
    upper = vsb_overlay_mkdir(dfd, "upper", 0755, sb->host_uid, err, errlen);
    work = upper == -1 ? -1
           : vsb_overlay_mkdir(dfd, "work", 0700, 0, err, errlen);
    root = work == -1 ? -1
           : vsb_overlay_mkdir(dfd, "root", 0755, sb->host_uid, err, errlen);
    if (root == -1) {
        goto done;
    }

    if ((image != NULL && vsb_overlay_attach(dfd, "lower", image, userns,
                                             &lower, err, errlen) != 0)
        || (snap != NULL && vsb_overlay_attach(dfd, "snap", snap, userns,
                                               &slower, err, errlen) != 0))
    {
        goto done;
    }

    if (slower != -1 && lower != -1) {
        snprintf(lowers, sizeof(lowers), "/proc/self/fd/%d:/proc/self/fd/%d",
                 slower, lower);
    } else {
        snprintf(lowers, sizeof(lowers), "/proc/self/fd/%d",
                 slower != -1 ? slower : lower);
    }

    snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=/proc/self/fd/%d,"
             "workdir=/proc/self/fd/%d,%s", lowers, upper, work,
             VSB_OVERLAY_OPTS);
    snprintf(target, sizeof(target), "/proc/self/fd/%d", root);

    if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts)
        != 0)
    {
        snprintf(err, errlen, "mount overlay on %.300s/root: %s%s", sb->dir,
                 strerror(errno), errno == ENODEV ? " (no overlay file "
                 "system in this kernel: modprobe overlay)" : "");
        goto done;
    }

    rc = 0;

done:

    close(userns);
    if (lower != -1) {
        close(lower);
    }
    if (slower != -1) {
        close(slower);
    }
    if (upper != -1) {
        close(upper);
    }
    if (work != -1) {
        close(work);
    }
    if (root != -1) {
        close(root);
    }

    /* the overlay holds its own clones; ours go (they must, to leave
     * exactly one mount to confirm at destroy) */
    if (vsb_overlay_detach(sb, dfd, "lower", rc == 0 ? err : why,
                           rc == 0 ? errlen : sizeof(why)) != 0
        || vsb_overlay_detach(sb, dfd, "snap", rc == 0 ? err : why,
                              rc == 0 ? errlen : sizeof(why)) != 0)
    {
        return -1;
    }

    return rc;
}


int
vsb_overlay_create(vsb_sandbox_t *sb, vsb_error_t *e)
{
    const vsb_image_store_t  *store;
    char                      err[512], snap[PATH_MAX];
    int                       dfd, rc;

    if (!vsb_profile_is_image(sb->profile) && sb->from_snap == NULL) {
        return 0;
    }

    if (sb->from_snap != NULL
        && vsb_snap_path(sb->from_snap, "tree", snap, sizeof(snap)) != 0)
    {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "snapshot path too "
                             "long");
    }

    if (vsb_profile_is_image(sb->profile)) {
        store = vsb_profiles_store();
        if (store == NULL) {
            return vsb_error_set(e, VSB_E_INTERNAL, "profile", "profile "
                                 "\"%s\": the image store is not open",
                                 sb->profile->name);
        }

        if (vsb_profile_env(sb, e) != 0) {
            return -1;
        }

        sb->overlay = calloc(1, sizeof(*sb->overlay));
        if (sb->overlay == NULL) {
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        }

        if (vsb_image_acquire(store, sb->profile->digest, &sb->overlay->ref,
                              err, sizeof(err)) != 0)
        {
            return vsb_error_set(e, VSB_E_PROFILE_UNAVAILABLE, "profile",
                                 "profile \"%s\": %s; the operator must "
                                 "import it again (sandbox-imagectl import)",
                                 sb->profile->name, err);
        }
    }

    dfd = open(sb->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd == -1) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "open %.300s: %s",
                             sb->dir, strerror(errno));
    }

    /* nothing mounted below the sandbox's tmpfs propagates anywhere */
    if (mount(NULL, sb->dir, NULL, MS_PRIVATE, NULL) != 0) {
        close(dfd);
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "make %.300s private: "
                             "%s", sb->dir, strerror(errno));
    }

    rc = vsb_overlay_mount(sb, dfd,
                           sb->overlay ? sb->overlay->ref.rootfs : NULL,
                           sb->from_snap ? snap : NULL, err, sizeof(err));
    close(dfd);

    if (rc != 0) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "overlay root: %s",
                             err);
    }

    vsb_log(VSB_LOG_DEBUG, "sandbox %s: overlay root on %s/root over %s%s%s",
            sb->id, sb->dir, sb->from_snap ? sb->from_snap->id : "",
            sb->from_snap && sb->overlay ? " over " : "",
            sb->overlay ? sb->profile->digest : "");
    return 0;
}


const char *
vsb_overlay_image_root(const vsb_sandbox_t *sb)
{
    return sb->overlay != NULL ? sb->overlay->ref.rootfs : NULL;
}


void
vsb_overlay_free(vsb_sandbox_t *sb)
{
    if (sb->overlay == NULL) {
        return;
    }

    vsb_image_release(&sb->overlay->ref);
    free(sb->overlay);
    sb->overlay = NULL;
}
