/*
 * Attempt records from the egress proxy, and each exec's "network"
 * field.  A record names its sandbox, not the exec: execs of a sandbox
 * share its namespace.  Each exec has a window (its start and end, unix
 * ms); at its end the helper sends "stats" (a barrier: every record made
 * before the reply has arrived), waits a little more while the proxy
 * still has connections of a sandbox none of whose other execs runs
 * (their closing records are on their way), and lists the records that
 * began inside the window.  Records are checked field by field, bounded
 * per sandbox in bytes (oldest dropped, the windows then say
 * "complete": false), and dropped once no window can claim them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vsb_egress_ctl.h"
#include "vsb_egress_int.h"
#include "vsb_egress_proxy.h"
#include "vsb_log.h"

#define VSB_EGREC_SLACK_MS      5      /* clocks read on either side */
#define VSB_EGREC_SETTLES       6      /* 10, 20, 40 ... 320 ms */
#define VSB_EGREC_SETTLE_MS     10
#define VSB_EGREC_STATS_MS      3000   /* the barrier's own deadline */

static void vsb_egress_barrier(vsb_egress_win_t *w);

static uint64_t  vsb_egress_injections, vsb_egress_refused_placeholders;


void
vsb_egress_cred_counts(uint64_t *injections, uint64_t *refused)
{
    *injections = vsb_egress_injections;
    *refused = vsb_egress_refused_placeholders;
}


static uint64_t
vsb_egress_wall_ms(void)
{
    struct timespec  ts;

    (void) clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


/* Copies a string field of at most max bytes of printable ASCII. */
static int
vsb_egress_copy_str(json_t *dst, json_t *src, const char *key, size_t max,
    int required)
{
    json_t      *v = json_object_get(src, key);
    const char  *s;
    size_t       i, n;

    if (v == NULL) {
        return required ? -1 : 0;
    }
    if (!json_is_string(v)) {
        return -1;
    }
    s = json_string_value(v);
    n = json_string_length(v);
    if (n > max) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] > 0x7e) {
            return -1;
        }
    }
    return json_object_set(dst, key, v);
}


static int
vsb_egress_copy_uint(json_t *dst, json_t *src, const char *key,
    json_int_t max, int required)
{
    json_t  *v = json_object_get(src, key);

    if (v == NULL) {
        return required ? -1 : 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0
        || json_integer_value(v) > max)
    {
        return -1;
    }
    return json_object_set(dst, key, v);
}


/* The attempt as the exec result shows it, or NULL if anything in it
 * is not what the protocol says (the proxy is not trusted to be sane). */
static json_t *
vsb_egress_sanitize(json_t *ev)
{
    const char  *d;
    json_t      *o, *a;

    d = json_string_value(json_object_get(ev, "decision"));
    a = json_object_get(ev, "askable");
    if (d == NULL || (strcmp(d, "allowed") != 0 && strcmp(d, "refused") != 0
                      && strcmp(d, "error") != 0)
        || (a != NULL && !json_is_boolean(a)))
    {
        return NULL;
    }

    o = json_object();
    if (o == NULL
        || vsb_egress_copy_str(o, ev, "kind", 16, 1) != 0
        || vsb_egress_copy_str(o, ev, "host", 253, 1) != 0
        || vsb_egress_copy_uint(o, ev, "port", 65535, 0) != 0
        || vsb_egress_copy_str(o, ev, "address", 64, 0) != 0
        || json_object_set_new(o, "decision", json_string(d)) != 0
        || vsb_egress_copy_str(o, ev, "reason", 200, 0) != 0
        || vsb_egress_copy_uint(o, ev, "bytes_out", (json_int_t) 1 << 53, 1)
           != 0
        || vsb_egress_copy_uint(o, ev, "bytes_in", (json_int_t) 1 << 53, 1)
           != 0
        || vsb_egress_copy_uint(o, ev, "start_ms", (json_int_t) 1 << 53, 1)
           != 0
        || vsb_egress_copy_uint(o, ev, "duration_ms", (json_int_t) 1 << 40, 1)
           != 0
        || vsb_egress_copy_uint(o, ev, "qtype", 65535, 0) != 0
        || vsb_egress_copy_str(o, ev, "credential", 64, 0) != 0
        || vsb_egress_copy_uint(o, ev, "injections", (json_int_t) 1 << 40, 0)
           != 0
        || (json_is_true(json_object_get(ev, "exfiltration"))
            && json_object_set_new(o, "exfiltration", json_true()) != 0)
        || json_object_set_new(o, "askable", json_boolean(json_is_true(a)))
           != 0)
    {
        json_decref(o);
        return NULL;
    }
    return o;
}


