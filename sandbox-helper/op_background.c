/*
 * The ops over background execs: exec_status (state and result),
 * exec_output (bytes from an offset, or followed live as event frames),
 * exec_kill (kill, and answer once every process is confirmed gone).
 * The records and their output are background.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_background.h"
#include "vsb_exec.h"
#include "vsb_log.h"

#define VSB_BG_READ_DEFAULT  (1024 * 1024)


/* ---- the ops -------------------------------------------------------- */


static int
vsb_req_exec_ref(json_t *root, const char *const *allowed, const char *what,
    vsb_request_t *r, vsb_error_t *e)
{
    if (vsb_req_sandbox_ref(root, allowed, what, r, e) != 0
        || vsb_req_exec_id(root, r, e) != 0)
    {
        return -1;
    }

    return 0;
}


/* The sandbox (ready or not: an ending one still answers) and the exec. */
static vsb_bg_t *
vsb_bg_lookup(const vsb_request_t *r, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    vsb_bg_t       *bg;

    sb = vsb_find(r, e);
    if (sb == NULL) {
        return NULL;
    }

    bg = vsb_bg_find(sb, r->exec_id);
    if (bg == NULL) {
        vsb_error_set(e, VSB_E_NOT_FOUND, "exec", "sandbox %s has no "
                      "background exec %s", sb->id, r->exec_id);
    }

    return bg;
}


/* exec_status and exec_kill take the same fields today, yet each op's
 * schema is written with its op, as in every op_*.c: one that grows a
 * field (a kill's signal) must not widen the other's. */
static int
vsb_req_exec_status(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "exec",
        NULL
    };

    return vsb_req_exec_ref(root, allowed, VSB_OP_EXEC_STATUS, r, e);
}


static void
vsb_op_exec_status(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_bg_t  *bg;
    json_t    *reply;

    bg = vsb_bg_lookup(r, e);
    if (bg == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "exec", vsb_bg_json(bg));
    }
    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_exec_status_op = {
    .name = VSB_OP_EXEC_STATUS,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_exec_status,
    .handler = vsb_op_exec_status,
};


static int
vsb_req_exec_kill(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "exec",
        NULL
    };

    return vsb_req_exec_ref(root, allowed, VSB_OP_EXEC_KILL, r, e);
}


static void
vsb_op_exec_kill(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_bg_t       *bg;
    vsb_bg_wait_t  *w;
    json_t         *reply;

    bg = vsb_bg_lookup(r, e);
    if (bg == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (bg->state != VSB_BG_RUNNING) {
        reply = vsb_ok(r->request_id);
        if (reply != NULL) {
            json_object_set_new(reply, "exec", vsb_bg_json(bg));
            json_object_set_new(reply, "killed", json_false());
        }
        vsb_conn_reply(c, reply, NULL, 0);
        return;
    }

    w = vsb_bg_wait_new(c, r, bg);
    if (w == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    w->kill = 1;

    vsb_log(VSB_LOG_INFO, "sandbox %s: killing background exec %s",
            bg->sb->id, bg->id);
    bg->kill_requested = 1;
    vsb_exec_cancel(bg->ex);
}


const vsb_op_t  vsb_exec_kill_op = {
    .name = VSB_OP_EXEC_KILL,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_exec_kill,
    .handler = vsb_op_exec_kill,
};


static int
vsb_req_exec_output(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "exec",
        "stream",
        "offset", "max_bytes", "follow", NULL
    };
    const char  *s;
    json_t      *v;
    unsigned     b;

    if (vsb_req_exec_ref(root, allowed, VSB_OP_EXEC_OUTPUT, r, e) != 0
        || vsb_req_string(root, "stream", 1, 16, &s, e) != 0)
    {
        return -1;
    }

    if (strcmp(s, "stdout") == 0) {
        r->out_stream = VSB_EXEC_STDOUT;
    } else if (strcmp(s, "stderr") == 0) {
        r->out_stream = VSB_EXEC_STDERR;
    } else {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "stream",
                             "\"stream\" must be \"stdout\" or \"stderr\"");
    }

    r->offset = 0;
    v = json_object_get(root, "offset");
    if (v != NULL) {
        if (!json_is_integer(v)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, "offset",
                                 "\"offset\" must be an integer");
        }
        if (json_integer_value(v) < 0) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "offset",
                                 "\"offset\" must be at least 0");
        }
        r->offset = (uint64_t) json_integer_value(v);
    }

    r->max_bytes = 0;
    if (vsb_req_uint(root, "max_bytes", 0, &r->max_bytes, e) != 0) {
        return -1;
    }
    if (r->max_bytes > cf->max_file_bytes) {
        return vsb_req_over(e, "max_bytes", VSB_LIMIT_FILE_BYTES,
                            r->max_bytes, cf->max_file_bytes);
    }

    if (vsb_req_bool(root, "follow", &b, e) != 0) {
        return -1;
    }
    r->follow = b;

    if (r->follow && r->max_bytes != 0) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "max_bytes",
                             "\"max_bytes\" bounds one reply; a follow sends "
                             "everything as event frames");
    }

    return 0;
}


