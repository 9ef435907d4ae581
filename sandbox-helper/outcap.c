/*
 * Head and tail of a stream within a limit.  The head fills first; past
 * it, a ring of the tail's size keeps the newest bytes.  A stream that
 * fits the limit is kept whole.  Out of memory, bytes are dropped and
 * counted, never kept out of order.
 */
#include <stdlib.h>
#include <string.h>

#include "vsb_outcap.h"

#define VSB_OUTCAP_MIN_ALLOC  4096


void
vsb_outcap_init(vsb_outcap_t *c, size_t limit)
{
    memset(c, 0, sizeof(*c));

    if (limit == 0) {
        limit = 1;
    }

    c->head_cap = limit - limit / 2;
    c->tail_cap = limit / 2;
    c->tail_prev = -1;
}


void
vsb_outcap_free(vsb_outcap_t *c)
{
    free(c->head);
    free(c->tail);
    c->head = NULL;
    c->tail = NULL;
    c->head_len = c->head_alloc = 0;
    c->tail_len = c->tail_pos = 0;
}


static size_t
vsb_outcap_head(vsb_outcap_t *c, const unsigned char *p, size_t n)
{
    size_t          want, cap;
    unsigned char  *nb;

    want = c->head_cap - c->head_len;
    if (want > n) {
        want = n;
    }

    if (c->head_len + want > c->head_alloc) {
        cap = c->head_alloc ? c->head_alloc : VSB_OUTCAP_MIN_ALLOC;
        while (cap < c->head_len + want) {
            cap *= 2;
        }
        if (cap > c->head_cap) {
            cap = c->head_cap;
        }

        nb = realloc(c->head, cap);
        if (nb == NULL) {
            /* the head ends here; the rest goes to the tail */
            c->head_cap = c->head_len;
            return 0;
        }

        c->head = nb;
        c->head_alloc = cap;
    }

    memcpy(c->head + c->head_len, p, want);
    c->head_len += want;
    return want;
}


void
vsb_outcap_add(vsb_outcap_t *c, const unsigned char *p, size_t n)
{
    size_t  k;

    c->total += n;

    if (c->head_len < c->head_cap) {
        k = vsb_outcap_head(c, p, n);
        p += k;
        n -= k;
    }

    if (n == 0 || c->tail_cap == 0) {
        return;
    }

    if (c->tail == NULL) {
        /* whole at once: a ring that failed to grow would lose bytes in
         * its middle; without memory there is no tail, only a count */
        c->tail = malloc(c->tail_cap);
        if (c->tail == NULL) {
            c->tail_cap = 0;
            return;
        }
    }

    if (n >= c->tail_cap) {
        if (n > c->tail_cap) {
            c->tail_prev = p[n - c->tail_cap - 1];
        } else if (c->tail_len == c->tail_cap) {
            c->tail_prev = c->tail[(c->tail_pos + c->tail_cap - 1)
                                   % c->tail_cap];
        } else if (c->tail_len > 0) {
            c->tail_prev = c->tail[c->tail_len - 1];
        }
        memcpy(c->tail, p + n - c->tail_cap, c->tail_cap);
        c->tail_len = c->tail_cap;
        c->tail_pos = 0;
        return;
    }

    if (c->tail_len < c->tail_cap) {
        k = c->tail_cap - c->tail_len;
        if (k > n) {
            k = n;
        }
        memcpy(c->tail + c->tail_len, p, k);
        c->tail_len += k;
        p += k;
        n -= k;
        if (n == 0) {
            return;
        }
    }

    /* full: overwrite the oldest bytes; the last of them precedes the
     * new oldest */
    c->tail_prev = c->tail[(c->tail_pos + n - 1) % c->tail_cap];
    k = c->tail_cap - c->tail_pos;
    if (k > n) {
        k = n;
    }
    memcpy(c->tail + c->tail_pos, p, k);
    memcpy(c->tail, p + k, n - k);
    c->tail_pos = (c->tail_pos + n) % c->tail_cap;
}


/* The tail's i-th oldest byte. */
static unsigned char
vsb_outcap_tail_at(const vsb_outcap_t *c, size_t i)
{
    if (c->tail_len < c->tail_cap) {
        return c->tail[i];
    }

    return c->tail[(c->tail_pos + i) % c->tail_cap];
}


void
vsb_outcap_view(const vsb_outcap_t *c, vsb_outcap_view_t *v)
{
    size_t  head, skip, i, n, start;

    memset(v, 0, sizeof(*v));
    v->total = c->total;

    head = c->head_len;
    skip = 0;
    n = c->tail_len;

    if (c->total > (uint64_t) c->head_len + c->tail_len) {
        /* something was left out: end the head after its last newline,
         * start the tail after its first, when that costs at most half
         * of either (a single long line is kept as it is) */
        for (i = head; i > 0 && c->head[i - 1] != '\n'; i--) {
            /* void */
        }
        if (i > 0 && head - i <= head / 2) {
            head = i;
        }

        if (c->tail_prev != '\n') {
            for (i = 0; i < n && vsb_outcap_tail_at(c, i) != '\n'; i++) {
                /* void */
            }
            if (i < n && i + 1 <= n / 2) {
                skip = i + 1;
            }
        }
    }

    v->head = c->head;
    v->head_len = head;

    n -= skip;

    if (n > 0) {
        start = c->tail_len < c->tail_cap ? skip
                : (c->tail_pos + skip) % c->tail_cap;

        v->tail1 = c->tail + start;
        v->tail1_len = n;

        if (c->tail_len == c->tail_cap && start + n > c->tail_cap) {
            v->tail1_len = c->tail_cap - start;
            v->tail2 = c->tail;
            v->tail2_len = n - v->tail1_len;
        }
    }

    v->len = v->head_len + v->tail1_len + v->tail2_len;
    v->dropped = v->total - v->len;
}


void
vsb_outcap_copy(const vsb_outcap_view_t *v, unsigned char *dst)
{
    if (v->head_len > 0) {
        memcpy(dst, v->head, v->head_len);
        dst += v->head_len;
    }

    if (v->tail1_len > 0) {
        memcpy(dst, v->tail1, v->tail1_len);
        dst += v->tail1_len;
    }

    if (v->tail2_len > 0) {
        memcpy(dst, v->tail2, v->tail2_len);
    }
}
