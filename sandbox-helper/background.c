/*
 * Background execs.  "exec" with "background": true answers at once with
 * an exec id; the exec then runs with no client until it ends, its
 * deadline passes, exec_kill kills it, or its sandbox ends.  Its output
 * is retained head and tail (retain.c) in files of the sandbox's own
 * tmpfs, outside its root, so it counts against the sandbox's disk and
 * not the helper's memory; followers read it back from there.
 *
 * Per sandbox at most max_background_execs run, and as many ended ones
 * are remembered (the oldest is forgotten, files and all, when a newer
 * one ends); all go with the sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vsb_background.h"
#include "vsb_exec.h"
#include "vsb_hex.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_registry.h"

#define VSB_BG_DIR           "execs"

static const char *const  vsb_bg_state_names[] = {
    "running", "exited", "timed_out", "killed", "failed"
};

static vsb_bg_t  *vsb_bgs;

static const vsb_pending_hooks_t  vsb_bg_wait_hooks;


/* ---- records ------------------------------------------------------- */


const char *
vsb_bg_stream_name(int stream)
{
    return stream == VSB_EXEC_STDOUT ? "stdout" : "stderr";
}


unsigned
vsb_bg_running(const vsb_sandbox_t *sb)
{
    vsb_bg_t  *bg;
    unsigned   n = 0;

    for (bg = vsb_bgs; bg != NULL; bg = bg->next) {
        n += bg->sb == sb && bg->state == VSB_BG_RUNNING;
    }

    return n;
}


vsb_bg_t *
vsb_bg_find(const vsb_sandbox_t *sb, const char *id)
{
    vsb_bg_t  *bg;

    for (bg = vsb_bgs; bg != NULL; bg = bg->next) {
        if (bg->sb == sb && strcmp(bg->id, id) == 0) {
            return bg;
        }
    }

    return NULL;
}


/* state_dir/sb/<id>/execs: in the sandbox's tmpfs, not under its root. */
static int
vsb_bg_dir(const vsb_sandbox_t *sb, int create)
{
    int   dfd, fd;

    dfd = open(sb->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd == -1) {
        return -1;
    }

    if (create && mkdirat(dfd, VSB_BG_DIR, 0700) == -1 && errno != EEXIST) {
        close(dfd);
        return -1;
    }

    fd = openat(dfd, VSB_BG_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                | O_CLOEXEC);
    close(dfd);
    return fd;
}


json_t *
vsb_bg_json(const vsb_bg_t *bg)
{
    json_t  *j;

    j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}",
                  "id", bg->id,
                  "state", vsb_bg_state_names[bg->state],
                  "started_at", (json_int_t) bg->started_at,
                  "output_bytes", (json_int_t) bg->output_bytes,
                  "stdout_bytes", (json_int_t) bg->out[VSB_EXEC_STDOUT].total,
                  "stderr_bytes", (json_int_t) bg->out[VSB_EXEC_STDERR].total,
                  "stdout_dropped_bytes", (json_int_t)
                      vsb_retain_dropped(&bg->out[VSB_EXEC_STDOUT]),
                  "stderr_dropped_bytes", (json_int_t)
                      vsb_retain_dropped(&bg->out[VSB_EXEC_STDERR]));
    if (j == NULL) {
        return NULL;
    }

    json_object_set_new(j, "ended_at",
                        bg->state == VSB_BG_RUNNING
                        ? json_null()
                        : json_integer((json_int_t) bg->ended_at));
    json_object_set(j, "result", bg->result ? bg->result : json_null());
    return j;
}


/* Ends a waiter's request with an error (its exec is forgotten). */
static void
vsb_bg_wait_fail(vsb_bg_wait_t *w, const char *why)
{
    vsb_error_t  e;
    vsb_conn_t  *c = w->p.conn;

    if (c != NULL) {
        c->op = NULL;
        w->p.conn = NULL;
        memset(&e, 0, sizeof(e));
        vsb_error_set(&e, VSB_E_NOT_FOUND, "exec", "exec %s: %s", w->bg->id,
                      why);
        vsb_conn_reply_error(c, vsb_pending_rid(&w->p), &e);
    }

    free(w);
}


