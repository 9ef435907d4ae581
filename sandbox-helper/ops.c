/*
 * Protocol ops and the sandbox lifecycle.  Handlers validate with
 * request.c, act, and reply; exec and destroy reply later, from the loop.
 * Destruction never assumes: it kills, then polls (timers, not sleeps)
 * until no process is left, and only then removes cgroups and files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vsb_cgroup.h"
#include "vsb_exec.h"
#include "vsb_files.h"
#include "vsb_log.h"
#include "vsb_ops.h"
#include "vsb_registry.h"
#include "vsb_request.h"
#include "vsb_rootfs.h"
#include "vsb_storage.h"

#define VSB_DESTROY_BOUND_MS  10000
#define VSB_DESTROY_POLL_MS   20
#define VSB_DESTROY_REKILL_MS 500

typedef enum {
    VSB_PENDING_EXEC = 1,
    VSB_PENDING_DESTROY
} vsb_pending_kind_t;

/* A request whose reply comes later.  conn is NULL once the client left. */
typedef struct vsb_pending_s  vsb_pending_t;

struct vsb_pending_s {
    vsb_pending_kind_t   kind;
    vsb_conn_t          *conn;
    char                 request_id[VSB_MAX_ID_LEN + 1];
    unsigned             has_request_id:1;
    unsigned             in_start:1;    /* inside vsb_exec_start() */
    unsigned             finished:1;    /* done came during start */
    unsigned             cancelled:1;

    vsb_sandbox_t       *sb;
    vsb_exec_t          *ex;
    json_t              *root;          /* keeps argv/env alive */

    vsb_pending_t       *next;          /* vsb_execs list */
};

static vsb_pending_t             *vsb_execs;
static volatile sig_atomic_t     *vsb_shutdown_done;

static void vsb_destroy_start(vsb_sandbox_t *sb);


static const char *
vsb_state_name(const vsb_sandbox_t *sb)
{
    switch (vsb_entry(sb)->state) {
    case VSB_SB_READY:
        return "ready";
    case VSB_SB_DESTROYING:
        return "destroying";
    case VSB_SB_FAILED:
        return "termination_failed";
    }
    return "unknown";
}


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


static unsigned
vsb_execs_running(const vsb_sandbox_t *sb)
{
    unsigned  mine = vsb_entry(sb)->execs_mine;

    return sb->execs_running > mine ? sb->execs_running : mine;
}


static json_t *
vsb_sandbox_json(vsb_sandbox_t *sb, int usage, int metadata)
{
    vsb_cgroup_usage_t  u;
    json_t             *j;

    j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:I}",
                  "id", sb->id,
                  "tenant", sb->tenant,
                  "agent", sb->agent,
                  "profile", sb->profile->name,
                  "state", vsb_state_name(sb),
                  "network", "none",
                  "limits", vsb_limits_json(&sb->limits),
                  "ttl_s", (json_int_t) sb->ttl_s,
                  "created_at", (json_int_t) sb->created_at,
                  "expires_at", (json_int_t) sb->expires_at,
                  "execs_running", (json_int_t) vsb_execs_running(sb));
    if (j == NULL) {
        return NULL;
    }

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


/* {"ok":true, ...} with request_id echoed. */
static json_t *
vsb_ok(const char *request_id)
{
    json_t  *r;

    r = json_pack("{s:b}", "ok", 1);
    if (r != NULL && request_id != NULL) {
        json_object_set_new(r, "request_id", json_string(request_id));
    }

    return r;
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


static vsb_pending_t *
vsb_pending_new(vsb_pending_kind_t kind, vsb_conn_t *c, const char *rid)
{
    vsb_pending_t  *p;

    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }

    p->kind = kind;
    p->conn = c;
    if (rid != NULL) {
        snprintf(p->request_id, sizeof(p->request_id), "%s", rid);
        p->has_request_id = 1;
    }

    return p;
}


#define vsb_pending_rid(p)  ((p)->has_request_id ? (p)->request_id : NULL)


/* ---- ping, status, list ------------------------------------------- */

static void
vsb_op_ping(vsb_conn_t *c, const vsb_request_t *r)
{
    json_t  *reply;

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "version",
                            json_integer(VSB_PROTOCOL_VERSION));
        json_object_set_new(reply, "cgroup",
                            json_string(vsb_cgroup_mode() == VSB_CGROUP_V1
                                        ? "v1" : "v2"));
        json_object_set_new(reply, "sandboxes",
                            json_integer(vsb_registry_count()));
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


