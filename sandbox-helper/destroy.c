/*
 * Ending sandboxes: the destroy op, TTL expiry and shutdown all come
 * here.  Destruction never assumes: it kills, then polls (timers, not
 * sleeps) until no process is left, and only then removes cgroups and
 * (in a teardown process, teardown.c) files and mounts; the reply waits
 * for that confirmation and says what was confirmed, or which step
 * failed.  Other peers are served meanwhile.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_cgroup.h"
#include "vsb_destroy.h"
#include "vsb_egress.h"
#include "vsb_ended.h"
#include "vsb_lifeclock.h"
#include "vsb_lifetime.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_registry.h"
#include "vsb_sbstate.h"
#include "vsb_teardown.h"

#define VSB_DESTROY_BOUND_MS  10000
#define VSB_DESTROY_POLL_MS   20
#define VSB_DESTROY_REKILL_MS 500

static volatile sig_atomic_t  *vsb_shutdown_done;


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
    vsb_pending_t      *p = vsb_entry(sb)->destroy_waiter;
    json_t             *reply;
    const vsb_ended_t  *en;

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
                    json_pack("{s:b, s:b, s:b, s:b, s:b}", "processes", 1,
                              "cgroups", 1, "network", 1, "mounts", 1,
                              "files", 1));
                en = vsb_ended_find(sb->tenant, sb->agent, sb->id);
                if (en != NULL) {
                    json_object_set_new(reply, "ended", vsb_ended_json(en));
                }
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

    /* on record as termination_failed while it stays; its state file
     * stays too, so that a restart tries again */
    vsb_ended_sandbox(sb, step, detail, vsb_now_ms() - sb->end.start_ms);

    vsb_destroy_reply(sb, &e);
    vsb_shutdown_check();
}


/* The teardown process has ended: storage is confirmed gone, or not. */
static void
vsb_destroy_files_done(vsb_sandbox_t *sb, const char *step,
    const char *detail)
{
    if (step != NULL) {
        vsb_destroy_fail(sb, step, detail);
        return;
    }

    vsb_log(VSB_LOG_INFO, "destroyed sandbox %s (tenant %s agent %s): "
            "processes, cgroups, network, mounts and files confirmed gone",
            sb->id, sb->tenant, sb->agent);

    /* its end on record first, then its state file goes once that
     * record is on disk (durable.c): a crash in between leaves both, and
     * the next run keeps the record and removes the state file */
    vsb_ended_sandbox(sb, NULL, NULL, vsb_now_ms() - sb->end.start_ms);
    vsb_sbstate_remove(sb);

    vsb_destroy_reply(sb, NULL);
    vsb_registry_free(sb);
    vsb_shutdown_check();
}


/* The egress proxy closed the sandbox's sockets and connections and the
 * helper its copies (network allowlist only). */
static void
vsb_destroy_network_done(vsb_sandbox_t *sb, void *data, const char *error,
    const char *detail)
{
    if (error != NULL) {
        vsb_destroy_fail(sb, "network", detail ? detail : error);
        return;
    }

    vsb_teardown_start(sb, vsb_destroy_files_done);
}


/* No process is left: remove the cgroups here (rmdir is quick), the
 * proxy's state of the sandbox, the files and mounts off the loop (their
 * size is the tenant's choice). */
static void
vsb_destroy_finish(vsb_sandbox_t *sb)
{
    char  err[512];

    if (sb->cgroup != NULL) {
        if (vsb_cgroup_destroy(sb->cgroup, err, sizeof(err)) != 0) {
            vsb_destroy_fail(sb, "cgroups", err);
            return;
        }
        sb->cgroup = NULL;
    }

    if (sb->egress != NULL) {
        vsb_egress_sandbox_remove(sb, vsb_destroy_network_done, NULL);
        return;
    }

    vsb_teardown_start(sb, vsb_destroy_files_done);
}