static void
vsb_bg_free(vsb_bg_t *bg, const char *why)
{
    vsb_bg_t       **pp;
    vsb_bg_wait_t   *w;
    char             name[VSB_EXEC_ID_LEN + 8];
    int              dfd, i;

    for (pp = &vsb_bgs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == bg) {
            *pp = bg->next;
            break;
        }
    }

    while ((w = bg->waiters) != NULL) {
        bg->waiters = w->next;
        vsb_bg_wait_fail(w, why);
    }

    for (i = VSB_EXEC_STDOUT; i <= VSB_EXEC_STDERR; i++) {
        vsb_retain_close(&bg->out[i]);
    }

    /* the sandbox's tmpfs goes with it; otherwise free the space now */
    if (!bg->ending && (dfd = vsb_bg_dir(bg->sb, 0)) != -1) {
        for (i = VSB_EXEC_STDOUT; i <= VSB_EXEC_STDERR; i++) {
            snprintf(name, sizeof(name), "%s.%s", bg->id,
                     vsb_bg_stream_name(i));
            if (unlinkat(dfd, name, 0) == -1 && errno != ENOENT) {
                vsb_log_errno(VSB_LOG_WARN, "sandbox %s: remove %s",
                              bg->sb->id, name);
            }
        }
        close(dfd);
    }

    json_decref(bg->root);
    json_decref(bg->result);
    free(bg);
}


/* Keeps at most max ended records of sb: the oldest go first. */
static void
vsb_bg_evict(vsb_sandbox_t *sb, uint64_t max)
{
    vsb_bg_t  *bg, *oldest;
    uint64_t   ended;

    for ( ;; ) {
        ended = 0;
        oldest = NULL;

        for (bg = vsb_bgs; bg != NULL; bg = bg->next) {
            if (bg->sb != sb || bg->state == VSB_BG_RUNNING) {
                continue;
            }
            ended++;
            if (oldest == NULL || bg->ended_at < oldest->ended_at
                || (bg->ended_at == oldest->ended_at
                    && bg->started_at <= oldest->started_at))
            {
                oldest = bg;
            }
        }

        if (ended <= max || oldest == NULL) {
            return;
        }

        vsb_log(VSB_LOG_INFO, "sandbox %s: forgetting background exec %s "
                "(%llu ended ones are kept)", sb->id, oldest->id,
                (unsigned long long) max);
        vsb_bg_free(oldest, "forgotten: newer background execs ended");
    }
}


void
vsb_bg_sandbox_ending(vsb_sandbox_t *sb)
{
    vsb_bg_t  *bg, *next;

    for (bg = vsb_bgs; bg != NULL; bg = next) {
        next = bg->next;

        if (bg->sb != sb) {
            continue;
        }

        bg->ending = 1;

        /* running ones are cancelled with the sandbox's execs and freed
         * when their end is confirmed */
        if (bg->state != VSB_BG_RUNNING) {
            vsb_bg_free(bg, "its sandbox ended");
        }
    }
}


/* ---- the exec's side ---------------------------------------------- */


static void
vsb_bg_output(vsb_exec_t *ex, int stream, uint64_t offset,
    const unsigned char *data, size_t len, void *udata)
{
    vsb_bg_t       *bg = udata;
    vsb_bg_wait_t  *w, *next;
    int             full;

    full = bg->out[stream].kept_to != UINT64_MAX;
    vsb_retain_add(&bg->out[stream], data, len);

    if (!full && bg->out[stream].kept_to != UINT64_MAX) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: background exec %s: %s no "
                "longer retained after %llu bytes: %s", bg->sb->id, bg->id,
                vsb_bg_stream_name(stream),
                (unsigned long long) bg->out[stream].kept_to,
                strerror(bg->out[stream].error));
    }

    for (w = bg->waiters; w != NULL; w = next) {
        next = w->next;
        if (!w->kill && w->stream == stream) {
            vsb_bg_pump(w);
        }
    }
}


