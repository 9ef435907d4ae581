/*
 * A background exec's output as the helper retains it: one stream in one
 * file of the sandbox's own tmpfs (so it counts against the sandbox's
 * disk, not the helper's memory), the head and the tail within a byte
 * limit, read back by stream offset.  Head: stream bytes [0, head_cap)
 * at file offsets [0, head_cap); tail: a ring of tail_cap bytes after
 * it, holding the newest bytes.  When the disk is full, retention stops
 * there and the rest is counted as dropped.
 */
#ifndef VSB_RETAIN_H
#define VSB_RETAIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    int        fd;
    uint64_t   head_cap;        /* ceil(limit / 2) */
    uint64_t   tail_cap;        /* floor(limit / 2) */
    uint64_t   total;           /* bytes the workload wrote */
    uint64_t   kept_to;         /* retention stopped here (write failed);
                                   UINT64_MAX: it did not */
    int        error;           /* that failure's errno */
} vsb_retain_t;

/* fd is an empty file, owned from now on; limit: bytes kept at most. */
void vsb_retain_init(vsb_retain_t *rt, int fd, uint64_t limit);
void vsb_retain_add(vsb_retain_t *rt, const unsigned char *p, size_t n);

/* The run of retained bytes at or after off: it starts at *start (> off
 * when bytes in between were dropped) and has *len bytes; *len 0 (and
 * *start off) when none is retained after off, yet or at all. */
void vsb_retain_span(const vsb_retain_t *rt, uint64_t off, uint64_t *start,
    uint64_t *len);
/* Reads up to n bytes of a span from start; -1 with errno on failure. */
ssize_t vsb_retain_read(const vsb_retain_t *rt, uint64_t start,
    unsigned char *buf, size_t n);

/* Bytes written but not retained (the middle, or past a full disk). */
uint64_t vsb_retain_dropped(const vsb_retain_t *rt);
void vsb_retain_close(vsb_retain_t *rt);

#endif
