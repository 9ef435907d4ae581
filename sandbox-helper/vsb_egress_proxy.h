/*
 * The egress proxy as the helper runs it: one process, started by the
 * helper (egress = on) in a cgroup of its own under the helper's
 * (<cgroup_name>/egress-proxy), optionally in another network namespace
 * (egress_netns), from a config the helper writes
 * (state_dir/egress/proxy.conf).  The helper supervises it: when it
 * exits, or its control link fails (no answer in time, a bad frame), it
 * is killed if need be and started again after a backoff (200 ms
 * doubling to 30 s, back to 200 ms once it stayed up 30 s).  A helper
 * that dies leaves the proxy running; the next helper's start kills it
 * with every other stale cgroup.
 *
 * States: off (egress = off), unavailable (nftables does not work here:
 * logged at start and reported by ping), starting (spawned, connecting),
 * up (connected and answered a ping), restarting (waiting for the
 * backoff).
 */
#ifndef VSB_EGRESS_PROXY_H
#define VSB_EGRESS_PROXY_H

#include <jansson.h>
#include <stddef.h>

#include "vsb_config.h"

/* up: the link is connected and the proxy answered; the callee queues
 * its resync.  dead: the process is confirmed gone (whatever it held is
 * closed). */
typedef void (*vsb_eproxy_up_pt)(void);
typedef void (*vsb_eproxy_dead_pt)(void);

/* At start, after the stale cleanup.  -1 with err: the helper must not
 * start (the config names a proxy that cannot run). */
int vsb_eproxy_init(const vsb_config_t *cf, vsb_eproxy_up_pt on_up,
    vsb_eproxy_dead_pt on_dead, char *err, size_t errlen);

/* 1 when requests may be sent (state up). */
int vsb_eproxy_up(void);
/* The proxy's CA certificate (ca_dir/ca.pem), or NULL while none was
 * made (credentials not configured, or the proxy never started). */
const char *vsb_eproxy_ca_cert(void);
/* 1 when no proxy process exists (killed and reaped, or never started). */
int vsb_eproxy_dead(void);

/* The link failed or a request timed out: kill the proxy now (it is
 * restarted once its exit is seen). */
void vsb_eproxy_restart(const char *why);

/* ping's "egress" object. */
json_t *vsb_eproxy_health(void);

/* At exit, once every sandbox is gone: SIGTERM, wait (bounded), SIGKILL,
 * remove its cgroup.  Blocks for at most a few seconds. */
void vsb_eproxy_stop(void);

#endif
