/*
 * Strict request schemas.  Parsing a request is pure: it touches no
 * sandbox and no file, so the fuzzer can drive every op's validator.
 * Every failure fills a vsb_error_t naming the VSB_E_* error and, where
 * one field is at fault, the field.
 */
#ifndef VSB_REQUEST_H
#define VSB_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "vsb_config.h"
#include "vsb_protocol.h"

typedef struct {
    const char  *error;          /* VSB_E_*, NULL: no error */
    const char  *field;          /* static string or NULL */
    const char  *limit;          /* with over_ceiling */
    const char  *step;           /* with termination_failed */
    const char  *end_reason;     /* with ended: an END name */
    const char  *epoch;          /* with epoch_mismatch: ours */
    char         detail[256];
    char         field_buf[VSB_MAX_NAME + 1];  /* field names from input */
} vsb_error_t;

typedef struct vsb_op_s  vsb_op_t;      /* vsb_ops.h */

/* "caps": the gateway's ceilings for the values a request leaves to the
 * helper (create: its limits, ttl_s and idle_s; exec: timeout_s and
 * output_bytes): what the helper fills in is at most these. */
enum {
    VSB_CAP_MEMORY_MB = 0,
    VSB_CAP_PIDS,
    VSB_CAP_CPU_PERCENT,
    VSB_CAP_DISK_MB,
    VSB_CAP_TIMEOUT_S,
    VSB_CAP_OUTPUT_BYTES,
    VSB_CAP_TTL_S,
    VSB_CAP_IDLE_S,
    VSB_NCAPS
};

/* the caps an exec may carry */
#define VSB_CAPS_EXEC  ((1u << VSB_CAP_TIMEOUT_S) | (1u << VSB_CAP_OUTPUT_BYTES))
#define VSB_CAPS_ALL   ((1u << VSB_NCAPS) - 1)

/* Strings and JSON values are borrowed from the parsed JSON root. */
typedef struct {
    const vsb_op_t       *op;             /* its row in the op table */
    const char           *request_id;     /* NULL if absent */
    const char           *tenant;
    const char           *agent;          /* NULL: list without filter */
    const char           *id;
    const char           *epoch;          /* NULL: not checked */

    /* create */
    const vsb_profile_t  *profile;
    vsb_limits_t          limits;         /* effective: defaults applied */
    uint64_t              ttl_s;          /* create, update_lifetime */
    uint64_t              idle_s;
    unsigned              ttl_set:1;      /* update_lifetime: given */
    unsigned              idle_set:1;
    unsigned              admin:1;        /* destroy: reason "admin" */
    unsigned              with_ended:1;   /* list: "ended": true */
    unsigned              brief:1;        /* ping: "brief": true */
    uint64_t              after;          /* ended: the cursor */
    uint64_t              max_records;    /* ended: at most */
    uint64_t              advance_s;      /* clock_advance: seconds */
    json_t               *env;            /* create, exec; may be NULL */
    json_t               *metadata;
    json_t               *network;        /* create: allowlist object, NULL
                                             for "none"; update_network:
                                             the entries to add */

    /* exec */
    json_t               *argv;
    const char           *cwd;
    uint64_t              timeout_s;      /* 0: the sandbox's default */
    uint64_t              output_bytes;   /* 0: the sandbox's limit */
    unsigned              stream:1;
    unsigned              background:1;

    /* create, exec: the gateway's caps (0: none) */
    uint64_t              caps[VSB_NCAPS];

    /* exec_status, exec_output, exec_kill */
    const char           *exec_id;
    int                   out_stream;     /* VSB_EXEC_STDOUT, _STDERR */
    uint64_t              offset;
    uint64_t              max_bytes;
    unsigned              follow:1;

    /* write_file, read_file, extract_archive, export_archive: the
     * workspace-relative form of "path" ("" for the workspace itself) */
    const char           *path;
    unsigned              mode;
    const char           *format;         /* archives: "tar", "tar.gz" ...;
                                             NULL: from the bytes (extract),
                                             "tar" (export) */

    /* snapshots (op_snapshot.c), and create's from_snapshot */
    const char           *snapshot;       /* "snap-" + 24 hex */
    const char           *since;          /* changes: "created" or a
                                             snapshot id */
    uint64_t              snap_count;     /* the tenant's ceilings, as the
                                             request lowered them */
    uint64_t              snap_bytes;
    unsigned              manifest:1;     /* snapshot_get */
    unsigned              profile_set:1;  /* create: "profile" given */

    /* a workspace-relative cwd made absolute */
    char                  cwd_buf[VSB_MAX_PATH + sizeof("/workspace/")];
} vsb_request_t;

