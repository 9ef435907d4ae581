/* Head-and-tail output capture: whole when it fits, ends kept and the
 * middle counted when not, line-boundary cuts, any chunking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vsb_outcap.h"


/* Feeds s in chunks of `chunk` bytes; returns the kept bytes (static). */
static const char *
kept(const char *s, size_t len, size_t limit, size_t chunk,
    vsb_outcap_view_t *v)
{
    static unsigned char  out[1 << 20];
    vsb_outcap_t          c;
    size_t                off, n;

    vsb_outcap_init(&c, limit);

    for (off = 0; off < len; off += n) {
        n = len - off < chunk ? len - off : chunk;
        vsb_outcap_add(&c, (const unsigned char *) s + off, n);
    }

    vsb_outcap_view(&c, v);
    assert_true(v->len < sizeof(out));
    vsb_outcap_copy(v, out);
    out[v->len] = '\0';
    vsb_outcap_free(&c);

    assert_int_equal(v->total, len);
    assert_int_equal(v->dropped, v->total - v->len);
    assert_true(v->len <= limit);
    return (const char *) out;
}


static void
test_fits(void **state)
{
    vsb_outcap_view_t  v;
    const char        *s = "one\ntwo\nthree\n";
    size_t             chunk;

    for (chunk = 1; chunk <= strlen(s); chunk++) {
        assert_string_equal(kept(s, strlen(s), 64, chunk, &v), s);
        assert_int_equal(v.dropped, 0);
        assert_int_equal(v.head_len + v.tail1_len + v.tail2_len,
                         strlen(s));
    }

    /* exactly the limit: nothing dropped, nothing cut */
    assert_string_equal(kept("abcdef", 6, 6, 1, &v), "abcdef");
    assert_int_equal(v.dropped, 0);
    assert_string_equal(kept("", 0, 6, 1, &v), "");
}


static void
test_head_and_tail(void **state)
{
    vsb_outcap_view_t  v;
    size_t             chunk;

    /* no newlines: raw ends, the middle counted */
    for (chunk = 1; chunk <= 26; chunk++) {
        assert_string_equal(kept("abcdefghijklmnopqrstuvwxyz", 26, 10, chunk,
                                 &v), "abcdevwxyz");
        assert_int_equal(v.head_len, 5);
        assert_int_equal(v.dropped, 16);
    }

    /* an odd limit gives the head the extra byte */
    assert_string_equal(kept("abcdefghij", 10, 5, 3, &v), "abcij");
}


static void
test_line_cuts(void **state)
{
    vsb_outcap_view_t  v;
    char               buf[200000], *p;
    const char        *out;
    int                i;

    /* head 8 "l1\nl2\nl3", tail 8 "8\nl9\nSUM": cut after l2's newline and
     * before l9 ("l3" and "8\n" are partial lines, dropped) */
    out = kept("l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nSUM", 30, 16, 4, &v);
    assert_string_equal(out, "l1\nl2\nl9\nSUM");
    assert_int_equal(v.head_len, 6);
    assert_int_equal(v.dropped, 30 - 12);

    /* the tail "l8\nl9\nSU" follows a newline: it is whole, kept whole */
    out = kept("l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nSU", 29, 16, 4, &v);
    assert_string_equal(out, "l1\nl2\nl8\nl9\nSU");
    assert_int_equal(v.dropped, 29 - 14);

    /* seq 1 N; echo SUMMARY: whole lines at both ends, SUMMARY last */
    p = buf;
    for (i = 1; i <= 20000; i++) {
        p += sprintf(p, "%d\n", i);
    }
    p += sprintf(p, "SUMMARY\n");

    out = kept(buf, (size_t) (p - buf), 4096, 65536, &v);
    assert_true(strncmp(out, "1\n2\n3\n", 6) == 0);
    assert_true(v.head_len > 0 && out[v.head_len - 1] == '\n');
    assert_true(v.len >= 8 && strcmp(out + v.len - 8, "SUMMARY\n") == 0);
    /* the tail starts with a whole line of the input */
    {
        char        line[32];
        const char *t = out + v.head_len, *nl = strchr(t, '\n');

        assert_non_null(nl);
        assert_true(nl - t < 20);
        snprintf(line, sizeof(line), "\n%.*s\n", (int) (nl - t), t);
        assert_non_null(strstr(buf, line));
    }
    assert_true(v.dropped >= (uint64_t) (p - buf) - 4096);

    /* lines that happen to end where head and tail do: nothing is cut
     * (the byte before the tail was a newline), at any chunking */
    for (i = 0; i < 4000; i++) {
        memcpy(buf + 2 * i, "y\n", 2);
    }
    for (i = 1; i < 300; i += 37) {
        out = kept(buf, 8000, 1000, (size_t) i, &v);
        assert_int_equal(v.len, 1000);
        assert_int_equal(v.head_len, 500);
        assert_int_equal(v.dropped, 7000);
    }

    /* one long line: a cut would cost more than half, so none */
    memset(buf, 'x', 1000);
    buf[0] = '\n';
    out = kept(buf, 1000, 100, 7, &v);
    assert_int_equal(v.head_len, 50);
    assert_int_equal(v.len, 100);
}


static void
test_wrapping(void **state)
{
    vsb_outcap_view_t  v;
    unsigned char      s[4096];
    const char        *out;
    size_t             i, chunk;

    for (i = 0; i < sizeof(s); i++) {
        s[i] = (unsigned char) ('a' + i % 26);
    }

    /* every chunk size, so that the ring wraps at every position */
    for (chunk = 1; chunk < 300; chunk += 7) {
        out = kept((const char *) s, sizeof(s), 200, chunk, &v);
        assert_memory_equal(out, s, 100);
        assert_memory_equal(out + 100, s + sizeof(s) - 100, 100);
        assert_int_equal(v.dropped, sizeof(s) - 200);
    }
}


static void
test_limit_one(void **state)
{
    vsb_outcap_view_t  v;

    assert_string_equal(kept("xyz", 3, 1, 1, &v), "x");
    assert_int_equal(v.dropped, 2);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_fits),
        cmocka_unit_test(test_head_and_tail),
        cmocka_unit_test(test_line_cuts),
        cmocka_unit_test(test_wrapping),
        cmocka_unit_test(test_limit_one),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
