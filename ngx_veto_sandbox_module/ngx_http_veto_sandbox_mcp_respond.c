/*
 * The MCP endpoint's JSON-RPC responses: one message ("jsonrpc": "2.0",
 * the request's id, a result or an error), sent as one application/json
 * object, or as the last event of the SSE stream a call's progress began
 * (_mcp_progress.c).  The endpoint (_mcp.c), the tools (_mcp_tools.c)
 * and the results (_mcp_result.c) all answer through it.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"


ngx_int_t
ngx_http_veto_sandbox_mcp_respond(ngx_http_request_t *r, ngx_uint_t status,
    json_t *id, json_t *result, json_t *error)
{
    json_t                       *msg;
    ngx_int_t                     rc;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    /* a result or an error that could not be made (no memory) */
    if (result == NULL && error == NULL) {
        return NGX_ERROR;
    }

    msg = json_pack("{s:s}", "jsonrpc", "2.0");

    if (msg == NULL
        || (id && json_object_set(msg, "id", id) != 0)
        || (result && json_object_set(msg, "result", result) != 0)
        || (error && json_object_set(msg, "error", error) != 0))
    {
        json_decref(msg);
        json_decref(result);
        json_decref(error);
        return NGX_ERROR;
    }

    json_decref(result);
    json_decref(error);

    /* a call whose progress has begun as SSE ends it (_mcp_progress.c) */
    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    if (ctx != NULL && ctx->mcp != NULL && ctx->mcp->pg != NULL
        && ngx_http_veto_sandbox_stream_started(ctx))
    {
        rc = ngx_http_veto_sandbox_mcp_progress_final(r, ctx, msg);
        json_decref(msg);
        return rc;
    }

    return ngx_http_veto_sandbox_send_json(r, status, msg);
}
