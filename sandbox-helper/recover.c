/*
 * What a previous run of the helper left, ended before the socket opens.
 * The state files in state_dir/run name the sandboxes it had (sbstate.c);
 * then every stale cgroup (processes killed and confirmed gone first),
 * sandbox tmpfs, overlay and network namespace pin is removed, whether a
 * state file names it or not (a crash mid-create leaves no state file);
 * then each named sandbox is checked gone, step by step, and its end put
 * on record: "helper_restart", or "termination_failed" naming the first
 * step that could not be confirmed (its state file then stays, and the
 * helper refuses to start: nothing of it may run on unnoticed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vsb_cgroup.h"
#include "vsb_config.h"
#include "vsb_durable.h"
#include "vsb_ended.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_netns.h"
#include "vsb_recover.h"
#include "vsb_registry.h"
#include "vsb_sbstate.h"
#include "vsb_storage.h"

typedef struct vsb_orphan_s  vsb_orphan_t;

struct vsb_orphan_s {
    vsb_orphan_t  *next;
    char           id[VSB_SANDBOX_ID_LEN + 1];
    json_t        *rec;             /* NULL: unreadable state file */
};


static int
vsb_recover_collect(const char *id, json_t *rec, void *data)
{
    vsb_orphan_t  **list = data, *o;
    char            err[512];

    if (id[0] == '\0') {
        return 0;
    }

    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        vsb_log(VSB_LOG_ERR, "recovery: out of memory");
        return -1;
    }

    snprintf(o->id, sizeof(o->id), "%s", id);
    o->rec = rec != NULL ? json_incref(rec) : NULL;
    o->next = *list;
    *list = o;

    if (rec == NULL) {
        /* its resources are found by the scans below all the same */
        if (vsb_sbstate_remove_id(id, err, sizeof(err)) != 0) {
            vsb_log(VSB_LOG_ERR, "recovery: %s", err);
        }
    }

    return 0;
}


/* 1 if path exists, 0 if not, -1 on error; *mounted: a mount point. */
static int
vsb_recover_left(const char *sub, const char *id, int *mounted)
{
    char         path[PATH_MAX], parent[PATH_MAX];
    struct stat  a, b;

    *mounted = 0;

    if ((size_t) snprintf(parent, sizeof(parent), "%s/%s", vsb_cf.state_dir,
                          sub) >= sizeof(parent)
        || (size_t) snprintf(path, sizeof(path), "%s/%s", parent, id)
           >= sizeof(path))
    {
        return -1;
    }

    if (lstat(path, &a) != 0) {
        return errno == ENOENT ? 0 : -1;
    }

    if (lstat(parent, &b) == 0 && a.st_dev != b.st_dev) {
        *mounted = 1;
    }

    return 1;
}


/* The first step not confirmed for id, or NULL when all are gone. */
static const char *
vsb_recover_step(const char *id, char *detail, size_t len)
{
    int  cg, left, mounted;

    cg = vsb_cgroup_exists(id);
    if (cg != 0) {
        snprintf(detail, len, "its cgroup %s %s", id,
                 cg == 2 ? "still has processes" : cg == 1 ? "remains"
                                                            : "cannot be read");
        return cg == 2 ? "processes" : "cgroups";
    }

    left = vsb_recover_left("netns", id, &mounted);
    if (left != 0) {
        snprintf(detail, len, "its network namespace pin %.160s/netns/%s %s",
                 vsb_cf.state_dir, id, left == 1 ? "remains"
                                                 : "cannot be checked");
        return "network";
    }

    left = vsb_recover_left("sb", id, &mounted);
    if (left != 0) {
        snprintf(detail, len, "%.160s/sb/%s %s", vsb_cf.state_dir, id,
                 left == -1 ? "cannot be checked"
                 : mounted ? "is still mounted" : "remains");
        return left == 1 && !mounted ? "files" : "mounts";
    }

    return NULL;
}


static const char *
vsb_recover_str(json_t *rec, const char *name, size_t max)
{
    json_t  *v = json_object_get(rec, name);

    if (!json_is_string(v) || json_string_length(v) == 0
        || json_string_length(v) > max)
    {
        return NULL;
    }

    return json_string_value(v);
}


static json_int_t
vsb_recover_int(json_t *rec, const char *name)
{
    json_t  *v = json_object_get(rec, name);

    return json_is_integer(v) && json_integer_value(v) >= 0
           ? json_integer_value(v) : 0;
}


/* id's state file goes after its ENDED record is on disk (the flush at
 * the end of vsb_recover()). */
