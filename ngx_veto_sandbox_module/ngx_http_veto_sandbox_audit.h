/*
 * Veto Sandbox: the audit trail, one Redis stream per tenant, bounded in
 * bytes and in entries:
 *
 *     veto:{T}:audit         stream  the records
 *     veto:{T}:audit:bytes   string  the bytes of the stream's fields
 *
 * An entry is at most NGX_HTTP_VSB_AUDIT_ENTRY_MAX bytes (field names
 * and values); the append script adds it, counts its bytes, and drops
 * the oldest entries while the stream holds more than
 * veto_sandbox_audit_bytes or veto_sandbox_audit_maxlen.  Each entry
 * holds the fields of ngx_http_veto_sandbox_audit_rec_t that are set
 * (docs/approvals.md, "Audit records").  Secrets never enter a record:
 * every string goes through ngx_http_veto_sandbox_redact() and request
 * bodies are reduced by ngx_http_veto_sandbox_summary().
 */

#ifndef _NGX_HTTP_VSB_AUDIT_H_INCLUDED_
#define _NGX_HTTP_VSB_AUDIT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_veto_sandbox_redis.h"


#define NGX_HTTP_VSB_AUDIT_MAXLEN   1000000
#define NGX_HTTP_VSB_AUDIT_BYTES    (64 * 1024 * 1024)

/* one entry, names and values; a field other than detail at most 1 KiB */
#define NGX_HTTP_VSB_AUDIT_ENTRY_MAX   (20 * 1024)
#define NGX_HTTP_VSB_AUDIT_FIELD_MAX   1024

/* what a record's builder lets its detail grow to: the entry less room
 * for the other fields of a decision on record (tenant and agent are at
 * most 128 bytes, the rest ids and times); past the entry's bound the
 * detail would be replaced by a note */
#define NGX_HTTP_VSB_AUDIT_DETAIL_MAX  (NGX_HTTP_VSB_AUDIT_ENTRY_MAX - 2048)

/* a page of GET /v1/audit: entries, entries scanned, and bytes */
#define NGX_HTTP_VSB_AUDIT_PAGE        100
#define NGX_HTTP_VSB_AUDIT_PAGE_MAX    1000
#define NGX_HTTP_VSB_AUDIT_SCAN        10000
#define NGX_HTTP_VSB_AUDIT_PAGE_BYTES  (512 * 1024)


/* Set what applies; empty strings are left out of the entry. */
typedef struct {
    ngx_str_t   tenant;         /* required: selects the stream */
    ngx_str_t   agent;          /* JWT sub of the caller */
    ngx_str_t   action;         /* sandbox.create, sandbox.exec, ...,
                                   approval.approve, approval.deny */
    ngx_str_t   outcome;        /* allowed, denied, approval_requested,
                                   approval_approved, approval_denied,
                                   approval_consumed, approval_expired,
                                   sandbox_created, sandbox_destroyed,
                                   exec_finished, error */
    ngx_str_t   reason;         /* why denied, deny reason, error */
    ngx_str_t   request_hash;   /* canonical request hash */
    ngx_str_t   approval;       /* approval id */
    ngx_str_t   reviewer;       /* JWT sub of the human */
    ngx_str_t   sandbox;
    ngx_str_t   request_id;     /* $request_id, joins with access logs */
    ngx_str_t   detail;         /* JSON text, e.g. exit status, usage */
    ngx_int_t   status;         /* HTTP status answered, or 0 */
} ngx_http_veto_sandbox_audit_rec_t;


/* What GET /v1/audit asks. */
typedef struct {
    uint64_t    from_ms;        /* 0: open */
    uint64_t    to_ms;          /* 0: open */
    ngx_str_t   cursor;         /* an entry id: older than it; or empty */
    ngx_str_t   agent;          /* empty: any */
    ngx_str_t   sandbox;        /* empty: any */
    ngx_uint_t  limit;
} ngx_http_veto_sandbox_audit_query_t;


/*
 * Appends the record to the tenant's stream within maxlen entries and
 * bytes (0: the defaults).  handler may be NULL: then failures are
 * logged and nothing else happens.  A caller that must not act without a
 * record (fail closed) passes a handler and waits for NGX_OK and a
 * string reply (the entry id).
 */
ngx_int_t ngx_http_veto_sandbox_audit_append(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_uint_t maxlen,
    size_t bytes, ngx_http_veto_sandbox_audit_rec_t *rec);

/*
 * GET /v1/audit: newest first, at most q->limit entries and
 * NGX_HTTP_VSB_AUDIT_PAGE_BYTES, scanning at most NGX_HTTP_VSB_AUDIT_SCAN
 * per page.  The reply: [[[id, [field, value, ...]], ...], next], turned
 * into JSON by ngx_http_veto_sandbox_audit_to_json(); next is the cursor
 * of the next page, "" when there is none.
 */
ngx_int_t ngx_http_veto_sandbox_audit_query(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_http_veto_sandbox_audit_query_t *q);

/* "<ms>-<seq>": an entry id, as a cursor */
ngx_uint_t ngx_http_veto_sandbox_audit_cursor_valid(ngx_str_t *cursor);

/*
 * [{"id": "...", "field": "value", ..., "detail": {...}}, ...] (detail,
 * stored as JSON text, as the object it is; {"text": ...} if it is not
 * JSON); *next the next page's cursor or empty; NULL on a bad reply.
 */
json_t *ngx_http_veto_sandbox_audit_to_json(redisReply *reply,
    ngx_str_t *next);

#endif /* _NGX_HTTP_VSB_AUDIT_H_INCLUDED_ */