static void
vsb_egress_mark_lost(vsb_egress_sb_t *es)
{
    vsb_egress_win_t  *w;

    for (w = es->wins; w != NULL; w = w->next) {
        w->lost = 1;
    }
}


static void
vsb_egress_drop_head(vsb_egress_sb_t *es)
{
    vsb_egress_rec_t  *r = es->rhead;

    es->rhead = r->next;
    if (es->rhead == NULL) {
        es->rtail = NULL;
    }
    es->rbytes -= r->bytes;
    json_decref(r->o);
    free(r);
}


void
vsb_egress_on_event(json_t *ev)
{
    const char        *kind, *sid;
    vsb_egress_sb_t   *es;
    vsb_egress_rec_t  *r;
    json_t            *o;
    char              *s;

    kind = json_string_value(json_object_get(ev, "event"));
    if (kind == NULL) {
        return;
    }

    if (strcmp(kind, "records_dropped") == 0) {
        /* the proxy's queue overflowed: every running exec may miss some */
        vsb_log(VSB_LOG_WARN, "egress: the proxy dropped attempt records");
        for (es = vsb_egress_first(); es != NULL; es = es->next) {
            vsb_egress_mark_lost(es);
        }
        return;
    }
    if (strcmp(kind, "attempt") != 0) {
        return;
    }

    /* counted whether or not an exec claims the record */
    if (json_is_integer(json_object_get(ev, "injections"))
        && json_integer_value(json_object_get(ev, "injections")) > 0
        && json_integer_value(json_object_get(ev, "injections"))
           < ((json_int_t) 1 << 40))
    {
        vsb_egress_injections += (uint64_t)
            json_integer_value(json_object_get(ev, "injections"));
    }
    if (json_is_true(json_object_get(ev, "exfiltration"))) {
        vsb_egress_refused_placeholders++;
    }

    sid = json_string_value(json_object_get(ev, "sandbox"));
    es = sid != NULL ? vsb_egress_find(sid) : NULL;
    if (es == NULL) {
        return;                 /* a sandbox already gone */
    }
    if (es->wins == NULL) {
        es->rdropped++;         /* no exec runs: nobody to tell */
        return;
    }

    o = vsb_egress_sanitize(ev);
    s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
    r = s != NULL ? calloc(1, sizeof(*r)) : NULL;
    if (r == NULL) {
        vsb_log(VSB_LOG_WARN, "sandbox %s: egress: an attempt record was "
                "malformed or could not be kept", es->sb->id);
        free(s);
        json_decref(o);
        vsb_egress_mark_lost(es);
        return;
    }
    r->o = o;
    r->bytes = strlen(s);
    r->start_ms = (uint64_t) json_integer_value(json_object_get(o,
                                                                "start_ms"));
    free(s);

    while (es->rhead != NULL && es->rbytes + r->bytes > VSB_EGRESS_SB_REC_BYTES)
    {
        vsb_egress_drop_head(es);
        vsb_egress_mark_lost(es);
    }
    if (es->rtail != NULL) {
        es->rtail->next = r;
    } else {
        es->rhead = r;
    }
    es->rtail = r;
    es->rbytes += r->bytes;
}


