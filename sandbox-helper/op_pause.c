/*
 * pause and resume: every process of a sandbox frozen by its cgroup
 * (v2's cgroup.freeze, v1's freezer; vsb_cgroup_freeze()), and thawed.
 *
 * The reply comes once the kernel says every task is frozen (thawed),
 * polled from a timer: the freezer works asynchronously (a task in a
 * system call stops at its end; on v1 a cgroup whose exec just ended
 * reads FREEZING for an RCU grace period).  A sandbox is marked paused
 * from the request on, so nothing new starts in it meanwhile.
 *
 * While paused: exec (all kinds), write_file, read_file and the archive
 * ops answer paused; status, usage, snapshot_create, changes, update_*,
 * exec_status/_output/_kill and destroy work (destroy and a kill end the
 * frozen processes: v2 kills frozen tasks, v1's kill thaws).  Its ttl_s
 * runs on; its idle_s does not end it (a paused sandbox is idle by
 * design) and counts again from resume.  Running execs' deadlines run on
 * too: one that reaches its timeout_s while paused is killed (on v1 its
 * processes end at resume).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_lifetime.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_registry.h"

#define VSB_FREEZE_POLL_MS  2
#define VSB_FREEZE_WAIT_MS  5000

typedef struct vsb_freeze_s {
    vsb_pending_t   p;
    vsb_timer_t     timer;
    int             freeze;
    uint64_t        start_ms;
} vsb_freeze_t;


static void
vsb_freeze_detach(vsb_pending_t *p)
{
    (void) p;                   /* the poll ends on its own; no reply */
}


static const vsb_pending_hooks_t  vsb_freeze_hooks = {
    .detach = vsb_freeze_detach,
};


static void
vsb_freeze_reply(vsb_freeze_t *f, const vsb_error_t *e)
{
    vsb_conn_t  *c = f->p.conn;
    json_t      *reply;

    vsb_timer_del(&f->timer);
    f->p.sb->freeze_op = NULL;

    if (c != NULL) {
        c->op = NULL;
        if (e != NULL) {
            vsb_conn_reply_error(c, vsb_pending_rid(&f->p), e);
        } else {
            reply = vsb_ok(vsb_pending_rid(&f->p));
            if (reply != NULL) {
                json_object_set_new(reply, "id", json_string(f->p.sb->id));
                json_object_set_new(reply, "paused",
                                    json_boolean(f->freeze));
                json_object_set_new(reply, "ms", json_integer((json_int_t)
                                    (vsb_now_ms() - f->start_ms)));
            }
            vsb_conn_reply(c, reply, NULL, 0);
        }
    }

    vsb_pending_free(&f->p);
}


static void
vsb_freeze_poll(vsb_timer_t *t)
{
    vsb_freeze_t   *f = t->data;
    vsb_sandbox_t  *sb = f->p.sb;
    vsb_error_t     e;
    int             k;
    char            err[256];

    memset(&e, 0, sizeof(e));

    if (vsb_entry(sb)->state != VSB_SB_READY) {
        vsb_error_set(&e, VSB_E_BUSY, "id", "sandbox %s is ending", sb->id);
        vsb_freeze_reply(f, &e);
        return;
    }

    k = vsb_cgroup_frozen(sb->cgroup);
    if (k == (f->freeze ? 1 : 0)) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: %s after %llu ms", sb->id,
                f->freeze ? "paused" : "resumed",
                (unsigned long long) (vsb_now_ms() - f->start_ms));
        if (!f->freeze) {
            sb->paused = 0;
            vsb_lifetime_touch(sb);     /* idle counts from now */
        }
        vsb_freeze_reply(f, NULL);
        return;
    }

    if (k == -1 || vsb_now_ms() - f->start_ms > VSB_FREEZE_WAIT_MS) {
        if (k == -1) {
            vsb_error_set(&e, VSB_E_INTERNAL, "id", "sandbox %s: the "
                          "freezer's state cannot be read", sb->id);
        } else {
            vsb_error_set(&e, VSB_E_TIMED_OUT, "id", "sandbox %s: not %s "
                          "within %d ms", sb->id,
                          f->freeze ? "frozen" : "thawed",
                          VSB_FREEZE_WAIT_MS);
            e.limit = "freeze";
        }
        if (f->freeze) {
            /* undone: a sandbox is either paused or running */
            if (vsb_cgroup_freeze(sb->cgroup, 0, err, sizeof(err)) != 0) {
                vsb_log(VSB_LOG_ERR, "sandbox %s: thaw after a failed pause: "
                        "%s", sb->id, err);
            }
            sb->paused = 0;
        }
        vsb_log(VSB_LOG_ERR, "%s", e.detail);
        vsb_freeze_reply(f, &e);
        return;
    }

    vsb_timer_add(t, VSB_FREEZE_POLL_MS);
}


