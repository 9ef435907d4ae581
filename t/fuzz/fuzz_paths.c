/*
 * libFuzzer target: workspace path validation (sandbox-helper/paths.c).
 * The input is the path.  Checked: a refusal says why; an accepted path
 * really keeps every syntax rule.
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char  *p = (const char *) data;
    char         err[128];
    size_t       i, start;

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
