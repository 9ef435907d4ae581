/*
 * Ending sandboxes (destroy.c): on request, at TTL expiry, at shutdown.
 */
#ifndef VSB_DESTROY_H
#define VSB_DESTROY_H

#include <signal.h>

#include "vsb_sandbox.h"

/* Ends sb for reason (limit: with VSB_END_R_LIMIT; the detail says what
 * happened): kills its processes and, once that is confirmed, removes
 * its cgroups and files, then puts its ENDED record on file (ended.c)
 * and removes its state file; replies to a waiting destroy request, if
 * any.  A sandbox whose termination failed keeps the reason it was
 * first ended for. */
void vsb_destroy_end(vsb_sandbox_t *sb, vsb_end_reason_t reason,
    const char *limit, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same with nothing on record: a create undone. */
void vsb_destroy_start(vsb_sandbox_t *sb);

/* Starts destroying every sandbox; sets *done once none is left or only
 * failed ones remain.  From then on only while_stopping ops are served. */
void vsb_destroy_shutdown(volatile sig_atomic_t *done);

/* 1 once vsb_destroy_shutdown() was called. */
int vsb_destroy_stopping(void);

#endif
