/*
 * What the op handlers (op_*.c, destroy.c) share: sandbox lookups, the
 * "ok" reply, state names, and the record of a request whose reply comes
 * later (vsb_pending_t, for exec and destroy).
 */
#ifndef VSB_OP_H
#define VSB_OP_H

#include <jansson.h>

#include "vsb_exec.h"
#include "vsb_ops.h"
#include "vsb_request.h"
#include "vsb_sandbox.h"
#include "vsb_server.h"

typedef enum {
    VSB_PENDING_EXEC = 1,
    VSB_PENDING_DESTROY,
    VSB_PENDING_CREATE,             /* waits for the egress proxy */
    VSB_PENDING_NETWORK             /* update_network */
} vsb_pending_kind_t;

/* A request whose reply comes later.  conn is NULL once the client left. */
typedef struct vsb_pending_s  vsb_pending_t;

struct vsb_pending_s {
    vsb_pending_kind_t   kind;
    vsb_conn_t          *conn;
    char                 request_id[VSB_MAX_ID_LEN + 1];
    unsigned             has_request_id:1;
    unsigned             in_start:1;    /* inside vsb_exec_start() */
    unsigned             finished:1;    /* done came during start */
    unsigned             cancelled:1;

    vsb_sandbox_t       *sb;
    vsb_exec_t          *ex;
    json_t              *root;          /* keeps argv/env alive */

    vsb_pending_t       *next;          /* op_exec.c's list */
};

#define vsb_pending_rid(p)  ((p)->has_request_id ? (p)->request_id : NULL)

vsb_pending_t *vsb_pending_new(vsb_pending_kind_t kind, vsb_conn_t *c,
    const char *rid);
void vsb_pending_free(vsb_pending_t *p);

/* {"ok":true} with request_id echoed when not NULL. */
json_t *vsb_ok(const char *request_id);

const char *vsb_state_name(const vsb_sandbox_t *sb);

/* Execs running, counting those whose reply is not sent yet. */
unsigned vsb_execs_running(const vsb_sandbox_t *sb);

/* The sandbox r names, owned by r's tenant and agent; NULL with e set
 * (not_found).  _ready: and in state ready (else busy). */
vsb_sandbox_t *vsb_find(const vsb_request_t *r, vsb_error_t *e);
vsb_sandbox_t *vsb_find_ready(const vsb_request_t *r, vsb_error_t *e);

/* op_exec.c: cancels every running exec of sb (a destroy has begun). */
void vsb_op_exec_cancel_all(vsb_sandbox_t *sb);

#endif
