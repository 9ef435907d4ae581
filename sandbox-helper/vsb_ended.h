/*
 * What is kept of a sandbox once it has ended: its ENDED record
 * (vsb_protocol.h), why it ended, when, how long termination took and
 * what was confirmed.  The helper keeps each record in memory (at most
 * VSB_MAX_ENDED_JSON bytes of JSON) and in state_dir/ended/<id>.json,
 * written atomically, so a restarted helper still answers for the
 * sandboxes the last run ended; ended_retention_s after its end a record
 * goes, and at most ended_max are kept (the oldest go first): in all at
 * most ended_max * VSB_MAX_ENDED_JSON bytes, in memory and on disk.
 */
#ifndef VSB_ENDED_H
#define VSB_ENDED_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "vsb_sandbox.h"

/* What an ENDED record says; strings are copied. */
typedef struct {
    const char          *id;
    const char          *epoch;
    const char          *tenant;
    const char          *agent;
    const char          *profile;
    const char          *digest;         /* NULL: a directory profile */
    time_t               created_at;
    time_t               expires_at;
    uint64_t             ttl_s;
    uint64_t             idle_s;

    vsb_end_reason_t     reason;         /* what the end was for */
    const char          *limit;          /* with VSB_END_R_LIMIT */
    const char          *detail;         /* NULL: none */
    const char          *step;           /* NULL: confirmed; else the
                                            first step not confirmed */
    uint64_t             termination_ms;
} vsb_ended_info_t;

typedef struct vsb_ended_s  vsb_ended_t;

/* At start: loads state_dir/ended, drops what is past its retention or
 * unreadable (each drop logged).  -1 with err if the directory cannot be
 * made or read. */
int vsb_ended_init(char *err, size_t errlen);

/* Puts a record on file: in memory at once, on disk (logged if that
 * fails: it then lasts until the helper stops).  A record of the same id
 * is replaced.  A termination_failed record (step set) is kept while its
 * sandbox is in the registry, whatever its age. */
void vsb_ended_put(const vsb_ended_info_t *in);

/* The end of sb (sb->end), confirmed (step NULL) or failed at step. */
void vsb_ended_sandbox(vsb_sandbox_t *sb, const char *step,
    const char *detail, uint64_t termination_ms);

/* The owner's retained record of id, or NULL. */
const vsb_ended_t *vsb_ended_find(const char *tenant, const char *agent,
    const char *id);
/* Its ENDED object (new reference), its reason's name, its ended_at. */
json_t *vsb_ended_json(const vsb_ended_t *e);
const char *vsb_ended_reason(const vsb_ended_t *e);
time_t vsb_ended_at(const vsb_ended_t *e);

/* The owner's records (agent NULL: the tenant's), newest first, within
 * VSB_MAX_ENDED_LIST bytes; *truncated when some were left out. */
json_t *vsb_ended_list(const char *tenant, const char *agent,
    int *truncated);

/* Every owner's records with seq > after, oldest first, at most max and
 * VSB_MAX_ENDED_LIST bytes; *next the last seq given (after if none),
 * *more when more follow. */
json_t *vsb_ended_page(uint64_t after, unsigned max, uint64_t *next,
    int *more);

unsigned vsb_ended_count(void);

/* The lifetime clock moved ahead (clock_advance): the records past
 * their retention go now, before the op's reply; the timer is re-armed
 * for the next. */
void vsb_ended_due(void);

/* END names */
const char *vsb_end_name(vsb_end_reason_t r);

#endif
