/*
 * The writable root of a sandbox whose profile is an image:
 *
 *   state_dir/sb/<id>/        the sandbox's tmpfs of disk_mb (storage.c)
 *     upper/  work/           the overlay's upper and work directories
 *     root/                   overlay: the image's tree underneath,
 *                             upper/ on top; becomes the sandbox's "/"
 *
 * The image's tree (in the store, with the image's own uids 0-65535) is
 * cloned as an idmapped mount (image uid N is the sandbox's uid N, host
 * uid host_uid + N), read-only, nosuid, nodev; overlayfs takes a private
 * clone of it as its lower layer, so the only mount left in the helper's
 * namespace is the overlay itself.  Writes copy up into upper/, on the
 * tmpfs, so disk_mb caps them and no two sandboxes see each other's.
 * The image stays held (vsb_image_acquire(): a shared lock the store's
 * removal respects) until the sandbox is freed.
 */
#ifndef VSB_OVERLAY_H
#define VSB_OVERLAY_H

#include <stddef.h>
#include <sys/types.h>

#include "vsb_request.h"
#include "vsb_sandbox.h"

/*
 * Create time, after vsb_storage_create(): holds the image and mounts the
 * overlay at sb->dir/root.  On failure e says why (profile_unavailable
 * when the image is not in the store) and sb may hold the image and
 * mounts still: vsb_storage_delete() unmounts, vsb_overlay_free()
 * releases, as for any failed create.
 */
int vsb_overlay_create(vsb_sandbox_t *sb, vsb_error_t *e);

/*
 * Unmounts the overlay (and a lower layer a failed create left attached)
 * below a sandbox's directory, never lazily, and verifies both are gone;
 * a no-op for directory profiles.  storage.c calls it before it unmounts
 * the tmpfs (destroy, failed creates, stale directories at start).
 */
int vsb_overlay_unmount(const char *dir, char *err, size_t errlen);

/* The held image's tree (its rootfs in the store), NULL when none. */
const char *vsb_overlay_image_root(const vsb_sandbox_t *sb);

/* Releases the image; called when the sandbox is freed. */
void vsb_overlay_free(vsb_sandbox_t *sb);

/*
 * At start, when image profiles exist: an idmapped clone of dir (the
 * store) can be made, i.e. its file system and kernel support idmapped
 * mounts.  -1 with err otherwise.
 */
int vsb_overlay_probe(const char *dir, uid_t host_uid, char *err,
    size_t errlen);
/* The same for any tree (a snapshot store's): err is the bare reason. */
int vsb_overlay_probe_tree(const char *dir, uid_t host_uid, char *err,
    size_t errlen);

#endif
