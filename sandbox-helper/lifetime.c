/*
 * A sandbox's lifetime, idle timeout and fatal limit breach, enforced by
 * timers of the helper's loop (no client needed).  The lifetime counts
 * from creation on the lifetime clock (vsb_lifeclock.h: the monotonic
 * clock, moved ahead only by a test clock); the idle timer is armed once
 * and looks again when it fires (a request only moves active_ms), so a
 * busy sandbox costs no timer work per request.  Every time here is the
 * lifetime clock's; a timer's delay is a difference of two of them.
 */
#include <stdio.h>
#include <string.h>

#include "vsb_cgroup.h"
#include "vsb_destroy.h"
#include "vsb_lifeclock.h"
#include "vsb_lifetime.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_registry.h"
#include "vsb_storage.h"

/* What an exec needs at least to start (an init, a shell): a sandbox
 * whose files leave less than this of its memory limit free cannot run
 * anything; at most an eighth of the limit, for small ones. */
#define VSB_LIFETIME_MEM_ROOM  (8ULL * 1024 * 1024)


static int
vsb_lifetime_live(vsb_sandbox_t *sb)
{
    return vsb_entry(sb)->state == VSB_SB_READY;
}


static void
vsb_lifetime_expired(vsb_timer_t *t)
{
    vsb_sandbox_t  *sb = t->data;
    uint64_t        end = sb->created_ms + sb->ttl_s * 1000, now;

    if (!vsb_lifetime_live(sb)) {
        return;
    }

    now = vsb_life_now_ms();
    if (now < end) {
        vsb_timer_add(t, end - now);    /* extended meanwhile */
        return;
    }

    vsb_destroy_end(sb, VSB_END_R_EXPIRED, NULL, "its lifetime of %llu s "
                    "ended", (unsigned long long) sb->ttl_s);
}


static void
vsb_lifetime_idle(vsb_timer_t *t)
{
    vsb_sandbox_t  *sb = t->data;
    uint64_t        idle_ms = sb->idle_s * 1000, now;

    if (!vsb_lifetime_live(sb)) {
        return;
    }

    /* running execs (background ones, an archive's tar) are activity;
     * the last one's end moves active_ms; a paused sandbox is idle by
     * design (resume counts again from its reply) */
    if (vsb_execs_running(sb) > 0 || sb->paused) {
        vsb_timer_add(t, idle_ms);
        return;
    }

    now = vsb_life_now_ms();
    if (now - sb->active_ms < idle_ms) {
        vsb_timer_add(t, sb->active_ms + idle_ms - now);
        return;
    }

    vsb_destroy_end(sb, VSB_END_R_IDLE, NULL, "no exec ran and no request "
                    "named it for %llu s", (unsigned long long) sb->idle_s);
}


/* After an exec ended: did a limit leave the sandbox unable to run? */
static void
vsb_lifetime_check(vsb_timer_t *t)
{
    vsb_sandbox_t  *sb = t->data;
    uint64_t        limit, room, shmem, used;

    if (!vsb_lifetime_live(sb) || vsb_execs_running(sb) > 0
        || !sb->oom_seen || sb->cgroup == NULL || sb->limits.memory_mb == 0)
    {
        return;
    }

    sb->oom_seen = 0;

    if (vsb_cgroup_shmem(sb->cgroup, &shmem) != 0) {
        vsb_log(VSB_LOG_WARN, "sandbox %s: its files' memory cannot be read",
                sb->id);
        return;
    }

    /* the memory controller's statistics are flushed lazily (a read just
     * after the OOM kill can say 0): what its tmpfs holds is exact */
    used = vsb_storage_used(sb);
    if (used > shmem) {
        shmem = used;
    }

    limit = sb->limits.memory_mb * 1024 * 1024;
    room = limit / 8 < VSB_LIFETIME_MEM_ROOM ? limit / 8
                                             : VSB_LIFETIME_MEM_ROOM;

    vsb_log(VSB_LOG_DEBUG, "sandbox %s: after an OOM kill its files hold "
            "%llu of %llu bytes", sb->id, (unsigned long long) shmem,
            (unsigned long long) limit);

    if (shmem + room < limit) {
        return;
    }

    vsb_destroy_end(sb, VSB_END_R_LIMIT, VSB_LIMIT_MEMORY_MB,
                    "the OOM killer ended an exec and the sandbox's files "
                    "alone hold %llu of its %llu MiB of memory: nothing "
                    "can run in it", (unsigned long long) (shmem >> 20),
                    (unsigned long long) sb->limits.memory_mb);
}


void
vsb_lifetime_start(vsb_sandbox_t *sb)
{
    sb->active_ms = vsb_life_now_ms();
    sb->active_at = vsb_life_now();

    sb->ttl_timer.handler = vsb_lifetime_expired;
    sb->ttl_timer.data = sb;
    sb->idle_timer.handler = vsb_lifetime_idle;
    sb->idle_timer.data = sb;
    sb->check_timer.handler = vsb_lifetime_check;
    sb->check_timer.data = sb;

    vsb_lifetime_rearm(sb);
}


void
vsb_lifetime_rearm(vsb_sandbox_t *sb)
{
    uint64_t  now = vsb_life_now_ms(), end, idle;

    end = sb->created_ms + sb->ttl_s * 1000;
    vsb_timer_add(&sb->ttl_timer, end > now ? end - now : 0);

    idle = sb->active_ms + sb->idle_s * 1000;
    vsb_timer_add(&sb->idle_timer, idle > now ? idle - now : 0);
}


void
vsb_lifetime_due_all(void)
{
    vsb_sandbox_t  *sb, *next;

    /* the handlers run now rather than on the loop's next turn, so a
     * client's next request sees what the new time ended; each ends its
     * sandbox (which leaves it in the registry, destroying) or re-arms
     * itself for what is left */
    for (sb = vsb_registry_first(); sb != NULL; sb = next) {
        next = sb->next;

        if (!vsb_lifetime_live(sb) || sb->ttl_timer.handler == NULL) {
            continue;
        }

        vsb_timer_del(&sb->ttl_timer);
        vsb_timer_del(&sb->idle_timer);
        vsb_lifetime_expired(&sb->ttl_timer);
        vsb_lifetime_idle(&sb->idle_timer);
    }
}


void
vsb_lifetime_stop(vsb_sandbox_t *sb)
{
    vsb_timer_del(&sb->ttl_timer);
    vsb_timer_del(&sb->idle_timer);
    vsb_timer_del(&sb->check_timer);
}


void
vsb_lifetime_touch(vsb_sandbox_t *sb)
{
    sb->active_ms = vsb_life_now_ms();
    sb->active_at = vsb_life_now();
}


void
vsb_lifetime_exec_ended(vsb_sandbox_t *sb, int oom_killed)
{
    vsb_lifetime_touch(sb);

    if (oom_killed) {
        sb->oom_seen = 1;
    }

    if (sb->oom_seen && sb->check_timer.handler != NULL
        && vsb_lifetime_live(sb))
    {
        vsb_timer_add(&sb->check_timer, 0);
    }
}
