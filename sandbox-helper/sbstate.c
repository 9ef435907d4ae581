/*
 * The state files of live sandboxes (vsb_sbstate.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_config.h"
#include "vsb_durable.h"
#include "vsb_log.h"
#include "vsb_registry.h"
#include "vsb_request.h"
#include "vsb_sbstate.h"
#include "vsb_statefile.h"

static char  vsb_sbstate_dir[PATH_MAX];


int
vsb_sbstate_init(char *err, size_t errlen)
{
    return vsb_statefile_dir("run", vsb_sbstate_dir, sizeof(vsb_sbstate_dir),
                             err, errlen);
}


int
vsb_sbstate_write(vsb_sandbox_t *sb, char *err, size_t errlen)
{
    char    name[VSB_SANDBOX_ID_LEN + 8], *s;
    int     rc;
    json_t  *j;

    j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}",
                  "id", sb->id,
                  "epoch", vsb_registry_epoch(),
                  "tenant", sb->tenant,
                  "agent", sb->agent,
                  "profile", sb->profile->name,
                  "created_at", (json_int_t) sb->created_at,
                  "ttl_s", (json_int_t) sb->ttl_s,
                  "idle_s", (json_int_t) sb->idle_s,
                  "expires_at", (json_int_t) sb->expires_at,
                  "slot", (json_int_t) sb->slot,
                  "host_uid", (json_int_t) sb->host_uid);
    if (j == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    json_object_set_new(j, "profile_digest",
                        vsb_profile_is_image(sb->profile)
                        ? json_string(sb->profile->digest) : json_null());

    s = json_dumps(j, JSON_COMPACT);
    json_decref(j);

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    snprintf(name, sizeof(name), "%s.json", sb->id);
    rc = vsb_statefile_write(vsb_sbstate_dir, name, s, strlen(s), err,
                             errlen);
    free(s);

    if (rc == 0) {
        sb->state_file = 1;
    }

    return rc;
}


int
vsb_sbstate_remove_id(const char *id, char *err, size_t errlen)
{
    char  name[VSB_SANDBOX_ID_LEN + 8];

    snprintf(name, sizeof(name), "%s.json", id);
    return vsb_statefile_remove(vsb_sbstate_dir, name, err, errlen);
}


void
vsb_sbstate_remove(vsb_sandbox_t *sb)
{
    char  name[VSB_SANDBOX_ID_LEN + 8], err[512];

    if (!sb->state_file) {
        return;
    }

    /* once what was queued before (its ENDED record) is on disk: a host
     * crash then never leaves a sandbox with neither record */
    snprintf(name, sizeof(name), "%s.json", sb->id);

    if (vsb_durable_unlink(vsb_sbstate_dir, name) != 0) {
        /* no memory to queue it: everything on disk now, then remove */
        if (vsb_durable_flush() != 0
            || vsb_sbstate_remove_id(sb->id, err, sizeof(err)) != 0)
        {
            vsb_log(VSB_LOG_ERR, "sandbox %s: its state file remains (the "
                    "next start removes it)", sb->id);
            return;
        }
    }

    sb->state_file = 0;
}


int
vsb_sbstate_remove_later(const char *id)
{
    char  name[VSB_SANDBOX_ID_LEN + 8];

    snprintf(name, sizeof(name), "%s.json", id);
    return vsb_durable_unlink(vsb_sbstate_dir, name);
}


typedef struct {
    vsb_sbstate_pt   fn;
    void            *data;
} vsb_sbstate_each_t;


static int
vsb_sbstate_one(const char *name, void *data)
{
    vsb_sbstate_each_t  *each = data;
    char                 buf[VSB_STATEFILE_MAX + 1], id[64], err[512];
    json_t              *j, *v;
    size_t               len;
    int                  rc;

    len = strlen(name) - 5;         /* ".json" */
    if (len >= sizeof(id)) {
        len = 0;
    }
    memcpy(id, name, len);
    id[len] = '\0';

    if (!vsb_req_id_ok(id)) {
        vsb_log(VSB_LOG_WARN, "state file \"%s/%s\": not a sandbox id",
                vsb_sbstate_dir, name);
        return each->fn("", NULL, each->data);
    }

    if (vsb_statefile_read(vsb_sbstate_dir, name, buf, sizeof(buf), err,
                           sizeof(err)) < 0)
    {
        vsb_log(VSB_LOG_WARN, "state file of %s: %s", id, err);
        return each->fn(id, NULL, each->data);
    }

    j = json_loads(buf, JSON_REJECT_DUPLICATES, NULL);
    v = json_object_get(j, "id");

    if (!json_is_object(j) || !json_is_string(v)
        || strcmp(json_string_value(v), id) != 0)
    {
        vsb_log(VSB_LOG_WARN, "state file of %s: not a state file", id);
        json_decref(j);
        return each->fn(id, NULL, each->data);
    }

    rc = each->fn(id, j, each->data);
    json_decref(j);
    return rc;
}


int
vsb_sbstate_each(vsb_sbstate_pt fn, void *data)
{
    vsb_sbstate_each_t  each;

    each.fn = fn;
    each.data = data;

    return vsb_statefile_each(vsb_sbstate_dir, vsb_sbstate_one, &each);
}
