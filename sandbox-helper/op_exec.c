/*
 * The exec op: its schema, its handler, and the requests whose reply
 * waits for an exec to end (vsb_exec_done).  A streamed exec sends its
 * output as event frames before that reply, never more than a window
 * ahead of its reader; a background exec is op_background.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_exec.h"
#include "vsb_files.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_paths.h"
#include "vsb_registry.h"
#include "vsb_seccomp.h"

static vsb_pending_t  *vsb_execs;


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


static void
vsb_exec_stream_fields(json_t *obj, const char *name,
    const vsb_outcap_view_t *v, int kept)
{
    char  key[32];

    snprintf(key, sizeof(key), "%s_bytes", name);
    json_object_set_new(obj, key, json_integer((json_int_t) v->total));
    snprintf(key, sizeof(key), "%s_dropped_bytes", name);
    json_object_set_new(obj, key, json_integer((json_int_t) v->dropped));
    snprintf(key, sizeof(key), "%s_truncated", name);
    json_object_set_new(obj, key, json_boolean(v->dropped > 0));

    if (kept) {
        snprintf(key, sizeof(key), "%s_len", name);
        json_object_set_new(obj, key, json_integer((json_int_t) v->len));
        snprintf(key, sizeof(key), "%s_head_len", name);
        json_object_set_new(obj, key,
                            json_integer((json_int_t) (v->dropped
                                                       ? v->head_len
                                                       : v->len)));
    }
}


void
vsb_exec_result_fields(json_t *obj, const vsb_exec_result_t *res, int kept)
{
    json_t  *hit;

    json_object_set_new(obj, "exit_code",
                        res->exited ? json_integer(res->exit_code)
                                    : json_null());
    json_object_set_new(obj, "signal",
                        res->signaled ? json_integer(res->signo)
                                      : json_null());
    json_object_set_new(obj, "timed_out", json_boolean(res->timed_out));
    json_object_set_new(obj, "oom_killed", json_boolean(res->oom_killed));

    /* the sandbox limits it ran into; only memory can end the sandbox
     * (vsb_lifetime_exec_ended()): no process outlives its exec */
    hit = json_array();
    if (hit != NULL) {
        if (res->oom_killed) {
            json_array_append_new(hit, json_string("memory"));
        }
        if (res->pids_limit_hit) {
            json_array_append_new(hit, json_string("pids"));
        }
    }
    json_object_set_new(obj, "limits_hit", hit);

    vsb_exec_stream_fields(obj, "stdout", &res->out, kept);
    vsb_exec_stream_fields(obj, "stderr", &res->err, kept);

    json_object_set_new(obj, "refused_syscalls",
                        vsb_seccomp_refused_json(&res->refused));
    json_object_set_new(obj, "refused_syscalls_total",
                        json_integer(res->refused.total));
    json_object_set_new(obj, "usage",
        json_pack("{s:I, s:I, s:I, s:I}",
                  "cpu_ms", (json_int_t) res->cpu_ms,
                  "wall_ms", (json_int_t) res->wall_ms,
                  "peak_memory_bytes", (json_int_t) res->peak_memory_bytes,
                  "peak_pids", (json_int_t) res->peak_pids));

    if (res->network != NULL) {
        json_object_set(obj, "network", res->network);
    }
}


/* Do sb's own processes hold its whole pids limit (but the one the failed
 * exec's init took)?  Else a limit above it refused the fork (the
 * helper's cgroup: a service's TasksMax). */
