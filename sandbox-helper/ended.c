/*
 * The ENDED records: why each sandbox ended, kept for ended_retention_s
 * in memory and in state_dir/ended (one file per record, written
 * atomically by statefile.c).  A list ordered by seq (oldest first) with
 * at most ended_max records, each at most VSB_MAX_ENDED_JSON bytes; a
 * timer removes each at its retained_until, and every removal is
 * verified and logged.  ended_at and retained_until are the lifetime
 * clock's (vsb_lifeclock.h), as is every retention decision.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vsb_config.h"
#include "vsb_ended.h"
#include "vsb_lifeclock.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_registry.h"
#include "vsb_request.h"
#include "vsb_statefile.h"

struct vsb_ended_s {
    vsb_ended_t      *prev, *next;
    char              id[VSB_SANDBOX_ID_LEN + 1];
    char              tenant[VSB_MAX_ID_LEN + 1];
    char              agent[VSB_MAX_ID_LEN + 1];
    const char       *reason;            /* static: an END name */
    uint64_t          seq;
    time_t            ended_at;
    time_t            retained_until;
    unsigned          failed:1;          /* termination_failed */
    size_t            len;
    char              json[];            /* the record, compact */
};

static char          vsb_ended_dir[PATH_MAX];
static vsb_ended_t  *vsb_ended_head, *vsb_ended_tail;
static unsigned      vsb_ended_n;
static uint64_t      vsb_ended_seq = 1;
static vsb_timer_t   vsb_ended_timer;

static const char *const  vsb_end_steps[] = {
    "processes", "cgroups", "network", "mounts", "files"
};

static const char *const  vsb_end_names[] = {
    [VSB_END_NONE] = "none",
    [VSB_END_R_DELETED] = VSB_END_DELETED,
    [VSB_END_R_ADMIN] = VSB_END_ADMIN,
    [VSB_END_R_EXPIRED] = VSB_END_EXPIRED,
    [VSB_END_R_IDLE] = VSB_END_IDLE,
    [VSB_END_R_LIMIT] = VSB_END_KILLED_BY_LIMIT,
    [VSB_END_R_RESTART] = VSB_END_HELPER_RESTART,
    [VSB_END_R_FAILED] = VSB_END_TERMINATION_FAILED,
};

static void vsb_ended_arm(void);


const char *
vsb_end_name(vsb_end_reason_t r)
{
    if ((size_t) r >= sizeof(vsb_end_names) / sizeof(vsb_end_names[0])) {
        return "none";
    }
    return vsb_end_names[r];
}


/* The static name equal to s, or NULL. */
static const char *
vsb_end_known(const char *s)
{
    size_t  i;

    for (i = 1; i < sizeof(vsb_end_names) / sizeof(vsb_end_names[0]); i++) {
        if (strcmp(vsb_end_names[i], s) == 0) {
            return vsb_end_names[i];
        }
    }
    return NULL;
}


static void
vsb_ended_unlink(vsb_ended_t *e)
{
    if (e->prev != NULL) {
        e->prev->next = e->next;
    } else {
        vsb_ended_head = e->next;
    }

    if (e->next != NULL) {
        e->next->prev = e->prev;
    } else {
        vsb_ended_tail = e->prev;
    }

    e->prev = e->next = NULL;
    vsb_ended_n--;
}


static void
vsb_ended_append(vsb_ended_t *e)
{
    e->prev = vsb_ended_tail;
    e->next = NULL;

    if (vsb_ended_tail != NULL) {
        vsb_ended_tail->next = e;
    } else {
        vsb_ended_head = e;
    }

    vsb_ended_tail = e;
    vsb_ended_n++;
}


/* A termination_failed record stays while its sandbox does. */
static int
vsb_ended_pinned(const vsb_ended_t *e)
{
    return e->failed && vsb_registry_get(e->id) != NULL;
}


/* Gone from memory and (verified) from disk. */
static void
vsb_ended_drop(vsb_ended_t *e, const char *why)
{
    char  name[VSB_SANDBOX_ID_LEN + 8], err[512];

    vsb_ended_unlink(e);

    snprintf(name, sizeof(name), "%s.json", e->id);

    if (vsb_statefile_remove(vsb_ended_dir, name, err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "ended record of %s: removal failed: %s", e->id,
                err);
    } else {
        vsb_log(VSB_LOG_INFO, "ended record of %s removed (%s)", e->id, why);
    }

    free(e);
}


