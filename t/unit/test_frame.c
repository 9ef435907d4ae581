/* Frame codec: every error case, split delivery, back-to-back frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vsb_frame.h"

static size_t
make_frame(unsigned char *buf, const char *json, const char *payload,
    size_t plen)
{
    size_t  jl = strlen(json);

    vsb_frame_header_encode(buf, (uint32_t) jl, (uint32_t) plen);
    memcpy(buf + 12, json, jl);
    memcpy(buf + 12 + jl, payload, plen);
    return 12 + jl + plen;
}


static void
test_whole(void **state)
{
    unsigned char       buf[256];
    size_t              n, used;
    vsb_frame_parser_t  p;

    n = make_frame(buf, "{\"op\":\"ping\"}", "abc", 3);
    vsb_frame_init(&p, VSB_MAX_JSON, 1024);
    assert_int_equal(vsb_frame_feed(&p, buf, n, &used), VSB_FRAME_DONE);
    assert_int_equal(used, n);
    assert_string_equal(vsb_frame_json(&p), "{\"op\":\"ping\"}");
    assert_int_equal(p.payload_len, 3);
    assert_memory_equal(vsb_frame_payload(&p), "abc", 3);
    assert_int_equal(vsb_frame_need(&p), 0);
    vsb_frame_reset(&p);
}


static void
test_byte_by_byte(void **state)
{
    unsigned char       buf[256];
    size_t              n, i, used;
    vsb_frame_parser_t  p;
    vsb_frame_rc_t      rc = VSB_FRAME_NEED_MORE;

    n = make_frame(buf, "{\"a\":1}", "payload", 7);
    vsb_frame_init(&p, VSB_MAX_JSON, 1024);

    for (i = 0; i < n; i++) {
        assert_int_equal(rc, VSB_FRAME_NEED_MORE);
        assert_int_equal(vsb_frame_need(&p), i < 12 ? 12 - i : n - i);
        rc = vsb_frame_feed(&p, buf + i, 1, &used);
        assert_int_equal(used, 1);
    }

    assert_int_equal(rc, VSB_FRAME_DONE);
    assert_string_equal(vsb_frame_json(&p), "{\"a\":1}");
    assert_memory_equal(vsb_frame_payload(&p), "payload", 7);
    vsb_frame_reset(&p);
}


static void
test_back_to_back(void **state)
{
    unsigned char       buf[512];
    size_t              n1, n2, used;
    vsb_frame_parser_t  p;

    n1 = make_frame(buf, "{\"n\":1}", "", 0);
    n2 = make_frame(buf + n1, "{\"n\":2}", "xy", 2);

    vsb_frame_init(&p, VSB_MAX_JSON, 1024);
    assert_int_equal(vsb_frame_feed(&p, buf, n1 + n2, &used),
                     VSB_FRAME_DONE);
    /* Exactly one frame is consumed; the rest is the next frame's. */
    assert_int_equal(used, n1);
    assert_string_equal(vsb_frame_json(&p), "{\"n\":1}");
    assert_int_equal(p.payload_len, 0);

    vsb_frame_reset(&p);
    assert_int_equal(vsb_frame_feed(&p, buf + n1, n2, &used),
                     VSB_FRAME_DONE);
    assert_int_equal(used, n2);
    assert_string_equal(vsb_frame_json(&p), "{\"n\":2}");
    assert_memory_equal(vsb_frame_payload(&p), "xy", 2);
    vsb_frame_reset(&p);
}


static void
test_bad_magic(void **state)
{
    unsigned char       buf[64];
    size_t              n, used;
    vsb_frame_parser_t  p;

    n = make_frame(buf, "{}", "", 0);
    buf[0] = 'X';
    vsb_frame_init(&p, VSB_MAX_JSON, 1024);
    assert_int_equal(vsb_frame_feed(&p, buf, n, &used), VSB_FRAME_ERROR);
    assert_string_equal(p.error, VSB_E_BAD_FRAME);

    /* Detected on the first wrong byte, before the header is complete. */
    vsb_frame_reset(&p);
    assert_int_equal(vsb_frame_feed(&p, (const unsigned char *) "VSX", 3,
                                    &used), VSB_FRAME_ERROR);
    assert_string_equal(p.error, VSB_E_BAD_FRAME);
    vsb_frame_reset(&p);
}


static void
test_zero_json(void **state)
{
    unsigned char       buf[12];
    size_t              used;
    vsb_frame_parser_t  p;

    vsb_frame_header_encode(buf, 0, 0);
    vsb_frame_init(&p, VSB_MAX_JSON, 1024);
    assert_int_equal(vsb_frame_feed(&p, buf, 12, &used), VSB_FRAME_ERROR);
    assert_string_equal(p.error, VSB_E_BAD_FRAME);
    vsb_frame_reset(&p);
}


