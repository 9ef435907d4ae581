/*
 * The usage op: what a live sandbox uses now against its limits, read
 * from its cgroup (memory, pids, cpu) and its tmpfs (disk) when asked;
 * nothing is sampled or kept for it.  The owner's view of one sandbox,
 * where stats is the gateway's view of the helper.
 */
#include <time.h>

#include "vsb_cgroup.h"
#include "vsb_op.h"
#include "vsb_storage.h"


#define VSB_MIB  (1024 * 1024)


static int
vsb_req_usage(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    return vsb_req_owned(root, VSB_OP_USAGE, r, e);
}


static void
vsb_op_usage(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    json_t              *reply;
    vsb_sandbox_t       *sb;
    vsb_cgroup_usage_t   u;

    /* a sandbox being destroyed is busy, an ended one ended */
    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    /* a figure that cannot be read is an error, never a 0 */
    if (sb->cgroup == NULL || vsb_cgroup_usage(sb->cgroup, &u) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL,
                      "the cgroup usage of sandbox %s cannot be read",
                      sb->id);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    reply = vsb_ok(r->request_id);

    if (reply == NULL
        || json_object_update_new(reply, json_pack(
               "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
               "s:I, s:I, s:I}",
               "id", sb->id,
               "measured_at", (json_int_t) time(NULL),
               "memory_bytes", (json_int_t) u.memory_current,
               "memory_peak_bytes", (json_int_t) u.memory_peak,
               "memory_limit_bytes",
               (json_int_t) (sb->limits.memory_mb * VSB_MIB),
               "oom_kills", (json_int_t) u.oom_kills,
               "pids", (json_int_t) u.pids_current,
               "pids_peak", (json_int_t) u.pids_peak,
               "pids_limit", (json_int_t) sb->limits.pids,
               "cpu_ms", (json_int_t) (u.cpu_usec / 1000),
               "disk_used_bytes", (json_int_t) vsb_storage_used(sb),
               "disk_limit_bytes", (json_int_t) (sb->limits.disk_mb * VSB_MIB),
               "execs_running", (json_int_t) vsb_execs_running(sb),
               "background_execs_running", (json_int_t) vsb_bg_running(sb)))
           != 0)
    {
        json_decref(reply);
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_usage_op = {
    .name = VSB_OP_USAGE,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_usage,
    .handler = vsb_op_usage,
};
