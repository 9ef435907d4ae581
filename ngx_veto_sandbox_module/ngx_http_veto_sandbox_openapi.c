/*
 * GET /v1/openapi.json: the API's own description, docs/openapi.json of
 * the tree the module was built from.  The document is compiled into
 * the module (.incbin, its path from "config"), so it always describes
 * the module that serves it, and serving it reads nothing at request
 * time: the bytes are in the .so's read-only data.
 *
 * It is public, like the liveness probe: it describes the API anyone can
 * read in the repository and nothing of this host (no policy, no
 * limits, no tenants); a token sent along is neither needed nor read.
 */

#include "ngx_http_veto_sandbox_faces.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_CODE)

#ifndef NGX_HTTP_VSB_OPENAPI_JSON
#error "config defines NGX_HTTP_VSB_OPENAPI_JSON, the path of docs/openapi.json"
#endif


/* the file's bytes between two hidden symbols, not exported by the .so */
__asm__(
    "    .pushsection .rodata, \"a\"\n"
    "    .hidden ngx_http_veto_sandbox_openapi_start\n"
    "    .hidden ngx_http_veto_sandbox_openapi_end\n"
    "    .globl ngx_http_veto_sandbox_openapi_start\n"
    "    .globl ngx_http_veto_sandbox_openapi_end\n"
    "ngx_http_veto_sandbox_openapi_start:\n"
    "    .incbin \"" NGX_HTTP_VSB_OPENAPI_JSON "\"\n"
    "ngx_http_veto_sandbox_openapi_end:\n"
    "    .popsection\n"
);

extern const u_char  ngx_http_veto_sandbox_openapi_start[];
extern const u_char  ngx_http_veto_sandbox_openapi_end[];

/* two objects to C: their distance is taken as addresses, not pointers */
#define ngx_http_veto_sandbox_openapi_len                                     \
    ((size_t) ((uintptr_t) ngx_http_veto_sandbox_openapi_end                  \
               - (uintptr_t) ngx_http_veto_sandbox_openapi_start))


ngx_int_t
ngx_http_veto_sandbox_openapi(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ngx_http_veto_sandbox_send(r, NGX_HTTP_OK, "application/json",
                                 (u_char *) ngx_http_veto_sandbox_openapi_start,
                                 ngx_http_veto_sandbox_openapi_len);
}


/*
 * At configuration: the compiled-in document, parsed, when it is a JSON
 * object that says it is OpenAPI 3.1 (a build from a broken file fails
 * "nginx -t", not a client); NULL: said in the log.  The caller, the op
 * table's check (_op_route.c), holds it against the rows and frees it.
 * Blocking work is fine here; no worker runs yet.
 */
json_t *
ngx_http_veto_sandbox_openapi_load(ngx_conf_t *cf)
{
    json_t        *doc;
    const char    *v;
    json_error_t   err;

    doc = json_loadb((const char *) ngx_http_veto_sandbox_openapi_start,
                     ngx_http_veto_sandbox_openapi_len, 0, &err);
    if (doc == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "veto_sandbox: the compiled-in OpenAPI document is "
                      "not JSON: line %d: %s", err.line, err.text);
        return NULL;
    }

    v = json_string_value(json_object_get(doc, "openapi"));

    if (v == NULL || ngx_strncmp(v, "3.1.", 4) != 0) {
        json_decref(doc);
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "veto_sandbox: the compiled-in OpenAPI document has "
                      "no \"openapi\": \"3.1.x\"");
        return NULL;
    }

    return doc;
}

#endif /* the row's code */


/* ---- the row (_ops.c's table) ------------------------------------------ */


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_openapi_ops[] = {

    /* public: it says nothing of this host */
    ngx_http_vsb_op("openapi", NGX_HTTP_VSB_READ, "/v1/openapi.json",
                    NGX_HTTP_VSB_PUBLIC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_openapi, NULL, NULL),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

#include "ngx_http_veto_sandbox_mcp.h"

/* no MCP tool: an agent gets its tools from tools/list */
ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_openapi_tools[] = {
    ngx_http_vsb_null_tool
};

#endif
