/*
 * The MCP endpoint's own types: what _mcp.c (the transport and the
 * lifecycle), _mcp_tool_table.c (the tools), _mcp_tools.c (their calls
 * as REST twins), _mcp_result.c (the twin's response as the tool's
 * result) and _mcp_session.c (sessions in shared memory) share.  The
 * rest of the module knows only ctx->in, ctx->sink and ctx->mcp
 * (ngx_http_veto_sandbox_module.h).
 */

#ifndef _NGX_HTTP_VSB_MCP_H_INCLUDED_
#define _NGX_HTTP_VSB_MCP_H_INCLUDED_


#include "ngx_http_veto_sandbox_module.h"


/* JSON-RPC 2.0 error codes */
#define NGX_HTTP_VSB_RPC_PARSE_ERROR       -32700
#define NGX_HTTP_VSB_RPC_INVALID_REQUEST   -32600
#define NGX_HTTP_VSB_RPC_METHOD_NOT_FOUND  -32601
#define NGX_HTTP_VSB_RPC_INVALID_PARAMS    -32602
#define NGX_HTTP_VSB_RPC_INTERNAL_ERROR    -32603
/* transport refusals (server-defined range, as the MCP SDKs use them) */
#define NGX_HTTP_VSB_RPC_BAD_REQUEST       -32000
#define NGX_HTTP_VSB_RPC_NO_SESSION        -32001

/* a request id is a string of at most this many bytes, or an integer */
#define NGX_HTTP_VSB_MCP_MAX_ID            256

/* a session id: 32 lowercase hex digits (128 random bits) */
#define NGX_HTTP_VSB_MCP_SID_LEN           32

/* the protocol versions served, newest first (_mcp.c) */
extern ngx_str_t  ngx_http_veto_sandbox_mcp_versions[];


/* What a session is asked to do (ngx_http_veto_sandbox_mcp_session_use) */
enum {
    NGX_HTTP_VSB_MCP_TOUCH = 0,
    NGX_HTTP_VSB_MCP_INITIALIZED,
    NGX_HTTP_VSB_MCP_END
};


/* what the tools' schemas (JSON text) and descriptions share */
#define NGX_HTTP_VSB_MCP_APPROVAL_ARG                                         \
    "\"approval_id\":{\"type\":\"string\",\"pattern\":\"^apr_[0-9a-f]{32}$\","\
    "\"description\":\"Only when retrying a call a human approved: the "     \
    "approval_id that call's result gave. Every other argument must be "     \
    "exactly as in that call.\"}"

#define NGX_HTTP_VSB_MCP_SANDBOX_ARG                                          \
    "\"sandbox_id\":{\"type\":\"string\","                                    \
    "\"pattern\":\"^sb-[0-9a-f]{24}$\","                                      \
    "\"description\":\"The sandbox, as create_sandbox or list_sandboxes "    \
    "gave it (sb- and 24 hex digits).\"}"

#define NGX_HTTP_VSB_MCP_APPROVAL_NOTE                                        \
    " If the policy wants a human to approve this call, the result says "    \
    "\"approval required\" with an approval_id and nothing is done yet: "    \
    "tell your user, follow it with approval_status, and once it is "        \
    "approved call this tool again with the same arguments plus "            \
    "approval_id."


typedef struct ngx_http_veto_sandbox_mcp_tool_s
    ngx_http_veto_sandbox_mcp_tool_t;


/*
 * A tool call's REST twin being built: the method, path and query a REST
 * client would send, and its body; approval is the id the call carries
 * (the twin's Veto-Approval).
 */
typedef struct {
    ngx_uint_t                   method;        /* NGX_HTTP_* */
    ngx_str_t                    method_name;
    ngx_str_t                    uri;
    ngx_str_t                    args;
    ngx_str_t                    body;
    ngx_str_t                    approval;
    /* with a progress token, its output streams as progress (an exec:
     * _mcp_progress.c) */
    unsigned                     progress:1;
} ngx_http_veto_sandbox_mcp_twin_t;