static void
vsb_bg_done(vsb_exec_t *ex, const vsb_exec_result_t *res, void *data)
{
    vsb_bg_t        *bg = data;
    vsb_bg_wait_t   *w, *next;
    vsb_conn_t      *c;
    json_t          *reply;
    uint64_t         d;
    int              i;
    char             key[32];

    bg->ex = NULL;
    bg->ended_at = time(NULL);

    /* killed: by us, not an exit that came first */
    if (res->error != NULL) {
        bg->state = VSB_BG_FAILED;
    } else if ((bg->kill_requested || bg->ending) && !res->exited) {
        bg->state = VSB_BG_KILLED;
    } else if (res->timed_out) {
        bg->state = VSB_BG_TIMED_OUT;
    } else {
        bg->state = VSB_BG_EXITED;
    }

    bg->result = json_object();
    if (bg->result != NULL) {
        vsb_exec_result_fields(bg->result, res, 0);

        /* what the retention rule left out, not what a reply would */
        for (i = VSB_EXEC_STDOUT; i <= VSB_EXEC_STDERR; i++) {
            d = vsb_retain_dropped(&bg->out[i]);
            snprintf(key, sizeof(key), "%s_dropped_bytes",
                     vsb_bg_stream_name(i));
            json_object_set_new(bg->result, key,
                                json_integer((json_int_t) d));
            snprintf(key, sizeof(key), "%s_truncated",
                     vsb_bg_stream_name(i));
            json_object_set_new(bg->result, key, json_boolean(d > 0));
        }

        json_object_set_new(bg->result, "killed",
                            json_boolean(bg->state == VSB_BG_KILLED));
        if (res->error != NULL) {
            json_object_set_new(bg->result, "error",
                                json_string(res->error));
            json_object_set_new(bg->result, "detail",
                                json_string(res->detail));
        }
    }

    vsb_log(VSB_LOG_INFO, "sandbox %s: background exec %s %s: exit %d "
            "signal %d (%llu ms)", bg->sb->id, bg->id,
            vsb_bg_state_names[bg->state],
            res->exited ? res->exit_code : -1,
            res->signaled ? res->signo : 0,
            (unsigned long long) res->wall_ms);

    json_decref(bg->root);
    bg->root = NULL;

    for (w = bg->waiters; w != NULL; w = next) {
        next = w->next;

        if (!w->kill) {
            vsb_bg_pump(w);         /* sends the rest, then ends */
            continue;
        }

        /* a kill: confirmed now that every process is gone */
        c = w->p.conn;
        if (c != NULL) {
            c->op = NULL;
            w->p.conn = NULL;
            reply = vsb_ok(vsb_pending_rid(&w->p));
            if (reply != NULL) {
                json_object_set_new(reply, "exec", vsb_bg_json(bg));
                json_object_set_new(reply, "killed",
                                    json_boolean(bg->state
                                                 == VSB_BG_KILLED));
                json_object_set_new(reply, "confirmed",
                                    json_pack("{s:b}", "processes", 1));
            }
            vsb_conn_reply(c, reply, NULL, 0);
        }
    }

    /* kills answered; followers still draining stay until they are done */
    for (w = bg->waiters, bg->waiters = NULL; w != NULL; w = next) {
        next = w->next;
        if (w->kill) {
            free(w);
        } else {
            w->next = bg->waiters;
            bg->waiters = w;
        }
    }

    if (bg->ending) {
        vsb_bg_free(bg, "its sandbox ended");
        return;
    }

    vsb_bg_evict(bg->sb, vsb_cf.max_background_execs);
}


