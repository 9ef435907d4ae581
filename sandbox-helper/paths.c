/*
 * Path syntax only.  Resolution happens later with openat2() and
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (files.c); this check exists so that
 * clearly hostile or confusing names are refused with a precise reason
 * before any file system access.
 */
#include <stdio.h>
#include <string.h>

#include "vsb_paths.h"
#include "vsb_protocol.h"


static int
vsb_path_fail(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return -1;
}


int
vsb_path_check(const char *path, size_t len, char *err, size_t errlen)
{
    size_t          i, start, clen;
    unsigned char   c;

    if (len == 0) {
        return vsb_path_fail(err, errlen, "path is empty");
    }

    if (len > VSB_MAX_PATH) {
        return vsb_path_fail(err, errlen, "path is longer than 4096 bytes");
    }

    if (path[0] == '/') {
        return vsb_path_fail(err, errlen,
                             "path must be relative to the workspace");
    }

    for (i = 0; i < len; i++) {
        c = (unsigned char) path[i];
        if (c == '\0') {
            return vsb_path_fail(err, errlen, "path contains a NUL byte");
        }
        if (c < 0x20 || c == 0x7f) {
            return vsb_path_fail(err, errlen,
                                 "path contains a control character");
        }
    }

    start = 0;
    for (i = 0; i <= len; i++) {
        if (i < len && path[i] != '/') {
            continue;
        }

        clen = i - start;

        if (clen == 0) {
            return vsb_path_fail(err, errlen,
                                 "path has an empty component");
        }
        if (clen > VSB_MAX_NAME) {
            return vsb_path_fail(err, errlen,
                                 "path component longer than 255 bytes");
        }
        if (clen == 1 && path[start] == '.') {
            return vsb_path_fail(err, errlen, "path has a \".\" component");
        }
        if (clen == 2 && path[start] == '.' && path[start + 1] == '.') {
            return vsb_path_fail(err, errlen, "path has a \"..\" component");
        }

        start = i + 1;
    }

    return 0;
}


int
vsb_path_workspace(const char *path, size_t len, int allow_root,
    const char **rel, size_t *rel_len, char *err, size_t errlen)
{
    static const char  ws[] = "/workspace";
    size_t             wl = sizeof(ws) - 1;

    *rel = path;
    *rel_len = len;

    if (len > 0 && path[0] == '/') {
        if (len < wl || memcmp(path, ws, wl) != 0
            || (len > wl && path[wl] != '/'))
        {
            return vsb_path_fail(err, errlen, "an absolute path must be "
                                 "/workspace or under /workspace/");
        }

        /* "/workspace" or "/workspace/": the workspace itself */
        if (len <= wl + 1) {
            if (!allow_root) {
                return vsb_path_fail(err, errlen, "path names the "
                                     "workspace itself, not a file in it");
            }
            *rel = path + len;
            *rel_len = 0;
            return 0;
        }

        path += wl + 1;
        len -= wl + 1;
        *rel = path;
        *rel_len = len;

        if (path[0] == '/') {
            return vsb_path_fail(err, errlen, "path has an empty component");
        }

    } else if (allow_root && len == 1 && path[0] == '.') {
        *rel = path + 1;
        *rel_len = 0;
        return 0;
    }

    return vsb_path_check(path, len, err, errlen);
}
