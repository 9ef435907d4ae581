/*
 * What server.c (the listener, connections, reading requests) and
 * conn_out.c (writing replies and event frames) share.  Not for ops: they
 * use vsb_server.h.
 */
#ifndef VSB_SERVER_INT_H
#define VSB_SERVER_INT_H

#include "vsb_server.h"

extern vsb_server_hooks_t  vsb_server_hooks;

/* The global budget of buffered bytes (vsb_server_can_buffer()). */
void vsb_server_buffer(size_t n);
void vsb_server_unbuffer(size_t n);

void vsb_conn_close(vsb_conn_t *c);
/* The next request; -1 if c was closed. */
int vsb_conn_start_reading(vsb_conn_t *c);

/* conn_out.c: the events c waits for and its deadline, from its state */
void vsb_conn_update(vsb_conn_t *c);
/* conn_out.c: writes what is queued; -1 if c was closed */
int vsb_conn_write(vsb_conn_t *c);
void vsb_conn_release_out(vsb_conn_t *c);

#endif
