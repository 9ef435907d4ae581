/*
 * The helper's client of the egress proxy's control socket, on the
 * helper's event loop: nothing here blocks.  The protocol is
 * vsb_egress_protocol.h: one request in flight at a time (later ones
 * wait in a queue), events between replies.  Every request has a
 * deadline; a request not answered by its deadline means the proxy is
 * stuck, and the link is failed (the supervisor then kills and restarts
 * the proxy).  Whatever the proxy sends is checked like any peer's input:
 * it runs unprivileged and parses the sandboxes' traffic.
 */
#ifndef VSB_EGRESS_CTL_H
#define VSB_EGRESS_CTL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* reply: the proxy's reply (ok or not), borrowed for the call; NULL when
 * the request failed (link down, deadline), with why saying so. */
typedef void (*vsb_ectl_reply_pt)(void *data, json_t *reply,
    const char *why);
/* An event frame (an object with "event"), borrowed for the call. */
typedef void (*vsb_ectl_event_pt)(json_t *ev);
/* The link failed on its own (not by vsb_ectl_close()). */
typedef void (*vsb_ectl_down_pt)(const char *why);

void vsb_ectl_init(vsb_ectl_event_pt on_event, vsb_ectl_down_pt on_down);

/* Connects (non-blocking; a unix socket connects at once or not at all).
 * -1 with err filled: not connected (ENOENT, ECONNREFUSED: try again). */
int vsb_ectl_open(const char *path, char *err, size_t errlen);
int vsb_ectl_is_open(void);

/* Closes the link; every queued request fails with why (callbacks run
 * before this returns).  on_down is not called. */
void vsb_ectl_close(const char *why);

/* Queues req (serialized now, not kept) with fds (duplicated now; sent
 * as SCM_RIGHTS with the frame).  0: cb is called exactly once, later,
 * from the loop.  -1 (link not open, out of memory, too large): cb is
 * never called. */
int vsb_ectl_send(json_t *req, const int *fds, size_t nfds,
    uint64_t timeout_ms, vsb_ectl_reply_pt cb, void *data);

/* Requests made with data stay queued and are sent, but their callbacks
 * are not called (their owner is gone). */
void vsb_ectl_forget(void *data);

/* Requests queued or in flight. */
unsigned vsb_ectl_queued(void);

#endif