static void
vsb_ended_expire(vsb_timer_t *t)
{
    vsb_ended_t  *e, *next;
    time_t        now = vsb_life_now();

    for (e = vsb_ended_head; e != NULL; e = next) {
        next = e->next;
        if (e->retained_until <= now && !vsb_ended_pinned(e)) {
            vsb_ended_drop(e, "retention");
        }
    }

    vsb_ended_arm();
}


/* The timer fires at the earliest retained_until. */
static void
vsb_ended_arm(void)
{
    vsb_ended_t  *e;
    time_t        first = 0, now;

    for (e = vsb_ended_head; e != NULL; e = e->next) {
        if ((first == 0 || e->retained_until < first) && !vsb_ended_pinned(e))
        {
            first = e->retained_until;
        }
    }

    if (first == 0) {
        /* pinned ones are looked at again once a minute */
        if (vsb_ended_head != NULL) {
            vsb_ended_timer.handler = vsb_ended_expire;
            vsb_timer_add(&vsb_ended_timer, 60000);
        } else {
            vsb_timer_del(&vsb_ended_timer);
        }
        return;
    }

    now = vsb_life_now();
    vsb_ended_timer.handler = vsb_ended_expire;
    vsb_timer_add(&vsb_ended_timer,
                  first > now ? (uint64_t) (first - now) * 1000 + 50 : 0);
}


void
vsb_ended_due(void)
{
    vsb_timer_del(&vsb_ended_timer);
    vsb_ended_expire(&vsb_ended_timer);     /* it re-arms the timer */
}


/* Count bound: the oldest unpinned records go first. */
static void
vsb_ended_bound(void)
{
    vsb_ended_t  *e, *next;

    for (e = vsb_ended_head; e != NULL && vsb_ended_n > vsb_cf.ended_max;
         e = next)
    {
        next = e->next;
        if (!vsb_ended_pinned(e)) {
            vsb_ended_drop(e, "ended_max reached");
        }
    }
}


static vsb_ended_t *
vsb_ended_by_id(const char *id)
{
    vsb_ended_t  *e;

    for (e = vsb_ended_head; e != NULL; e = e->next) {
        if (strcmp(e->id, id) == 0) {
            return e;
        }
    }
    return NULL;
}


static json_t *
vsb_ended_confirmed(const char *step)
{
    json_t  *c;
    size_t   i;
    int      ok = 1;

    c = json_object();
    if (c == NULL) {
        return NULL;
    }

    for (i = 0; i < sizeof(vsb_end_steps) / sizeof(vsb_end_steps[0]); i++) {
        if (step != NULL && strcmp(step, vsb_end_steps[i]) == 0) {
            ok = 0;
        }
        json_object_set_new(c, vsb_end_steps[i], json_boolean(ok));
    }

    return c;
}


/* The record's JSON text, within VSB_MAX_ENDED_JSON (the detail is cut,
 * or left out, to fit). */
static char *
vsb_ended_text(const vsb_ended_info_t *in, const char *step, uint64_t seq,
    time_t ended_at, time_t retained_until)
{
    json_t  *j;
    char    *s;
    char     detail[257];

    j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, "
                  "s:I, s:I, s:o, s:I}",
                  "id", in->id,
                  "epoch", in->epoch,
                  "tenant", in->tenant,
                  "agent", in->agent,
                  "profile", in->profile,
                  "state", "ended",
                  "created_at", (json_int_t) in->created_at,
                  "ttl_s", (json_int_t) in->ttl_s,
                  "idle_s", (json_int_t) in->idle_s,
                  "expires_at", (json_int_t) in->expires_at,
                  "ended_at", (json_int_t) ended_at,
                  "termination_ms", (json_int_t) in->termination_ms,
                  "retained_until", (json_int_t) retained_until,
                  "confirmed", vsb_ended_confirmed(step),
                  "seq", (json_int_t) seq);
    if (j == NULL) {
        return NULL;
    }

    json_object_set_new(j, "profile_digest", in->digest != NULL
                        ? json_string(in->digest) : json_null());

    if (step != NULL) {
        json_object_set_new(j, "end_reason",
                            json_string(VSB_END_TERMINATION_FAILED));
        json_object_set_new(j, "step", json_string(step));
        json_object_set_new(j, "cause",
                            json_string(vsb_end_name(in->reason)));
    } else {
        json_object_set_new(j, "end_reason",
                            json_string(vsb_end_name(in->reason)));
    }

    if (in->reason == VSB_END_R_LIMIT && in->limit != NULL) {
        json_object_set_new(j, "limit", json_string(in->limit));
    }

    if (in->detail != NULL && in->detail[0] != '\0') {
        snprintf(detail, sizeof(detail), "%s", in->detail);
        json_object_set_new(j, "detail", json_string(detail));
    }

    s = json_dumps(j, JSON_COMPACT);

    if (s != NULL && strlen(s) > VSB_MAX_ENDED_JSON) {
        free(s);
        json_object_del(j, "detail");
        s = json_dumps(j, JSON_COMPACT);
    }

    json_decref(j);

    if (s != NULL && strlen(s) > VSB_MAX_ENDED_JSON) {
        free(s);
        return NULL;
    }

    return s;
}


