/*
 * Head-and-tail retention in a file.  Stream offset x lives at file
 * offset x in the head, at head_cap + (x - head_cap) % tail_cap in the
 * ring; what is retained is [0, min(T, head_cap)) and
 * [max(head_cap, T - tail_cap), T), T being what could be written.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "vsb_retain.h"


void
vsb_retain_init(vsb_retain_t *rt, int fd, uint64_t limit)
{
    memset(rt, 0, sizeof(*rt));
    rt->fd = fd;
    rt->head_cap = limit - limit / 2;
    rt->tail_cap = limit / 2;
    rt->kept_to = UINT64_MAX;
}


void
vsb_retain_close(vsb_retain_t *rt)
{
    if (rt->fd != -1) {
        (void) close(rt->fd);
        rt->fd = -1;
    }
}


/* Bytes written of n (short on failure, errno set). */
static size_t
vsb_retain_pwrite(int fd, const unsigned char *p, size_t n, uint64_t off)
{
    size_t   done = 0;
    ssize_t  w;

    while (done < n) {
        w = pwrite(fd, p + done, n - done, (off_t) (off + done));
        if (w == -1) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (w == 0) {
            errno = ENOSPC;
            break;
        }
        done += (size_t) w;
    }

    return done;
}


/* Writes n bytes of stream offset off; 0, or -1 with kept_to set. */
static int
vsb_retain_put(vsb_retain_t *rt, const unsigned char *p, size_t n,
    uint64_t off, uint64_t file_off)
{
    size_t  w;

    w = vsb_retain_pwrite(rt->fd, p, n, file_off);
    if (w < n) {
        rt->kept_to = off + w;
        rt->error = errno;
        return -1;
    }

    return 0;
}


void
vsb_retain_add(vsb_retain_t *rt, const unsigned char *p, size_t n)
{
    uint64_t  off = rt->total, pos;
    size_t    k;

    rt->total += n;

    if (rt->kept_to != UINT64_MAX || rt->fd == -1) {
        return;
    }

    if (off < rt->head_cap) {
        k = rt->head_cap - off < n ? (size_t) (rt->head_cap - off) : n;
        if (vsb_retain_put(rt, p, k, off, off) != 0) {
            return;
        }
        p += k;
        n -= k;
        off += k;
    }

    if (n == 0 || rt->tail_cap == 0) {
        return;
    }

    /* only the newest tail_cap bytes can stay */
    if (n > rt->tail_cap) {
        p += n - rt->tail_cap;
        off += n - rt->tail_cap;
        n = (size_t) rt->tail_cap;
    }

    pos = (off - rt->head_cap) % rt->tail_cap;
    k = rt->tail_cap - pos < n ? (size_t) (rt->tail_cap - pos) : n;

    if (vsb_retain_put(rt, p, k, off, rt->head_cap + pos) != 0) {
        return;
    }

    if (k < n) {
        (void) vsb_retain_put(rt, p + k, n - k, off + k, rt->head_cap);
    }
}


static uint64_t
vsb_retain_end(const vsb_retain_t *rt)
{
    return rt->total < rt->kept_to ? rt->total : rt->kept_to;
}


void
vsb_retain_span(const vsb_retain_t *rt, uint64_t off, uint64_t *start,
    uint64_t *len)
{
    uint64_t  t = vsb_retain_end(rt), head_end, tail_start;

    head_end = t < rt->head_cap ? t : rt->head_cap;

    if (off < head_end) {
        *start = off;
        *len = head_end - off;
        return;
    }

    tail_start = t > rt->tail_cap ? t - rt->tail_cap : 0;
    if (tail_start < rt->head_cap) {
        tail_start = rt->head_cap;
    }

    *start = off > tail_start ? off : tail_start;
    *len = t > *start ? t - *start : 0;

    if (*len == 0) {
        *start = off;
    }
}


ssize_t
vsb_retain_read(const vsb_retain_t *rt, uint64_t start, unsigned char *buf,
    size_t n)
{
    uint64_t  pos, file_off;
    ssize_t   r;

    if (start < rt->head_cap) {
        if (n > rt->head_cap - start) {
            n = (size_t) (rt->head_cap - start);
        }
        file_off = start;

    } else {
        if (rt->tail_cap == 0) {
            return 0;
        }
        pos = (start - rt->head_cap) % rt->tail_cap;
        if (n > rt->tail_cap - pos) {
            n = (size_t) (rt->tail_cap - pos);
        }
        file_off = rt->head_cap + pos;
    }

    do {
        r = pread(rt->fd, buf, n, (off_t) file_off);
    } while (r == -1 && errno == EINTR);

    return r;
}


uint64_t
vsb_retain_dropped(const vsb_retain_t *rt)
{
    uint64_t  t = vsb_retain_end(rt), kept;

    kept = t < rt->head_cap ? t : rt->head_cap;

    if (t > rt->head_cap) {
        kept += t - rt->head_cap < rt->tail_cap ? t - rt->head_cap
                                                : rt->tail_cap;
    }

    return rt->total - kept;
}
