/*
 * The module's floor 5 of 5, faces: what clients and operators see: the
 * REST op groups, MCP, the review API, admin, the metrics scrape, the
 * directives and registration
 *
 * Each file of this floor includes this header and no other floor's;
 * it uses only what its own floor and the floors below offer (this
 * header includes ngx_http_veto_sandbox_pipeline.h), never a higher
 * floor's, and no two files use each other (scripts/check-floors).
 * Its files, and the functions each offers the floors above:
 *
 *   _module.c     the command table, conf create/merge, registration
 *   _directives.c the handlers of the module's own directives (api,
 *                 helper, JWT keys and cache, policy, scopes)
 *   _api.c        the content handler: route, identity, body, gate, run;
 *                 /v1/mcp goes to _mcp.c
 *   _mcp.c        the MCP endpoint (Streamable HTTP, JSON-RPC 2.0):
 *                 sessions' lifecycle, initialize, tools/list, tools/call
 *   _mcp_tool_table.c  the MCP tools: names, descriptions, schemas,
 *                 annotations; tools/list
 *   _mcp_tools.c  each tools/call as its REST twin, which runs its op
 *                 table row like a REST request
 *   _mcp_progress.c an exec's output as MCP progress notifications (SSE)
 *   _mcp_result.c the twin's response as the tool's result (ctx->sink)
 *   _mcp_respond.c  a JSON-RPC response: one JSON object, or the last
 *                 event of a call's progress stream
 *   _mcp_present.c  a success as the tool's result: text, structured
 *   _ops.c        THE OP TABLE: one row per operation, data only (the
 *                 policy's action names and the OpenAPI check read it),
 *                 assembled from the op groups' files
 *   _sandboxes.c  the sandboxes op group, whole: list, create, get,
 *                 usage, PATCH, delete; rows, builders, mappers,
 *                 records, MCP tools
 *   _snapshots.c  the snapshots op group, whole: snapshots, forks'
 *                 field, pause and resume, changes; rows, builders,
 *                 mappers, records, MCP tools
 *   _op_route.c   a request's row, running a routed op: build, gate,
 *                 run; the table's check at configuration (the OpenAPI
 *                 document describes its rows)
 *   _review.c     the review op group, answered from Redis: approvals
 *                 and audit; rows, run()s, the MCP tool approval_status
 *   _health.c     GET /v1/health: the liveness probe (helper, Redis)
 *   _profiles.c   GET /v1/profiles: the helper's profiles the policy
 *                 allows; list_profiles
 *   _about.c      GET /v1/about: the isolation layers in force (ping);
 *                 describe_isolation
 *   _openapi.c    GET /v1/openapi.json: the compiled-in OpenAPI document
 *   _admin.c      the admin op group: revocations, any sandbox of the
 *                 tenant; rows, builders, run()s, the destroy's record
 *   _metrics.c    Prometheus metrics: the directive, the zone, the scrape
 *   _metrics_gauges.c  what a scrape adds: the helper's stats as gauges,
 *                 the webhook notifier's counters
 *   _execs.c      exec rows: the exec's builder, streamed and background
 *                 execs, their state, output and kill; the cut between
 *                 head and tail
 *   _files.c      the files op group, whole: a file in and out, a tar
 *                 upload in, a directory out as tar; rows, builders,
 *                 mappers, records, MCP tools
 *   _mcp_session.c  MCP sessions in a shared memory zone
 *   _mcp_meta.c   the MCP endpoint's protected resource metadata
 *                 (RFC 9728): its URLs and the document
 */

#ifndef _NGX_HTTP_VSB_FACES_H_INCLUDED_
#define _NGX_HTTP_VSB_FACES_H_INCLUDED_


#include "ngx_http_veto_sandbox_pipeline.h"


/* _api.c */
ngx_int_t ngx_http_veto_sandbox_api_handler(ngx_http_request_t *r);

