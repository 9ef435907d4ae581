/*
 * The module's floor 1 of 5, base: util and the request's context: types,
 * responses, JSON, hashing, redaction, pure parsers; knows no transport,
 * store or policy
 *
 * Each file of this floor includes this header and no other floor's;
 * it uses only what its own floor and the floors below offer (this
 * header includes ngx_http_veto_sandbox_module.h), never a higher
 * floor's, and no two files use each other (scripts/check-floors).
 * Its files, and the functions each offers the floors above:
 *
 *   _metrics_store.c  their shared table and text format (pure)
 *   _metrics_count.c  what other files count as things happen (helper,
 *                 Redis, token cache, approvals): adds to the table
 *   _output.c     an exec's output streams as JSON strings or base64
 *   _problem.c    responses, problem+json, 401/403, the error filter
 *   _headers.c    a header list walked by name
 *   _shm.c        a shared memory zone's data, made once; a keyed table
 *                 in a zone (the token cache, the MCP sessions)
 *   _ctx.c        the request's context, the $veto_* variables; which
 *                 URIs are the API's; the request an op sees (ctx->in);
 *                 the request's id, what a sandbox id looks like
 *   _hash.c       the canonical request hash an approval binds
 *   _summary.c    what a human and the audit see of a request, bounded
 *   _redact.c     redaction: secrets in free text and argv (one linear
 *                 pass)
 *   _output.c     an exec's output as a JSON string or base64
 *   _sentinel_parse.c  reading what Sentinel answers (pure)
 *   _peer_cred.c  the inter-gateway credential (pure)
 *   _event.c      the event's bodies (JSON, Slack) and signature
 */

#ifndef _NGX_HTTP_VSB_BASE_H_INCLUDED_
#define _NGX_HTTP_VSB_BASE_H_INCLUDED_


#include "ngx_http_veto_sandbox_module.h"


/* _shm.c: the data of shm_zone's slab pool: the one a running nginx made
 * (shm.exists), or size new zeroed bytes (*fresh set: the caller fills
 * them), the pool's messages naming directive and the zone; NULL: no
 * memory.  A reload's previous data is the caller's to keep. */
void *ngx_http_veto_sandbox_shm_data(ngx_shm_zone_t *shm_zone, size_t size,
    const char *directive, ngx_uint_t *fresh);

/* _shm.c: a keyed table in a shared memory zone (entries found by a byte
 * string of at most 255 bytes, the same length for all, kept most
 * recently used first).  Its zone's data (shm_zone->data) starts with
 * the table; each entry starts with ngx_http_veto_sandbox_shm_entry_t,
 * its key's bytes right after it. */
typedef struct {
    ngx_rbtree_t                     rbtree;
    ngx_rbtree_node_t                sentinel;
    ngx_queue_t                      queue;      /* most recently used first */
    ngx_uint_t                       count;
} ngx_http_veto_sandbox_shm_sh_t;

typedef struct {
    ngx_http_veto_sandbox_shm_sh_t  *sh;
    ngx_slab_pool_t                 *shpool;
} ngx_http_veto_sandbox_shm_table_t;

typedef struct {
    ngx_rbtree_node_t                node;   /* key: the key's first 4
                                                bytes; data: its length */
    ngx_queue_t                      queue;
} ngx_http_veto_sandbox_shm_entry_t;

#define ngx_http_veto_sandbox_shm_key(e)                                     \
    ((u_char *) ((ngx_http_veto_sandbox_shm_entry_t *) (e) + 1))

/* "zone=name:size" (value, its prefix checked by the caller) added for
 * directive: a new zone gets init and data, a zone of that name already
 * declared keeps its own data (the caller compares what it must); NULL
 * after a message (a bad value, a zone too small, or one that another
 * directive declared) */
ngx_shm_zone_t *ngx_http_veto_sandbox_shm_zone(ngx_conf_t *cf,
    ngx_str_t *directive, ngx_str_t *value, ngx_shm_zone_init_pt init,
    void *data);
/* the zone's init: a reload keeps the old table, a new zone starts empty */
ngx_int_t ngx_http_veto_sandbox_shm_table_init(ngx_shm_zone_t *shm_zone,
    void *data, const char *directive);
/* with the pool's mutex held: */
ngx_http_veto_sandbox_shm_entry_t *ngx_http_veto_sandbox_shm_find(
    ngx_http_veto_sandbox_shm_table_t *table, u_char *key, size_t len);
/* e's key already in place; e becomes the most recently used */
void ngx_http_veto_sandbox_shm_add(ngx_http_veto_sandbox_shm_table_t *table,
    ngx_http_veto_sandbox_shm_entry_t *e, size_t len);
void ngx_http_veto_sandbox_shm_used(ngx_http_veto_sandbox_shm_table_t *table,
    ngx_http_veto_sandbox_shm_entry_t *e);
/* the least recently used entry, or NULL */
ngx_http_veto_sandbox_shm_entry_t *ngx_http_veto_sandbox_shm_coldest(
    ngx_http_veto_sandbox_shm_table_t *table);
/* out of the table and freed */
void ngx_http_veto_sandbox_shm_delete(
    ngx_http_veto_sandbox_shm_table_t *table,
    ngx_http_veto_sandbox_shm_entry_t *e);