static vsb_ended_t *
vsb_ended_new(const char *id, const char *tenant, const char *agent,
    const char *text)
{
    vsb_ended_t  *e;
    size_t        len = strlen(text);

    e = calloc(1, sizeof(*e) + len + 1);
    if (e == NULL) {
        return NULL;
    }

    snprintf(e->id, sizeof(e->id), "%s", id);
    snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
    snprintf(e->agent, sizeof(e->agent), "%s", agent);
    memcpy(e->json, text, len + 1);
    e->len = len;

    return e;
}


void
vsb_ended_put(const vsb_ended_info_t *in)
{
    char          *text, name[VSB_SANDBOX_ID_LEN + 8], err[512];
    time_t         now;
    uint64_t       seq;
    vsb_ended_t   *e, *old;

    now = vsb_life_now();
    seq = vsb_ended_seq++;

    text = vsb_ended_text(in, in->step, seq, now,
                          now + (time_t) vsb_cf.ended_retention_s);
    if (text == NULL) {
        vsb_log(VSB_LOG_ERR, "sandbox %s: its ENDED record cannot be made "
                "(out of memory)", in->id);
        return;
    }

    e = vsb_ended_new(in->id, in->tenant, in->agent, text);
    if (e == NULL) {
        vsb_log(VSB_LOG_ERR, "sandbox %s: no memory for its ENDED record",
                in->id);
        free(text);
        return;
    }

    e->seq = seq;
    e->ended_at = now;
    e->retained_until = now + (time_t) vsb_cf.ended_retention_s;
    e->failed = in->step != NULL;
    e->reason = in->step != NULL ? VSB_END_TERMINATION_FAILED
                                 : vsb_end_name(in->reason);

    old = vsb_ended_by_id(in->id);
    if (old != NULL) {
        vsb_ended_unlink(old);
        free(old);
    }

    vsb_ended_append(e);

    snprintf(name, sizeof(name), "%s.json", in->id);
    if (vsb_statefile_write(vsb_ended_dir, name, text, strlen(text), err,
                            sizeof(err)) != 0)
    {
        vsb_log(VSB_LOG_ERR, "sandbox %s: its ENDED record is kept in memory "
                "only: %s", in->id, err);
    }

    free(text);

    vsb_log(VSB_LOG_INFO, "sandbox %s (tenant %s agent %s) ended: %s%s%s, "
            "termination %s in %llu ms", in->id, in->tenant, in->agent,
            vsb_end_name(in->reason), in->limit ? " " : "",
            in->limit ? in->limit : "", in->step ? "failed" : "confirmed",
            (unsigned long long) in->termination_ms);

    vsb_ended_bound();
    vsb_ended_arm();
}


void
vsb_ended_sandbox(vsb_sandbox_t *sb, const char *step, const char *detail,
    uint64_t termination_ms)
{
    vsb_ended_info_t  in;

    if (sb->end.reason == VSB_END_NONE) {
        return;                 /* a create undone: it never was */
    }

    memset(&in, 0, sizeof(in));
    in.id = sb->id;
    in.epoch = vsb_registry_epoch();
    in.tenant = sb->tenant;
    in.agent = sb->agent;
    in.profile = sb->profile->name;
    in.digest = vsb_profile_is_image(sb->profile) ? sb->profile->digest
                                                   : NULL;
    in.created_at = sb->created_at;
    in.expires_at = sb->expires_at;
    in.ttl_s = sb->ttl_s;
    in.idle_s = sb->idle_s;
    in.reason = sb->end.reason;
    in.limit = sb->end.limit;
    in.detail = step != NULL ? detail : sb->end.detail;
    in.step = step;
    in.termination_ms = termination_ms;

    vsb_ended_put(&in);
}