static int
vsb_exec_pids_held(vsb_sandbox_t *sb)
{
    vsb_cgroup_usage_t  u;

    if (sb->cgroup == NULL || sb->limits.pids == 0
        || vsb_cgroup_usage(sb->cgroup, &u) != 0)
    {
        return 0;
    }

    return u.pids_current + 1 >= sb->limits.pids;
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
    p->ex = NULL;
    if (vsb_entry(p->sb)->execs_mine > 0) {
        vsb_entry(p->sb)->execs_mine--;
    }

    if (res->error != NULL) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: exec failed: %s", p->sb->id,
                res->detail);
    } else {
        vsb_log(VSB_LOG_INFO, "sandbox %s: exec done: exit %d signal %d%s%s%s "
                "(%llu ms)%s", p->sb->id, res->exited ? res->exit_code : -1,
                res->signaled ? res->signo : 0,
                res->timed_out ? ", timed out" : "",
                res->oom_killed ? ", oom killed" : "",
                res->pids_limit_hit ? ", pids limit hit" : "",
                (unsigned long long) res->wall_ms,
                p->conn == NULL ? ", client gone: killed, no reply" : "");
    }

    c = p->conn;
    if (c != NULL) {
        c->op = NULL;
        p->conn = NULL;

        if (res->error != NULL && res->pids_limit_hit
            && vsb_exec_pids_held(p->sb))
        {
            /* its processes (a background exec's) hold the whole limit:
             * not a fault of the host's, and gone once they end */
            memset(&e, 0, sizeof(e));
            vsb_error_set(&e, VSB_E_BUSY, NULL, "the sandbox's processes "
                          "hold its whole pids limit (%llu), so the exec "
                          "could not start (%s): end a background exec "
                          "(exec_kill) or wait for one to end",
                          (unsigned long long) p->sb->limits.pids,
                          res->detail);
            e.limit = VSB_LIMIT_PIDS;
            vsb_conn_reply_error(c, vsb_pending_rid(p), &e);

        } else if (res->error != NULL) {
            memset(&e, 0, sizeof(e));
            vsb_error_set(&e, res->error, strcmp(res->error, VSB_E_BAD_CWD)
                          == 0 ? "cwd" : NULL, "%s", res->detail);
            vsb_conn_reply_error(c, vsb_pending_rid(p), &e);

        } else {
            /* a streamed exec's output went as events: no payload */
            if (!p->stream) {
                plen = res->out.len + res->err.len;
                payload = malloc(plen ? plen : 1);
            }

            reply = vsb_ok(vsb_pending_rid(p));

            if (reply == NULL || (!p->stream && payload == NULL)) {
                json_decref(reply);
                reply = NULL;
                free(payload);
                payload = NULL;
                plen = 0;

            } else {
                vsb_exec_result_fields(reply, res, !p->stream);

                if (payload != NULL) {
                    vsb_outcap_copy(&res->out, payload);
                    vsb_outcap_copy(&res->err, payload + res->out.len);
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


/* A streamed exec's output, as event frames in the order it was read. */
static void
vsb_exec_stream_output(vsb_exec_t *ex, int stream, uint64_t offset,
    const unsigned char *data, size_t len, void *udata)
{
    vsb_pending_t  *p = udata;
    unsigned char  *copy;
    json_t         *ev;

    if (p->conn == NULL) {
        return;                 /* the client left: the exec is cancelled */
    }

    copy = malloc(len);
    ev = json_pack("{s:s, s:s, s:I}", "event", VSB_EVENT_OUTPUT,
                   "stream", stream == VSB_EXEC_STDOUT ? "stdout" : "stderr",
                   "offset", (json_int_t) offset);

    if (copy == NULL || ev == NULL) {
        free(copy);
        json_decref(ev);
        vsb_log(VSB_LOG_ERR, "sandbox %s: out of memory streaming output; "
                "cancelling the exec", p->sb->id);
        p->cancelled = 1;
        vsb_exec_cancel(ex);
        return;
    }

    memcpy(copy, data, len);
    vsb_conn_event(p->conn, ev, copy, len);

    vsb_pending_stream_throttle(p, ex);
}


static const vsb_pending_hooks_t  vsb_exec_stream_hooks = {
    .detach = NULL,                     /* the default: cancel the exec */
    .drained = vsb_pending_stream_drained,
    .room = NULL,
    .input = NULL,
};


static int
vsb_req_exec_cwd(json_t *root, vsb_request_t *r, vsb_error_t *e)
{
    char  why[128];

    if (vsb_req_string(root, "cwd", 0, VSB_MAX_PATH, &r->cwd, e) != 0) {
        return -1;
    }

    if (r->cwd == NULL) {
        r->cwd = "/workspace";
        return 0;
    }

    /* absolute: a directory of the sandbox, as the workload sees it */
    if (r->cwd[0] == '/') {
        return 0;
    }

    if (vsb_path_check(r->cwd, strlen(r->cwd), why, sizeof(why)) != 0) {
        return vsb_error_set(e, VSB_E_BAD_PATH, "cwd",
                             "\"cwd\": %s (a relative cwd is under "
                             "/workspace; or give an absolute path)", why);
    }

    snprintf(r->cwd_buf, sizeof(r->cwd_buf), "/workspace/%s", r->cwd);
    r->cwd = r->cwd_buf;
    return 0;
}


static int
vsb_req_exec(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "argv", "cwd",
        "env",
        "timeout_s", "output_bytes", "stream", "background", "caps", NULL
    };
    json_t    *argv, *v;
    size_t     i;
    unsigned   b;

    if (vsb_req_sandbox_ref(root, allowed, "exec", r, e) != 0)
    {
        return -1;
    }

    if (vsb_req_get(root, "argv", 1, &argv, e) != 0) {
        return -1;
    }
    if (!json_is_array(argv)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "argv",
                             "\"argv\" must be an array of strings");
    }
    if (json_array_size(argv) == 0 || json_array_size(argv) > VSB_MAX_ARGV) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "argv",
                             "\"argv\" must have 1 to %d elements",
                             VSB_MAX_ARGV);
    }
    json_array_foreach(argv, i, v) {
        if (!json_is_string(v)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, "argv",
                                 "\"argv\"[%zu] must be a string", i);
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "argv",
                                 "\"argv\"[%zu] contains a NUL byte", i);
        }
    }
    if (json_string_length(json_array_get(argv, 0)) == 0) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "argv",
                             "\"argv\"[0] is empty");
    }
    r->argv = argv;

    if (vsb_req_exec_cwd(root, r, e) != 0
        || vsb_req_env(root, "env", &r->env, e) != 0)
    {
        return -1;
    }

    r->timeout_s = 0;
    if (vsb_req_uint(root, "timeout_s", 0, &r->timeout_s, e) != 0) {
        return -1;
    }
    if (r->timeout_s > cf->max.timeout_s) {
        return vsb_req_over(e, "timeout_s", VSB_LIMIT_TIMEOUT_S, r->timeout_s,
                            cf->max.timeout_s);
    }

    r->output_bytes = 0;
    if (vsb_req_uint(root, "output_bytes", 0, &r->output_bytes, e) != 0) {
        return -1;
    }
    if (r->output_bytes > cf->max.output_bytes) {
        return vsb_req_over(e, "output_bytes", VSB_LIMIT_OUTPUT_BYTES,
                            r->output_bytes, cf->max.output_bytes);
    }

    if (vsb_req_caps(root, VSB_CAPS_EXEC, r, e) != 0) {
        return -1;
    }

    if (vsb_req_bool(root, "stream", &b, e) != 0) {
        return -1;
    }
    r->stream = b;

    if (vsb_req_bool(root, "background", &b, e) != 0) {
        return -1;
    }
    r->background = b;

    if (r->stream && r->background) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "stream",
                             "\"stream\" and \"background\" exclude each "
                             "other: follow a background exec with "
                             "exec_output");
    }

    return 0;
}


