/*
 * The stats op: the helper's figures for the gateway's metrics, counted
 * when asked (a walk of the registry; no counter is kept for it).  Like
 * ping it names no owner: which tenant a sandbox is of does not appear,
 * only how many there are and in which state.
 */
#include <time.h>

#include "vsb_config.h"
#include "vsb_egress.h"
#include "vsb_op.h"
#include "vsb_registry.h"
#include "vsb_spawn_ns.h"


static int
vsb_req_stats(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed_stats[] = { "op", "request_id", NULL };

    return vsb_req_fields(root, allowed_stats, VSB_OP_STATS, e);
}


static void
vsb_op_stats(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    time_t               now, started;
    json_t              *reply;
    unsigned long        ready, destroying, failed, execs;
    vsb_sandbox_t       *sb;
    vsb_server_usage_t   u;

    ready = destroying = failed = execs = 0;

    for (sb = vsb_registry_first(); sb != NULL; sb = sb->next) {
        switch (vsb_entry(sb)->state) {
        case VSB_SB_READY:
            ready++;
            break;
        case VSB_SB_DESTROYING:
            destroying++;
            break;
        case VSB_SB_FAILED:
            failed++;
            break;
        }
        execs += vsb_execs_running(sb);
    }

    vsb_server_usage(&u);

    now = time(NULL);
    started = vsb_registry_started_at();

    reply = vsb_ok(r->request_id);

    if (reply == NULL
        || json_object_update_new(reply, json_pack(
               "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
               "sandboxes", (json_int_t) vsb_registry_count(),
               "sandboxes_ready", (json_int_t) ready,
               "sandboxes_max", (json_int_t) vsb_cf.max_sandboxes,
               "execs_running", (json_int_t) execs,
               "teardowns_pending", (json_int_t) destroying,
               "teardowns_failed", (json_int_t) failed,
               "started_at", (json_int_t) started,
               "uptime_s", (json_int_t) (now > started ? now - started : 0),
               "connections", (json_int_t) u.connections,
               "buffered_bytes", (json_int_t) u.buffered,
               "buffer_limit_bytes", (json_int_t) u.buffered_max))
           != 0
        || json_object_set_new(reply, "spawn_mounts",
                               vsb_spawn_ns_mounts() >= 0
                               ? json_integer(vsb_spawn_ns_mounts())
                               : json_null()) != 0
        || json_object_set_new(reply, "egress", vsb_egress_stats_json()) != 0)
    {
        json_decref(reply);
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_stats_op = {
    .name = VSB_OP_STATS,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_stats,
    .handler = vsb_op_stats,
};