static vsb_ended_t *
vsb_ended_owned(const char *tenant, const char *agent, const char *id)
{
    vsb_ended_t  *e;

    e = vsb_ended_by_id(id);
    if (e == NULL || strcmp(e->tenant, tenant) != 0
        || strcmp(e->agent, agent) != 0)
    {
        return NULL;
    }

    if (e->retained_until <= vsb_life_now() && !vsb_ended_pinned(e)) {
        vsb_ended_drop(e, "retention");
        vsb_ended_arm();
        return NULL;
    }

    return e;
}


const vsb_ended_t *
vsb_ended_find(const char *tenant, const char *agent, const char *id)
{
    return vsb_ended_owned(tenant, agent, id);
}


json_t *
vsb_ended_json(const vsb_ended_t *e)
{
    return json_loadb(e->json, e->len, 0, NULL);
}


const char *
vsb_ended_reason(const vsb_ended_t *e)
{
    return e->reason;
}


time_t
vsb_ended_at(const vsb_ended_t *e)
{
    return e->ended_at;
}


unsigned
vsb_ended_count(void)
{
    return vsb_ended_n;
}


json_t *
vsb_ended_list(const char *tenant, const char *agent, int *truncated)
{
    json_t       *arr, *j;
    size_t        bytes = 0;
    time_t        now = vsb_life_now();
    vsb_ended_t  *e;

    *truncated = 0;

    arr = json_array();
    if (arr == NULL) {
        return NULL;
    }

    for (e = vsb_ended_tail; e != NULL; e = e->prev) {
        if (strcmp(e->tenant, tenant) != 0
            || (agent != NULL && strcmp(e->agent, agent) != 0)
            || (e->retained_until <= now && !vsb_ended_pinned(e)))
        {
            continue;
        }

        if (bytes + e->len + 1 > VSB_MAX_ENDED_LIST) {
            *truncated = 1;
            break;
        }

        j = vsb_ended_json(e);
        if (j == NULL || json_array_append_new(arr, j) != 0) {
            json_decref(arr);
            return NULL;
        }
        bytes += e->len + 1;
    }

    return arr;
}


/* Same shape as vsb_ended_list() above: kept apart because a page walks
 * every owner's records oldest first from a sequence number, and stops at
 * a count too; the list walks one owner's newest first. */
json_t *
vsb_ended_page(uint64_t after, unsigned max, uint64_t *next, int *more)
{
    json_t       *arr, *j;
    size_t        bytes = 0;
    unsigned      n = 0;
    vsb_ended_t  *e;

    *next = after;
    *more = 0;

    arr = json_array();
    if (arr == NULL) {
        return NULL;
    }

    for (e = vsb_ended_head; e != NULL; e = e->next) {
        if (e->seq <= after) {
            continue;
        }

        if (n == max || bytes + e->len + 1 > VSB_MAX_ENDED_LIST) {
            *more = 1;
            break;
        }

        j = vsb_ended_json(e);
        if (j == NULL || json_array_append_new(arr, j) != 0) {
            json_decref(arr);
            return NULL;
        }

        bytes += e->len + 1;
        n++;
        *next = e->seq;
    }

    return arr;
}


/* ---- loading at start ------------------------------------------------ */


typedef struct {
    vsb_ended_t  **v;
    size_t         n;
    size_t         cap;
    time_t         now;
} vsb_ended_load_t;


static int
vsb_ended_valid_owner(json_t *v)
{
    const char  *s;
    size_t       i, len;

    if (!json_is_string(v)) {
        return 0;
    }

    s = json_string_value(v);
    len = json_string_length(v);

    if (len == 0 || len > VSB_MAX_ID_LEN) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (s[i] < 0x21 || s[i] > 0x7e) {
            return 0;
        }
    }

    return 1;
}


static void
vsb_ended_discard(const char *name, const char *why)
{
    char  err[512];

    if (vsb_statefile_remove(vsb_ended_dir, name, err, sizeof(err)) != 0) {
        vsb_log(VSB_LOG_ERR, "ended record %s (%s): removal failed: %s",
                name, why, err);
        return;
    }

    vsb_log(VSB_LOG_INFO, "ended record %s removed (%s)", name, why);
}