/* _directives.c: the handlers _module.c's command table names */
char *ngx_http_veto_sandbox_api(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_helper(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_jwt_keys(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_jwt_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_policy(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_scope(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/*
 * The op groups whose rows (and MCP tools) live in a file of their own,
 * next to their builders, mappers and records: group g's file defines
 * ngx_http_veto_sandbox_<g>_ops[] (rows, ended by one whose name is
 * empty) and, outside NGX_HTTP_VSB_OPS_DATA_ONLY,
 * ngx_http_veto_sandbox_<g>_tools[] (MCP tools, ended by a NULL name).
 * _ops.c appends the rows to its own, _mcp_tool_table.c the tools.
 */
#define NGX_HTTP_VSB_OP_GROUPS(X)                                             \
    X(health)                                                                 \
    X(openapi)                                                                \
    X(about)                                                                  \
    X(profiles)                                                               \
    X(sandboxes)                                                              \
    X(snapshots)                                                              \
    X(execs)                                                                  \
    X(review)                                                                 \
    X(admin)                                                                  \
    X(files)

#define NGX_HTTP_VSB_OP_GROUP_ROWS(g)                                         \
    extern ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_##g##_ops[];
NGX_HTTP_VSB_OP_GROUPS(NGX_HTTP_VSB_OP_GROUP_ROWS)
#undef NGX_HTTP_VSB_OP_GROUP_ROWS

/* a row's scopes: reading one's own sandboxes (and snapshots) needs any
 * sandbox scope */
#define NGX_HTTP_VSB_SANDBOXES (NGX_HTTP_VSB_SCOPE_CREATE                     \
                                |NGX_HTTP_VSB_SCOPE_EXEC                      \
                                |NGX_HTTP_VSB_SCOPE_FILES                     \
                                |NGX_HTTP_VSB_SCOPE_NETWORK)

/* a human's reason (an approve, a deny, a revocation): bytes at most */
#define NGX_HTTP_VSB_REASON_MAX  1024

/* the whole table's rows at most */
#define NGX_HTTP_VSB_MAX_OPS  96

/* _ops.c: the rows, ended by one whose name is empty: filled by
 * ngx_http_veto_sandbox_ops_table(), which the configuration calls first
 * (the policy directive, the table's check) */
extern ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_ops[];
/* the table assembled (once): each group's rows in
 * NGX_HTTP_VSB_OP_GROUPS order; NULL: more than NGX_HTTP_VSB_MAX_OPS */
ngx_http_veto_sandbox_op_t *ngx_http_veto_sandbox_ops_table(void);

/* _op_route.c */

/* the op of r's method and URI; NULL with *allow the methods its URI
 * takes (empty: no such resource); ids set the {id}, {approval} found */
ngx_http_veto_sandbox_op_t *ngx_http_veto_sandbox_op_find(
    ngx_http_request_t *r, ngx_uint_t *allow, ngx_str_t *sandbox,
    ngx_str_t *approval);
ngx_int_t ngx_http_veto_sandbox_ops_init(ngx_conf_t *cf);
/* the op of a method and a decoded URI, as op_find(), and its {exec} */
ngx_http_veto_sandbox_op_t *ngx_http_veto_sandbox_op_route(
    ngx_uint_t method, ngx_str_t *uri, ngx_uint_t *allow, ngx_str_t *sandbox,
    ngx_str_t *approval, ngx_str_t *exec);
/* build, gate, run ctx->op on ctx->in: NGX_DONE when a reply will
 * finalize r, else the code to finalize it with */
ngx_int_t ngx_http_veto_sandbox_op_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _mcp_session.c: "veto_sandbox_mcp_sessions zone=name:size ..." */
char *ngx_http_veto_sandbox_mcp_sessions(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _mcp.c: the MCP endpoint, "/v1/mcp" when veto_sandbox_mcp is on */
ngx_int_t ngx_http_veto_sandbox_mcp_uri(ngx_http_request_t *r);
ngx_int_t ngx_http_veto_sandbox_mcp_handler(ngx_http_request_t *r);
char *ngx_http_veto_sandbox_mcp_merge(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *prev,
    ngx_http_veto_sandbox_srv_conf_t *conf);

/* _mcp_meta.c */
/* ", resource_metadata=\"URL\"" for a challenge on the MCP endpoint,
 * empty elsewhere; NULL: no memory */
u_char *ngx_http_veto_sandbox_mcp_challenge(ngx_http_request_t *r);
/* may a browser page of this Origin use the MCP endpoint? */
ngx_uint_t ngx_http_veto_sandbox_mcp_origin_allowed(ngx_http_request_t *r,
    ngx_str_t *origin);
char *ngx_http_veto_sandbox_mcp_metadata(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_mcp_resource(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _health.c: /v1/health's builder, run() (Redis asked first, then the
 * helper) and reply */
ngx_int_t ngx_http_veto_sandbox_build_health(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_health_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_health(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _sandboxes.c: builders, mappers and records of the sandbox rows (the
 * parsers fuzz target drives the builders) */
ngx_int_t ngx_http_veto_sandbox_build_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_create(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_update(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_sandbox(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_record_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_destroyed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_update(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);

/* _execs.c: builders, mappers and records of the exec rows (the parsers
 * fuzz target drives the builders) */
ngx_int_t ngx_http_veto_sandbox_build_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_exec_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_exec_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec_any(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec_state(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_exec_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_record_exec_any(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
void ngx_http_veto_sandbox_record_exec_kill(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);

/* _files.c: builders, mappers and records of the files and archive rows
 * (the parsers and helper reply fuzz targets drive them) */
ngx_int_t ngx_http_veto_sandbox_build_read(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_write(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_file(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_archive_in(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_build_archive_out(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_reply_archive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_record_archive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);
/* Content-Length over the upload's bound: the 413 sent, else
 * NGX_DECLINED */
ngx_int_t ngx_http_veto_sandbox_archive_early(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _metrics_gauges.c: a scrape's other parts */
/* at most what the gauges below add to a scrape, in bytes: the
 * gateway's and the helper's gauges, the webhook counters */
#define NGX_HTTP_VSB_METRICS_GAUGES  12288

/* # HELP, # TYPE and one sample of type ("gauge", "counter") */
u_char *ngx_http_veto_sandbox_metrics_gauge(u_char *p, const char *name,
    const char *type, const char *help, json_int_t value);

/* veto_sandbox_helper_up, then each of the helper's figures in its stats
 * reply (NULL: the helper did not answer) */
u_char *ngx_http_veto_sandbox_metrics_helper_gauges(u_char *p,
    json_t *stats);

/* veto_sandbox_webhook_*_total, when a webhook is configured */
u_char *ngx_http_veto_sandbox_metrics_webhooks(u_char *p);

/* _metrics.c: the directive, its checks, the log phase count */
char *ngx_http_veto_sandbox_metrics_conf(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_veto_sandbox_metrics_merge(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *prev,
    ngx_http_veto_sandbox_srv_conf_t *conf);
ngx_int_t ngx_http_veto_sandbox_metrics_init(ngx_conf_t *cf);

/* _openapi.c: GET /v1/openapi.json from the compiled-in document; the
 * document parsed at configuration, for the op table's check (NULL:
 * logged) */
ngx_int_t ngx_http_veto_sandbox_openapi(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
json_t *ngx_http_veto_sandbox_openapi_load(ngx_conf_t *cf);


#endif /* _NGX_HTTP_VSB_FACES_H_INCLUDED_ */
