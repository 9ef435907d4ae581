/*
 * The helper's op table and its dispatch.  A request's "op" picks a row
 * (the rows: VSB_OPS in vsb_protocol.h); the row's schema validates the
 * whole request (request.c has the building blocks) and its handler acts
 * and replies, now or later.
 * Adding an op: docs/adding-a-helper-op.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_destroy.h"
#include "vsb_exec.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_ops.h"
#include "vsb_registry.h"

/* every op the helper serves, as vsb_protocol.h lists them; each row
 * lives next to its handler */
#define VSB_OP_ROW(op)   &vsb_##op##_op,
#define VSB_OP_NAME(op)  #op,

static const vsb_op_t *const  vsb_ops[] = { VSB_OPS(VSB_OP_ROW) };
static const char *const      vsb_op_names[] = { VSB_OPS(VSB_OP_NAME) };

/* the ops a client may count on being answered at once */
static const vsb_op_t *const  vsb_ops_at_once[] = {
    VSB_OPS_AT_ONCE(VSB_OP_ROW)
};


int
vsb_ops_check(char *err, size_t errlen)
{
    size_t  i;

    for (i = 0; i < sizeof(vsb_ops) / sizeof(vsb_ops[0]); i++) {
        if (vsb_ops[i]->name == NULL
            || strcmp(vsb_ops[i]->name, vsb_op_names[i]) != 0
            || vsb_ops[i]->parse == NULL || vsb_ops[i]->handler == NULL)
        {
            snprintf(err, errlen, "op table: row vsb_%s_op needs the name "
                     "\"%s\" (VSB_OP_*), a schema and a handler",
                     vsb_op_names[i], vsb_op_names[i]);
            return -1;
        }
    }

    return 0;
}


static int
vsb_ops_answers_at_once(const vsb_op_t *op)
{
    size_t  i;

    for (i = 0; i < sizeof(vsb_ops_at_once) / sizeof(vsb_ops_at_once[0]);
         i++)
    {
        if (vsb_ops_at_once[i] == op) {
            return 1;
        }
    }

    return 0;
}


static const vsb_op_t *
vsb_ops_find(const char *name)
{
    size_t  i;

    for (i = 0; i < sizeof(vsb_ops) / sizeof(vsb_ops[0]); i++) {
        if (strcmp(vsb_ops[i]->name, name) == 0) {
            return vsb_ops[i];
        }
    }

    return NULL;
}


int
vsb_ops_parse(json_t *root, size_t payload_len, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    const char  *op;
    json_t      *v;

    memset(r, 0, sizeof(*r));
    memset(e, 0, sizeof(*e));

    if (!json_is_object(root)) {
        return vsb_error_set(e, VSB_E_BAD_JSON, NULL,
                             "the JSON header must be an object");
    }

    /* Echo request_id whenever it is well formed, even on errors. */
    v = json_object_get(root, "request_id");
    if (v != NULL) {
        if (vsb_req_string(root, "request_id", 0, VSB_MAX_ID_LEN,
                           &r->request_id, e) != 0)
        {
            r->request_id = NULL;
            return -1;
        }
    }

    if (vsb_req_string(root, "op", 1, 32, &op, e) != 0) {
        return -1;
    }

    r->op = vsb_ops_find(op);
    if (r->op == NULL) {
        return vsb_error_set(e, VSB_E_UNKNOWN_OP, "op",
                             "unknown op \"%.32s\"", op);
    }

    if (payload_len > 0 && !r->op->payload) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, NULL,
                             "op \"%s\" takes no payload", r->op->name);
    }

    return r->op->parse(root, cf, r, e);
}