static vsb_sandbox_t *
vsb_find(const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;

    sb = vsb_registry_find(r->tenant, r->agent, r->id);
    if (sb == NULL) {
        vsb_error_set(e, VSB_E_NOT_FOUND, "id", "no sandbox %s", r->id);
    }

    return sb;
}


/* For ops that need a working sandbox. */
static vsb_sandbox_t *
vsb_find_ready(const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;

    sb = vsb_find(r, e);
    if (sb != NULL && vsb_entry(sb)->state != VSB_SB_READY) {
        vsb_error_set(e, VSB_E_BUSY, "id", "sandbox %s is %s", sb->id,
                      vsb_state_name(sb));
        return NULL;
    }

    return sb;
}


static void
vsb_op_status(vsb_conn_t *c, const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;

    sb = vsb_find(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_reply_sandbox(c, r, sb, 1);
}


static void
vsb_op_list(vsb_conn_t *c, const vsb_request_t *r)
{
    vsb_sandbox_t  *sb;
    json_t         *reply, *arr;

    reply = vsb_ok(r->request_id);
    arr = json_array();

    if (reply == NULL || arr == NULL) {
        json_decref(reply);
        json_decref(arr);
        vsb_conn_reply(c, NULL, NULL, 0);
        return;
    }

    /* Without metadata: a long list must still fit VSB_MAX_JSON. */
    for (sb = vsb_registry_first(); sb != NULL; sb = sb->next) {
        if (strcmp(sb->tenant, r->tenant) != 0
            || (r->agent != NULL && strcmp(sb->agent, r->agent) != 0))
        {
            continue;
        }
        json_array_append_new(arr, vsb_sandbox_json(sb, 0, 0));
    }

    json_object_set_new(reply, "sandboxes", arr);
    vsb_conn_reply(c, reply, NULL, 0);
}


/* ---- create ------------------------------------------------------- */

static void
vsb_ttl_expired(vsb_timer_t *t)
{
    vsb_sandbox_t  *sb = t->data;

    vsb_log(VSB_LOG_INFO, "sandbox %s: ttl of %llu s expired, destroying",
            sb->id, (unsigned long long) sb->ttl_s);
    vsb_destroy_start(sb);
}


static void
vsb_op_create(vsb_conn_t *c, const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
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
    sb->created_at = time(NULL);
    sb->expires_at = sb->created_at + (time_t) r->ttl_s;
    sb->env = r->env ? json_deep_copy(r->env) : json_object();
    sb->metadata = r->metadata ? json_deep_copy(r->metadata) : NULL;

    if (sb->env == NULL || (r->metadata != NULL && sb->metadata == NULL)) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        goto failed;
    }

    if (vsb_storage_create(sb, err, sizeof(err)) != 0) {
        sb->dir[0] = '\0';
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "storage: %s", err);
        goto failed;
    }

    if (vsb_rootfs_prepare(sb, err, sizeof(err)) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "rootfs: %s", err);
        goto failed_storage;
    }

    sb->cgroup = vsb_cgroup_create(NULL, sb->id, &sb->limits, err,
                                   sizeof(err));
    if (sb->cgroup == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "cgroup: %s", err);
        goto failed_storage;
    }

    sb->ttl_timer.handler = vsb_ttl_expired;
    sb->ttl_timer.data = sb;
    vsb_timer_add(&sb->ttl_timer, sb->ttl_s * 1000);

    vsb_registry_insert(sb);

    vsb_log(VSB_LOG_INFO, "created sandbox %s for tenant %s agent %s "
            "(uid %u, profile %s, %llu MiB disk, ttl %llu s)", sb->id,
            sb->tenant, sb->agent, (unsigned) sb->host_uid, sb->profile->name,
            (unsigned long long) sb->limits.disk_mb,
            (unsigned long long) sb->ttl_s);

    vsb_reply_sandbox(c, r, sb, 0);
    return;

