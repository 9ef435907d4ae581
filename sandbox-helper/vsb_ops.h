/*
 * The op table: one row per protocol op, each row defined next to its
 * schema and handler (op_*.c, destroy.c); the table is VSB_OPS
 * (vsb_protocol.h).  Adding an op: docs/adding-a-helper-op.md.
 */
#ifndef VSB_OPS_H
#define VSB_OPS_H

#include <jansson.h>
#include <stddef.h>

#include "vsb_config.h"
#include "vsb_request.h"
#include "vsb_server.h"

/* Validates the whole request r against the op's strict schema.  Pure:
 * it touches no sandbox and no file (the fuzzer drives it). */
typedef int (*vsb_op_parse_pt)(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e);

/* Acts and replies through vsb_conn_reply() now or later; root, r and
 * payload are only borrowed for the duration of the call (root may be
 * kept with json_incref()).  e is scratch space for an error reply. */
typedef void (*vsb_op_handler_pt)(vsb_conn_t *c, json_t *root,
    const vsb_request_t *r, const unsigned char *payload,
    size_t payload_len, vsb_error_t *e);

struct vsb_op_s {
    const char         *name;              /* VSB_OP_* */
    unsigned            payload:1;         /* may carry a payload */
    unsigned            stream_in:1;       /* the payload comes as a
                                              stream: the handler gets
                                              none, pending input does */
    unsigned            while_stopping:1;  /* served during shutdown */
    vsb_op_parse_pt     parse;
    vsb_op_handler_pt   handler;
};

/* The rows: vsb_<op>_op for each op of VSB_OPS (vsb_protocol.h). */
#define VSB_OP_ROW_DECLARE(op)  extern const vsb_op_t  vsb_##op##_op;
VSB_OPS(VSB_OP_ROW_DECLARE)

/* At start: every row is named as VSB_OPS lists it and has a schema and
 * a handler; -1 with err naming the row otherwise. */
int vsb_ops_check(char *err, size_t errlen);

/* Parses one request header: finds the op's row, checks the payload is
 * allowed, applies the row's schema; payload_len is the frame's payload
 * size. */
int vsb_ops_parse(json_t *root, size_t payload_len, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e);

/* The server's dispatch callback: handles one complete request frame
 * from c.  json and payload are only borrowed for the duration of the
 * call. */
void vsb_ops_dispatch(vsb_conn_t *c, const char *json, size_t json_len,
    const unsigned char *payload, size_t payload_len);

/* The server's hooks: dispatch above, and the routing of streamed input,
 * drained output and a vanished client to the pending request. */
extern const vsb_server_hooks_t  vsb_ops_hooks;

#endif
