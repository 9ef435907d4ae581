/* One handler per protocol op, and the helper's sandbox lifecycle. */
#ifndef VSB_OPS_H
#define VSB_OPS_H

#include <signal.h>
#include <stddef.h>

#include "vsb_server.h"

/* Handles one complete request frame from c.  Replies through
 * vsb_conn_reply() now or later; json and payload are only borrowed for
 * the duration of the call. */
void vsb_ops_dispatch(vsb_conn_t *c, const char *json, size_t json_len,
    const unsigned char *payload, size_t payload_len);

/* c's client is gone: its pending request (op) must not reply. */
void vsb_ops_detach(void *op);

/* Starts destroying every sandbox; sets *done once none is left or only
 * failed ones remain. */
void vsb_ops_shutdown(volatile sig_atomic_t *done);

#endif
