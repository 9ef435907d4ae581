/*
 * The lifetime clock: the one time source of a sandbox's lifetime
 * decisions (its ttl_s expiry, its idle_s, the ENDED records'
 * retention) and of the times the helper reports for them (created_at,
 * active_at, expires_at, ended_at, retained_until).  It is the real
 * clock plus an offset that only the clock_advance op moves, and that op
 * is served only with "test_clock = on" in the helper's configuration
 * (a test setting: the helper warns at start when it is on).  With the
 * key off the offset is 0 for the helper's whole life.
 *
 * Nothing that protects the host reads it: exec timeouts, destroy and
 * termination bounds, freeze waits, the egress proxy's timers, client
 * timeouts and the loop's own timers keep vsb_now_ms(); an exec's
 * started_at/ended_at, snapshots' retention, stats and usage keep the
 * real time.
 */
#ifndef VSB_LIFECLOCK_H
#define VSB_LIFECLOCK_H

#include <stdint.h>
#include <time.h>

/* vsb_now_ms() (CLOCK_MONOTONIC) plus the offset, in ms. */
uint64_t vsb_life_now_ms(void);

/* time(NULL) plus the offset: unix seconds as lifetimes report them. */
time_t vsb_life_now(void);

/* How far the test clock has been moved ahead, in seconds. */
uint64_t vsb_life_offset_s(void);

/* clock_advance: moves the lifetime clock seconds ahead (the caller
 * checked test_clock and the bounds), then runs every lifetime check at
 * once (their timers were armed for real durations): what the new time
 * puts past its ttl_s or idle_s begins its end, ENDED records past their
 * retention go, the rest is re-armed for what is left. */
void vsb_life_advance(uint64_t seconds);

/* At start: the warning that the test clock is on. */
void vsb_life_init(int test_clock);

#endif