static void
test_oversize(void **state)
{
    unsigned char       buf[12];
    size_t              used;
    vsb_frame_parser_t  p;

    vsb_frame_init(&p, VSB_MAX_JSON, 1024);

    vsb_frame_header_encode(buf, VSB_MAX_JSON + 1, 0);
    assert_int_equal(vsb_frame_feed(&p, buf, 12, &used), VSB_FRAME_ERROR);
    assert_string_equal(p.error, VSB_E_FRAME_TOO_LARGE);

    vsb_frame_reset(&p);
    vsb_frame_header_encode(buf, 2, 1025);
    assert_int_equal(vsb_frame_feed(&p, buf, 12, &used), VSB_FRAME_ERROR);
    assert_string_equal(p.error, VSB_E_FRAME_TOO_LARGE);

    vsb_frame_reset(&p);
    vsb_frame_header_encode(buf, 2, 0xffffffffu);
    assert_int_equal(vsb_frame_feed(&p, buf, 12, &used), VSB_FRAME_ERROR);
    assert_string_equal(p.error, VSB_E_FRAME_TOO_LARGE);

    /* The limit itself is fine. */
    vsb_frame_reset(&p);
    vsb_frame_header_encode(buf, VSB_MAX_JSON, 1024);
    assert_int_equal(vsb_frame_feed(&p, buf, 12, &used),
                     VSB_FRAME_NEED_MORE);
    assert_int_equal(vsb_frame_need(&p), VSB_MAX_JSON + 1024);
    vsb_frame_reset(&p);

    /* The JSON limit above the protocol's is clamped; the payload's is
     * the caller's (a streamed payload may exceed VSB_MAX_PAYLOAD). */
    vsb_frame_init(&p, 0xffffffffu, 0xffffffffu);
    assert_int_equal(p.max_json, VSB_MAX_JSON);
    assert_int_equal(p.max_payload, 0xffffffffu);
}


/* Split mode stops after the JSON, whatever the chunking, and never
 * consumes a payload byte before saying so. */
static void
test_split(void **state)
{
    unsigned char       buf[64];
    size_t              n, i, used, fed;
    vsb_frame_parser_t  p;
    vsb_frame_rc_t      rc;

    n = make_frame(buf, "{\"op\":\"x\"}", "payload", 7);

    for (i = 1; i <= n; i++) {
        vsb_frame_init(&p, VSB_MAX_JSON, 1024);
        p.split = 1;
        fed = 0;
        rc = VSB_FRAME_NEED_MORE;

        while (rc == VSB_FRAME_NEED_MORE) {
            rc = vsb_frame_feed(&p, buf + fed,
                                n - fed < i ? n - fed : i, &used);
            fed += used;
        }

        assert_int_equal(rc, VSB_FRAME_JSON);
        assert_int_equal(fed, 12 + 10);
        assert_string_equal(vsb_frame_json(&p), "{\"op\":\"x\"}");

        /* going on buffers the payload as without split */
        rc = vsb_frame_feed(&p, buf + fed, n - fed, &used);
        assert_int_equal(rc, VSB_FRAME_DONE);
        assert_memory_equal(vsb_frame_payload(&p), "payload", 7);
        vsb_frame_reset(&p);
        assert_int_equal(p.split, 1);
        vsb_frame_reset(&p);
    }

    /* without a payload there is nothing to decide: DONE at once */
    n = make_frame(buf, "{}", "", 0);
    vsb_frame_init(&p, VSB_MAX_JSON, 1024);
    p.split = 1;
    assert_int_equal(vsb_frame_feed(&p, buf, n, &used), VSB_FRAME_DONE);
    vsb_frame_reset(&p);
}


static void
test_truncated(void **state)
{
    unsigned char       buf[64];
    size_t              n, used;
    vsb_frame_parser_t  p;

    n = make_frame(buf, "{\"op\":\"ping\"}", "abcd", 4);
    vsb_frame_init(&p, VSB_MAX_JSON, 1024);
    assert_int_equal(vsb_frame_feed(&p, buf, n - 1, &used),
                     VSB_FRAME_NEED_MORE);
    assert_int_equal(used, n - 1);
    assert_int_equal(vsb_frame_need(&p), 1);
    assert_null(p.error);
    /* Reset without completing must not leak (checked under ASan). */
    vsb_frame_reset(&p);
}


static void
test_encode(void **state)
{
    unsigned char  *h;
    size_t          len;

    h = vsb_frame_encode_head("{}", 2, 5, &len);
    assert_non_null(h);
    assert_int_equal(len, 14);
    assert_memory_equal(h, "VSB1", 4);
    assert_int_equal(vsb_frame_get_u32(h + 4), 2);
    assert_int_equal(vsb_frame_get_u32(h + 8), 5);
    assert_memory_equal(h + 12, "{}", 2);
    free(h);

    assert_null(vsb_frame_encode_head("", 0, 0, &len));
    assert_null(vsb_frame_encode_head("{}", VSB_MAX_JSON + 1, 0, &len));
    assert_null(vsb_frame_encode_head("{}", 2, VSB_MAX_PAYLOAD + 1, &len));
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_byte_by_byte),
        cmocka_unit_test(test_back_to_back),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_zero_json),
        cmocka_unit_test(test_oversize),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_encode),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
