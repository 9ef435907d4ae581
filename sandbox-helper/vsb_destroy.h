/*
 * Ending sandboxes (destroy.c): on request, at TTL expiry, at shutdown.
 */
#ifndef VSB_DESTROY_H
#define VSB_DESTROY_H

#include <signal.h>

#include "vsb_sandbox.h"

/* Kills sb's processes and, once that is confirmed, removes its cgroups
 * and files; replies to a waiting destroy request, if any. */
void vsb_destroy_start(vsb_sandbox_t *sb);

/* Starts destroying every sandbox; sets *done once none is left or only
 * failed ones remain.  From then on only while_stopping ops are served. */
void vsb_destroy_shutdown(volatile sig_atomic_t *done);

/* 1 once vsb_destroy_shutdown() was called. */
int vsb_destroy_stopping(void);

#endif
