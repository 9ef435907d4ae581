/* Validation of workspace-relative paths given by clients. */
#ifndef VSB_PATHS_H
#define VSB_PATHS_H

#include <stddef.h>

/*
 * 0 if path (len bytes, may hold NULs) is relative, at most VSB_MAX_PATH
 * bytes, made of components of 1 .. VSB_MAX_NAME bytes that are neither
 * "." nor "..", with no control character (0x00-0x1f, 0x7f) anywhere.
 * Otherwise -1 with err saying why.
 */
int vsb_path_check(const char *path, size_t len, char *err, size_t errlen);

/*
 * A client's workspace path in either form: relative to the workspace
 * ("src/a.c") or absolute under it ("/workspace/src/a.c").  0 with *rel
 * pointing into path at the relative form (checked by vsb_path_check()),
 * *rel_len its length; with allow_root, "/workspace", "/workspace/" and
 * "." name the workspace itself (*rel_len 0).  Otherwise -1 with err
 * saying which rule was broken.
 */
int vsb_path_workspace(const char *path, size_t len, int allow_root,
    const char **rel, size_t *rel_len, char *err, size_t errlen);

#endif