/* A new record with a fresh id and its two retention files. */
static vsb_bg_t *
vsb_bg_new(vsb_sandbox_t *sb, uint64_t output_bytes, vsb_error_t *e)
{
    char       name[VSB_EXEC_ID_LEN + 8];
    vsb_bg_t  *bg;
    int        dfd, fd, i;

    bg = calloc(1, sizeof(*bg));
    if (bg == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }

    bg->sb = sb;
    bg->output_bytes = output_bytes;
    bg->out[VSB_EXEC_STDOUT].fd = -1;
    bg->out[VSB_EXEC_STDERR].fd = -1;

    do {
        memcpy(bg->id, "ex-", 3);
        if (vsb_random_hex(bg->id + 3, (VSB_EXEC_ID_LEN - 3) / 2) != 0)
        {
            vsb_error_set(e, VSB_E_INTERNAL, NULL, "getrandom(): %s",
                          strerror(errno));
            free(bg);
            return NULL;
        }
    } while (vsb_bg_find(sb, bg->id) != NULL);

    dfd = vsb_bg_dir(sb, 1);
    if (dfd == -1) {
        vsb_error_set(e, errno == ENOSPC ? VSB_E_NO_SPACE : VSB_E_IO, NULL,
                      "background output directory of %s: %s", sb->id,
                      strerror(errno));
        free(bg);
        return NULL;
    }

    for (i = VSB_EXEC_STDOUT; i <= VSB_EXEC_STDERR; i++) {
        snprintf(name, sizeof(name), "%s.%s", bg->id, vsb_bg_stream_name(i));
        fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW
                    | O_CLOEXEC, 0600);
        if (fd == -1) {
            vsb_error_set(e, errno == ENOSPC ? VSB_E_NO_SPACE : VSB_E_IO,
                          NULL, "background output file %s: %s", name,
                          strerror(errno));
            close(dfd);
            bg->ending = 0;
            vsb_bg_free(bg, "could not start");
            return NULL;
        }
        vsb_retain_init(&bg->out[i], fd, output_bytes);
    }

    close(dfd);
    return bg;
}


void
vsb_bg_start(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    vsb_sandbox_t *sb, const unsigned char *payload, size_t payload_len,
    vsb_error_t *e)
{
    vsb_bg_t            *bg;
    vsb_exec_request_t   req;
    json_t              *reply;
    char                 err[256];

    if (vsb_bg_running(sb) >= vsb_cf.max_background_execs) {
        vsb_error_set(e, VSB_E_BUSY, NULL, "sandbox %s already runs %u "
                      "background execs, the maximum", sb->id,
                      vsb_bg_running(sb));
        e->limit = VSB_LIMIT_BACKGROUND;
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    bg = vsb_bg_new(sb, r->output_bytes
                        ? r->output_bytes
                        : vsb_capped(sb->limits.output_bytes,
                                     r->caps[VSB_CAP_OUTPUT_BYTES]), e);
    if (bg == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    bg->root = json_incref(root);
    bg->started_at = time(NULL);
    bg->next = vsb_bgs;
    vsb_bgs = bg;

    vsb_exec_request_init(&req, r, payload, payload_len);
    req.stream_stdout = 1;
    req.stream_stderr = 1;
    req.output = vsb_bg_output;

    err[0] = '\0';
    bg->ex = vsb_exec_start(sb, &req, vsb_bg_done, bg, err, sizeof(err));

    if (bg->ex == NULL) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: background exec could not start: "
                "%s", sb->id, err);
        vsb_bg_free(bg, "could not start");
        vsb_error_set(e, VSB_E_EXEC_FAILED, NULL, "%s", err);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_log(VSB_LOG_INFO, "sandbox %s: background exec %s started: %s",
            sb->id, bg->id, json_string_value(json_array_get(r->argv, 0)));

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "exec", vsb_bg_json(bg));
    }
    vsb_conn_reply(c, reply, NULL, 0);
}


/* ---- waiters: followers and kills ---------------------------------- */


static void
vsb_bg_wait_unlink(vsb_bg_wait_t *w)
{
    vsb_bg_wait_t  **pp;

    for (pp = &w->bg->waiters; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            return;
        }
    }
}


