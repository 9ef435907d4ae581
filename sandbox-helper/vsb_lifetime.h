/*
 * How long a sandbox lives, by the helper's own timers whether or not a
 * client is connected: its lifetime (ttl_s, counted from creation), its
 * idle timeout (idle_s: no exec running, background ones included, and
 * no request naming it), and the one limit breach that ends it (its
 * files alone fill its memory after the OOM killer acted: nothing could
 * run in it again).  Each end goes through vsb_destroy_end() with its
 * reason.
 */
#ifndef VSB_LIFETIME_H
#define VSB_LIFETIME_H

#include "vsb_sandbox.h"

/* A new sandbox, in the registry: its timers start. */
void vsb_lifetime_start(vsb_sandbox_t *sb);

/* ttl_s or idle_s changed: the timers follow. */
void vsb_lifetime_rearm(vsb_sandbox_t *sb);

/* The lifetime clock moved ahead (clock_advance): every live sandbox's
 * ttl and idle checks run now, before the op's reply; what is due begins
 * its end, the rest re-arms its timers for what is left. */
void vsb_lifetime_due_all(void);

/* Its end began: no timer may end it again. */
void vsb_lifetime_stop(vsb_sandbox_t *sb);

/* A request named sb: it is not idle. */
void vsb_lifetime_touch(vsb_sandbox_t *sb);

/* An exec of sb ended (every process gone); oom_killed: by the OOM
 * killer.  Checked from the loop, once no exec runs. */
void vsb_lifetime_exec_ended(vsb_sandbox_t *sb, int oom_killed);

#endif
