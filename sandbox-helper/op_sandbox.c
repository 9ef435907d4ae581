/*
 * The ops that make and describe sandboxes: ping, create, status, list.
 * Each op is its schema, its handler and its row (vsb_op_t), together.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vsb_cgroup.h"
#include "vsb_destroy.h"
#include "vsb_egress.h"
#include "vsb_egress_cred.h"
#include "vsb_ended.h"
#include "vsb_landlock.h"
#include "vsb_lifeclock.h"
#include "vsb_lifetime.h"
#include "vsb_log.h"
#include "vsb_netns.h"
#include "vsb_op.h"
#include "vsb_overlay.h"
#include "vsb_profile.h"
#include "vsb_registry.h"
#include "vsb_rootfs.h"
#include "vsb_sbstate.h"
#include "vsb_snap_changes.h"
#include "vsb_snap_store.h"
#include "vsb_spawn.h"
#include "vsb_storage.h"


static json_t *
vsb_limits_json(const vsb_limits_t *l)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
                     VSB_LIMIT_MEMORY_MB, (json_int_t) l->memory_mb,
                     VSB_LIMIT_PIDS, (json_int_t) l->pids,
                     VSB_LIMIT_CPU_PERCENT, (json_int_t) l->cpu_percent,
                     VSB_LIMIT_DISK_MB, (json_int_t) l->disk_mb,
                     VSB_LIMIT_TIMEOUT_S, (json_int_t) l->timeout_s,
                     VSB_LIMIT_OUTPUT_BYTES, (json_int_t) l->output_bytes);
}


static json_t *
vsb_sandbox_json(vsb_sandbox_t *sb, int usage, int metadata)
{
    vsb_cgroup_usage_t  u;
    json_t             *j;

    j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:I, "
                  "s:I, s:I, s:I}",
                  "id", sb->id,
                  "epoch", vsb_registry_epoch(),
                  "tenant", sb->tenant,
                  "agent", sb->agent,
                  "profile", sb->profile->name,
                  "state", vsb_state_name(sb),
                  "network", vsb_egress_sandbox_json(sb, metadata),
                  "limits", vsb_limits_json(&sb->limits),
                  "ttl_s", (json_int_t) sb->ttl_s,
                  "idle_s", (json_int_t) sb->idle_s,
                  "created_at", (json_int_t) sb->created_at,
                  "expires_at", (json_int_t) sb->expires_at,
                  "active_at", (json_int_t) sb->active_at,
                  "execs_running", (json_int_t) vsb_execs_running(sb));
    if (j == NULL) {
        return NULL;
    }

    if (vsb_entry(sb)->state == VSB_SB_DESTROYING
        && sb->end.reason != VSB_END_NONE)
    {
        json_object_set_new(j, "ending",
                            json_string(vsb_end_name(sb->end.reason)));
    }

    json_object_set_new(j, "paused", json_boolean(sb->paused));
    json_object_set_new(j, "from_snapshot", sb->from_snap != NULL
                        ? json_string(sb->from_snap->id) : json_null());

    json_object_set_new(j, "profile_digest",
                        vsb_profile_is_image(sb->profile)
                        ? json_string(sb->profile->digest) : json_null());

    if (metadata && sb->metadata != NULL) {
        json_object_set(j, "metadata", sb->metadata);
    }

    if (usage) {
        memset(&u, 0, sizeof(u));
        if (sb->cgroup != NULL && vsb_cgroup_usage(sb->cgroup, &u) != 0) {
            vsb_log(VSB_LOG_WARN, "usage of sandbox %s unavailable", sb->id);
        }
        json_object_set_new(j, "usage",
            json_pack("{s:I, s:I, s:I}",
                      "memory_bytes", (json_int_t) u.memory_current,
                      "pids", (json_int_t) u.pids_current,
                      "disk_used_bytes",
                      (json_int_t) vsb_storage_used(sb)));
    }

    return j;
}


static void
vsb_reply_sandbox(vsb_conn_t *c, const vsb_request_t *r, vsb_sandbox_t *sb,
    int usage)
{
    json_t  *reply;

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "sandbox", vsb_sandbox_json(sb, usage, 1));
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


/* ---- ping -------------------------------------------------------- */