static int
vsb_ended_load_one(const char *name, void *data)
{
    vsb_ended_load_t  *l = data;
    char               buf[VSB_STATEFILE_MAX + 1], id[64], err[512];
    json_t            *j, *tenant, *agent, *seq, *until, *at, *reason;
    const char        *known;
    vsb_ended_t       *e, **v;
    size_t             len;

    len = strlen(name) - 5;
    if (len >= sizeof(id)) {
        vsb_ended_discard(name, "not a sandbox id");
        return 0;
    }
    memcpy(id, name, len);
    id[len] = '\0';

    if (!vsb_req_id_ok(id)) {
        vsb_ended_discard(name, "not a sandbox id");
        return 0;
    }

    if (vsb_statefile_read(vsb_ended_dir, name, buf, sizeof(buf), err,
                           sizeof(err)) < 0)
    {
        vsb_log(VSB_LOG_WARN, "ended record %s: %s", name, err);
        vsb_ended_discard(name, "unreadable");
        return 0;
    }

    j = json_loads(buf, JSON_REJECT_DUPLICATES, NULL);
    tenant = json_object_get(j, "tenant");
    agent = json_object_get(j, "agent");
    seq = json_object_get(j, "seq");
    until = json_object_get(j, "retained_until");
    at = json_object_get(j, "ended_at");
    reason = json_object_get(j, "end_reason");
    known = json_is_string(reason) ? vsb_end_known(json_string_value(reason))
                                   : NULL;

    if (!json_is_object(j) || strlen(buf) > VSB_MAX_ENDED_JSON
        || !json_is_string(json_object_get(j, "id"))
        || strcmp(json_string_value(json_object_get(j, "id")), id) != 0
        || !vsb_ended_valid_owner(tenant) || !vsb_ended_valid_owner(agent)
        || !json_is_integer(seq) || json_integer_value(seq) < 1
        || !json_is_integer(until) || !json_is_integer(at) || known == NULL)
    {
        json_decref(j);
        vsb_ended_discard(name, "not an ENDED record");
        return 0;
    }

    if ((time_t) json_integer_value(until) <= l->now
        && strcmp(known, VSB_END_TERMINATION_FAILED) != 0)
    {
        json_decref(j);
        vsb_ended_discard(name, "retention");
        return 0;
    }

    e = vsb_ended_new(id, json_string_value(tenant), json_string_value(agent),
                      buf);
    if (e == NULL) {
        json_decref(j);
        return -1;
    }

    e->seq = (uint64_t) json_integer_value(seq);
    e->ended_at = (time_t) json_integer_value(at);
    e->retained_until = (time_t) json_integer_value(until);
    e->reason = known;
    e->failed = strcmp(known, VSB_END_TERMINATION_FAILED) == 0;
    json_decref(j);

    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        v = realloc(l->v, l->cap * sizeof(*v));
        if (v == NULL) {
            free(e);
            return -1;
        }
        l->v = v;
    }

    l->v[l->n++] = e;
    return 0;
}


static int
vsb_ended_by_seq(const void *a, const void *b)
{
    const vsb_ended_t  *x = *(vsb_ended_t *const *) a;
    const vsb_ended_t  *y = *(vsb_ended_t *const *) b;

    return x->seq < y->seq ? -1 : x->seq > y->seq;
}


int
vsb_ended_init(char *err, size_t errlen)
{
    vsb_ended_load_t  l;
    size_t            i;

    if (vsb_statefile_dir("ended", vsb_ended_dir, sizeof(vsb_ended_dir), err,
                          errlen) != 0)
    {
        return -1;
    }

    memset(&l, 0, sizeof(l));
    l.now = vsb_life_now();

    if (vsb_statefile_each(vsb_ended_dir, vsb_ended_load_one, &l) != 0) {
        for (i = 0; i < l.n; i++) {
            free(l.v[i]);
        }
        free(l.v);
        snprintf(err, errlen, "ended records in \"%s\" cannot be read",
                 vsb_ended_dir);
        return -1;
    }

    if (l.n > 0) {
        qsort(l.v, l.n, sizeof(*l.v), vsb_ended_by_seq);
    }

    for (i = 0; i < l.n; i++) {
        vsb_ended_append(l.v[i]);
        if (l.v[i]->seq >= vsb_ended_seq) {
            vsb_ended_seq = l.v[i]->seq + 1;
        }
    }

    free(l.v);

    vsb_ended_bound();
    vsb_ended_arm();

    vsb_log(VSB_LOG_INFO, "%u ended sandboxes on record (kept %llu s, at "
            "most %llu)", vsb_ended_n,
            (unsigned long long) vsb_cf.ended_retention_s,
            (unsigned long long) vsb_cf.ended_max);
    return 0;
}