/* _ctx.c */
ngx_http_veto_sandbox_ctx_t *ngx_http_veto_sandbox_get_ctx(
    ngx_http_request_t *r);
/* ctx->in from r, its body as read so far */
void ngx_http_veto_sandbox_input_rest(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_protected(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf);
ngx_int_t ngx_http_veto_sandbox_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_veto_sandbox_variables_add(ngx_conf_t *cf,
    ngx_http_variable_t *vars);
ngx_int_t ngx_http_veto_sandbox_request_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_uint_t ngx_http_veto_sandbox_id_valid(u_char *id, size_t len);

/* _headers.c: the next header of a list (r->headers_in.headers or
 * headers_out's) named name (any case), or NULL; a zeroed it starts at
 * the first; a header removed (hash 0) is passed over */
typedef struct {
    ngx_list_part_t             *part;
    ngx_uint_t                   i;
} ngx_http_veto_sandbox_header_it_t;
ngx_table_elt_t *ngx_http_veto_sandbox_header_next(ngx_list_t *headers,
    const char *name, ngx_http_veto_sandbox_header_it_t *it);
/* the first such header of r's request, or NULL */
ngx_table_elt_t *ngx_http_veto_sandbox_header_in(ngx_http_request_t *r,
    const char *name);

/* _peer_cred.c: the inter-gateway credential */
#define NGX_HTTP_VSB_PEER_CRED_MAX  512

typedef struct {
    ngx_str_t                    host;
    ngx_str_t                    time;
    ngx_str_t                    nonce;
    ngx_str_t                    body;
    ngx_str_t                    slot;          /* optional: a create's */
    ngx_str_t                    epoch;         /* optional: the owner's
                                                   helper run */
    ngx_str_t                    sig;
    int64_t                      ms;
} ngx_http_veto_sandbox_peer_cred_t;

ngx_int_t ngx_http_veto_sandbox_peer_cred_parse(u_char *p, size_t len,
    ngx_http_veto_sandbox_peer_cred_t *cred);
ngx_int_t ngx_http_veto_sandbox_peer_cred_sign(ngx_pool_t *pool,
    ngx_str_t *key, ngx_http_veto_sandbox_peer_cred_t *cred,
    ngx_str_t *method, ngx_str_t *uri, ngx_str_t *tenant, ngx_str_t *agent,
    ngx_str_t *jti, u_char *out);
ngx_int_t ngx_http_veto_sandbox_peer_cred_check(ngx_pool_t *pool,
    ngx_str_t *key, ngx_http_veto_sandbox_peer_cred_t *cred,
    ngx_str_t *method, ngx_str_t *uri, ngx_str_t *tenant, ngx_str_t *agent,
    ngx_str_t *jti);

/* _problem.c */
/* type is "urn:veto-sandbox:problem:<code>"; extra (stolen) adds fields */
ngx_int_t ngx_http_veto_sandbox_problem(ngx_http_request_t *r,
    ngx_uint_t status, const char *code, const char *detail,
    json_t *extra);
ngx_int_t ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
/* what deny()'s challenges add for r (", resource_metadata=..." on the
 * MCP endpoint, _mcp_meta.c): set at configuration by the face that has
 * it; NULL: nothing */
extern ngx_http_veto_sandbox_challenge_pt
    ngx_http_veto_sandbox_challenge_extra;
/* the hook deny() records its refusal with (code, status), or NULL */
typedef void (*ngx_http_veto_sandbox_deny_record_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status);
extern ngx_http_veto_sandbox_deny_record_pt  ngx_http_veto_sandbox_deny_record;
ngx_int_t ngx_http_veto_sandbox_header(ngx_http_request_t *r,
    const char *name, const char *value);
/* body is stolen */
ngx_int_t ngx_http_veto_sandbox_send_json(ngx_http_request_t *r,
    ngx_uint_t status, json_t *body);
/* the error filter asks routing (_peer.c sets it at preconfiguration;
 * NULL: nothing is routed): is r routed to its owner's host, and whose
 * answer is this?  NGX_DECLINED: not routed; NGX_OK: the owner's;
 * NGX_ABORT: nginx's own error on the hop, *host the owner, *sent
 * whether the request reached it */
typedef ngx_int_t (*ngx_http_veto_sandbox_routed_failed_pt)(
    ngx_http_request_t *r, ngx_str_t *host, ngx_uint_t *sent);
extern ngx_http_veto_sandbox_routed_failed_pt
    ngx_http_veto_sandbox_routed_failed;

ngx_int_t ngx_http_veto_sandbox_send(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, u_char *data, size_t len);
ngx_int_t ngx_http_veto_sandbox_send_chain(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, ngx_chain_t *out, off_t len);
ngx_int_t ngx_http_veto_sandbox_filter_init(ngx_conf_t *cf);
void ngx_http_veto_sandbox_resume(ngx_http_request_t *r, ngx_int_t rc);
json_t *ngx_http_veto_sandbox_json_ngx_str(ngx_str_t *s);
void ngx_http_veto_sandbox_json_cleanup(void *data);
u_char *ngx_http_veto_sandbox_json_dump(ngx_pool_t *pool, json_t *j,
    size_t before, size_t after, size_t *len);
ngx_int_t ngx_http_veto_sandbox_json_pick(json_t *to, json_t *from,
    const char *const *names);


#endif /* _NGX_HTTP_VSB_BASE_H_INCLUDED_ */
