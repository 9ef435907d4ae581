/*
 * libFuzzer target: the helper's config parser (sandbox-helper/config.c),
 * on an in-memory buffer and, when the input opens with '#', also through
 * a memfd as the file the helper loads; user and group name lookups are
 * compiled out under VSB_FUZZING.  Seeds: t/fuzz/corpus/fuzz_config/,
 * every key at and past its bounds (t/fuzz/gen-corpus.py).
 *
 * Checked: every refusal says where and why; the file and the buffer give
 * the same result; an accepted config keeps every invariant the helper
 * relies on.
 *
 * FUZZ-COVERS: sandbox-helper/config.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vsb_config.h"
#include "vsb_protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ERRLEN  16384     /* no message is cut: lines are <= 4096 bytes */

static int   memfd = -1;
static char  memfd_path[64];


/* The same bytes loaded as a file: the same verdict, the same message
 * after the file name, the same config. */
static void
check_file(const uint8_t *data, size_t size, int rc, const vsb_config_t *cf,
    const char *err)
{
    static vsb_config_t  fcf;
    static char          ferr[ERRLEN];
    size_t               n = strlen(memfd_path);
    int                  frc;

    if (memfd == -1) {
        memfd = memfd_create("fuzz_config", MFD_CLOEXEC);
        if (memfd == -1) {
            perror("memfd_create");
            abort();
        }
        snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
        n = strlen(memfd_path);
    }

    if (ftruncate(memfd, 0) != 0
        || (size > 0 && pwrite(memfd, data, size, 0) != (ssize_t) size))
    {
        perror("memfd write");
        abort();
    }

    ferr[0] = '\0';
    frc = vsb_config_load(memfd_path, &fcf, ferr, sizeof(ferr));

    if (size > 1024 * 1024) {
        if (frc == 0) {
            abort();            /* the file's size bound */
        }
        return;
    }

    if (frc != rc) {
        abort();
    }

    if (rc != 0) {
        if (strncmp(ferr, memfd_path, n) != 0
            || strcmp(ferr + n, err + 6) != 0)      /* after "buffer" */
        {
            abort();
        }
        return;
    }

    if (memcmp(&fcf, cf, sizeof(fcf)) != 0) {
        abort();
    }
}


/* a "." or ".." component anywhere ("/..x" is a name, not one) */
static int
dot_component(const char *p)
{
    const char  *q;

    for (q = p; *q != '\0'; q++) {
        if (q[0] == '/' && q[1] == '.'
            && (q[2] == '/' || q[2] == '\0'
                || (q[2] == '.' && (q[3] == '/' || q[3] == '\0'))))
        {
            return 1;
        }
    }

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vsb_config_t  cf;
    static char          err[ERRLEN];
    size_t               i;
    int                  rc;

    err[0] = '\0';

    rc = vsb_config_parse_buffer((const char *) data, size, &cf, err,
                                 sizeof(err));

    /* The file path costs twenty times the buffer's (a 1 MiB read buffer
     * under ASan): only inputs that open with a comment, as the shipped
     * config does, take it too. */
    if (size > 0 && data[0] == '#') {
        check_file(data, size, rc, &cf, err);
    }

    if (rc != 0) {
        if (strncmp(err, "buffer", 6) != 0 || strlen(err) < 10) {
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
        || cf.n_allowed_uids > VSB_MAX_ALLOWED_UIDS
        || (cf.socket_mode & 0600) != 0600 || (cf.socket_mode & 07007) != 0
        || cf.max.output_bytes * 2 > VSB_MAX_PAYLOAD
        || strcmp(cf.state_dir, "/") == 0
        || (strlen(cf.state_dir) > 1
            && cf.state_dir[strlen(cf.state_dir) - 1] == '/')
        || (strcmp(cf.cgroup_mode, "auto") != 0
            && strcmp(cf.cgroup_mode, "v1") != 0
            && strcmp(cf.cgroup_mode, "v2") != 0))
    {
        abort();
    }

    /* egress: a user to drop to when on, paths absolute without "..",
     * at most VSB_EGRESS_MAX_RANGES ranges */
    if ((cf.egress.enabled && cf.egress.user[0] == '\0')
        || cf.egress.n_allow_ranges > VSB_EGRESS_MAX_RANGES
        || cf.egress.max_entries > VSB_ABS_EGRESS_ENTRIES
        || cf.egress.proxy[0] != '/' || dot_component(cf.egress.proxy)
        || cf.egress.nft[0] != '/' || dot_component(cf.egress.nft)
        || (cf.egress.netns[0] != '\0'
            && (cf.egress.netns[0] != '/' || dot_component(cf.egress.netns)))
        || dot_component(cf.state_dir))
    {
        abort();
    }

    if (vsb_config_profile(&cf, "") != NULL) {
        abort();                /* no profile has an empty name */
    }

    for (i = 0; i < cf.n_profiles; i++) {
        /* exactly one of a directory and an image digest */
        if ((vsb_profile_is_image(&cf.profiles[i])
             ? (cf.profiles[i].root[0] != '\0'
                || strncmp(cf.profiles[i].digest, "sha256:", 7) != 0
                || strlen(cf.profiles[i].digest) != VSB_IMAGE_DIGEST_LEN)
             : cf.profiles[i].root[0] != '/')
            || cf.profiles[i].name[0] == '\0'
            || vsb_config_profile(&cf, cf.profiles[i].name)
               != &cf.profiles[i])
        {
            abort();
        }
    }

    return 0;
}
