/*
 * libFuzzer target: request schema validation for every op (the op table
 * in ops.c, each op's schema next to its handler in op_*.c and destroy.c,
 * the building blocks in request.c), without executing anything.
 *
 * Input: byte 0 is the frame's payload length when odd, no payload when
 * even, and its bit 1 set runs the helper with egress = off (else on);
 * the rest is the JSON header, loaded with the flags the helper's
 * dispatcher uses (ops.c).  The seeds in t/fuzz/corpus/fuzz_request/ are
 * valid and near-valid requests of every op (t/fuzz/gen-corpus.py).
 *
 * Checked: every refusal names an error and says something; an accepted
 * request holds every property its handler relies on.
 *
 * FUZZ-COVERS: sandbox-helper/request.c sandbox-helper/ops.c:vsb_ops_parse
 * FUZZ-COVERS: sandbox-helper/op_sandbox.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_exec.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_files.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_background.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_archive.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/destroy.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_network.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_lifetime.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_usage.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_snapshot.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/op_pause.c:vsb_req_.*
 * FUZZ-COVERS: sandbox-helper/egress.c:vsb_egress_req_.*
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_config.h"
#include "vsb_ops.h"
#include "vsb_protocol.h"
#include "vsb_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The defaults with a second profile to name, egress on and off. */
static const char *const   configs[2] = {
    "profile = alt /\negress = on\negress_user = veto-egress\n",
    "profile = alt /\n",
};
static vsb_config_t        cfs[2];
static int                 cf_ready;
static const vsb_config_t  *cf;


static int
owner_ok(const char *s)
{
    size_t  n;

    if (s == NULL) {
        return 0;
    }

    n = strlen(s);
    if (n == 0 || n > VSB_MAX_ID_LEN) {
        return 0;
    }

    for (; *s; s++) {
        if ((unsigned char) *s < 0x21 || (unsigned char) *s > 0x7e) {
            return 0;
        }
    }

    return 1;
}


static void
check_env(json_t *env)
{
    const char  *k;
    json_t      *v;

    if (env == NULL) {
        return;
    }

    if (!json_is_object(env) || json_object_size(env) > VSB_MAX_ENV) {
        abort();
    }

    json_object_foreach(env, k, v) {
        if (strlen(k) == 0 || strlen(k) > VSB_MAX_NAME
            || strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                         "0123456789_") != strlen(k)
            || (k[0] >= '0' && k[0] <= '9')
            || !json_is_string(v)
            || strlen(json_string_value(v)) != json_string_length(v))
        {
            abort();
        }
    }
}


/* An allowlist's entries: strings of 1 .. VSB_MAX_NETWORK_ENTRY bytes,
 * *n of them and *bytes bytes so far. */
static void
check_entries(json_t *arr, size_t *n, size_t *bytes)
{
    size_t   i, len;
    json_t  *v;

    if (!json_is_array(arr)) {
        abort();
    }

    json_array_foreach(arr, i, v) {
        len = json_string_length(v);
        if (!json_is_string(v) || len == 0 || len > VSB_MAX_NETWORK_ENTRY
            || strlen(json_string_value(v)) != len)
        {
            abort();
        }
        *bytes += len;
    }
    *n += json_array_size(arr);

    if (*n > cf->egress.max_entries || *bytes > VSB_MAX_NETWORK_BYTES) {
        abort();
    }
}


static void
check_network(json_t *net)
{
    size_t  n = 0, bytes = 0;

    if (net == NULL) {
        return;                 /* "none" */
    }

    if (!cf->egress.enabled || !json_is_object(net)
        || json_object_get(net, "allow") == NULL)
    {
        abort();
    }

    check_entries(json_object_get(net, "allow"), &n, &bytes);
    if (json_object_get(net, "ask") != NULL) {
        check_entries(json_object_get(net, "ask"), &n, &bytes);
    }
}