failed_storage:

    if (vsb_storage_delete(sb, &step, err2, sizeof(err2)) != 0) {
        /* Keep the slot: its uid range and files are still in use. */
        vsb_log(VSB_LOG_ERR, "sandbox %s: undoing create failed (%s): %s",
                sb->id, step, err2);
        vsb_entry(sb)->state = VSB_SB_FAILED;
        vsb_registry_insert(sb);
        vsb_log(VSB_LOG_ERR, "sandbox %s: create failed: %s", sb->id,
                e->detail);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

failed:

    vsb_log(VSB_LOG_ERR, "sandbox %s: create failed: %s", sb->id, e->detail);
    vsb_registry_free(sb);
    vsb_conn_reply_error(c, r->request_id, e);
}


/* ---- exec --------------------------------------------------------- */

static void
vsb_pending_free(vsb_pending_t *p)
{
    json_decref(p->root);
    free(p);
}


static void
vsb_exec_unlink(vsb_pending_t *p)
{
    vsb_pending_t  **pp;

    for (pp = &vsb_execs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            return;
        }
    }
}


static json_t *
vsb_exec_reply(const vsb_pending_t *p, const vsb_exec_result_t *res)
{
    json_t  *reply;

    reply = vsb_ok(vsb_pending_rid(p));
    if (reply == NULL) {
        return NULL;
    }

    json_object_set_new(reply, "exit_code",
                        res->exited ? json_integer(res->exit_code)
                                    : json_null());
    json_object_set_new(reply, "signal",
                        res->signaled ? json_integer(res->signo)
                                      : json_null());
    json_object_set_new(reply, "timed_out", json_boolean(res->timed_out));
    json_object_set_new(reply, "oom_killed", json_boolean(res->oom_killed));
    json_object_set_new(reply, "stdout_len",
                        json_integer((json_int_t) res->out_len));
    json_object_set_new(reply, "stderr_len",
                        json_integer((json_int_t) res->err_len));
    json_object_set_new(reply, "stdout_truncated",
                        json_boolean(res->out_truncated));
    json_object_set_new(reply, "stderr_truncated",
                        json_boolean(res->err_truncated));
    json_object_set_new(reply, "usage",
        json_pack("{s:I, s:I, s:I, s:I}",
                  "cpu_ms", (json_int_t) res->cpu_ms,
                  "wall_ms", (json_int_t) res->wall_ms,
                  "peak_memory_bytes", (json_int_t) res->peak_memory_bytes,
                  "peak_pids", (json_int_t) res->peak_pids));

    return reply;
}


static void
vsb_exec_done(vsb_exec_t *ex, const vsb_exec_result_t *res, void *data)
{
    vsb_pending_t  *p = data;
    vsb_conn_t     *c;
    vsb_error_t     e;
    unsigned char  *payload = NULL;
    size_t          plen = 0;
    json_t         *reply;

    vsb_exec_unlink(p);
    if (vsb_entry(p->sb)->execs_mine > 0) {
        vsb_entry(p->sb)->execs_mine--;
    }

    if (res->error != NULL) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: exec failed: %s", p->sb->id,
                res->detail);
    } else {
        vsb_log(VSB_LOG_INFO, "sandbox %s: exec done: exit %d signal %d%s%s "
                "(%llu ms)", p->sb->id, res->exited ? res->exit_code : -1,
                res->signaled ? res->signo : 0,
                res->timed_out ? ", timed out" : "",
                res->oom_killed ? ", oom killed" : "",
                (unsigned long long) res->wall_ms);
    }

    c = p->conn;
    if (c != NULL) {
        c->op = NULL;
        p->conn = NULL;

        if (res->error != NULL) {
            memset(&e, 0, sizeof(e));
            vsb_error_set(&e, VSB_E_EXEC_FAILED, NULL, "%s", res->detail);
            vsb_conn_reply_error(c, vsb_pending_rid(p), &e);

        } else {
            plen = res->out_len + res->err_len;
            payload = malloc(plen ? plen : 1);
            reply = payload ? vsb_exec_reply(p, res) : NULL;

            if (reply == NULL) {
                free(payload);
                payload = NULL;
                plen = 0;
            } else {
                if (res->out_len) {
                    memcpy(payload, res->out, res->out_len);
                }
                if (res->err_len) {
                    memcpy(payload + res->out_len, res->err, res->err_len);
                }
            }

            vsb_conn_reply(c, reply, payload, plen);
        }
    }

    if (p->in_start) {
        p->finished = 1;
        return;
    }

    vsb_pending_free(p);
}


