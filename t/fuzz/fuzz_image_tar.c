/*
 * libFuzzer target: the layer tar reader and path canonicaliser
 * (sandbox-helper/image_tar.c).  The input is a tar stream.  Checked:
 * every refusal says why; an entry's path and link are NUL-terminated
 * within their bounds; a canonical path has no "..", no empty, "." or
 * over-long component and no leading "/"; data never exceeds the size
 * the header declared.
 *
 * FUZZ-COVERS: sandbox-helper/image_tar.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "vsb_image_tar.h"
/* the unit test's memory reader */
#include "../unit/tar_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void
fz_check_clean(const char *in)
{
    char         out[VSB_IMAGE_PATH_MAX + 1], err[256];
    const char  *c, *s;
    size_t       n;

    err[0] = '\0';
    if (vsb_tar_clean_path(in, out, err, sizeof(err)) != 0) {
        if (err[0] == '\0') {
            abort();
        }
        return;
    }

    if (strlen(out) > VSB_IMAGE_PATH_MAX || out[0] == '/') {
        abort();
    }

    for (c = out; *c; c = *s ? s + 1 : s) {
        s = strchr(c, '/');
        if (s == NULL) {
            s = c + strlen(c);
        }
        n = (size_t) (s - c);
        if (n == 0 || n > VSB_IMAGE_NAME_MAX
            || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.'
                                          && c[1] == '.'))
        {
            abort();
        }
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vsb_tar_t        t;
    static vsb_tar_entry_t  e;
    static char             buf[4096];
    tar_mem_t               m = { data, size, 0 };
    vsb_tar_rc_t            rc;
    uint64_t                got;
    ssize_t                 n;
    int                     i;

    vsb_tar_init(&t, tar_mem_read, &m);

    for (i = 0; i < 64; i++) {
        rc = vsb_tar_next(&t, &e);
        if (rc == VSB_TAR_END) {
            break;
        }
        if (rc == VSB_TAR_ERROR) {
            if (t.err[0] == '\0') {
                abort();
            }
            break;
        }

        if (memchr(e.path, '\0', sizeof(e.path)) == NULL
            || memchr(e.link, '\0', sizeof(e.link)) == NULL
            || e.path[0] == '\0' || e.mode > 07777)
        {
            abort();
        }

        fz_check_clean(e.path);
        fz_check_clean(e.link);

        got = 0;
        if (i % 2 == 0) {
            while ((n = vsb_tar_data(&t, buf, sizeof(buf))) > 0) {
                got += (uint64_t) n;
            }
            if (n < 0) {
                if (t.err[0] == '\0') {
                    abort();
                }
                break;
            }
            if (got > e.size) {
                abort();
            }
        }
    }

    return 0;
}
