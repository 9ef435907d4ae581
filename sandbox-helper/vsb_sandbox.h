/*
 * A sandbox as the helper holds it, and the registry of live sandboxes.
 * The registry is the only owner of vsb_sandbox_t; everything else borrows.
 */
#ifndef VSB_SANDBOX_H
#define VSB_SANDBOX_H

#include <jansson.h>
#include <limits.h>
#include <time.h>

#include "vsb_cgroup.h"
#include "vsb_config.h"
#include "vsb_loop.h"
#include "vsb_protocol.h"

typedef struct vsb_exec_s     vsb_exec_t;
typedef struct vsb_sandbox_s  vsb_sandbox_t;

/* Why a sandbox ends (END in vsb_protocol.h). */
typedef enum {
    VSB_END_NONE = 0,            /* a create undone: nothing on record */
    VSB_END_R_DELETED,
    VSB_END_R_ADMIN,
    VSB_END_R_EXPIRED,
    VSB_END_R_IDLE,
    VSB_END_R_LIMIT,
    VSB_END_R_RESTART,
    VSB_END_R_FAILED             /* termination_failed: never a cause */
} vsb_end_reason_t;

/* A sandbox's end, from the moment it begins (destroy.c, ended.c). */
typedef struct {
    vsb_end_reason_t      reason;
    const char           *limit;             /* killed_by_limit */
    char                  detail[256];
    uint64_t              start_ms;          /* vsb_now_ms() */
    time_t                start_at;          /* the lifetime clock */
} vsb_end_t;

struct vsb_sandbox_s {
    char                  id[VSB_SANDBOX_ID_LEN + 1];
    char                  tenant[VSB_MAX_ID_LEN + 1];
    char                  agent[VSB_MAX_ID_LEN + 1];
    const vsb_profile_t  *profile;
    vsb_limits_t          limits;            /* effective */
    uint64_t              ttl_s;
    uint64_t              idle_s;
    time_t                created_at;        /* these three: the */
    time_t                expires_at;        /* lifetime clock's */
    uint64_t              created_ms;        /* (vsb_lifeclock.h) */

    unsigned              slot;              /* 0 .. max_sandboxes-1 */
    uid_t                 host_uid;          /* inside uid/gid 0 */

    /* state_dir/sb/<id>: a tmpfs of limits.disk_mb, mounted nodev,nosuid;
     * its root/ subdirectory becomes the sandbox's "/". */
    char                  dir[PATH_MAX];

    int                   netns_fd;          /* its network namespace,
                                                -1: none (vsb_netns.h) */
    struct vsb_egress_sb_s  *egress;         /* allowlist mode (egress.c),
                                                NULL: network "none" */
    struct vsb_overlay_s *overlay;           /* image profiles: the held
                                                image (overlay.c), NULL
                                                otherwise */

    json_t               *env;               /* object, sandbox-wide */
    json_t               *metadata;          /* object or NULL */

    vsb_cgroup_t         *cgroup;            /* limits for all its execs */
    unsigned              exec_seq;          /* names exec cgroups */
    unsigned              execs_running;
    vsb_exec_t           *execs;             /* running execs */

    /* lifetime.c: its ttl_s and idle_s, and limit breaches that end it */
    vsb_timer_t           ttl_timer;
    vsb_timer_t           idle_timer;
    vsb_timer_t           check_timer;       /* after an exec ended */
    uint64_t              active_ms;         /* last request or exec end, */
    time_t                active_at;         /* on the lifetime clock */
    unsigned              oom_seen:1;        /* an exec was OOM-killed */
    unsigned              state_file:1;      /* state_dir/run/<id>.json */
    unsigned              destroying:1;
    unsigned              paused:1;          /* its cgroup is frozen
                                                (op_pause.c) */

    /* op_snapshot.c: the snapshot it was forked from (its tree is the
     * lower layer of its overlay root), and its snapshot or changes
     * worker while one runs */
    struct vsb_snap_s    *from_snap;
    struct vsb_snap_work_s  *snap_work;
    struct vsb_freeze_s  *freeze_op;         /* pause, resume under way */

    vsb_end_t             end;               /* set when its end begins */

    vsb_sandbox_t        *next;
};

/* Host uid that inside uid `inside` maps to. */
#define vsb_sandbox_host_uid(sb, inside)  ((sb)->host_uid + (uid_t) (inside))

#endif
