/*
 * What an image says about itself: os-release and the versions of
 * notable packages (dpkg or apk databases), read in the unpacking child
 * from the tree it made; and the check the privileged side makes of the
 * child's report before it becomes image.json.  Pure parsers, fuzzed.
 */
#ifndef VSB_IMAGE_META_H
#define VSB_IMAGE_META_H

#include <stddef.h>

#include <jansson.h>

/* KEY=VALUE lines; ID, VERSION_ID, PRETTY_NAME into obj (unquoted). */
int vsb_meta_os_release(const char *buf, size_t len, json_t *obj);

/* dpkg status paragraphs: installed packages of the notable list. */
int vsb_meta_dpkg_status(const char *buf, size_t len, json_t *tools);

/* apk "installed" database: P:name / V:version records. */
int vsb_meta_apk_installed(const char *buf, size_t len, json_t *tools);

/* 1 if name is a package whose version a profile should show. */
int vsb_meta_notable(const char *name, size_t len);

/*
 * The child's report, untrusted: an object of known keys whose values
 * are strings, integers, arrays and objects, no deeper than 4, no string
 * longer than 4096 bytes.  Returns 0 or -1 with err.
 */
int vsb_meta_check(json_t *meta, char *err, size_t errlen);

#endif