/*
 * A cwd in the workspace that is not there (or not a directory) is
 * refused before anything runs: bad_cwd naming it, the same for a plain,
 * a streamed and a background exec.  Whatever the lookup cannot tell (a
 * symlink on the way, a cwd outside the workspace) is left to the
 * workload's chdir, which reports a failure as bad_cwd too.
 */
static int
vsb_exec_cwd_check(const vsb_sandbox_t *sb, const char *cwd, vsb_error_t *e)
{
    char         why[128];
    const char  *rel;
    vsb_error_t  le;

    if (strncmp(cwd, "/workspace", sizeof("/workspace") - 1) != 0) {
        return 0;
    }

    rel = cwd + sizeof("/workspace") - 1;

    if (*rel == '\0') {
        return 0;
    }

    if (*rel++ != '/' || *rel == '\0'
        || vsb_path_check(rel, strlen(rel), why, sizeof(why)) != 0)
    {
        return 0;
    }

    memset(&le, 0, sizeof(le));

    if (vsb_files_dir(sb, rel, 0, &le) == 0 || le.error == NULL) {
        return 0;
    }

    if (strcmp(le.error, VSB_E_NOT_FOUND) == 0) {
        return vsb_error_set(e, VSB_E_BAD_CWD, "cwd", "cwd \"%.200s\" does "
                             "not exist in the sandbox", cwd);
    }

    if (strcmp(le.error, VSB_E_NOT_A_DIRECTORY) == 0) {
        return vsb_error_set(e, VSB_E_BAD_CWD, "cwd", "cwd \"%.200s\" is not "
                             "a directory", cwd);
    }

    return 0;
}


static void
vsb_op_exec(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t       *sb;
    vsb_pending_t       *p;
    vsb_exec_request_t   req;
    char                 err[256];

    sb = vsb_find_running(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_execs_running(sb) >= vsb_cf.max_execs_per_sandbox) {
        vsb_error_set(e, VSB_E_BUSY, NULL,
                      "sandbox %s already runs %u execs, the maximum", sb->id,
                      vsb_execs_running(sb));
        e->limit = VSB_LIMIT_EXECS;
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_exec_cwd_check(sb, r->cwd, e) != 0) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (r->background) {
        vsb_bg_start(c, root, r, sb, payload, payload_len, e);
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
    p->stream = r->stream;
    if (r->stream) {
        p->hooks = &vsb_exec_stream_hooks;
    }

    vsb_exec_request_init(&req, r, payload, payload_len);
    req.output_bytes = r->output_bytes;
    req.output_cap = r->caps[VSB_CAP_OUTPUT_BYTES];

    if (r->stream) {
        req.stream_stdout = 1;
        req.stream_stderr = 1;
        req.output = vsb_exec_stream_output;
    }

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

    vsb_log(VSB_LOG_DEBUG, "sandbox %s: exec %s started%s", sb->id,
            json_string_value(json_array_get(r->argv, 0)),
            r->stream ? " (streamed)" : "");
}


/* Cancels every running exec of sb (a destroy has begun): foreground,
 * streamed, background and the archive ops' alike. */
void
vsb_op_exec_cancel_all(vsb_sandbox_t *sb)
{
    vsb_pending_t  *p;

    for (p = vsb_execs; p != NULL; p = p->next) {
        if (p->sb == sb) {
            p->cancelled = 1;
        }
    }

    vsb_bg_sandbox_ending(sb);
    vsb_archive_sandbox_ending(sb);
    vsb_pause_sandbox_ending(sb);
    vsb_snapshot_sandbox_ending(sb);
    vsb_exec_cancel_all(sb);
}


const vsb_op_t  vsb_exec_op = {
    .name = VSB_OP_EXEC,
    .payload = 1,
    .while_stopping = 0,
    .parse = vsb_req_exec,
    .handler = vsb_op_exec,
};