static void
check_accepted(const vsb_request_t *r, size_t plen)
{
    size_t   i;
    json_t  *v;

    if (r->request_id != NULL && strlen(r->request_id) > VSB_MAX_ID_LEN) {
        abort();
    }

    if (r->op == NULL || (plen > 0 && !r->op->payload)
        || (plen > 0 && r->op != &vsb_exec_op
            && r->op != &vsb_write_file_op
            && r->op != &vsb_extract_archive_op))
    {
        abort();
    }

    if (r->op != &vsb_ping_op && r->op != &vsb_profiles_op
        && r->op != &vsb_stats_op && r->op != &vsb_ended_op
        && r->op != &vsb_clock_advance_op && !owner_ok(r->tenant))
    {
        abort();
    }

    /* "epoch" comes only with a sandbox id, and only well formed */
    if (r->epoch != NULL) {
        if (r->id == NULL || strlen(r->epoch) != VSB_EPOCH_LEN) {
            abort();
        }
        for (i = 0; i < VSB_EPOCH_LEN; i++) {
            if (!((r->epoch[i] >= '0' && r->epoch[i] <= '9')
                  || (r->epoch[i] >= 'a' && r->epoch[i] <= 'f')))
            {
                abort();
            }
        }
    }

    if (r->op == &vsb_ping_op || r->op == &vsb_profiles_op
        || r->op == &vsb_stats_op || r->op == &vsb_ended_op)
    {
        /* the whole helper's: no owner, no sandbox (the gateway's own
         * questions) */
        if (r->tenant != NULL || r->agent != NULL || r->id != NULL) {
            abort();
        }
        if (r->op == &vsb_ended_op
            && (r->max_records < 1 || r->max_records > VSB_ENDED_PAGE_MAX))
        {
            abort();
        }
        /* "brief" is the ping's alone */
        if (r->brief && r->op != &vsb_ping_op) {
            abort();
        }

    } else if (r->op == &vsb_clock_advance_op) {
        /* the test clock: no owner, seconds within its ceiling */
        if (r->tenant != NULL || r->agent != NULL || r->id != NULL
            || r->advance_s < 1 || r->advance_s > VSB_CLOCK_ADVANCE_MAX_S)
        {
            abort();
        }

    } else if (r->op == &vsb_list_op) {
        if (r->agent != NULL && !owner_ok(r->agent)) {
            abort();
        }

    } else if (r->op == &vsb_create_op) {
        if (!owner_ok(r->agent) || r->profile == NULL
            || r->limits.memory_mb < 1
            || r->limits.memory_mb > cf->max.memory_mb
            || r->limits.pids < 1 || r->limits.pids > cf->max.pids
            || r->limits.cpu_percent < 1
            || r->limits.cpu_percent > cf->max.cpu_percent
            || r->limits.disk_mb < 1 || r->limits.disk_mb > cf->max.disk_mb
            || r->limits.timeout_s < 1
            || r->limits.timeout_s > cf->max.timeout_s
            || r->limits.output_bytes < 1
            || r->limits.output_bytes > cf->max.output_bytes
            || r->ttl_s < 1 || r->ttl_s > cf->max_ttl_s
            || r->idle_s < 1 || r->idle_s > cf->max_idle_s
            || (r->metadata != NULL && !json_is_object(r->metadata)))
        {
            abort();
        }
        check_env(r->env);
        check_network(r->network);
        if (r->snapshot != NULL
            && (strlen(r->snapshot) != VSB_SNAPSHOT_ID_LEN
                || strspn(r->snapshot + 5, "0123456789abcdef") != 24))
        {
            abort();
        }

    } else if (r->op == &vsb_update_lifetime_op) {
        /* something to change, each within its ceiling */
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || (!r->ttl_set && !r->idle_set)
            || (r->ttl_set && (r->ttl_s < 1 || r->ttl_s > cf->max_ttl_s))
            || (r->idle_set
                && (r->idle_s < 1 || r->idle_s > cf->max_idle_s)))
        {
            abort();
        }

    } else if (r->op == &vsb_update_network_op) {
        size_t  n = 0, bytes = 0;

        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || json_array_size(r->network) == 0)
        {
            abort();
        }
        check_entries(r->network, &n, &bytes);

    } else if (r->op == &vsb_exec_op) {
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || r->timeout_s > cf->max.timeout_s || r->cwd == NULL
            || r->cwd[0] != '/' || strlen(r->cwd) > VSB_MAX_PATH
            || !json_is_array(r->argv) || json_array_size(r->argv) == 0
            || json_array_size(r->argv) > VSB_MAX_ARGV
            || json_string_length(json_array_get(r->argv, 0)) == 0
            || r->output_bytes > cf->max.output_bytes
            || (r->stream && r->background))
        {
            abort();
        }
        json_array_foreach(r->argv, i, v) {
            if (!json_is_string(v)
                || strlen(json_string_value(v)) != json_string_length(v))
            {
                abort();
            }
        }
        check_env(r->env);

    } else if (r->op == &vsb_write_file_op || r->op == &vsb_read_file_op) {
        /* mode: no setuid, setgid or sticky bit */
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || r->path == NULL || r->path[0] == '/' || r->path[0] == '\0'
            || strlen(r->path) > VSB_MAX_PATH
            || strcmp(r->path, "..") == 0 || strncmp(r->path, "../", 3) == 0
            || strstr(r->path, "/../") != NULL || r->mode > 0777
            || (r->op == &vsb_read_file_op && r->mode != 0644))
        {
            abort();
        }

    } else if (r->op == &vsb_extract_archive_op
               || r->op == &vsb_export_archive_op)
    {
        /* the workspace itself is "" */
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || r->path == NULL || r->path[0] == '/'
            || strlen(r->path) > VSB_MAX_PATH
            || strcmp(r->path, "..") == 0 || strncmp(r->path, "../", 3) == 0
            || strstr(r->path, "/../") != NULL
            || (r->format != NULL && strcmp(r->format, "tar") != 0
                && strcmp(r->format, "tar.gz") != 0
                && strcmp(r->format, "tar.zst") != 0
                && strcmp(r->format, "tar.xz") != 0))
        {
            abort();
        }

    } else if (r->op == &vsb_exec_status_op || r->op == &vsb_exec_kill_op
               || r->op == &vsb_exec_output_op)
    {
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || r->exec_id == NULL || strlen(r->exec_id) != VSB_EXEC_ID_LEN
            || strncmp(r->exec_id, "ex-", 3) != 0)
        {
            abort();
        }
        if (r->op == &vsb_exec_output_op
            && ((r->out_stream != 1 && r->out_stream != 2)
                || r->max_bytes > cf->max_file_bytes
                || (r->follow && r->max_bytes != 0)))
        {
            abort();
        }

    } else if (r->op == &vsb_status_op) {
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)) {
            abort();
        }

    } else if (r->op == &vsb_destroy_op) {
        /* an administrator's destroy (reason "admin") may name no agent:
         * the tenant's sandbox of that id, whoever made it */
        if ((!r->admin && !owner_ok(r->agent))
            || (r->agent != NULL && !owner_ok(r->agent))
            || !vsb_req_id_ok(r->id))
        {
            abort();
        }

    } else if (r->op == &vsb_usage_op) {
        /* one owned sandbox and nothing else */
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || r->path != NULL || r->exec_id != NULL || r->argv != NULL
            || r->env != NULL || r->network != NULL || r->admin)
        {
            abort();
        }

    } else if (r->op == &vsb_snapshot_create_op) {
        /* ceilings the request may only lower */
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || r->ttl_s < 1 || r->ttl_s > cf->snapshot_max_ttl_s
            || r->snap_count > cf->snapshot_max_count
            || r->snap_bytes > cf->snapshot_max_bytes
            || (r->metadata != NULL && !json_is_object(r->metadata)))
        {
            abort();
        }

    } else if (r->op == &vsb_snapshot_list_op) {
        if (r->agent != NULL && !owner_ok(r->agent)) {
            abort();
        }

    } else if (r->op == &vsb_snapshot_get_op
               || r->op == &vsb_snapshot_delete_op)
    {
        if (!owner_ok(r->agent) || r->snapshot == NULL
            || strlen(r->snapshot) != VSB_SNAPSHOT_ID_LEN
            || strncmp(r->snapshot, "snap-", 5) != 0
            || strspn(r->snapshot + 5, "0123456789abcdef") != 24)
        {
            abort();
        }

    } else if (r->op == &vsb_pause_op || r->op == &vsb_resume_op) {
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)) {
            abort();
        }

    } else if (r->op == &vsb_changes_op) {
        if (!owner_ok(r->agent) || !vsb_req_id_ok(r->id)
            || r->since == NULL || r->format == NULL
            || (strcmp(r->since, "created") != 0
                && (strlen(r->since) != VSB_SNAPSHOT_ID_LEN
                    || strncmp(r->since, "snap-", 5) != 0))
            || (strcmp(r->format, "json") != 0
                && strcmp(r->format, "diff") != 0
                && strcmp(r->format, "tar") != 0)
            || r->max_bytes < 1 || r->max_bytes > cf->max_file_bytes)
        {
            abort();
        }

    } else {
        abort();                /* a row the table does not list */
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t         *root, *rid;
    json_error_t    jerr;
    vsb_request_t   r;
    vsb_error_t     e;
    char            err[256];
    size_t          plen, i;

    if (!cf_ready) {
        for (i = 0; i < 2; i++) {
            if (vsb_config_parse_buffer(configs[i], strlen(configs[i]),
                                        &cfs[i], err, sizeof(err)) != 0)
            {
                abort();
            }
        }
        cf_ready = 1;
    }

    if (size < 1) {
        return 0;
    }

    plen = data[0] & 1 ? data[0] : 0;
    cf = &cfs[(data[0] >> 1) & 1];

    root = json_loadb((const char *) data + 1, size - 1,
                      JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return 0;
    }

    if (vsb_ops_parse(root, plen, cf, &r, &e) != 0) {
        /* Every refusal names an error and says something. */
        if (e.error == NULL || e.detail[0] == '\0'
            || (strcmp(e.error, VSB_E_OVER_CEILING) == 0) != (e.limit != NULL))
        {
            abort();
        }

        /* A well-formed request_id is echoed even on errors. */
        rid = json_is_object(root) ? json_object_get(root, "request_id")
                                   : NULL;
        if (r.request_id != NULL
            && (rid == NULL || strcmp(r.request_id, json_string_value(rid))
                               != 0))
        {
            abort();
        }
    } else {
        if (e.error != NULL) {
            abort();
        }
        check_accepted(&r, plen);
    }

    json_decref(root);
    return 0;
}