static void
vsb_op_exec(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t       *sb;
    vsb_pending_t       *p;
    vsb_exec_request_t   req;
    char                 err[256];

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_execs_running(sb) >= vsb_cf.max_execs_per_sandbox) {
        vsb_error_set(e, VSB_E_BUSY, NULL,
                      "sandbox %s already runs %u execs, the maximum", sb->id,
                      vsb_execs_running(sb));
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    p = vsb_pending_new(VSB_PENDING_EXEC, c, r->request_id);
    if (p == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    p->sb = sb;
    p->root = json_incref(root);

    memset(&req, 0, sizeof(req));
    req.argv = r->argv;
    req.cwd = r->cwd;
    req.env = r->env;
    req.timeout_ms = (r->timeout_s ? r->timeout_s : sb->limits.timeout_s)
                     * 1000;
    req.stdin_data = payload;
    req.stdin_len = payload_len;

    p->next = vsb_execs;
    vsb_execs = p;
    vsb_entry(sb)->execs_mine++;
    c->op = p;

    p->in_start = 1;
    err[0] = '\0';
    p->ex = vsb_exec_start(sb, &req, vsb_exec_done, p, err, sizeof(err));
    p->in_start = 0;

    if (p->finished) {
        /* done already ran (and replied) inside vsb_exec_start(). */
        vsb_pending_free(p);
        return;
    }

    if (p->ex == NULL) {
        vsb_exec_unlink(p);
        vsb_entry(sb)->execs_mine--;
        c->op = NULL;
        vsb_pending_free(p);
        vsb_log(VSB_LOG_INFO, "sandbox %s: exec could not start: %s", sb->id,
                err);
        vsb_error_set(e, VSB_E_EXEC_FAILED, NULL, "%s", err);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_log(VSB_LOG_DEBUG, "sandbox %s: exec %s started", sb->id,
            json_string_value(json_array_get(r->argv, 0)));
}


/* ---- write_file, read_file ---------------------------------------- */

static void
vsb_op_write_file(vsb_conn_t *c, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    char            sha[VSB_SHA256_HEX_LEN + 1];
    json_t         *reply;

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (payload_len > vsb_cf.max_file_bytes) {
        vsb_error_set(e, VSB_E_FILE_TOO_LARGE, NULL,
                      "%zu bytes exceed max_file_bytes %llu", payload_len,
                      (unsigned long long) vsb_cf.max_file_bytes);
        e->limit = VSB_LIMIT_FILE_BYTES;
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_files_write(sb, r->path, r->mode, payload, payload_len, sha, e)
        != 0)
    {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "path", json_string(r->path));
        json_object_set_new(reply, "size", json_integer((json_int_t)
                                                        payload_len));
        json_object_set_new(reply, "sha256", json_string(sha));
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


static void
vsb_op_read_file(vsb_conn_t *c, const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    char            sha[VSB_SHA256_HEX_LEN + 1];
    unsigned char  *data;
    size_t          len;
    json_t         *reply;

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_files_read(sb, r->path, vsb_cf.max_file_bytes, &data, &len, sha,
                       e) != 0)
    {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    /* replies nobody reads must not pile up without bound */
    if (!vsb_server_can_buffer(len)) {
        free(data);
        vsb_error_set(e, VSB_E_BUSY, NULL, "the helper is buffering too "
                      "many replies; retry later");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "path", json_string(r->path));
        json_object_set_new(reply, "size", json_integer((json_int_t) len));
        json_object_set_new(reply, "sha256", json_string(sha));
    }

    vsb_conn_reply(c, reply, data, len);
}


/* ---- destroy ------------------------------------------------------ */

static void
vsb_shutdown_check(void)
{
    vsb_sandbox_t  *sb;

    if (vsb_shutdown_done == NULL) {
        return;
    }

    for (sb = vsb_registry_first(); sb != NULL; sb = sb->next) {
        if (vsb_entry(sb)->state == VSB_SB_DESTROYING) {
            return;
        }
    }

    *vsb_shutdown_done = 1;
}


static void
vsb_destroy_reply(vsb_sandbox_t *sb, const vsb_error_t *e)
{
    vsb_pending_t  *p = vsb_entry(sb)->destroy_waiter;
    json_t         *reply;

    vsb_entry(sb)->destroy_waiter = NULL;

    if (p == NULL) {
        return;
    }

    if (p->conn != NULL) {
        p->conn->op = NULL;

        if (e != NULL) {
            vsb_conn_reply_error(p->conn, vsb_pending_rid(p), e);

        } else {
            reply = vsb_ok(vsb_pending_rid(p));
            if (reply != NULL) {
                json_object_set_new(reply, "id", json_string(sb->id));
                json_object_set_new(reply, "state",
                                    json_string("terminated"));
                json_object_set_new(reply, "confirmed",
                    json_pack("{s:b, s:b, s:b, s:b}", "processes", 1,
                              "cgroups", 1, "mounts", 1, "files", 1));
            }
            vsb_conn_reply(p->conn, reply, NULL, 0);
        }
    }

    vsb_pending_free(p);
}


static void
vsb_destroy_fail(vsb_sandbox_t *sb, const char *step, const char *detail)
{
    vsb_error_t  e;

    memset(&e, 0, sizeof(e));
    vsb_error_set(&e, VSB_E_TERMINATION_FAILED, NULL, "%s", detail);
    e.step = step;

    vsb_entry(sb)->state = VSB_SB_FAILED;
    vsb_log(VSB_LOG_ERR, "sandbox %s: termination failed at %s: %s", sb->id,
            step, detail);

    vsb_destroy_reply(sb, &e);
    vsb_shutdown_check();
}


static void
vsb_destroy_finish(vsb_sandbox_t *sb)
{
    const char  *step;
    char         err[512];

    if (sb->cgroup != NULL) {
        if (vsb_cgroup_destroy(sb->cgroup, err, sizeof(err)) != 0) {
            vsb_destroy_fail(sb, "cgroups", err);
            return;
        }
        sb->cgroup = NULL;
    }

    if (vsb_storage_delete(sb, &step, err, sizeof(err)) != 0) {
        vsb_destroy_fail(sb, step ? step : "files", err);
        return;
    }

    vsb_log(VSB_LOG_INFO, "destroyed sandbox %s (tenant %s agent %s): "
            "processes, cgroups, mounts and files confirmed gone", sb->id,
            sb->tenant, sb->agent);

    vsb_destroy_reply(sb, NULL);
    vsb_registry_free(sb);
    vsb_shutdown_check();
}


static void
vsb_destroy_poll(vsb_timer_t *t)
{
    vsb_sandbox_t  *sb = t->data;
    vsb_entry_t    *en = vsb_entry(sb);
    uint64_t        now;
    int             populated = 0;
    char            why[256];

    if (sb->cgroup != NULL) {
        populated = vsb_cgroup_populated(sb->cgroup);
    }

    if (vsb_execs_running(sb) == 0 && populated == 0) {
        vsb_destroy_finish(sb);
        return;
    }

    now = vsb_now_ms();

    if (now >= en->destroy_deadline) {
        snprintf(why, sizeof(why), "after %d ms: %u execs still running, "
                 "cgroup %s", VSB_DESTROY_BOUND_MS, vsb_execs_running(sb),
                 populated == 1 ? "still populated"
                 : populated == 0 ? "empty" : "unreadable");
        vsb_destroy_fail(sb, "processes", why);
        return;
    }

    /* A process forked between kill and check: kill again. */
    if (populated != 0 && sb->cgroup != NULL
        && (en->destroy_deadline - now) % VSB_DESTROY_REKILL_MS
           < VSB_DESTROY_POLL_MS)
    {
        (void) vsb_cgroup_kill(sb->cgroup);
    }

    vsb_timer_add(t, VSB_DESTROY_POLL_MS);
}


static void
vsb_destroy_start(vsb_sandbox_t *sb)
{
    vsb_entry_t    *en = vsb_entry(sb);
    vsb_pending_t  *p, *next;

    en->state = VSB_SB_DESTROYING;
    vsb_timer_del(&sb->ttl_timer);

    for (p = vsb_execs; p != NULL; p = next) {
        next = p->next;
        if (p->sb == sb && p->ex != NULL && !p->cancelled) {
            p->cancelled = 1;
            vsb_exec_cancel(p->ex);
        }
    }

    if (sb->cgroup != NULL && vsb_cgroup_kill(sb->cgroup) != 0) {
        vsb_log(VSB_LOG_WARN, "sandbox %s: cgroup kill failed, will retry",
                sb->id);
    }

    en->destroy_deadline = vsb_now_ms() + VSB_DESTROY_BOUND_MS;
    en->destroy_timer.handler = vsb_destroy_poll;
    en->destroy_timer.data = sb;
    vsb_timer_add(&en->destroy_timer, 0);
}


static void
vsb_op_destroy(vsb_conn_t *c, const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    vsb_pending_t  *p;

    sb = vsb_find(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_entry(sb)->state == VSB_SB_DESTROYING) {
        vsb_error_set(e, VSB_E_BUSY, "id", "sandbox %s is being destroyed",
                      sb->id);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    p = vsb_pending_new(VSB_PENDING_DESTROY, c, r->request_id);
    if (p == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    p->sb = sb;
    vsb_entry(sb)->destroy_waiter = p;
    c->op = p;

    vsb_log(VSB_LOG_INFO, "sandbox %s: destroy requested by uid %u",
            sb->id, (unsigned) c->uid);
    vsb_destroy_start(sb);
}


/* ---- dispatch ----------------------------------------------------- */

void
vsb_ops_dispatch(vsb_conn_t *c, const char *json, size_t json_len,
    const unsigned char *payload, size_t payload_len)
{
    json_t         *root;
    json_error_t    jerr;
    vsb_request_t   r;
    vsb_error_t     e;

    memset(&e, 0, sizeof(e));

    root = json_loadb(json, json_len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        vsb_error_set(&e, VSB_E_BAD_JSON, NULL, "%s at byte %d", jerr.text,
                      jerr.position);
        vsb_conn_reply_error(c, NULL, &e);
        return;
    }

    if (vsb_request_parse(root, payload_len, &vsb_cf, &r, &e) != 0) {
        vsb_log(VSB_LOG_DEBUG, "connection %lu: %s: %s", c->n, e.error,
                e.detail);
        vsb_conn_reply_error(c, r.request_id, &e);
        json_decref(root);
        return;
    }

    /* While stopping, nothing new may start: it would outlive us. */
    if (vsb_shutdown_done != NULL && r.op != VSB_REQ_PING
        && r.op != VSB_REQ_STATUS && r.op != VSB_REQ_LIST)
    {
        vsb_error_set(&e, VSB_E_BUSY, NULL, "the helper is shutting down");
        vsb_conn_reply_error(c, r.request_id, &e);
        json_decref(root);
        return;
    }

    switch (r.op) {
    case VSB_REQ_PING:
        vsb_op_ping(c, &r);
        break;
    case VSB_REQ_CREATE:
        vsb_op_create(c, &r, &e);
        break;
    case VSB_REQ_STATUS:
        vsb_op_status(c, &r, &e);
        break;
    case VSB_REQ_LIST:
        vsb_op_list(c, &r);
        break;
    case VSB_REQ_EXEC:
        vsb_op_exec(c, root, &r, payload, payload_len, &e);
        break;
    case VSB_REQ_WRITE_FILE:
        vsb_op_write_file(c, &r, payload, payload_len, &e);
        break;
    case VSB_REQ_READ_FILE:
        vsb_op_read_file(c, &r, &e);
        break;
    case VSB_REQ_DESTROY:
        vsb_op_destroy(c, &r, &e);
        break;
    }

    json_decref(root);
}


void
vsb_ops_detach(void *op)
{
    vsb_pending_t  *p = op;

    p->conn = NULL;

    if (p->kind == VSB_PENDING_EXEC && p->ex != NULL && !p->cancelled) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: client gone, cancelling exec",
                p->sb->id);
        p->cancelled = 1;
        vsb_exec_cancel(p->ex);
    }

    /* A destroy goes on; its reply is dropped when it ends. */
}


void
vsb_ops_shutdown(volatile sig_atomic_t *done)
{
    vsb_sandbox_t  *sb, *next;

    vsb_shutdown_done = done;

    for (sb = vsb_registry_first(); sb != NULL; sb = next) {
        next = sb->next;
        if (vsb_entry(sb)->state != VSB_SB_DESTROYING) {
            vsb_log(VSB_LOG_INFO, "shutdown: destroying sandbox %s", sb->id);
            vsb_destroy_start(sb);
        }
    }

    vsb_shutdown_check();
}
