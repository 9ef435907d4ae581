/*
 * What every op handler shares: the sandbox lookups, the "ok" reply, the
 * state names, and the record of a request whose reply comes later.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vsb_ended.h"
#include "vsb_lifetime.h"
#include "vsb_op.h"
#include "vsb_registry.h"


const char *
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


unsigned
vsb_execs_running(const vsb_sandbox_t *sb)
{
    unsigned  mine = vsb_entry(sb)->execs_mine;

    return sb->execs_running > mine ? sb->execs_running : mine;
}


/* {"ok":true, ...} with request_id echoed. */
json_t *
vsb_ok(const char *request_id)
{
    json_t  *r;

    r = json_pack("{s:b}", "ok", 1);
    if (r != NULL && request_id != NULL) {
        json_object_set_new(r, "request_id", json_string(request_id));
    }

    return r;
}


void
vsb_exec_request_init(vsb_exec_request_t *req, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len)
{
    memset(req, 0, sizeof(*req));
    req->argv = r->argv;
    req->cwd = r->cwd;
    req->env = r->env;
    req->timeout_s = r->timeout_s;
    req->timeout_cap = r->caps[VSB_CAP_TIMEOUT_S];
    req->stdin_data = payload;
    req->stdin_len = payload_len;
}


vsb_pending_t *
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


void
vsb_pending_free(vsb_pending_t *p)
{
    json_decref(p->root);
    free(p);
}


void
vsb_pending_stream_throttle(vsb_pending_t *p, vsb_exec_t *ex)
{
    /* a slow reader: the workload waits, the helper does not buffer */
    if (vsb_conn_queued(p->conn) >= VSB_STREAM_WINDOW) {
        p->paused = 1;
        vsb_exec_pause(ex, 1);
    }
}


void
vsb_pending_stream_drained(vsb_pending_t *p)
{
    if (p->paused && p->ex != NULL) {
        p->paused = 0;
        vsb_exec_pause(p->ex, 0);
    }
}


/* "ended" naming why and when (UTC). */
static void
vsb_find_ended(vsb_error_t *e, const char *id, const char *reason,
    time_t at)
{
    char       when[32];
    struct tm  tm;

    if (gmtime_r(&at, &tm) == NULL
        || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    {
        snprintf(when, sizeof(when), "%lld", (long long) at);
    }

    vsb_error_set(e, VSB_E_ENDED, "id", "sandbox %s ended (%s) at %s", id,
                  reason, when);
    e->end_reason = reason;
}


vsb_sandbox_t *
vsb_find(const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t      *sb;
    const vsb_ended_t  *en;

    sb = vsb_registry_find(r->tenant, r->agent, r->id);
    if (sb == NULL) {
        en = vsb_ended_find(r->tenant, r->agent, r->id);
        if (en != NULL) {
            vsb_find_ended(e, r->id, vsb_ended_reason(en), vsb_ended_at(en));
        } else {
            vsb_error_set(e, VSB_E_NOT_FOUND, "id", "no sandbox %s", r->id);
        }
        return NULL;
    }

    /* a request naming it: not idle */
    if (vsb_entry(sb)->state == VSB_SB_READY) {
        vsb_lifetime_touch(sb);
    }

    return sb;
}


/* For ops that need a working sandbox. */
vsb_sandbox_t *
vsb_find_ready(const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;

    sb = vsb_find(r, e);
    if (sb == NULL) {
        return NULL;
    }

    switch (vsb_entry(sb)->state) {

    case VSB_SB_READY:
        return sb;

    case VSB_SB_FAILED:
        /* it ended; only destroy (a retry) and status still name it */
        vsb_find_ended(e, sb->id, VSB_END_TERMINATION_FAILED,
                       sb->end.start_at);
        return NULL;

    default:
        vsb_error_set(e, VSB_E_BUSY, "id", "sandbox %s is %s", sb->id,
                      vsb_state_name(sb));
        return NULL;
    }
}


/* For ops that run something in the sandbox or touch its files: ready
 * and not paused (paused, field "id"). */
vsb_sandbox_t *
vsb_find_running(const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;

    sb = vsb_find_ready(r, e);
    if (sb != NULL && sb->paused) {
        vsb_error_set(e, VSB_E_PAUSED, "id", "sandbox %s is paused (resume "
                      "it first)", sb->id);
        return NULL;
    }

    return sb;
}
