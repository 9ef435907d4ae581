/*
 * The ops of a sandbox's lifetime and of its end: update_lifetime (a new
 * ttl_s or idle_s within the ceilings) and ended (the gateway's poll of
 * the ENDED records, for the ends it did not ask for).  Each op is its
 * schema, its handler and its row, together.
 */
#include <stdio.h>
#include <string.h>

#include "vsb_config.h"
#include "vsb_ended.h"
#include "vsb_lifeclock.h"
#include "vsb_lifetime.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_registry.h"
#include "vsb_sbstate.h"
#include "vsb_snap_store.h"


/* ---- update_lifetime ----------------------------------------------- */


static int
vsb_req_update_lifetime(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "ttl_s",
        "idle_s", NULL
    };

    if (vsb_req_sandbox_ref(root, allowed, VSB_OP_UPDATE_LIFETIME, r, e) != 0
        || vsb_req_uint(root, "ttl_s", 0, &r->ttl_s, e) != 0
        || vsb_req_uint(root, "idle_s", 0, &r->idle_s, e) != 0)
    {
        return -1;
    }

    r->ttl_set = json_object_get(root, "ttl_s") != NULL;
    r->idle_set = json_object_get(root, "idle_s") != NULL;

    if (!r->ttl_set && !r->idle_set) {
        return vsb_error_set(e, VSB_E_MISSING_FIELD, "ttl_s",
                             "update_lifetime needs \"ttl_s\" or "
                             "\"idle_s\"");
    }

    if (r->ttl_set && r->ttl_s > cf->max_ttl_s) {
        return vsb_req_over(e, "ttl_s", VSB_LIMIT_TTL_S, r->ttl_s,
                            cf->max_ttl_s);
    }

    if (r->idle_set && r->idle_s > cf->max_idle_s) {
        return vsb_req_over(e, "idle_s", VSB_LIMIT_IDLE_S, r->idle_s,
                            cf->max_idle_s);
    }

    return 0;
}


static void
vsb_op_update_lifetime(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    char            err[512];
    time_t          now;
    uint64_t        ttl, idle, lived_ms;
    json_t         *reply;
    vsb_sandbox_t  *sb;

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    ttl = sb->ttl_s;
    idle = sb->idle_s;

    if (r->ttl_set) {
        /* the lifetime counts from creation: one that is over already
         * would end the sandbox, which is destroy's job */
        lived_ms = vsb_life_now_ms() - sb->created_ms;

        if (r->ttl_s * 1000 <= lived_ms) {
            vsb_error_set(e, VSB_E_BAD_VALUE, "ttl_s", "ttl_s %llu would "
                          "have ended sandbox %s already: it has lived "
                          "%llu s (ttl_s counts from creation)",
                          (unsigned long long) r->ttl_s, sb->id,
                          (unsigned long long) (lived_ms / 1000));
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }

        sb->ttl_s = r->ttl_s;
        sb->expires_at = sb->created_at + (time_t) r->ttl_s;
    }

    if (r->idle_set) {
        sb->idle_s = r->idle_s;
    }

    /* on disk before the reply: a restart must see the new lifetime */
    if (vsb_sbstate_write(sb, err, sizeof(err)) != 0) {
        sb->ttl_s = ttl;
        sb->idle_s = idle;
        sb->expires_at = sb->created_at + (time_t) ttl;
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "state file: %s", err);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_lifetime_rearm(sb);

    now = vsb_life_now();
    vsb_log(VSB_LOG_INFO, "sandbox %s: lifetime %llu s (ends in %lld s), "
            "idle %llu s", sb->id, (unsigned long long) sb->ttl_s,
            (long long) (sb->expires_at - now),
            (unsigned long long) sb->idle_s);

    reply = vsb_ok(r->request_id);
    if (reply != NULL
        && json_object_update_new(reply, json_pack(
               "{s:s, s:I, s:I, s:I, s:I, s:I}",
               "id", sb->id,
               "ttl_s", (json_int_t) sb->ttl_s,
               "idle_s", (json_int_t) sb->idle_s,
               "created_at", (json_int_t) sb->created_at,
               "expires_at", (json_int_t) sb->expires_at,
               "active_at", (json_int_t) sb->active_at)) != 0)
    {
        json_decref(reply);
        reply = NULL;
    }

    /* a fork: the gateway keeps its snapshot's routing record as long */
    if (reply != NULL && sb->from_snap != NULL
        && json_object_set_new(reply, "from_snapshot",
                               json_string(sb->from_snap->id)) != 0)
    {
        json_decref(reply);
        reply = NULL;
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_update_lifetime_op = {
    .name = VSB_OP_UPDATE_LIFETIME,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_update_lifetime,
    .handler = vsb_op_update_lifetime,
};


/* ---- ended --------------------------------------------------------- */


static int
vsb_req_ended(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "after", "max", NULL
    };
    json_t  *v;

    r->max_records = VSB_ENDED_PAGE;

    if (vsb_req_fields(root, allowed, VSB_OP_ENDED, e) != 0
        || vsb_req_get(root, "after", 0, &v, e) != 0
        || vsb_req_uint(root, "max", 0, &r->max_records, e) != 0)
    {
        return -1;
    }

    /* a cursor: 0 (the start) or a seq given before */
    if (v != NULL) {
        if (!json_is_integer(v)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, "after",
                                 "\"after\" must be an integer");
        }
        if (json_integer_value(v) < 0) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "after",
                                 "\"after\" must be at least 0");
        }
        r->after = (uint64_t) json_integer_value(v);
    }

    if (r->max_records == 0 || r->max_records > VSB_ENDED_PAGE_MAX) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "max", "\"max\" is 1 .. %d",
                             VSB_ENDED_PAGE_MAX);
    }

    return 0;
}


static void
vsb_op_ended(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    int        more;
    json_t    *reply, *page;
    uint64_t   next;

    page = vsb_ended_page(r->after, (unsigned) r->max_records, &next, &more);
    reply = vsb_ok(r->request_id);

    if (page == NULL || reply == NULL) {
        json_decref(page);
        json_decref(reply);
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    json_object_set_new(reply, "epoch", json_string(vsb_registry_epoch()));
    json_object_set_new(reply, "ended", page);
    json_object_set_new(reply, "next", json_integer((json_int_t) next));
    json_object_set_new(reply, "more", json_boolean(more));
    /* the gateway's poll carries this host's load into its lease */
    json_object_set_new(reply, "sandboxes",
                        json_integer((json_int_t) vsb_registry_count()));
    json_object_set_new(reply, "sandboxes_max",
                        json_integer((json_int_t) vsb_cf.max_sandboxes));

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_ended_op = {
    .name = VSB_OP_ENDED,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_ended,
    .handler = vsb_op_ended,
};
