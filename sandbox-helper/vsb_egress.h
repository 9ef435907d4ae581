/*
 * Network egress as the rest of the helper sees it (docs/egress.md).
 *
 * A sandbox is created with network "none" (loopback only; names do not
 * resolve, at once) or with an allowlist: then its namespace gets the
 * egress rules and sockets (vsb_egress_link.h), the proxy serves them,
 * and the workload gets the proxy variables and a resolv.conf naming the
 * proxy's DNS stub.  The helper keeps its own copies of the sandbox's
 * listening sockets for the sandbox's life: a restarted proxy gets them
 * again (no window in which a workload could bind the proxy's ports,
 * and connections made meanwhile wait in the backlog).
 *
 * Execs: the proxy reports every attempt (allowed or refused) with the
 * sandbox's id; an exec's "network" field lists the attempts that began
 * while it ran (execs of one sandbox share its namespace, so concurrent
 * execs each list the attempts of that time), after a barrier (a "stats"
 * request: every record made before the proxy answered has arrived).
 *
 * Nothing here blocks the loop: proxy requests are asynchronous with
 * deadlines, and callers get their answer through a callback.
 */
#ifndef VSB_EGRESS_H
#define VSB_EGRESS_H

#include <jansson.h>
#include <stddef.h>

#include "vsb_request.h"
#include "vsb_sandbox.h"

typedef struct vsb_egress_win_s  vsb_egress_win_t;

/* At start, after the stale cleanup: starts the proxy (egress = on).
 * -1 with err: the helper must not start. */
int vsb_egress_init(char *err, size_t errlen);
/* At exit, once every sandbox is gone. */
void vsb_egress_shutdown(void);
/* ping's "egress": available, state, nftables, restarts, detail?. */
json_t *vsb_egress_health(void);
/* stats' "egress": the same, and injections and placeholders_refused
 * (credential headers added and placeholders refused, counted from the
 * proxy's records since the helper started). */
json_t *vsb_egress_stats_json(void);

/* Schema of create's "network" (pure): absent or "none" leaves
 * r->network NULL; an allowlist object is checked (syntax with the
 * proxy's own parser, the helper's ceilings) and kept in r->network. */
int vsb_egress_req_network(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e);
/* An array of entries (field names it in errors), with room for
 * `already` entries of `already_bytes` bytes. */
int vsb_egress_req_entries(json_t *arr, const char *field,
    const vsb_config_t *cf, size_t already, size_t already_bytes,
    vsb_error_t *e);

/* Create, on the loop: the resolver files for the mode and, with an
 * allowlist, the namespace's rules and sockets (sb->egress).  -1 with e
 * set; the namespace's removal undoes the rest, and
 * vsb_egress_sandbox_free() frees what is held. */
int vsb_egress_sandbox_create(vsb_sandbox_t *sb, json_t *network,
    vsb_error_t *e);

/* error NULL: done.  Otherwise a VSB_E_* name and detail. */
typedef void (*vsb_egress_done_pt)(vsb_sandbox_t *sb, void *data,
    const char *error, const char *detail);

/* The proxy starts serving sb; done comes later, from the loop (at once
 * for network "none"). */
void vsb_egress_sandbox_add(vsb_sandbox_t *sb, vsb_egress_done_pt done,
    void *data);
/* Adds entries (validated; NULL none) to sb's allowlist, attaches
 * credentials (names, NULL none) or an agent's own secret (secret,
 * vsb_ecred_secret_req; NULL none) and detaches others (gone: names it
 * holds, NULL none), in the proxy first: a detached placeholder is
 * refused there from the reply on, and the next exec's environment lacks
 * its variable (running processes keep theirs: a string that opens
 * nothing). */
int vsb_egress_sandbox_allow(vsb_sandbox_t *sb, json_t *add, json_t *creds,
    json_t *secret, json_t *gone, vsb_egress_done_pt done, void *data,
    vsb_error_t *e);
/* Destroy: the proxy closes every socket and connection of sb (its
 * reply, or its confirmed death, says so), then the helper's copies
 * are closed.  done comes later, from the loop. */
void vsb_egress_sandbox_remove(vsb_sandbox_t *sb, vsb_egress_done_pt done,
    void *data);
/* Frees sb->egress (registry_free). */
void vsb_egress_sandbox_free(vsb_sandbox_t *sb);

/* SANDBOX's "network": "none", or {"allow": [...], "ask"?: [...]}
 * (full), or "allowlist" (!full, for list). */
json_t *vsb_egress_sandbox_json(const vsb_sandbox_t *sb, int full);
/* "NAME=value" strings for the workload (NULL-terminated), NULL for
 * network "none". */
const char *const *vsb_egress_sandbox_env(const vsb_sandbox_t *sb);

/* An exec began in sb: its attempts are collected from now on.  NULL for
 * network "none". */
vsb_egress_win_t *vsb_egress_exec_begin(vsb_sandbox_t *sb);
/* The exec's processes are gone: after the barrier, cb gets the exec's
 * "network" field (owned by cb): "none", or {attempts, dropped,
 * complete}.  cb may run before this returns. */
typedef void (*vsb_egress_exec_pt)(void *data, json_t *network);
void vsb_egress_exec_end(vsb_sandbox_t *sb, vsb_egress_win_t *w,
    vsb_egress_exec_pt cb, void *data);

#endif
