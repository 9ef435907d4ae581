/*
 * Sandbox registry: a list for iteration and a slot table so every live
 * sandbox owns a distinct host uid range.  Linear lookups: max_sandboxes
 * is at most VSB_ABS_SANDBOXES.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vsb_egress.h"
#include "vsb_hex.h"
#include "vsb_overlay.h"
#include "vsb_registry.h"
#include "vsb_snap_store.h"

static vsb_sandbox_t  *vsb_sandboxes;
static vsb_sandbox_t **vsb_slots;
static unsigned        vsb_nslots;
static unsigned        vsb_count;
static char            vsb_epoch[VSB_EPOCH_LEN + 1];
static time_t          vsb_started_at;


int
vsb_registry_init(unsigned max_sandboxes)
{
    /* this run's identity: a sandbox carrying another epoch was ended
     * by a restart, whatever its id */
    if (vsb_random_hex(vsb_epoch, VSB_EPOCH_LEN / 2) != 0) {
        return -1;
    }

    vsb_started_at = time(NULL);

    vsb_slots = calloc(max_sandboxes ? max_sandboxes : 1, sizeof(*vsb_slots));
    if (vsb_slots == NULL) {
        return -1;
    }

    vsb_nslots = max_sandboxes;
    return 0;
}


const char *
vsb_registry_epoch(void)
{
    return vsb_epoch;
}


time_t
vsb_registry_started_at(void)
{
    return vsb_started_at;
}


int
vsb_registry_new_id(char *buf)
{
    memcpy(buf, "sb-", 3);
    return vsb_random_hex(buf + 3, (VSB_SANDBOX_ID_LEN - 3) / 2);
}


static vsb_sandbox_t *
vsb_registry_by_id(const char *id)
{
    vsb_sandbox_t  *sb;

    for (sb = vsb_sandboxes; sb != NULL; sb = sb->next) {
        if (strcmp(sb->id, id) == 0) {
            return sb;
        }
    }

    return NULL;
}


vsb_sandbox_t *
vsb_registry_get(const char *id)
{
    return vsb_registry_by_id(id);
}


vsb_sandbox_t *
vsb_registry_alloc(void)
{
    vsb_entry_t  *en;
    unsigned      slot;
    int           tries;

    for (slot = 0; slot < vsb_nslots; slot++) {
        if (vsb_slots[slot] == NULL) {
            break;
        }
    }

    if (slot == vsb_nslots) {
        errno = EAGAIN;
        return NULL;
    }

    en = calloc(1, sizeof(*en));
    if (en == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    /* 96 random bits never collide in practice; check anyway. */
    for (tries = 0; ; tries++) {
        if (tries == 4 || vsb_registry_new_id(en->sb.id) != 0) {
            free(en);
            errno = EIO;
            return NULL;
        }
        if (vsb_registry_by_id(en->sb.id) == NULL) {
            break;
        }
    }

    en->sb.slot = slot;
    en->sb.host_uid = vsb_cf.uid_base + (uid_t) slot * VSB_UID_RANGE;
    en->sb.netns_fd = -1;
    vsb_slots[slot] = &en->sb;

    return &en->sb;
}


void
vsb_registry_insert(vsb_sandbox_t *sb)
{
    sb->next = vsb_sandboxes;
    vsb_sandboxes = sb;
    vsb_count++;
}


void
vsb_registry_free(vsb_sandbox_t *sb)
{
    vsb_sandbox_t  **pp;

    for (pp = &vsb_sandboxes; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == sb) {
            *pp = sb->next;
            vsb_count--;
            break;
        }
    }

    if (sb->slot < vsb_nslots && vsb_slots[sb->slot] == sb) {
        vsb_slots[sb->slot] = NULL;
    }

    vsb_timer_del(&sb->ttl_timer);
    vsb_timer_del(&sb->idle_timer);
    vsb_timer_del(&sb->check_timer);
    vsb_timer_del(&vsb_entry(sb)->destroy_timer);

    if (sb->netns_fd != -1) {
        (void) close(sb->netns_fd);     /* its owner released it already */
    }

    vsb_egress_sandbox_free(sb);
    vsb_overlay_free(sb);               /* the image it held */
    if (sb->from_snap != NULL) {
        vsb_snap_release(sb->from_snap);  /* the snapshot under it */
        sb->from_snap = NULL;
    }

    json_decref(sb->env);
    json_decref(sb->metadata);
    free(vsb_entry(sb));
}


vsb_sandbox_t *
vsb_registry_find(const char *tenant, const char *agent, const char *id)
{
    vsb_sandbox_t  *sb;

    sb = vsb_registry_by_id(id);

    /* Another owner's sandbox is indistinguishable from no sandbox. */
    if (sb == NULL || strcmp(sb->tenant, tenant) != 0
        || strcmp(sb->agent, agent) != 0)
    {
        return NULL;
    }

    return sb;
}


vsb_sandbox_t *
vsb_registry_tenant_find(const char *tenant, const char *id)
{
    vsb_sandbox_t  *sb;

    sb = vsb_registry_by_id(id);

    if (sb == NULL || strcmp(sb->tenant, tenant) != 0) {
        return NULL;
    }

    return sb;
}


vsb_sandbox_t *
vsb_registry_first(void)
{
    return vsb_sandboxes;
}


unsigned
vsb_registry_count(void)
{
    return vsb_count;
}