/* The arguments as the twin (NGX_OK), or NGX_DECLINED with *why the
 * message an agent gets (an isError result), or NGX_ERROR.  tool is the
 * row called (its rest says the twin, for the generic one). */
typedef ngx_int_t (*ngx_http_veto_sandbox_mcp_twin_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_tool_t *tool, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why);

/* A successful REST response of the twin (its JSON, or its bytes for a
 * file) as the result's content: text and structuredContent set in
 * result.  NGX_ERROR: no memory. */
typedef ngx_int_t (*ngx_http_veto_sandbox_mcp_present_pt)(
    ngx_http_request_t *r, ngx_http_veto_sandbox_mcp_call_t *call,
    json_t *rest, u_char *data, size_t len, json_t *result);


/* what the generic twin makes of the arguments (rest.flags) */
#define NGX_HTTP_VSB_MCP_BODY      0x01  /* all but the ids: the JSON body */
#define NGX_HTTP_VSB_MCP_PROGRESS  0x02  /* an exec: its output may stream as
                                          * progress (_mcp_progress.c) */

/*
 * A tool's REST twin as data, for ngx_http_veto_sandbox_mcp_rest_twin()
 * (_mcp_tools.c): the method, the route as its op row spells it ("{id}"
 * is the sandbox_id argument; any other route is taken as it is), every
 * argument the tool takes (NULL: none), at least one of one_of required
 * (else why_none is the agent's message), and the flags above.  A twin
 * that reshapes its arguments (a query, a body of another shape) runs
 * the generic one first, then does its own part.
 */
typedef struct {
    ngx_uint_t                           method;        /* NGX_HTTP_* */
    const char                          *route;
    const char                         **args;
    const char                         **one_of;
    const char                          *why_none;
    ngx_uint_t                           flags;
} ngx_http_veto_sandbox_mcp_rest_t;


struct ngx_http_veto_sandbox_mcp_tool_s {
    const char                          *name;
    const char                          *title;
    const char                          *description;
    const char                          *input_schema;  /* JSON text */
    const char                          *annotations;   /* JSON text */
    ngx_http_veto_sandbox_mcp_twin_pt    twin;
    ngx_http_veto_sandbox_mcp_present_pt present;
    ngx_http_veto_sandbox_mcp_rest_t     rest;
};

/* a group's tool list ends with this row */
#define ngx_http_vsb_null_tool                                                \
    { NULL, NULL, NULL, NULL, NULL, NULL, NULL,                               \
      { 0, NULL, NULL, NULL, NULL, 0 } }


typedef struct ngx_http_veto_sandbox_mcp_progress_s
    ngx_http_veto_sandbox_mcp_progress_t;


/* A tools/call in progress: ctx->mcp. */
struct ngx_http_veto_sandbox_mcp_call_s {
    json_t                              *id;        /* the request's */
    ngx_http_veto_sandbox_mcp_tool_t    *tool;
    json_t                              *args;
    size_t                               reply_bytes;
    /* _meta.progressToken, when the client also takes an SSE answer */
    json_t                              *progress;
    ngx_http_veto_sandbox_mcp_progress_t  *pg;      /* _mcp_progress.c */
};


/* _mcp_respond.c: a JSON-RPC response ("result" or "error") to the
 * call's request; both stolen */
ngx_int_t ngx_http_veto_sandbox_mcp_respond(ngx_http_request_t *r,
    ngx_uint_t status, json_t *id, json_t *result, json_t *error);

/* _mcp_tool_table.c */
/* the tools/list result: built once per worker, shared */
json_t *ngx_http_veto_sandbox_mcp_tool_list(void);
ngx_http_veto_sandbox_mcp_tool_t *ngx_http_veto_sandbox_mcp_tool(
    const char *name);
ngx_int_t ngx_http_veto_sandbox_mcp_tools_init(ngx_conf_t *cf);