void
vsb_ops_dispatch(vsb_conn_t *c, const char *json, size_t json_len,
    const unsigned char *payload, size_t payload_len)
{
    json_t         *root;
    json_error_t    jerr;
    vsb_request_t   r;
    vsb_error_t     e;

    memset(&e, 0, sizeof(e));

    root = json_loadb(json, json_len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        vsb_error_set(&e, VSB_E_BAD_JSON, NULL, "%s at byte %d", jerr.text,
                      jerr.position);
        vsb_conn_reply_error(c, NULL, &e);
        return;
    }

    if (vsb_ops_parse(root, payload_len, &vsb_cf, &r, &e) != 0) {
        vsb_log(VSB_LOG_DEBUG, "connection %lu: %s: %s", c->n, e.error,
                e.detail);
        vsb_conn_reply_error(c, r.request_id, &e);
        json_decref(root);
        return;
    }

    /* A caller naming another run of this helper holds a stale
     * ownership record: refuse before touching anything, with ours. */
    if (r.epoch != NULL && strcmp(r.epoch, vsb_registry_epoch()) != 0) {
        vsb_error_set(&e, VSB_E_EPOCH_MISMATCH, "epoch",
                      "sandbox %s: epoch %s is not this helper's run",
                      r.id, r.epoch);
        e.epoch = vsb_registry_epoch();
        vsb_conn_reply_error(c, r.request_id, &e);
        json_decref(root);
        return;
    }

    /* While stopping, nothing new may start: it would outlive us. */
    if (vsb_destroy_stopping() && !r.op->while_stopping) {
        vsb_error_set(&e, VSB_E_BUSY, NULL, "the helper is shutting down");
        vsb_conn_reply_error(c, r.request_id, &e);
        json_decref(root);
        return;
    }

    r.op->handler(c, root, &r, payload, payload_len, &e);

    /* a client pipelines such an op on the word of VSB_OPS_AT_ONCE: one
     * that answers later breaks it (its reply still comes, in order) */
    if (!c->replied && vsb_ops_answers_at_once(r.op)) {
        vsb_log(VSB_LOG_ERR, "connection %lu: op %s is declared answered "
                "at once (VSB_OPS_AT_ONCE) but did not reply", c->n,
                r.op->name);
    }

    json_decref(root);
}


/* Whether the frame's op takes its payload as a stream: a cheap look at
 * "op"; everything else is checked by the op's schema at dispatch. */
static int
vsb_ops_streams(const char *json, size_t json_len)
{
    json_t         *root;
    json_error_t    jerr;
    const vsb_op_t *row = NULL;
    json_t         *v;

    root = json_loadb(json, json_len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return 0;
    }

    v = json_object_get(root, "op");
    if (json_is_string(v)) {
        row = vsb_ops_find(json_string_value(v));
    }

    json_decref(root);
    return row != NULL && row->stream_in;
}


static size_t
vsb_ops_room(void *op)
{
    vsb_pending_t  *p = op;

    if (p->hooks != NULL && p->hooks->room != NULL) {
        return p->hooks->room(p);
    }

    return VSB_STREAM_CHUNK;        /* discarded */
}


static void
vsb_ops_input(void *op, const unsigned char *data, size_t len, int last)
{
    vsb_pending_t  *p = op;

    if (p->hooks != NULL && p->hooks->input != NULL) {
        p->hooks->input(p, data, len, last);
    }
}


static void
vsb_ops_drained(void *op)
{
    vsb_pending_t  *p = op;

    if (p->hooks != NULL && p->hooks->drained != NULL) {
        p->hooks->drained(p);
    }
}


static void
vsb_ops_detach(void *op)
{
    vsb_pending_t  *p = op;

    p->conn = NULL;

    if (p->hooks != NULL && p->hooks->detach != NULL) {
        p->hooks->detach(p);
        return;
    }

    if (p->kind == VSB_PENDING_EXEC && p->ex != NULL && !p->cancelled) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: client gone, cancelling exec",
                p->sb->id);
        p->cancelled = 1;
        vsb_exec_cancel(p->ex);
    }

    /* A destroy goes on; its reply is dropped when it ends. */
}


const vsb_server_hooks_t  vsb_ops_hooks = {
    .dispatch = vsb_ops_dispatch,
    .streams = vsb_ops_streams,
    .detach = vsb_ops_detach,
    .room = vsb_ops_room,
    .input = vsb_ops_input,
    .drained = vsb_ops_drained,
};