/* the namespaces every exec runs in (vsb_spawn.h) */
static json_t *
vsb_ping_namespaces(void)
{
    json_t             *list;
    const char *const  *ns;

    list = json_array();

    for (ns = vsb_spawn_namespaces; list != NULL && *ns != NULL; ns++) {
        if (json_array_append_new(list, json_string(*ns)) != 0) {
            json_decref(list);
            list = NULL;
        }
    }

    return list;
}


static int
vsb_req_ping(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed_ping[] = { "op", "request_id", "brief",
                                                 NULL };
    unsigned                  brief;

    if (vsb_req_fields(root, allowed_ping, "ping", e) != 0
        || vsb_req_bool(root, "brief", &brief, e) != 0)
    {
        return -1;
    }

    r->brief = brief;
    return 0;
}


static void
vsb_op_ping(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    json_t    *reply;
    unsigned   full;

    /* "brief" (a liveness probe's, the gateway's /v1/health): without
     * the count, the profiles and the ceilings, which are most of the
     * reply's bytes and of both sides' JSON work */
    full = !r->brief;

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "version",
                            json_integer(VSB_PROTOCOL_VERSION));
        json_object_set_new(reply, "cgroup",
                            json_string(vsb_cgroup_mode() == VSB_CGROUP_V1
                                        ? "v1" : "v2"));
        if (full) {
            json_object_set_new(reply, "sandboxes",
                                json_integer(vsb_registry_count()));
        }
        json_object_set_new(reply, "epoch",
                            json_string(vsb_registry_epoch()));
        /* the workload's boundary */
        json_object_set_new(reply, "seccomp", json_string("allowlist"));
        json_object_set_new(reply, "landlock_abi",
                            json_integer(vsb_landlock_abi()));
        json_object_set_new(reply, "namespaces", vsb_ping_namespaces());
        if (full) {
            json_object_set_new(reply, "profiles", vsb_profiles_summary());
        }
        json_object_set_new(reply, "started_at",
                            json_integer((json_int_t)
                                         vsb_registry_started_at()));
        json_object_set_new(reply, "egress", vsb_egress_health());
        /* the operator's bindings (never a value): the gateway names a
         * secret's host to the human asked to attach it */
        if (full && vsb_ecred_enabled()) {
            json_object_set_new(reply, "credentials",
                                vsb_ecred_bindings_json());
        }
    }

    /* a client waits for an exec as long as these let it run */
    if (reply != NULL && full) {
        json_object_set_new(reply, "limits_max", vsb_limits_json(&vsb_cf.max));
        json_object_set_new(reply, "limits_default",
                            vsb_limits_json(&vsb_cf.def));
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_ping_op = {
    .name = VSB_OP_PING,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_ping,
    .handler = vsb_op_ping,
};


/* ---- status, list ------------------------------------------------ */


static int
vsb_req_status(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    return vsb_req_owned(root, VSB_OP_STATUS, r, e);
}


/* An ended sandbox answers its ENDED record. */
static void
vsb_reply_ended(vsb_conn_t *c, const vsb_request_t *r, const vsb_ended_t *en)
{
    json_t  *reply;

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "sandbox", vsb_ended_json(en));
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


static void
vsb_op_status(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t      *sb;
    const vsb_ended_t  *en;

    sb = vsb_find(r, e);

    if (sb == NULL || vsb_entry(sb)->state == VSB_SB_FAILED) {
        en = vsb_ended_find(r->tenant, r->agent, r->id);
        if (en != NULL) {
            vsb_reply_ended(c, r, en);
            return;
        }
    }

    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_reply_sandbox(c, r, sb, 1);
}


const vsb_op_t  vsb_status_op = {
    .name = VSB_OP_STATUS,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_status,
    .handler = vsb_op_status,
};


static int
vsb_req_list(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed_list[] = {
        "op", "request_id", "tenant", "agent", "ended", NULL
    };
    unsigned  ended = 0;

    if (vsb_req_fields(root, allowed_list, "list", e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_owner(root, "agent", 0, &r->agent, e) != 0
        || vsb_req_bool(root, "ended", &ended, e) != 0)
    {
        return -1;
    }

    r->with_ended = ended;
    return 0;
}


static void
vsb_op_list(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    json_t         *reply, *arr, *ended, *j;
    size_t          md, md_bytes;
    int             truncated;

    reply = vsb_ok(r->request_id);
    arr = json_array();

    if (reply == NULL || arr == NULL) {
        json_decref(reply);
        json_decref(arr);
        vsb_conn_reply(c, NULL, NULL, 0);
        return;
    }

    /* With metadata as GET has it, while the list's metadata come to at
     * most VSB_LIST_METADATA_BYTES (a long list must still fit
     * VSB_MAX_JSON); past that a sandbox says "metadata_omitted" and GET
     * has it. */
    md_bytes = 0;

    for (sb = vsb_registry_first(); sb != NULL; sb = sb->next) {
        /* one whose termination failed has ended: its ENDED record */
        if (strcmp(sb->tenant, r->tenant) != 0
            || (r->agent != NULL && strcmp(sb->agent, r->agent) != 0)
            || vsb_entry(sb)->state == VSB_SB_FAILED)
        {
            continue;
        }
        md = sb->metadata != NULL
             ? json_dumpb(sb->metadata, NULL, 0, JSON_COMPACT) : 0;
        md_bytes += md;

        j = vsb_sandbox_json(sb, 0, 0);
        if (j != NULL && md > 0) {
            if (md_bytes <= VSB_LIST_METADATA_BYTES) {
                json_object_set(j, "metadata", sb->metadata);
            } else {
                json_object_set_new(j, "metadata_omitted", json_true());
            }
        }
        json_array_append_new(arr, j);
    }

    json_object_set_new(reply, "sandboxes", arr);

    if (r->with_ended) {
        ended = vsb_ended_list(r->tenant, r->agent, &truncated);
        if (ended == NULL) {
            json_decref(reply);
            vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }
        json_object_set_new(reply, "ended", ended);
        json_object_set_new(reply, "ended_truncated", json_boolean(truncated));
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_list_op = {
    .name = VSB_OP_LIST,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_list,
    .handler = vsb_op_list,
};


/* ---- create ------------------------------------------------------ */


/* "limits": each the request names, within max_*; each it leaves out, the
 * default at most r->caps (vsb_req_caps() first) */
static int
vsb_req_limits(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        VSB_LIMIT_MEMORY_MB, VSB_LIMIT_PIDS, VSB_LIMIT_CPU_PERCENT,
        VSB_LIMIT_DISK_MB, VSB_LIMIT_TIMEOUT_S, VSB_LIMIT_OUTPUT_BYTES, NULL
    };
    struct {
        const char  *name;
        uint64_t    *val;
        uint64_t     max;
        unsigned     cap;
    } lim[] = {
        { VSB_LIMIT_MEMORY_MB, &r->limits.memory_mb, cf->max.memory_mb,
          VSB_CAP_MEMORY_MB },
        { VSB_LIMIT_PIDS, &r->limits.pids, cf->max.pids, VSB_CAP_PIDS },
        { VSB_LIMIT_CPU_PERCENT, &r->limits.cpu_percent,
          cf->max.cpu_percent, VSB_CAP_CPU_PERCENT },
        { VSB_LIMIT_DISK_MB, &r->limits.disk_mb, cf->max.disk_mb,
          VSB_CAP_DISK_MB },
        { VSB_LIMIT_TIMEOUT_S, &r->limits.timeout_s, cf->max.timeout_s,
          VSB_CAP_TIMEOUT_S },
        { VSB_LIMIT_OUTPUT_BYTES, &r->limits.output_bytes,
          cf->max.output_bytes, VSB_CAP_OUTPUT_BYTES },
    };
    json_t  *obj;
    size_t   i;

    r->limits = cf->def;

    obj = json_object_get(root, "limits");

    if (obj != NULL && !json_is_object(obj)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "limits",
                             "\"limits\" must be an object");
    }

    if (obj != NULL && vsb_req_fields(obj, allowed, "limits", e) != 0) {
        return -1;
    }

    for (i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
        /* left to the helper: its default, at most the gateway's cap */
        if (json_object_get(obj, lim[i].name) == NULL) {
            *lim[i].val = vsb_capped(*lim[i].val, r->caps[lim[i].cap]);
            continue;
        }

        if (vsb_req_uint(obj, lim[i].name, 0, lim[i].val, e) != 0) {
            return -1;
        }
        if (*lim[i].val > lim[i].max) {
            return vsb_req_over(e, lim[i].name, lim[i].name, *lim[i].val,
                                lim[i].max);
        }
    }

    return 0;
}


static int
vsb_req_create(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "profile", "limits", "ttl_s",
        "idle_s", "network", "env", "metadata", "from_snapshot", "caps", NULL
    };
    const char  *s;

    if (vsb_req_fields(root, allowed, "create", e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
        || vsb_req_string(root, "profile", 0, VSB_PROFILE_NAME_LEN, &s, e)
           != 0)
    {
        return -1;
    }

    r->profile = vsb_config_profile(cf, s ? s : "default");
    if (r->profile == NULL) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "profile",
                             "no profile named \"%s\"", s);
    }
    r->profile_set = s != NULL;

    /* a fork: its file system is the snapshot's, its profile too */
    if (vsb_req_string(root, "from_snapshot", 0, VSB_SNAPSHOT_ID_LEN,
                       &r->snapshot, e) != 0)
    {
        return -1;
    }
    if (r->snapshot != NULL && !vsb_snap_id_ok(r->snapshot)) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "from_snapshot",
                             "\"from_snapshot\" must be \"snap-\" and 24 "
                             "lowercase hex digits");
    }

    /* what the request leaves to the helper's defaults is at most the
     * gateway's caps (its policy's ceilings) */
    if (vsb_req_caps(root, VSB_CAPS_ALL, r, e) != 0
        || vsb_req_limits(root, cf, r, e) != 0)
    {
        return -1;
    }

    r->ttl_s = vsb_capped(cf->default_ttl_s, r->caps[VSB_CAP_TTL_S]);
    if (vsb_req_uint(root, "ttl_s", 0, &r->ttl_s, e) != 0) {
        return -1;
    }
    if (r->ttl_s > cf->max_ttl_s) {
        return vsb_req_over(e, "ttl_s", VSB_LIMIT_TTL_S, r->ttl_s,
                            cf->max_ttl_s);
    }

    r->idle_s = vsb_capped(cf->default_idle_s, r->caps[VSB_CAP_IDLE_S]);
    if (vsb_req_uint(root, "idle_s", 0, &r->idle_s, e) != 0) {
        return -1;
    }
    if (r->idle_s > cf->max_idle_s) {
        return vsb_req_over(e, "idle_s", VSB_LIMIT_IDLE_S, r->idle_s,
                            cf->max_idle_s);
    }

    if (vsb_egress_req_network(root, cf, r, e) != 0) {
        return -1;
    }

    if (vsb_req_env(root, "env", &r->env, e) != 0) {
        return -1;
    }

    if (vsb_req_metadata(root, &r->metadata, e) != 0) {
        return -1;
    }

    return 0;
}


