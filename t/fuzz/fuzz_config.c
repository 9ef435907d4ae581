/* libFuzzer target: the config parser (name lookups are compiled out
 * under VSB_FUZZING). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_config.h"
#include "vsb_protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vsb_config_t  cf;
    char          err[512];

    err[0] = '\0';

    if (vsb_config_parse_buffer((const char *) data, size, &cf, err,
                                sizeof(err)) != 0)
    {
        if (err[0] == '\0') {
            abort();
        }
        return 0;
    }

    /* Accepted: every invariant the helper relies on holds. */
    if (cf.def.memory_mb > cf.max.memory_mb
        || cf.def.pids > cf.max.pids
        || cf.def.cpu_percent > cf.max.cpu_percent
        || cf.def.disk_mb > cf.max.disk_mb
        || cf.def.timeout_s > cf.max.timeout_s
        || cf.def.output_bytes > cf.max.output_bytes
        || cf.default_ttl_s > cf.max_ttl_s
        || cf.max.memory_mb > VSB_ABS_MEMORY_MB
        || cf.max_sandboxes > VSB_ABS_SANDBOXES
        || cf.max_file_bytes > VSB_ABS_FILE_BYTES
        || cf.uid_base < 100000
        || (uint64_t) cf.uid_base + cf.max_sandboxes * VSB_UID_RANGE
           >= 0xffffffffu
        || cf.socket_path[0] != '/' || cf.state_dir[0] != '/'
        || cf.n_profiles < 1 || cf.n_profiles > VSB_MAX_PROFILES
        || strcmp(cf.profiles[0].name, "default") != 0
        || cf.n_allowed_uids > VSB_MAX_ALLOWED_UIDS)
    {
        abort();
    }

    return 0;
}
