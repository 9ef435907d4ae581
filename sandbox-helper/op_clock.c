/*
 * The test clock's op: clock_advance moves the lifetime clock
 * (vsb_lifeclock.h) ahead, served only with "test_clock = on" in the
 * helper's configuration; otherwise not_enabled, and nothing moves.
 * Schema, handler and row, together.
 */
#include <stdio.h>

#include "vsb_config.h"
#include "vsb_lifeclock.h"
#include "vsb_log.h"
#include "vsb_op.h"


static int
vsb_req_clock_advance(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "seconds", NULL
    };

    if (vsb_req_fields(root, allowed, VSB_OP_CLOCK_ADVANCE, e) != 0
        || vsb_req_uint(root, "seconds", 1, &r->advance_s, e) != 0)
    {
        return -1;
    }

    if (r->advance_s > VSB_CLOCK_ADVANCE_MAX_S) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "seconds",
                             "\"seconds\" is 1 .. %d", VSB_CLOCK_ADVANCE_MAX_S);
    }

    return 0;
}


static void
vsb_op_clock_advance(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    json_t  *reply;

    if (!vsb_cf.test_clock) {
        vsb_error_set(e, VSB_E_NOT_ENABLED, NULL, "clock_advance needs "
                      "\"test_clock = on\" in the helper's configuration "
                      "(tests only)");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (r->advance_s > VSB_CLOCK_OFFSET_MAX_S - vsb_life_offset_s()) {
        vsb_error_set(e, VSB_E_BAD_VALUE, "seconds", "the test clock is "
                      "%llu s ahead already: at most %d s in all",
                      (unsigned long long) vsb_life_offset_s(),
                      VSB_CLOCK_OFFSET_MAX_S);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_life_advance(r->advance_s);

    reply = vsb_ok(r->request_id);
    if (reply != NULL
        && json_object_update_new(reply, json_pack(
               "{s:I, s:I, s:I}",
               "advanced_s", (json_int_t) r->advance_s,
               "offset_s", (json_int_t) vsb_life_offset_s(),
               "now", (json_int_t) vsb_life_now())) != 0)
    {
        json_decref(reply);
        reply = NULL;
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_clock_advance_op = {
    .name = VSB_OP_CLOCK_ADVANCE,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_clock_advance,
    .handler = vsb_op_clock_advance,
};