/* sb->dir/baseline.json: its layer's manifest at the end of its create
 * (outside its root: the workload never sees it). */
static int
vsb_sandbox_baseline(vsb_sandbox_t *sb, char *err, size_t errlen)
{
    char             layer[PATH_MAX + 16], out[PATH_MAX + 16];
    vsb_mf_bounds_t  b;

    memset(&b, 0, sizeof(b));
    b.max_files = vsb_cf.snapshot_max_files;
    b.max_bytes = (uint64_t) sb->limits.disk_mb << 20;
    b.host_uid = sb->host_uid;

    snprintf(layer, sizeof(layer), "%s/%s", sb->dir,
             sb->overlay != NULL || sb->from_snap != NULL ? "upper" : "root");
    snprintf(out, sizeof(out), "%s/baseline.json", sb->dir);

    return vsb_changes_baseline(layer, out, &b, err, errlen);
}


static void
vsb_created(vsb_sandbox_t *sb)
{
    vsb_log(VSB_LOG_INFO, "created sandbox %s for tenant %s agent %s "
            "(uid %u, profile %s, %llu MiB disk, ttl %llu s, idle %llu s, "
            "network %s)",
            sb->id, sb->tenant, sb->agent, (unsigned) sb->host_uid,
            sb->profile->name, (unsigned long long) sb->limits.disk_mb,
            (unsigned long long) sb->ttl_s, (unsigned long long) sb->idle_s,
            sb->egress != NULL ? "allowlist" : "none");
}


