/*
 * The image store, owned by the helper and keyed by digest.
 *
 *   <store>/                 root 0700 (default state_dir/images)
 *     .lock                  flock: one import or removal at a time
 *     staging/               unpacks in progress, removals in progress
 *     sha256/<hex>/          one image, renamed into place when complete
 *       image.json           digests, config, tools, what was neutralised
 *       rootfs/              the tree: read-only lower layer of a sandbox
 *
 * Import (operator, root): the image is unpacked by a confined child
 * (vsb_image_unpack.h) into staging/, then adopted here: every inode is
 * given the owner and mode its layer asked for (setuid/setgid never),
 * anything but directories, regular files and symlinks is refused, and
 * the tree is renamed into place.
 *
 * The seam for the helper (profiles, overlay roots; docs/images.md):
 * vsb_image_acquire() finds an image by digest and holds a shared lock
 * on it for a sandbox's life; vsb_image_remove() refuses an image that
 * is held; vsb_image_list() and vsb_image_meta() feed discovery.
 */
#ifndef VSB_IMAGE_STORE_H
#define VSB_IMAGE_STORE_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "vsb_image.h"

#define VSB_IMAGE_DESC_MAX  256

typedef struct {
    char   dir[2048];              /* the store's root */
    uid_t  unpack_uid;             /* the unpacking child's host uid */
} vsb_image_store_t;

typedef struct {
    const char          *source;       /* OCI layout dir or tarball */
    const char          *digest;       /* sha256:... */
    const char          *description;  /* may be NULL */
    vsb_image_limits_t   lim;
} vsb_image_import_t;

typedef struct {
    char   digest[VSB_IMAGE_DIGEST_LEN + 1];
    char   rootfs[PATH_MAX];       /* overlay lowerdir */
    int    fd;                     /* the image directory; LOCK_SH */
} vsb_image_ref_t;

/* Creates (or checks) the store's directories: root-owned, 0700. */
int vsb_image_store_init(vsb_image_store_t *s, const char *dir,
    uid_t unpack_uid, char *err, size_t errlen);

/* 0 imported, 1 already in the store, -1 refused or failed (err says
 * why, and nothing of it is left in the store).  *meta: image.json. */
int vsb_image_import(vsb_image_store_t *s, const vsb_image_import_t *req,
    json_t **meta, char *err, size_t errlen);

/* Holds an image for a sandbox: 0, or -1 with err (not in the store,
 * being removed).  Never blocks. */
int vsb_image_acquire(const vsb_image_store_t *s, const char *digest,
    vsb_image_ref_t *ref, char *err, size_t errlen);
void vsb_image_release(vsb_image_ref_t *ref);

/* image.json of one image, checked. */
int vsb_image_meta(const vsb_image_store_t *s, const char *digest,
    json_t **meta, char *err, size_t errlen);

/* Every image: an array of {digest, description, os_release, tools,
 * imported_at, entries, bytes}. */
int vsb_image_list(const vsb_image_store_t *s, json_t **list, char *err,
    size_t errlen);

/* Removes an image no sandbox holds; confirms it is gone. */
int vsb_image_remove(vsb_image_store_t *s, const char *digest, char *err,
    size_t errlen);

#endif