static int
vsb_req_pause(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    return vsb_req_owned(root, VSB_OP_PAUSE, r, e);
}


static int
vsb_req_resume(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    return vsb_req_owned(root, VSB_OP_RESUME, r, e);
}


static void
vsb_op_freeze(vsb_conn_t *c, const vsb_request_t *r, int freeze,
    vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    vsb_freeze_t   *f;
    json_t         *reply;
    char            err[256];

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (sb->freeze_op != NULL) {
        vsb_error_set(e, VSB_E_BUSY, "id", "sandbox %s: a pause or resume "
                      "is in progress", sb->id);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (sb->paused == (unsigned) freeze && vsb_cgroup_frozen(sb->cgroup)
                                           == freeze)
    {
        reply = vsb_ok(r->request_id);      /* already so: no change */
        if (reply != NULL) {
            json_object_set_new(reply, "id", json_string(sb->id));
            json_object_set_new(reply, "paused", json_boolean(freeze));
            json_object_set_new(reply, "ms", json_integer(0));
        }
        vsb_conn_reply(c, reply, NULL, 0);
        return;
    }

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    f->p.kind = VSB_PENDING_FREEZE;
    f->p.conn = c;
    if (r->request_id != NULL) {
        snprintf(f->p.request_id, sizeof(f->p.request_id), "%s",
                 r->request_id);
        f->p.has_request_id = 1;
    }
    f->p.sb = sb;
    f->p.hooks = &vsb_freeze_hooks;
    f->freeze = freeze;
    f->start_ms = vsb_now_ms();
    f->timer.handler = vsb_freeze_poll;
    f->timer.data = f;

    if (vsb_cgroup_freeze(sb->cgroup, freeze, err, sizeof(err)) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, "id", "sandbox %s: %s", sb->id, err);
        vsb_conn_reply_error(c, r->request_id, e);
        free(f);
        return;
    }

    if (freeze) {
        sb->paused = 1;         /* nothing new starts from here on */
    }

    c->op = &f->p;
    sb->freeze_op = f;
    vsb_freeze_poll(&f->timer);
}


static void
vsb_op_pause(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_op_freeze(c, r, 1, e);
}


static void
vsb_op_resume(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_op_freeze(c, r, 0, e);
}


const vsb_op_t  vsb_pause_op = {
    .name = VSB_OP_PAUSE,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_pause,
    .handler = vsb_op_pause,
};


const vsb_op_t  vsb_resume_op = {
    .name = VSB_OP_RESUME,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_resume,
    .handler = vsb_op_resume,
};


void
vsb_pause_sandbox_ending(vsb_sandbox_t *sb)
{
    vsb_error_t  e;

    if (sb->freeze_op != NULL) {
        memset(&e, 0, sizeof(e));
        vsb_error_set(&e, VSB_E_BUSY, "id", "sandbox %s is ending", sb->id);
        vsb_freeze_reply(sb->freeze_op, &e);
    }
}