/* An allowlist sandbox's create: the proxy serves it, or it could not. */
static void
vsb_create_served(vsb_sandbox_t *sb, void *data, const char *error,
    const char *detail)
{
    vsb_pending_t  *p = data;
    vsb_conn_t     *c = p->conn;
    vsb_error_t     e;
    json_t         *reply;

    if (c != NULL) {
        c->op = NULL;
    }

    if (error == NULL && vsb_entry(sb)->state == VSB_SB_READY) {
        vsb_created(sb);
        if (c != NULL) {
            reply = vsb_ok(vsb_pending_rid(p));
            if (reply != NULL) {
                json_object_set_new(reply, "sandbox",
                                    vsb_sandbox_json(sb, 0, 1));
            }
            vsb_conn_reply(c, reply, NULL, 0);
        }
        vsb_pending_free(p);
        return;
    }

    memset(&e, 0, sizeof(e));
    vsb_error_set(&e, error ? error : VSB_E_BUSY, "network", "%s",
                  detail ? detail : "the sandbox ended while being created");
    vsb_log(VSB_LOG_ERR, "sandbox %s: create failed: %s", sb->id, e.detail);
    if (vsb_entry(sb)->state == VSB_SB_READY) {
        vsb_destroy_start(sb);
    }
    if (c != NULL) {
        vsb_conn_reply_error(c, vsb_pending_rid(p), &e);
    }
    vsb_pending_free(p);
}


