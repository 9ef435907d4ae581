/*
 * At start, before the socket opens: whatever a previous run left is
 * ended (recover.c).  Each sandbox a state file names gets its ENDED
 * record ("helper_restart", or "termination_failed" with the step).
 */
#ifndef VSB_RECOVER_H
#define VSB_RECOVER_H

/* 0 when nothing of a previous run is left; -1 (logged) if something
 * could not be removed: the helper must not start. */
int vsb_recover(void);

#endif
