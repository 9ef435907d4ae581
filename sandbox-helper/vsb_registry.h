/*
 * The table of live sandboxes.  The registry allocates and frees every
 * vsb_sandbox_t; it hands out slots (and so host uid ranges) and random
 * ids, and answers lookups by (tenant, agent, id).
 */
#ifndef VSB_REGISTRY_H
#define VSB_REGISTRY_H

#include "vsb_sandbox.h"

typedef enum {
    VSB_SB_READY = 0,
    VSB_SB_DESTROYING,
    VSB_SB_FAILED                /* termination_failed; destroy may retry */
} vsb_sb_state_t;

/* The registry's own bookkeeping around a sandbox, kept out of the shared
 * vsb_sandbox_t.  sb is first, so a vsb_sandbox_t * converts back. */
typedef struct {
    vsb_sandbox_t    sb;
    vsb_sb_state_t   state;
    vsb_timer_t      destroy_timer;     /* polls for confirmed termination */
    uint64_t         destroy_deadline;  /* vsb_now_ms() */
    void            *destroy_waiter;    /* ops' pending destroy reply */
    unsigned         execs_mine;        /* exec replies not yet done */
    unsigned         storage_done:1;
    unsigned         destroy_empty:1;   /* found empty with no exec: the
                                           first poll need not look again */
} vsb_entry_t;

#define vsb_entry(sbp)  ((vsb_entry_t *) (void *) (sbp))

/* -1 with errno set (no memory, no randomness). */
int vsb_registry_init(unsigned max_sandboxes);

/* This run of the helper: VSB_EPOCH_LEN random lowercase hex digits made
 * at start, and the start time (unix seconds). */
const char *vsb_registry_epoch(void);
time_t vsb_registry_started_at(void);

/* A new zeroed sandbox with a fresh id, a free slot and its host_uid, not
 * yet visible to lookups.  NULL with errno EAGAIN when every slot is
 * taken, ENOMEM or EIO (no randomness) otherwise. */
vsb_sandbox_t *vsb_registry_alloc(void);
void vsb_registry_insert(vsb_sandbox_t *sb);
/* Unlinks (if inserted), frees env/metadata, releases the slot, frees. */
void vsb_registry_free(vsb_sandbox_t *sb);

/* NULL unless id exists and belongs to tenant and agent. */
vsb_sandbox_t *vsb_registry_find(const char *tenant, const char *agent,
    const char *id);
/* NULL unless id exists and belongs to tenant, whichever agent made it
 * (an administrator's destroy). */
vsb_sandbox_t *vsb_registry_tenant_find(const char *tenant, const char *id);
/* Whoever owns it (the ENDED records' bookkeeping, never a lookup for a
 * client). */
vsb_sandbox_t *vsb_registry_get(const char *id);
vsb_sandbox_t *vsb_registry_first(void);
unsigned vsb_registry_count(void);

/* Fills buf (VSB_SANDBOX_ID_LEN + 1) with "sb-" and 24 random hex. */
int vsb_registry_new_id(char *buf);

#endif
