/*
 * libFuzzer target: workspace path validation (sandbox-helper/paths.c).
 * The input is the path.  Checked: a refusal says why; an accepted path
 * really keeps every syntax rule; the two forms (relative, or absolute
 * under /workspace) give a relative path that passes the same check, the
 * workspace itself only where it may be named.
 *
 * FUZZ-COVERS: sandbox-helper/paths.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_paths.h"
#include "vsb_protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* vsb_path_workspace(): either form, to a checked relative path. */
static void
check_workspace(const char *p, size_t size, int allow_root)
{
    const char  *rel;
    size_t       len;
    char         err[128], err2[128];
    int          plain;

    err[0] = '\0';
    plain = vsb_path_check(p, size, err2, sizeof(err2)) == 0;

    if (vsb_path_workspace(p, size, allow_root, &rel, &len, err, sizeof(err))
        != 0)
    {
        /* a relative path the plain check takes is taken here too */
        if (err[0] == '\0' || plain) {
            abort();
        }
        return;
    }

    /* the relative form is the path's own tail, the whole of a relative
     * one; empty only for the workspace itself, where allowed */
    if (rel < p || rel + len != p + size || (plain && rel != p)) {
        abort();
    }

    if (len == 0) {
        if (!allow_root) {
            abort();
        }
        return;
    }

    if (vsb_path_check(rel, len, err2, sizeof(err2)) != 0
        || (rel != p && (size < 11 || memcmp(p, "/workspace/", 11) != 0)))
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char  *p = (const char *) data;
    char         err[128];
    size_t       i, start;

    check_workspace(p, size, 0);
    check_workspace(p, size, 1);

    if (vsb_path_check(p, size, err, sizeof(err)) != 0) {
        if (err[0] == '\0') {
            abort();
        }
        return 0;
    }

    /* Accepted: the syntax rules must really hold. */
    if (size == 0 || size > VSB_MAX_PATH || p[0] == '/'
        || memchr(p, '\0', size) != NULL)
    {
        abort();
    }

    start = 0;
    for (i = 0; i <= size; i++) {
        if (i < size && p[i] != '/') {
            if ((unsigned char) p[i] < 0x20 || p[i] == 0x7f) {
                abort();
            }
            continue;
        }
        if (i == start || i - start > VSB_MAX_NAME
            || (i - start == 1 && p[start] == '.')
            || (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
        {
            abort();
        }
        start = i + 1;
    }

    return 0;
}