static void
vsb_op_create(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    vsb_pending_t  *p;
    const char     *step;
    char            err[512], err2[512];

    if (vsb_registry_count() >= vsb_cf.max_sandboxes) {
        vsb_error_set(e, VSB_E_CAPACITY, NULL,
                      "%llu sandboxes exist, the maximum",
                      (unsigned long long) vsb_cf.max_sandboxes);
        e->limit = VSB_LIMIT_SANDBOXES;
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    sb = vsb_registry_alloc();
    if (sb == NULL) {
        if (errno == EAGAIN) {
            vsb_error_set(e, VSB_E_CAPACITY, NULL, "no free sandbox slot");
            e->limit = VSB_LIMIT_SANDBOXES;
        } else {
            vsb_error_set(e, VSB_E_INTERNAL, NULL, "allocating a sandbox: %s",
                          strerror(errno));
        }
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    snprintf(sb->tenant, sizeof(sb->tenant), "%s", r->tenant);
    snprintf(sb->agent, sizeof(sb->agent), "%s", r->agent);
    sb->profile = r->profile;
    sb->limits = r->limits;
    sb->ttl_s = r->ttl_s;
    sb->idle_s = r->idle_s;
    /* the lifetime clock: its ttl_s counts from here */
    sb->created_at = vsb_life_now();
    sb->created_ms = vsb_life_now_ms();
    sb->expires_at = sb->created_at + (time_t) r->ttl_s;
    sb->env = r->env ? json_deep_copy(r->env) : json_object();
    sb->metadata = r->metadata ? json_deep_copy(r->metadata) : NULL;

    if (sb->env == NULL || (r->metadata != NULL && sb->metadata == NULL)) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        goto failed;
    }

    if (r->snapshot != NULL && vsb_snapshot_fork(sb, r, e) != 0) {
        goto failed;
    }

    if (vsb_storage_create(sb, err, sizeof(err)) != 0) {
        sb->dir[0] = '\0';
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "storage: %s", err);
        goto failed;
    }

    if (vsb_overlay_create(sb, e) != 0) {
        goto failed_storage;
    }

    /* a fork's root is the snapshot's, prepared when it was made */
    if (sb->from_snap == NULL
        && vsb_rootfs_prepare(sb, err, sizeof(err)) != 0)
    {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "rootfs: %s", err);
        goto failed_storage;
    }

    if (vsb_netns_create(sb, err, sizeof(err)) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "network: %s", err);
        goto failed_storage;
    }

    if (vsb_egress_sandbox_create(sb, r->network, e) != 0) {
        goto failed_netns;
    }

    /* what "changes since created" compares with: its layer now, its
     * files all laid out (the resolver's too) */
    if (vsb_sandbox_baseline(sb, err, sizeof(err)) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "baseline: %s", err);
        goto failed_netns;
    }

    sb->cgroup = vsb_cgroup_create(NULL, sb->id, &sb->limits, err,
                                   sizeof(err));
    if (sb->cgroup == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "cgroup: %s", err);
        goto failed_netns;
    }

    vsb_registry_insert(sb);

    /* on disk before anyone knows its id: a crash from here on leaves a
     * state file, and the next run ends the sandbox on record */
    if (vsb_sbstate_write(sb, err, sizeof(err)) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "state file: %s", err);
        vsb_log(VSB_LOG_ERR, "sandbox %s: create failed: %s", sb->id,
                e->detail);
        vsb_destroy_start(sb);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_lifetime_start(sb);

    if (sb->egress != NULL) {
        /* the reply waits until the proxy serves the sandbox */
        p = vsb_pending_new(VSB_PENDING_CREATE, c, r->request_id);
        if (p == NULL) {
            vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
            vsb_destroy_start(sb);
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }
        p->sb = sb;
        c->op = p;
        vsb_egress_sandbox_add(sb, vsb_create_served, p);
        return;
    }

    vsb_created(sb);
    vsb_reply_sandbox(c, r, sb, 0);
    return;

