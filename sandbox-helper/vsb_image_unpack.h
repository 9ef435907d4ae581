/*
 * The unpacking child and its confinement.
 *
 * vsb_image_unpack_confined() runs in the privileged process: it clones
 * a child into new user, mount, pid, network, ipc, uts and cgroup
 * namespaces, maps one unprivileged host uid as the child's root, and
 * serves the child's requests for blobs of a layout directory (by digest
 * only, opened beneath the layout, never following a symlink).  The
 * child pivots into the staging directory, drops every capability, sets
 * no_new_privs and rlimits, loads a seccomp allowlist, and only then
 * reads a byte of the image (vsb_image_unpack_run()).  A deadline kills
 * it; being pid 1 of its pid namespace, nothing it started survives it.
 *
 * Inside the child "/" is the staging directory:
 *
 *   /rootfs       the tree, every file owned by the child
 *   /owners       vsb_owner_rec_t records (owner and mode per inode)
 *   /meta.json    what the child read: digests, config, tools, stats
 *   /layout/      the OCI layout of a tarball source, extracted
 */
#ifndef VSB_IMAGE_UNPACK_H
#define VSB_IMAGE_UNPACK_H

#include <stddef.h>
#include <sys/types.h>

#include "vsb_image.h"

typedef struct {
    const char                *staging;    /* absolute path, exists */
    uid_t                      uid;        /* the child's host uid */
    int                        tar_fd;     /* tarball source, or -1 */
    int                        layout_fd;  /* layout directory, or -1 */
    const char                *digest;     /* sha256:... */
    const vsb_image_limits_t  *lim;
} vsb_unpack_args_t;

int vsb_image_unpack_confined(const vsb_unpack_args_t *a, char *err,
    size_t errlen);

/* What must not be a symlink in an image's tree, NULL-terminated: the
 * sandbox mounts on or binds over them.  The unpack refuses such a
 * symlink; the store checks an adopted tree for them again, as root. */
extern const char *const  vsb_image_no_symlink[];

/*
 * In the confined child, "/" being the staging directory: fetches blobs
 * through get_blob (fd 3 is the broker socket, or -1 with a local
 * /layout), verifies every digest, unpacks, writes /owners and
 * /meta.json.  Returns 0 or -1 with err.
 */
int vsb_image_unpack_run(int broker_fd, int tar_fd, const char *digest,
    const vsb_image_limits_t *lim, char *err, size_t errlen);

#endif
