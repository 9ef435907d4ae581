/*
 * The attempt-record queue.  Records wait here until the helper's
 * control connection can take them; the queue is bounded in bytes and
 * drops its oldest entries (counted) rather than growing.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "eg_log.h"
#include "eg_record.h"

typedef struct eg_rec_s  eg_rec_t;

struct eg_rec_s {
    eg_rec_t  *next;
    size_t     len;
    char      *json;
};

static eg_rec_t  *eg_rec_head, *eg_rec_tail;
static size_t     eg_rec_count, eg_rec_bytes, eg_rec_max;
static uint64_t   eg_rec_dropped, eg_rec_dropped_total;


void
eg_record_init(size_t max_bytes)
{
    eg_rec_max = max_bytes;
}


static void
eg_rec_drop_oldest(void)
{
    eg_rec_t  *r = eg_rec_head;

    eg_rec_head = r->next;
    if (eg_rec_head == NULL) {
        eg_rec_tail = NULL;
    }
    eg_rec_count--;
    eg_rec_bytes -= r->len;
    free(r->json);
    free(r);
    eg_rec_dropped++;
    eg_rec_dropped_total++;
}


void
eg_record_emit(const eg_record_t *r)
{
    json_t    *o;
    char      *s;
    eg_rec_t  *q;
    size_t     len;

    o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:b}",
                  "event", "attempt", "sandbox", r->sandbox,
                  "kind", r->kind, "host", r->host ? r->host : "",
                  "decision", r->decision,
                  "bytes_out", (json_int_t) r->bytes_out,
                  "bytes_in", (json_int_t) r->bytes_in,
                  "start_ms", (json_int_t) r->start_ms,
                  "duration_ms", (json_int_t) r->duration_ms,
                  "askable", r->askable);
    if (o == NULL) {
        eg_log(EG_LOG_ERROR, "record: cannot build a record for %s",
               r->sandbox);
        eg_rec_dropped++;
        eg_rec_dropped_total++;
        return;
    }
    if (r->port != 0) {
        json_object_set_new(o, "port", json_integer(r->port));
    }
    if (r->address != NULL) {
        json_object_set_new(o, "address", json_string(r->address));
    }
    if (r->reason != NULL) {
        json_object_set_new(o, "reason", json_string(r->reason));
    }
    if (r->credential != NULL) {
        json_object_set_new(o, "credential", json_string(r->credential));
        json_object_set_new(o, "injections", json_integer(r->injections));
        if (r->exfiltration) {
            json_object_set_new(o, "exfiltration", json_true());
        }
    }
    if (r->qtype != 0) {
        json_object_set_new(o, "qtype", json_integer(r->qtype));
    }

    s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (s == NULL) {
        eg_rec_dropped++;
        eg_rec_dropped_total++;
        return;
    }
    len = strlen(s);

    eg_log(EG_LOG_DEBUG, "record: %s", s);

    if (len > EG_RECORD_MAX_BYTES || len > eg_rec_max) {
        free(s);
        eg_rec_dropped++;
        eg_rec_dropped_total++;
        return;
    }

    while (eg_rec_head != NULL && eg_rec_bytes + len > eg_rec_max) {
        eg_rec_drop_oldest();
    }

    q = malloc(sizeof(*q));
    if (q == NULL) {
        free(s);
        eg_rec_dropped++;
        eg_rec_dropped_total++;
        return;
    }
    q->next = NULL;
    q->len = len;
    q->json = s;
    if (eg_rec_tail) {
        eg_rec_tail->next = q;
    } else {
        eg_rec_head = q;
    }
    eg_rec_tail = q;
    eg_rec_count++;
    eg_rec_bytes += len;
}


char *
eg_record_pop(size_t *len)
{
    eg_rec_t  *r = eg_rec_head;
    char      *s;

    if (r == NULL) {
        return NULL;
    }
    eg_rec_head = r->next;
    if (eg_rec_head == NULL) {
        eg_rec_tail = NULL;
    }
    eg_rec_count--;
    eg_rec_bytes -= r->len;
    s = r->json;
    *len = r->len;
    free(r);
    return s;
}


void
eg_record_unpop(char *json, size_t len)
{
    eg_rec_t  *q = malloc(sizeof(*q));

    if (q == NULL) {
        free(json);
        eg_rec_dropped++;
        eg_rec_dropped_total++;
        return;
    }
    q->json = json;
    q->len = len;
    q->next = eg_rec_head;
    eg_rec_head = q;
    if (eg_rec_tail == NULL) {
        eg_rec_tail = q;
    }
    eg_rec_count++;
    eg_rec_bytes += len;
}


size_t
eg_record_queued(void)
{
    return eg_rec_count;
}


size_t
eg_record_queued_bytes(void)
{
    return eg_rec_bytes;
}


uint64_t
eg_record_take_dropped(void)
{
    uint64_t  n = eg_rec_dropped;

    eg_rec_dropped = 0;
    return n;
}


uint64_t
eg_record_dropped_total(void)
{
    return eg_rec_dropped_total;
}


int
eg_record_dropped_pending(void)
{
    return eg_rec_dropped != 0;
}