/* Sets err (always returns -1), for handlers' convenience. */
int vsb_error_set(vsb_error_t *e, const char *error, const char *field,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Building blocks for the ops' schemas (vsb_ops_parse() applies them). */
int vsb_req_fields(json_t *obj, const char *const *allowed, const char *what,
    vsb_error_t *e);
int vsb_req_string(json_t *obj, const char *name, int required,
    size_t maxlen, const char **out, vsb_error_t *e);
int vsb_req_uint(json_t *obj, const char *name, int required,
    uint64_t *out, vsb_error_t *e);
int vsb_req_env(json_t *obj, const char *name, json_t **out,
    vsb_error_t *e);
/* "caps" of root: {name: positive integer} for the VSB_CAP_* in mask,
 * into r->caps (absent: all 0). */
int vsb_req_caps(json_t *root, unsigned mask, vsb_request_t *r,
    vsb_error_t *e);
/* v capped: v when cap is 0 or v <= cap, else cap */
uint64_t vsb_capped(uint64_t v, uint64_t cap);
/* The field's value in *v, NULL when absent (an error if required). */
int vsb_req_get(json_t *obj, const char *name, int required, json_t **v,
    vsb_error_t *e);
/* tenant and agent: 1 .. VSB_MAX_ID_LEN printable ASCII, no space. */
int vsb_req_owner(json_t *root, const char *name, int required,
    const char **out, vsb_error_t *e);
/* "id", a well-formed sandbox id, into r->id, and the optional "epoch"
 * (VSB_EPOCH_LEN lowercase hex) that comes with it into r->epoch. */
int vsb_req_sandbox_id(json_t *root, vsb_request_t *r, vsb_error_t *e);
/* The optional "metadata": an object whose compact JSON is at most
 * VSB_MAX_METADATA_JSON bytes, borrowed from root into *out (NULL when
 * absent).  Create and snapshot_create take it alike. */
int vsb_req_metadata(json_t *root, json_t **out, vsb_error_t *e);
/* over_ceiling naming field and limit; always -1. */
int vsb_req_over(vsb_error_t *e, const char *field, const char *limit,
    uint64_t v, uint64_t max);
/* The sandbox a request names, within its op's schema: only the fields
 * of allowed (what names the op in errors), then tenant, agent and id
 * (with its epoch), each required.  The op's own fields are its own. */
int vsb_req_sandbox_ref(json_t *root, const char *const *allowed,
    const char *what, vsb_request_t *r, vsb_error_t *e);
/* A request naming one sandbox and nothing else (status, destroy). */
int vsb_req_owned(json_t *root, const char *what, vsb_request_t *r,
    vsb_error_t *e);

/* "sb-" + 24 lowercase hex. */
int vsb_req_id_ok(const char *s);

/* An optional boolean, 0 when absent. */
int vsb_req_bool(json_t *obj, const char *name, unsigned *out,
    vsb_error_t *e);
/* "exec": "ex-" + 16 lowercase hex, into r->exec_id. */
int vsb_req_exec_id(json_t *root, vsb_request_t *r, vsb_error_t *e);
/* A workspace path field in either form (relative, or under /workspace/)
 * into r->path as the relative form; allow_root: the workspace itself
 * may be named (r->path ""), which is also the default when the field is
 * absent and not required. */
int vsb_req_ws_path(json_t *root, const char *name, int required,
    int allow_root, vsb_request_t *r, vsb_error_t *e);

#endif