static void
vsb_bg_wait_detach(vsb_pending_t *p)
{
    vsb_bg_wait_t  *w = (vsb_bg_wait_t *) p;

    /* a kill goes on without its client; a follower just stops */
    vsb_bg_wait_unlink(w);
    free(w);
}


static void
vsb_bg_wait_drained(vsb_pending_t *p)
{
    vsb_bg_pump((vsb_bg_wait_t *) p);
}


static const vsb_pending_hooks_t  vsb_bg_wait_hooks = {
    .detach = vsb_bg_wait_detach,
    .drained = vsb_bg_wait_drained,
    .room = NULL,
    .input = NULL,
};


/* A follower: sends retained output from its offset as event frames, a
 * window ahead of its reader at most; once the exec has ended and all is
 * sent, the final reply. */
void
vsb_bg_pump(vsb_bg_wait_t *w)
{
    vsb_bg_t       *bg = w->bg;
    vsb_retain_t   *rt = &bg->out[w->stream];
    vsb_conn_t     *c = w->p.conn;
    vsb_error_t     e;
    unsigned char  *buf;
    uint64_t        start, len;
    ssize_t         n;
    json_t         *ev, *reply;

    if (c == NULL) {
        return;
    }

    for ( ;; ) {
        vsb_retain_span(rt, w->offset, &start, &len);
        if (len == 0 || vsb_conn_queued(c) >= VSB_STREAM_WINDOW) {
            break;
        }

        if (len > VSB_STREAM_CHUNK) {
            len = VSB_STREAM_CHUNK;
        }

        buf = malloc((size_t) len);
        n = buf ? vsb_retain_read(rt, start, buf, (size_t) len) : -1;
        ev = n > 0 ? json_pack("{s:s, s:s, s:I}", "event", VSB_EVENT_OUTPUT,
                               "stream", vsb_bg_stream_name(w->stream),
                               "offset", (json_int_t) start)
                   : NULL;

        if (ev == NULL) {
            free(buf);
            memset(&e, 0, sizeof(e));
            vsb_error_set(&e, VSB_E_IO, NULL, "exec %s: reading retained "
                          "output: %s", bg->id,
                          n == -1 ? strerror(errno) : "out of memory");
            vsb_bg_wait_unlink(w);
            c->op = NULL;
            vsb_conn_reply_error(c, vsb_pending_rid(&w->p), &e);
            free(w);
            return;
        }

        vsb_conn_event(c, ev, buf, (size_t) n);
        w->offset = start + (uint64_t) n;
    }

    if (len > 0 || bg->state == VSB_BG_RUNNING) {
        return;                 /* the drained hook or more output */
    }

    /* ended, and nothing retained after offset: what is left was dropped */
    vsb_bg_wait_unlink(w);
    c->op = NULL;

    reply = vsb_ok(vsb_pending_rid(&w->p));
    if (reply != NULL) {
        json_object_set_new(reply, "exec", vsb_bg_json(bg));
        json_object_set_new(reply, "stream",
                            json_string(vsb_bg_stream_name(w->stream)));
        json_object_set_new(reply, "next_offset",
                            json_integer((json_int_t) rt->total));
        json_object_set_new(reply, "complete", json_true());
    }
    vsb_conn_reply(c, reply, NULL, 0);
    free(w);
}


vsb_bg_wait_t *
vsb_bg_wait_new(vsb_conn_t *c, const vsb_request_t *r, vsb_bg_t *bg)
{
    vsb_bg_wait_t  *w;

    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }

    w->p.kind = VSB_PENDING_WAIT;
    w->p.conn = c;
    w->p.sb = bg->sb;
    w->p.hooks = &vsb_bg_wait_hooks;
    if (r->request_id != NULL) {
        snprintf(w->p.request_id, sizeof(w->p.request_id), "%s",
                 r->request_id);
        w->p.has_request_id = 1;
    }
    w->bg = bg;
    w->next = bg->waiters;
    bg->waiters = w;
    c->op = &w->p;
    return w;
}


