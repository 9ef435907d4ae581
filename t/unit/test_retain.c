/* Background output retention in a file: head and tail by offset, the
 * middle and what a full disk refused counted as dropped. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "vsb_retain.h"

#define N  100000


static unsigned char  src[N];


static void
fill(void)
{
    size_t  i;

    for (i = 0; i < N; i++) {
        src[i] = (unsigned char) (i * 7 + i / 251);
    }
}


/* Reads everything retained from off on, as a reader polling by offset
 * would: checks every byte against src, returns the bytes seen and the
 * bytes skipped. */
static void
drain(const vsb_retain_t *rt, uint64_t off, uint64_t *seen,
    uint64_t *skipped)
{
    unsigned char  buf[4096];
    uint64_t       start, len;
    ssize_t        n;

    *seen = 0;
    *skipped = 0;

    for ( ;; ) {
        vsb_retain_span(rt, off, &start, &len);
        if (len == 0) {
            break;
        }
        assert_true(start >= off);
        *skipped += start - off;
        n = vsb_retain_read(rt, start, buf,
                            len < sizeof(buf) ? (size_t) len : sizeof(buf));
        assert_true(n > 0);
        assert_memory_equal(buf, src + start, (size_t) n);
        *seen += (uint64_t) n;
        off = start + (uint64_t) n;
    }
}


static vsb_retain_t
make(uint64_t limit, size_t upto, size_t chunk)
{
    vsb_retain_t  rt;
    size_t        off, k;
    int           fd;

    fd = memfd_create("retain", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    assert_true(fd >= 0);
    vsb_retain_init(&rt, fd, limit);

    for (off = 0; off < upto; off += k) {
        k = upto - off < chunk ? upto - off : chunk;
        vsb_retain_add(&rt, src + off, k);
    }

    return rt;
}


static void
test_fits(void **state)
{
    vsb_retain_t  rt;
    uint64_t      seen, skipped;

    fill();
    rt = make(1000, 999, 13);
    drain(&rt, 0, &seen, &skipped);
    assert_int_equal(seen, 999);
    assert_int_equal(skipped, 0);
    assert_int_equal(vsb_retain_dropped(&rt), 0);

    /* from the middle */
    drain(&rt, 500, &seen, &skipped);
    assert_int_equal(seen, 499);
    vsb_retain_close(&rt);
}


static void
test_head_and_tail(void **state)
{
    vsb_retain_t  rt;
    uint64_t      seen, skipped, start, len;
    size_t        chunk;

    fill();

    for (chunk = 1; chunk < 5000; chunk = chunk * 3 + 1) {
        rt = make(1000, N, chunk);
        drain(&rt, 0, &seen, &skipped);
        assert_int_equal(seen, 1000);
        assert_int_equal(skipped, N - 1000);
        assert_int_equal(vsb_retain_dropped(&rt), N - 1000);

        /* an offset in the dropped middle skips to the tail */
        vsb_retain_span(&rt, 600, &start, &len);
        assert_int_equal(start, N - 500);
        assert_int_equal(len, 500);

        /* at the end: nothing yet */
        vsb_retain_span(&rt, N, &start, &len);
        assert_int_equal(len, 0);
        assert_int_equal(start, N);
        vsb_retain_close(&rt);
    }
}


static void
test_growing(void **state)
{
    vsb_retain_t  rt;
    uint64_t      seen, skipped, off = 0, total_seen = 0;
    size_t        done = 0;
    int           fd;

    /* a reader keeping up while it is written never misses a byte */
    fill();
    fd = memfd_create("retain", MFD_CLOEXEC);
    assert_true(fd >= 0);
    vsb_retain_init(&rt, fd, 800);

    while (done < N) {
        size_t  k = N - done < 97 ? N - done : 97;

        vsb_retain_add(&rt, src + done, k);
        done += k;
        drain(&rt, off, &seen, &skipped);
        assert_int_equal(skipped, 0);
        total_seen += seen;
        off += seen;
    }

    assert_int_equal(total_seen, N);
    vsb_retain_close(&rt);
}


static void
test_disk_full(void **state)
{
    vsb_retain_t  rt;
    uint64_t      seen, skipped;
    int           fd;

    /* the file cannot grow past 300 bytes: the write that would cross it
     * fails whole (a memfd seal; a full tmpfs may write part), and
     * retention stops where it began */
    fill();
    fd = memfd_create("retain", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 300), 0);
    assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);

    vsb_retain_init(&rt, fd, 1000);
    vsb_retain_add(&rt, src, 200);
    vsb_retain_add(&rt, src + 200, 200);
    vsb_retain_add(&rt, src + 400, 600);

    assert_int_equal(rt.kept_to, 200);
    assert_int_not_equal(rt.error, 0);
    assert_int_equal(rt.total, 1000);
    assert_int_equal(vsb_retain_dropped(&rt), 800);
    drain(&rt, 0, &seen, &skipped);
    assert_int_equal(seen, 200);
    vsb_retain_close(&rt);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_fits),
        cmocka_unit_test(test_head_and_tail),
        cmocka_unit_test(test_growing),
        cmocka_unit_test(test_disk_full),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