static void
vsb_op_exec_output(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_bg_t       *bg;
    vsb_retain_t   *rt;
    vsb_bg_wait_t  *w;
    unsigned char  *buf;
    uint64_t        start, len, max, got;
    ssize_t         n;
    json_t         *reply;
    int             ended;

    bg = vsb_bg_lookup(r, e);
    if (bg == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    rt = &bg->out[r->out_stream];

    if (r->offset > rt->total) {
        vsb_error_set(e, VSB_E_BAD_VALUE, "offset", "offset %llu is past "
                      "the %llu bytes of %s written so far",
                      (unsigned long long) r->offset,
                      (unsigned long long) rt->total,
                      vsb_bg_stream_name(r->out_stream));
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (r->follow) {
        w = vsb_bg_wait_new(c, r, bg);
        if (w == NULL) {
            vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }
        w->stream = r->out_stream;
        w->offset = r->offset;
        vsb_bg_pump(w);
        return;
    }

    /* one contiguous run from offset: the next request goes on from
     * next_offset (past a gap, if any) */
    ended = bg->state != VSB_BG_RUNNING;
    max = r->max_bytes ? r->max_bytes : VSB_BG_READ_DEFAULT;

    vsb_retain_span(rt, r->offset, &start, &len);
    if (len > max) {
        len = max;
    }
    if (len == 0 && ended) {
        start = rt->total;
    }

    if (!vsb_server_can_buffer((size_t) len)) {
        vsb_error_set(e, VSB_E_BUSY, NULL, "the helper is buffering too "
                      "many replies; retry later");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    buf = malloc(len ? (size_t) len : 1);
    if (buf == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    for (got = 0; got < len; got += (uint64_t) n) {
        n = vsb_retain_read(rt, start + got, buf + got, (size_t) (len - got));
        if (n <= 0) {
            free(buf);
            vsb_error_set(e, VSB_E_IO, NULL, "exec %s: reading retained "
                          "output: %s", bg->id,
                          n == -1 ? strerror(errno) : "short read");
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }
    }

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "exec", vsb_bg_json(bg));
        json_object_set_new(reply, "stream",
                            json_string(vsb_bg_stream_name(r->out_stream)));
        json_object_set_new(reply, "offset", json_integer((json_int_t) start));
        json_object_set_new(reply, "skipped_bytes",
                            json_integer((json_int_t) (start - r->offset)));
        json_object_set_new(reply, "len", json_integer((json_int_t) len));
        json_object_set_new(reply, "next_offset",
                            json_integer((json_int_t) (start + len)));
        json_object_set_new(reply, "total",
                            json_integer((json_int_t) rt->total));

        /* complete: nothing more will ever come from next_offset on */
        vsb_retain_span(rt, start + len, &start, &got);
        json_object_set_new(reply, "complete", json_boolean(ended
                                                            && got == 0));
    }

    vsb_conn_reply(c, reply, buf, (size_t) len);
}


const vsb_op_t  vsb_exec_output_op = {
    .name = VSB_OP_EXEC_OUTPUT,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_exec_output,
    .handler = vsb_op_exec_output,
};
