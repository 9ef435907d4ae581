/*
 * Records made durable off the helper's loop (durable.c).
 *
 * A record (statefile.c) is written atomically and reaches the page
 * cache before the reply that depends on it: a helper crash or kill
 * loses nothing.  Making it survive a host crash too (fsync of the file
 * and of its directory, 1-5 ms each on a shared disk, more under load)
 * is done by a child started once and kept, for every record written
 * meanwhile at once, while the helper answers other requests.
 *
 * Order is kept: an unlink queued with vsb_durable_unlink() happens
 * only once everything queued before it is on disk.  A run record is
 * removed that way after its sandbox's ENDED record, so that after a
 * host crash each sandbox whose run record reached the disk is on
 * record (its own ENDED record, or helper_restart).
 */
#ifndef VSB_DURABLE_H
#define VSB_DURABLE_H

/* dir/name and dir are to be fsynced; 0, or -1 when it cannot be queued
 * (no memory: the caller makes it durable itself). */
int vsb_durable_sync(const char *dir, const char *name);

/* dir/name is to be removed once everything queued before is durable;
 * -1 when it cannot be queued. */
int vsb_durable_unlink(const char *dir, const char *name);

/* Blocking: waits for the running flush, then makes everything queued
 * durable and does the unlinks, here (startup recovery, exit).  -1 when
 * something failed (logged). */
int vsb_durable_flush(void);

/* Entries queued and not yet done (tests, logs). */
unsigned vsb_durable_pending(void);

/* At exit, after vsb_durable_flush(): the flush process ends. */
void vsb_durable_stop(void);

#endif