failed_netns:

    vsb_egress_sandbox_free(sb);
    vsb_netns_release(sb);
    if (vsb_netns_remove(sb, err2, sizeof(err2)) != 0) {
        step = "network";
        goto failed_undo;
    }

failed_storage:

    if (vsb_storage_delete(sb, &step, err2, sizeof(err2)) != 0) {
        goto failed_undo;
    }

    goto failed;

failed_undo:

    /* Keep the slot: its uid range and files are still in use; a
     * destroy may retry. */
    vsb_log(VSB_LOG_ERR, "sandbox %s: undoing create failed (%s): %s",
            sb->id, step, err2);
    vsb_entry(sb)->state = VSB_SB_FAILED;
    vsb_registry_insert(sb);
    vsb_log(VSB_LOG_ERR, "sandbox %s: create failed: %s", sb->id, e->detail);
    vsb_conn_reply_error(c, r->request_id, e);
    return;

failed:

    vsb_log(VSB_LOG_ERR, "sandbox %s: create failed: %s", sb->id, e->detail);
    vsb_registry_free(sb);
    vsb_conn_reply_error(c, r->request_id, e);
}


const vsb_op_t  vsb_create_op = {
    .name = VSB_OP_CREATE,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_create,
    .handler = vsb_op_create,
};
