/*
 * The control channel to the helper (sandbox-helper/vsb_egress_protocol.h
 * is the protocol).  One helper connection at a time; a new one from an
 * allowed uid replaces the old (a restarted helper), and sandboxes live
 * on across reconnects.
 */
#ifndef EG_CONTROL_H
#define EG_CONTROL_H

#include <stddef.h>

int eg_control_listen(const char *path, unsigned mode, char *err,
    size_t errlen);
/* Sends queued records when the helper is connected (called every turn). */
void eg_control_flush(void);
void eg_control_shutdown(void);

#endif
