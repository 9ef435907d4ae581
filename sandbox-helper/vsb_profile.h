/*
 * Profiles: what a sandbox's root is made of (vsb_config.h), and what
 * discovery says about each.
 *
 * At start, vsb_profiles_init() opens the image store (image_store, or
 * state_dir/images) when any image profile is configured, refuses to go
 * on if an image is missing from it or idmapped mounts are unavailable,
 * and makes each profile's discovery entry once: for an image, from its
 * image.json (the store's own record, made at import); for a directory,
 * from its os-release and dpkg or apk database (bounded reads, the
 * fuzzed parsers of image_meta.c).  The profiles op serves them.
 */
#ifndef VSB_PROFILE_H
#define VSB_PROFILE_H

#include <stddef.h>

#include <jansson.h>

#include "vsb_image_store.h"
#include "vsb_request.h"
#include "vsb_sandbox.h"

/* profile versions and os-release values longer than this are left out */
#define VSB_PROFILE_VALUE_MAX  64

int vsb_profiles_init(char *err, size_t errlen);
void vsb_profiles_cleanup(void);

/* The open store; NULL when no image profile is configured. */
const vsb_image_store_t *vsb_profiles_store(void);

/*
 * Every profile: [{name, kind: "image"|"directory", digest (null for a
 * directory), description, os_release {id, version_id, pretty_name},
 * tools {package: version}, default: bool, available: bool}].  Fits a
 * reply header (checked at start).  A new reference, NULL when out of
 * memory.
 */
json_t *vsb_profiles_json(void);

/*
 * The same list in short, for ping: [{name, kind, digest, default,
 * available}].  A new reference, NULL when out of memory.
 */
json_t *vsb_profiles_summary(void);

/*
 * An image profile's sandbox: the image config's environment (PATH,
 * LANG, ...) under the create request's own, as the image's author
 * meant it to run; at most VSB_MAX_ENV variables in all.
 */
int vsb_profile_env(vsb_sandbox_t *sb, vsb_error_t *e);

#endif