static void
vsb_destroy_poll(vsb_timer_t *t)
{
    vsb_sandbox_t  *sb = t->data;
    vsb_entry_t    *en = vsb_entry(sb);
    uint64_t        now;
    int             populated = 0;
    char            why[256];

    if (sb->cgroup != NULL && !en->destroy_empty) {
        populated = vsb_cgroup_populated(sb->cgroup);
    }
    en->destroy_empty = 0;

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


void
vsb_destroy_end(vsb_sandbox_t *sb, vsb_end_reason_t reason,
    const char *limit, const char *fmt, ...)
{
    va_list  ap;

    /* a retry keeps what the sandbox was first ended for */
    if (sb->end.reason == VSB_END_NONE) {
        sb->end.reason = reason;
        sb->end.limit = limit;

        va_start(ap, fmt);
        vsnprintf(sb->end.detail, sizeof(sb->end.detail), fmt, ap);
        va_end(ap);
    }

    vsb_log(VSB_LOG_INFO, "sandbox %s: ending (%s%s%s): %s", sb->id,
            vsb_end_name(reason), limit ? " " : "", limit ? limit : "",
            sb->end.detail);

    vsb_destroy_start(sb);
}


void
vsb_destroy_start(vsb_sandbox_t *sb)
{
    vsb_entry_t    *en = vsb_entry(sb);
    unsigned        running;
    int             populated;

    en->state = VSB_SB_DESTROYING;
    /* termination_ms and the destroy bound are real time; the end's
     * reported time is the lifetime clock's, as ended_at is */
    sb->end.start_ms = vsb_now_ms();
    sb->end.start_at = vsb_life_now();
    vsb_lifetime_stop(sb);

    vsb_op_exec_cancel_all(sb);

    /* With no exec running (an init being cancelled still counts) and
     * the cgroup empty, nothing can enter it any more: a process gets in
     * only by an exec's init joining or by forking inside, and a
     * destroying sandbox takes no exec.  Then there is nothing to kill,
     * and the first poll need not read the cgroup again (one walk of
     * every v1 hierarchy less). */
    running = vsb_execs_running(sb);
    populated = sb->cgroup != NULL ? vsb_cgroup_populated(sb->cgroup) : 0;

    if (populated != 0 && vsb_cgroup_kill(sb->cgroup) != 0) {
        vsb_log(VSB_LOG_WARN, "sandbox %s: cgroup kill failed, will retry",
                sb->id);
    }

    /* a paused sandbox: its killed processes end once thawed (v1), and
     * a frozen cgroup is thawed for its removal either way */
    if (sb->paused && sb->cgroup != NULL) {
        char  err[256];

        if (vsb_cgroup_freeze(sb->cgroup, 0, err, sizeof(err)) != 0) {
            vsb_log(VSB_LOG_WARN, "sandbox %s: thaw: %s", sb->id, err);
        }
        sb->paused = 0;
    }

    en->destroy_empty = running == 0 && populated == 0;

    en->destroy_deadline = vsb_now_ms() + VSB_DESTROY_BOUND_MS;
    en->destroy_timer.handler = vsb_destroy_poll;
    en->destroy_timer.data = sb;
    vsb_timer_add(&en->destroy_timer, 0);
}


static int
vsb_req_destroy(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "reason", NULL
    };
    const char  *reason;

    if (vsb_req_fields(root, allowed, VSB_OP_DESTROY, e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_sandbox_id(root, r, e) != 0
        || vsb_req_string(root, "reason", 0, 16, &reason, e) != 0)
    {
        return -1;
    }

    if (reason != NULL && strcmp(reason, VSB_END_DELETED) != 0) {
        if (strcmp(reason, VSB_END_ADMIN) != 0) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "reason",
                                 "\"reason\" is \"" VSB_END_DELETED "\" or "
                                 "\"" VSB_END_ADMIN "\"");
        }
        r->admin = 1;
    }

    /* an administrator's destroy may name no agent: any of the tenant's */
    return vsb_req_owner(root, "agent", !r->admin, &r->agent, e);
}


/* the sandbox a destroy names: its owner's, or without an agent (an
 * administrator's) the tenant's of that id; another tenant's, or one
 * that ended, is not found */
static vsb_sandbox_t *
vsb_destroy_find(const vsb_request_t *r, vsb_error_t *e)
{
    vsb_request_t   owned;
    vsb_sandbox_t  *sb;

    if (r->agent != NULL) {
        return vsb_find(r, e);
    }

    sb = vsb_registry_tenant_find(r->tenant, r->id);
    if (sb == NULL) {
        vsb_error_set(e, VSB_E_NOT_FOUND, "id", "no sandbox %s", r->id);
        return NULL;
    }

    owned = *r;
    owned.agent = sb->agent;

    return vsb_find(&owned, e);
}


static void
vsb_op_destroy(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    vsb_pending_t  *p;

    sb = vsb_destroy_find(r, e);
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

    vsb_destroy_end(sb, r->admin ? VSB_END_R_ADMIN : VSB_END_R_DELETED,
                    NULL, "%s by a request (uid %u)",
                    r->admin ? "ended by an administrator" : "deleted",
                    (unsigned) c->uid);
}


const vsb_op_t  vsb_destroy_op = {
    .name = VSB_OP_DESTROY,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_destroy,
    .handler = vsb_op_destroy,
};


void
vsb_destroy_shutdown(volatile sig_atomic_t *done)
{
    vsb_sandbox_t  *sb, *next;

    vsb_shutdown_done = done;

    for (sb = vsb_registry_first(); sb != NULL; sb = next) {
        next = sb->next;
        if (vsb_entry(sb)->state != VSB_SB_DESTROYING) {
            vsb_log(VSB_LOG_INFO, "shutdown: destroying sandbox %s", sb->id);
            vsb_destroy_end(sb, VSB_END_R_RESTART, NULL, "the helper was "
                            "stopped (run %s)", vsb_registry_epoch());
        }
    }

    vsb_shutdown_check();
}


int
vsb_destroy_stopping(void)
{
    return vsb_shutdown_done != NULL;
}