vsb_egress_win_t *
vsb_egress_exec_begin(vsb_sandbox_t *sb)
{
    vsb_egress_sb_t   *es = sb->egress;
    vsb_egress_win_t  *w;

    if (es == NULL) {
        return NULL;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    w->es = es;
    w->start_ms = vsb_egress_wall_ms();
    w->timer.data = w;
    w->next = es->wins;
    es->wins = w;
    return w;
}


static int
vsb_egress_in_window(const vsb_egress_win_t *w, const vsb_egress_rec_t *r)
{
    return r->start_ms + VSB_EGREC_SLACK_MS >= w->start_ms
           && r->start_ms <= w->end_ms + VSB_EGREC_SLACK_MS;
}


/* The exec's "network": its attempts within VSB_MAX_EXEC_NETWORK_BYTES,
 * refusals and errors kept first (they explain a failure), in the
 * order the proxy finished them. */
static json_t *
vsb_egress_network(vsb_egress_win_t *w)
{
    vsb_egress_rec_t  *r;
    json_t            *net, *arr;
    size_t             budget = VSB_MAX_EXEC_NETWORK_BYTES, n = 0, kept = 0;
    unsigned char     *keep;
    size_t             i;
    int                pass;

    for (r = w->es->rhead; r != NULL; r = r->next) {
        n++;
    }
    keep = calloc(n ? n : 1, 1);
    arr = json_array();
    net = json_object();
    if (keep == NULL || arr == NULL || net == NULL) {
        free(keep);
        json_decref(arr);
        json_decref(net);
        return NULL;
    }

    n = 0;
    for (r = w->es->rhead; r != NULL; r = r->next) {
        n += vsb_egress_in_window(w, r);
    }

    for (pass = 0; pass < 2; pass++) {
        for (r = w->es->rhead, i = 0; r != NULL; r = r->next, i++) {
            const char  *d;
            int          allowed;

            if (keep[i] || !vsb_egress_in_window(w, r)) {
                continue;
            }
            d = json_string_value(json_object_get(r->o, "decision"));
            allowed = d != NULL && strcmp(d, "allowed") == 0;
            if (allowed == pass && r->bytes + 1 <= budget) {
                budget -= r->bytes + 1;
                keep[i] = 1;
                kept++;
            }
        }
    }

    for (r = w->es->rhead, i = 0; r != NULL; r = r->next, i++) {
        if (keep[i]) {
            json_array_append(arr, r->o);
        }
    }
    free(keep);

    json_object_set_new(net, "attempts", arr);
    json_object_set_new(net, "dropped", json_integer((json_int_t) (n - kept)));
    json_object_set_new(net, "complete",
                        json_boolean(!w->lost && !w->unsure));
    return net;
}


/* Drops records no running or ending exec can claim any more. */
static void
vsb_egress_prune(vsb_egress_sb_t *es)
{
    vsb_egress_win_t  *w;
    uint64_t           oldest = UINT64_MAX;

    for (w = es->wins; w != NULL; w = w->next) {
        if (w->start_ms < oldest) {
            oldest = w->start_ms;
        }
    }
    while (es->rhead != NULL
           && (es->wins == NULL
               || es->rhead->start_ms + VSB_EGREC_SLACK_MS < oldest))
    {
        vsb_egress_drop_head(es);
    }
}


static void
vsb_egress_win_unlink(vsb_egress_win_t *w)
{
    vsb_egress_win_t  **pp;

    for (pp = &w->es->wins; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            return;
        }
    }
}


static void
vsb_egress_finish(vsb_egress_win_t *w)
{
    vsb_egress_exec_pt   cb = w->cb;
    void                *data = w->data;
    json_t              *net;

    net = vsb_egress_network(w);
    if (net == NULL) {
        net = json_pack("{s:[], s:i, s:b}", "attempts", "dropped", 0,
                        "complete", 0);
    }

    vsb_timer_del(&w->timer);
    vsb_ectl_forget(w);
    vsb_egress_win_unlink(w);
    vsb_egress_prune(w->es);
    free(w);

    cb(data, net);
}


