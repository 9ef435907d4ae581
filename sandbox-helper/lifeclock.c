/*
 * The lifetime clock (vsb_lifeclock.h): the real clock plus the offset
 * the test clock's clock_advance op adds.  Off (the default), nothing
 * moves the offset from 0.
 */
#include <time.h>

#include "vsb_ended.h"
#include "vsb_lifeclock.h"
#include "vsb_lifetime.h"
#include "vsb_log.h"
#include "vsb_loop.h"

static uint64_t  vsb_life_offset;       /* seconds */


uint64_t
vsb_life_now_ms(void)
{
    return vsb_now_ms() + vsb_life_offset * 1000;
}


time_t
vsb_life_now(void)
{
    return time(NULL) + (time_t) vsb_life_offset;
}


uint64_t
vsb_life_offset_s(void)
{
    return vsb_life_offset;
}


void
vsb_life_advance(uint64_t seconds)
{
    vsb_life_offset += seconds;

    vsb_log(VSB_LOG_WARN, "test clock: lifetimes moved %llu s ahead (%llu s "
            "in all)", (unsigned long long) seconds,
            (unsigned long long) vsb_life_offset);

    /* the timers were armed for real durations: each check runs now,
     * ends what is due and re-arms its timer for what is left */
    vsb_lifetime_due_all();
    vsb_ended_due();
}


void
vsb_life_init(int test_clock)
{
    if (test_clock) {
        vsb_log(VSB_LOG_WARN, "test_clock is on: clock_advance may move "
                "sandboxes' lifetimes and the ENDED records' retention "
                "ahead; never in production");
    }
}
