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

#endif