/* Whether another exec of the sandbox still runs (its connections are
 * then not a sign of records on their way). */
static int
vsb_egress_others_run(const vsb_egress_win_t *w)
{
    const vsb_egress_win_t  *o;

    for (o = w->es->wins; o != NULL; o = o->next) {
        if (o != w && o->end_ms == 0) {
            return 1;
        }
    }
    return 0;
}


static void
vsb_egress_settle(vsb_timer_t *t)
{
    vsb_egress_barrier(t->data);
}


static void
vsb_egress_stats_reply(void *data, json_t *reply, const char *why)
{
    vsb_egress_win_t  *w = data;
    json_t            *sbs, *conns;

    if (reply == NULL || !json_is_true(json_object_get(reply, "ok"))) {
        w->unsure = 1;
        vsb_egress_finish(w);
        return;
    }

    sbs = json_object_get(reply, "sandboxes");
    conns = json_object_get(json_array_get(sbs, 0), "connections");
    if (json_is_integer(conns) && json_integer_value(conns) > 0
        && w->settles < VSB_EGREC_SETTLES && !vsb_egress_others_run(w))
    {
        w->timer.handler = vsb_egress_settle;
        vsb_timer_add(&w->timer, (uint64_t) VSB_EGREC_SETTLE_MS << w->settles);
        w->settles++;
        return;
    }
    if (json_is_integer(conns) && json_integer_value(conns) > 0
        && !vsb_egress_others_run(w))
    {
        w->unsure = 1;          /* connections outlived every process */
    }
    vsb_egress_finish(w);
}


static void
vsb_egress_barrier(vsb_egress_win_t *w)
{
    json_t  *req;

    if (!vsb_eproxy_up() || !w->es->served) {
        w->unsure = 1;
        vsb_egress_finish(w);
        return;
    }

    req = json_pack("{s:s, s:s}", "op", VSB_EGRESS_OP_STATS, "sandbox",
                    w->es->sb->id);
    if (req == NULL
        || vsb_ectl_send(req, NULL, 0, VSB_EGREC_STATS_MS, vsb_egress_stats_reply,
                         w) != 0)
    {
        json_decref(req);
        w->unsure = 1;
        vsb_egress_finish(w);
        return;
    }
    json_decref(req);
}


void
vsb_egress_exec_end(vsb_sandbox_t *sb, vsb_egress_win_t *w,
    vsb_egress_exec_pt cb, void *data)
{
    json_t  *net;

    if (w == NULL) {
        if (sb->egress == NULL) {
            net = json_string("none");
        } else {
            /* no window could be made: nothing is known */
            net = json_pack("{s:[], s:i, s:b}", "attempts", "dropped", 0,
                            "complete", 0);
        }
        cb(data, net);
        return;
    }

    w->end_ms = vsb_egress_wall_ms();
    w->cb = cb;
    w->data = data;
    vsb_egress_barrier(w);
}


void
vsb_egress_records_free(vsb_egress_sb_t *es)
{
    vsb_egress_win_t  *w, *next;

    while (es->rhead != NULL) {
        vsb_egress_drop_head(es);
    }
    for (w = es->wins; w != NULL; w = next) {
        /* an exec outliving its sandbox's state is a bug: say so */
        next = w->next;
        vsb_log(VSB_LOG_ERR, "sandbox %s: egress: an exec window was still "
                "open at free", es->sb->id);
        vsb_timer_del(&w->timer);
        vsb_ectl_forget(w);
        if (w->cb != NULL) {
            w->cb(w->data, json_pack("{s:[], s:i, s:b}", "attempts",
                                     "dropped", 0, "complete", 0));
        }
        free(w);
    }
    es->wins = NULL;
}
