/*
 * libFuzzer target: request schema validation for every op, without
 * executing anything.  The first byte is the fake payload length.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_config.h"
#include "vsb_ops.h"
#include "vsb_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static vsb_config_t  cf;
static int           cf_ready;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t         *root;
    json_error_t    jerr;
    vsb_request_t   r;
    vsb_error_t     e;
    char            err[256];
    size_t          plen;

    if (!cf_ready) {
        if (vsb_config_parse_buffer("profile = alt /\n", 16, &cf, err,
                                    sizeof(err)) != 0)
        {
            abort();
        }
        cf_ready = 1;
    }

    if (size < 1) {
        return 0;
    }

    plen = data[0] & 1 ? data[0] : 0;

    root = json_loadb((const char *) data + 1, size - 1,
                      JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return 0;
    }

    if (vsb_ops_parse(root, plen, &cf, &r, &e) != 0) {
        /* Every failure names an error and says something. */
        if (e.error == NULL || e.detail[0] == '\0') {
            abort();
        }
    } else {
        if (e.error != NULL) {
            abort();
        }
        /* Accepted limits never exceed the ceilings. */
        if (r.op == &vsb_create_op
            && (r.limits.memory_mb > cf.max.memory_mb
                || r.limits.pids > cf.max.pids
                || r.limits.cpu_percent > cf.max.cpu_percent
                || r.limits.disk_mb > cf.max.disk_mb
                || r.limits.timeout_s > cf.max.timeout_s
                || r.limits.output_bytes > cf.max.output_bytes
                || r.ttl_s > cf.max_ttl_s || r.ttl_s == 0
                || r.profile == NULL))
        {
            abort();
        }
        if (r.op == &vsb_exec_op
            && (r.timeout_s > cf.max.timeout_s || r.cwd == NULL
                || r.cwd[0] != '/' || json_array_size(r.argv) == 0))
        {
            abort();
        }
        if ((r.op == &vsb_write_file_op || r.op == &vsb_read_file_op)
            && (r.path == NULL || r.path[0] == '/' || strstr(r.path, "..")
                == r.path || r.mode > 0777))
        {
            abort();
        }
        if (plen > 0 && r.op != &vsb_exec_op
            && r.op != &vsb_write_file_op)
        {
            abort();
        }
    }

    json_decref(root);
    return 0;
}
