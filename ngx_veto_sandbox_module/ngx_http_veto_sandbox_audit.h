/*
 * Veto Sandbox: the audit trail, one Redis stream per tenant
 *
 *     veto:{T}:audit     XADD ... MAXLEN ~ <veto_sandbox_audit_maxlen> *
 *
 * Each entry holds the fields of ngx_http_veto_sandbox_audit_rec_t that
 * are set (docs/approvals.md, "Audit records").  Secrets never enter a
 * record: every string goes through ngx_http_veto_sandbox_redact() and
 * request bodies are reduced by ngx_http_veto_sandbox_summary()
 * (ngx_http_veto_sandbox_redact.h).
 */

#ifndef _NGX_HTTP_VSB_AUDIT_H_INCLUDED_
#define _NGX_HTTP_VSB_AUDIT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_veto_sandbox_redis.h"


#define NGX_HTTP_VSB_AUDIT_MAXLEN   1000000


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


/*
 * XADD the record.  handler may be NULL: then failures are logged and
 * nothing else happens.  A caller that must not act without a record
 * (fail closed) passes a handler and waits for NGX_OK and a string reply
 * (the entry id).
 */
ngx_int_t ngx_http_veto_sandbox_audit_append(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_uint_t maxlen,
    ngx_http_veto_sandbox_audit_rec_t *rec);

/*
 * GET /v1/audit: newest first, at most limit entries, between from_ms and
 * to_ms (0: open), only agent / sandbox when not empty; at most 10000
 * entries are scanned per query.  The reply: [[id, [field, value, ...]],
 * ...], turned into JSON by ngx_http_veto_sandbox_audit_to_json().
 */
ngx_int_t ngx_http_veto_sandbox_audit_query(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    uint64_t from_ms, uint64_t to_ms, ngx_str_t *agent, ngx_str_t *sandbox,
    ngx_uint_t limit);

/* [{"id": "...", "field": "value", ...}, ...]; NULL on a bad reply */
json_t *ngx_http_veto_sandbox_audit_to_json(redisReply *reply);

#endif /* _NGX_HTTP_VSB_AUDIT_H_INCLUDED_ */