/* _mcp_tools.c */
/* the twin tool->rest describes (the generic twin, or the first part of
 * one that reshapes): the arguments all among rest.args, sandbox_id and
 * approval_id taken apart, the method and the URI set, one of
 * rest.one_of there, the body made with NGX_HTTP_VSB_MCP_BODY */
ngx_int_t ngx_http_veto_sandbox_mcp_rest_twin(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_tool_t *tool, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why);
/* every argument is one of names (NULL ended): NGX_OK, or NGX_DECLINED
 * with *why naming the first other */
ngx_int_t ngx_http_veto_sandbox_mcp_known(ngx_http_request_t *r,
    json_t *args, const char **names, const char **why);
/* the arguments but sandbox_id and approval_id as the JSON body:
 * compact, keys sorted (the same arguments hash alike) */
ngx_int_t ngx_http_veto_sandbox_mcp_json_body(ngx_http_request_t *r,
    json_t *args, ngx_str_t *body);
/* runs a tools/call: NGX_DONE, or the code to finalize r with */
ngx_int_t ngx_http_veto_sandbox_mcp_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_mcp_call_t *call);

/* _mcp_result.c: the sink (ngx_http_veto_sandbox_sink_pt) */
ngx_int_t ngx_http_veto_sandbox_mcp_result(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, ngx_chain_t *body, size_t len);

/* _mcp_present.c */
/* a result with isError and this text; NULL: no memory */
json_t *ngx_http_veto_sandbox_mcp_error_result(const char *text);
/* result's content: one text block */
ngx_int_t ngx_http_veto_sandbox_mcp_text(json_t *result, const char *text,
    size_t len);
/* the same, and rest (the REST answer) as structuredContent */
ngx_int_t ngx_http_veto_sandbox_mcp_text_rest(json_t *result,
    const char *text, size_t len, json_t *rest);
/* the same, the text formatted (ngx_slprintf) into at most size bytes
 * of r's pool */
ngx_int_t ngx_http_veto_sandbox_mcp_text_restf(ngx_http_request_t *r,
    json_t *result, json_t *rest, size_t size, const char *fmt, ...);
/* unix seconds as 2026-01-31T12:00:00Z and a NUL; buf holds 21 bytes */
u_char *ngx_http_veto_sandbox_mcp_time(u_char *buf, time_t t);
/* data within max bytes, head and tail kept: into structured as
 * "<name>", "<name>_encoding", "<name>_bytes", "<name>_omitted_bytes",
 * and rendered for an agent into text; NULL: no memory */
json_t *ngx_http_veto_sandbox_mcp_bounded(ngx_http_request_t *r,
    u_char *data, size_t len, size_t max, const char *name,
    json_t *structured, ngx_str_t *text);

/* _mcp_progress.c: does this exec's call want its output as progress
 * (a progressToken, and text/event-stream accepted)?  Then its SSE
 * stream is made (ctx->stream, before the builder, which streams the
 * exec to it: 1), else 0; NGX_ERROR: no memory */
ngx_int_t ngx_http_veto_sandbox_mcp_progress(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
/* msg (not stolen) as the SSE stream's last event */
ngx_int_t ngx_http_veto_sandbox_mcp_progress_final(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *msg);

/* _mcp_session.c: NGX_OK with the new id (NGX_HTTP_VSB_MCP_SID_LEN
 * bytes) in id, NGX_BUSY when no session can be held now, NGX_ERROR */
ngx_int_t ngx_http_veto_sandbox_mcp_session_create(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_uint_t version, u_char *id);
/* NGX_OK with *version (and *initialized) of the caller's live session
 * named id, after doing what is asked; NGX_DECLINED: no such session of
 * the caller's (unknown, ended, expired or another agent's) */
ngx_int_t ngx_http_veto_sandbox_mcp_session_use(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_veto_sandbox_ctx_t *ctx, ngx_str_t *id,
    ngx_uint_t what, ngx_uint_t *version, ngx_uint_t *initialized);


#endif /* _NGX_HTTP_VSB_MCP_H_INCLUDED_ */
