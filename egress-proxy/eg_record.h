/*
 * Attempt records: one per connection attempt (allowed or refused) and
 * per refused DNS question.  Serialized as JSON at once and queued,
 * bounded in bytes (record_buffer_bytes); when full the oldest records
 * are dropped and counted, and the count is reported to the helper.
 */
#ifndef EG_RECORD_H
#define EG_RECORD_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char  *sandbox;
    const char  *kind;         /* "http", "connect", "tls", "dns" */
    const char  *host;
    uint16_t     port;         /* 0 for dns */
    const char  *address;      /* the address dialled or refused, or NULL */
    const char  *decision;     /* "allowed", "refused", "error" */
    const char  *reason;       /* why, for refusals and errors */
    uint64_t     bytes_out;
    uint64_t     bytes_in;
    uint64_t     start_ms;     /* unix ms */
    uint64_t     duration_ms;
    int          askable;
    const char  *credential;   /* a credential's name, or NULL */
    int          exfiltration; /* its placeholder went where it is not bound */
    unsigned     injections;
    int          qtype;        /* dns */
} eg_record_t;

#define EG_RECORD_MAX_BYTES  1024  /* one serialized record, at most */

void eg_record_init(size_t max_bytes);
void eg_record_emit(const eg_record_t *r);

/* The oldest queued record (malloc'd JSON, caller frees), or NULL. */
char *eg_record_pop(size_t *len);
/* Puts a popped record back at the head (it could not be sent). */
void eg_record_unpop(char *json, size_t len);
size_t eg_record_queued(void);
size_t eg_record_queued_bytes(void);
/* Dropped since the last call (the count is reset). */
uint64_t eg_record_take_dropped(void);
uint64_t eg_record_dropped_total(void);
int eg_record_dropped_pending(void);

#endif
