/*
 * The sandbox's root filesystem.
 *
 * vsb_rootfs_prepare() runs in the helper at create time and lays out, in
 * the sandbox's tmpfs (sb->dir/root), the skeleton that becomes "/":
 *
 *   usr/            empty mount point: the profile's usr, read-only
 *   bin lib lib64 sbin   symlinks into usr (merged-/usr layout)
 *   etc/            generated: passwd, group, hosts, hostname,
 *                   resolv.conf, nsswitch.conf; plus read-only binds of
 *                   harmless host files (ld.so.cache, alternatives, ...)
 *   workspace/      owned by the workload user, the default cwd
 *   home/sandbox/   $HOME, owned by the workload user
 *   tmp/ var/tmp/   1777
 *   proc/ dev/      mount points
 *
 * vsb_rootfs_enter() runs inside a new user+mount namespace (the exec's
 * init, still with full capabilities in its user namespace): makes every
 * mount private, binds the skeleton, mounts the profile's usr read-only,
 * fresh /proc with sensitive files masked, a minimal /dev, then
 * pivot_root and detaches the old root.  On failure it returns -1 with
 * err naming the step and errno.
 */
#ifndef VSB_ROOTFS_H
#define VSB_ROOTFS_H

#include <stddef.h>

#include "vsb_sandbox.h"

int vsb_rootfs_prepare(vsb_sandbox_t *sb, char *err, size_t errlen);
int vsb_rootfs_enter(const vsb_sandbox_t *sb, char *err, size_t errlen);

/*
 * An image profile's root (rootfs_image.c): the overlay at sb->dir/root
 * is the image's own tree, so prepare only adds what the sandbox needs
 * on top (copied up into the sandbox's upper layer, never into the
 * image): /etc/hosts, hostname, resolv.conf, nsswitch.conf replaced,
 * the sandbox user appended to /etc/passwd and /etc/group, /workspace
 * and /home/sandbox owned by the workload user, /tmp and /var/tmp 1777.
 * Enter skips the directory profile's /usr and /etc binds.
 */
int vsb_rootfs_prepare_image(vsb_sandbox_t *sb, char *err, size_t errlen);

/* The content rootfs.c generates for etc/NAME ("etc/passwd", ...). */
const char *vsb_rootfs_etc_content(const char *path);

#endif