static int
vsb_recover_remove(const char *id)
{
    char  err[512];

    if (vsb_sbstate_remove_later(id) == 0) {
        return 0;
    }

    if (vsb_durable_flush() != 0
        || vsb_sbstate_remove_id(id, err, sizeof(err)) != 0)
    {
        vsb_log(VSB_LOG_ERR, "recovery: the state file of %s remains", id);
        return -1;
    }

    return 0;
}


/* The orphan's end on record; 0 when it is confirmed gone. */
static int
vsb_recover_end(vsb_orphan_t *o, uint64_t start_ms)
{
    char               detail[256], why[256];
    const char        *step;
    vsb_ended_info_t   in;
    const vsb_ended_t *ended;

    step = vsb_recover_step(o->id, why, sizeof(why));

    memset(&in, 0, sizeof(in));
    in.id = o->id;
    in.epoch = vsb_recover_str(o->rec, "epoch", 64);
    in.tenant = vsb_recover_str(o->rec, "tenant", VSB_MAX_ID_LEN);
    in.agent = vsb_recover_str(o->rec, "agent", VSB_MAX_ID_LEN);
    in.profile = vsb_recover_str(o->rec, "profile", VSB_PROFILE_NAME_LEN);
    in.digest = vsb_recover_str(o->rec, "profile_digest", 128);
    in.created_at = (time_t) vsb_recover_int(o->rec, "created_at");
    in.expires_at = (time_t) vsb_recover_int(o->rec, "expires_at");
    in.ttl_s = (uint64_t) vsb_recover_int(o->rec, "ttl_s");
    in.idle_s = (uint64_t) vsb_recover_int(o->rec, "idle_s");
    in.reason = VSB_END_R_RESTART;
    in.step = step;
    in.termination_ms = vsb_now_ms() - start_ms;

    /* ended and on record already (a crash, or a host crash that lost
     * the removal, came between its ENDED record and its state file's
     * removal): that record says why it ended, the state file goes */
    if (step == NULL && in.tenant != NULL && in.agent != NULL
        && (ended = vsb_ended_find(in.tenant, in.agent, o->id)) != NULL
        && strcmp(vsb_ended_reason(ended), VSB_END_TERMINATION_FAILED) != 0)
    {
        vsb_log(VSB_LOG_INFO, "recovery: sandbox %s ended already (%s): "
                "its state file goes, its ENDED record stays", o->id,
                vsb_ended_reason(ended));
        return vsb_recover_remove(o->id);
    }

    if (step != NULL) {
        in.detail = why;
    } else {
        snprintf(detail, sizeof(detail), "the helper's run %s ended "
                 "without ending it (a crash or a kill); run %s did",
                 in.epoch ? in.epoch : "?", vsb_registry_epoch());
        in.detail = detail;
    }

    if (in.epoch != NULL && in.tenant != NULL && in.agent != NULL
        && in.profile != NULL)
    {
        vsb_ended_put(&in);
    } else if (o->rec != NULL) {
        vsb_log(VSB_LOG_WARN, "recovery: the state file of %s lacks its "
                "owner: its end is not on record", o->id);
    }

    if (step != NULL) {
        vsb_log(VSB_LOG_ERR, "recovery: sandbox %s left by a previous run "
                "is not gone (%s): %s", o->id, step, why);
        return -1;
    }

    return o->rec != NULL ? vsb_recover_remove(o->id) : 0;
}


int
vsb_recover(void)
{
    int            n, failed = 0;
    uint64_t       start_ms;
    vsb_orphan_t  *list = NULL, *o, *next;

    start_ms = vsb_now_ms();

    if (vsb_sbstate_each(vsb_recover_collect, &list) != 0) {
        failed = 1;
    }

    n = vsb_cgroup_cleanup_stale();
    if (n < 0) {
        vsb_log(VSB_LOG_ERR, "stale cgroups under %s could not be removed",
                vsb_cf.cgroup_name);
        failed = 1;
    }

    n = vsb_storage_cleanup_stale();
    if (n < 0) {
        vsb_log(VSB_LOG_ERR, "stale sandbox files under %s/sb could not be "
                "removed", vsb_cf.state_dir);
        failed = 1;
    }

    n = vsb_netns_cleanup_stale();
    if (n < 0) {
        vsb_log(VSB_LOG_ERR, "stale network namespaces under %s/netns could "
                "not be removed", vsb_cf.state_dir);
        failed = 1;
    }

    for (o = list; o != NULL; o = next) {
        next = o->next;

        if (vsb_recover_end(o, start_ms) != 0) {
            failed = 1;
        }

        json_decref(o->rec);
        free(o);
    }

    /* the ENDED records on disk, then the state files removed */
    if (vsb_durable_flush() != 0) {
        failed = 1;
    }

    return failed ? -1 : 0;
}
