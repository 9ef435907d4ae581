/*
 * The slow half of ending a sandbox, off the event loop: removing its
 * network namespace's pin, unmounting its tmpfs (the kernel frees every
 * inode there, 1.7 s for a million empty files) and removing its
 * directory run in a short-lived child process
 * while the helper goes on serving other peers.  Completion is still
 * confirmed: the child verifies each step and reports, and the helper
 * checks again that the directory is gone before it calls done.
 */
#ifndef VSB_TEARDOWN_H
#define VSB_TEARDOWN_H

#include <stddef.h>

#include "vsb_sandbox.h"

/* step NULL: sb's network namespace pin, files and mounts are confirmed
 * gone.  Otherwise step ("network", "mounts" or "files") and detail say
 * what remains. */
typedef void (*vsb_teardown_done_pt)(vsb_sandbox_t *sb, const char *step,
    const char *detail);

/* Starts removing sb's storage; done is called later, from the loop,
 * exactly once (sb must stay alive until then).  If no child can be
 * started the work is done here, on the loop, and done is still called
 * from the loop. */
void vsb_teardown_start(vsb_sandbox_t *sb, vsb_teardown_done_pt done);

#endif
