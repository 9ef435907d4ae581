/*
 * An exec's output as a reply keeps it: the head and the tail of one
 * stream within a byte limit, the middle left out and counted.  What an
 * agent needs is at both ends (the command's first lines, the test
 * summary printed last).  Memory grows with what arrives, never beyond
 * the limit; pure, so it is unit tested on its own.
 */
#ifndef VSB_OUTCAP_H
#define VSB_OUTCAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t          head_cap;       /* first bytes kept: ceil(limit / 2) */
    size_t          tail_cap;       /* last bytes kept: floor(limit / 2) */

    unsigned char  *head;
    size_t          head_len;
    size_t          head_alloc;

    unsigned char  *tail;           /* tail_cap bytes once allocated: a ring */
    size_t          tail_len;       /* bytes held, <= tail_cap */
    size_t          tail_pos;       /* when full: the oldest byte */
    int             tail_prev;      /* the dropped byte before the oldest
                                       (-1: none): a newline there means
                                       the tail starts a line */

    uint64_t        total;          /* every byte that arrived */
} vsb_outcap_t;

/*
 * What the reply carries: head[0 .. head_len) then the tail in one or two
 * pieces (the ring may wrap), len bytes in all.  When something was left
 * out, the head ends and the tail starts at a line boundary where one is
 * near (the partial lines count as dropped).  Pointers are into the
 * capture: valid until vsb_outcap_free().
 */
typedef struct {
    const unsigned char  *head;
    size_t                head_len;
    const unsigned char  *tail1;
    size_t                tail1_len;
    const unsigned char  *tail2;
    size_t                tail2_len;
    size_t                len;          /* head_len + tail1_len + tail2_len */
    uint64_t              total;
    uint64_t              dropped;      /* total - len: left out in between */
} vsb_outcap_view_t;

/* limit: bytes kept at most (head and tail together), at least 1. */
void vsb_outcap_init(vsb_outcap_t *c, size_t limit);
void vsb_outcap_add(vsb_outcap_t *c, const unsigned char *p, size_t n);
void vsb_outcap_view(const vsb_outcap_t *c, vsb_outcap_view_t *v);
/* Copies the view's len bytes to dst. */
void vsb_outcap_copy(const vsb_outcap_view_t *v, unsigned char *dst);
void vsb_outcap_free(vsb_outcap_t *c);

#endif
