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

#include "ngx_http_veto_sandbox_module.h"


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


/* the methods a row takes that the document describes (HEAD is GET's) */
static const struct {
    ngx_uint_t   method;
    const char  *name;
} ngx_http_veto_sandbox_openapi_methods[] = {
    { NGX_HTTP_GET,    "get" },
    { NGX_HTTP_POST,   "post" },
    { NGX_HTTP_PUT,    "put" },
    { NGX_HTTP_PATCH,  "patch" },
    { NGX_HTTP_DELETE, "delete" },
    { 0, NULL }
};


static ngx_uint_t
ngx_http_veto_sandbox_openapi_shared(ngx_http_veto_sandbox_op_t *op)
{
    ngx_uint_t                   n;
    ngx_http_veto_sandbox_op_t  *o;

    n = 0;

    for (o = ngx_http_veto_sandbox_ops; o->name.len; o++) {
        if (o->name.len == op->name.len
            && ngx_strncmp(o->name.data, op->name.data, op->name.len) == 0)
        {
            n++;
        }
    }

    return n > 1;
}


/*
 * The document describes each row, by its path and methods, with the
 * row's name as its operationId (with a suffix when rows share a name:
 * one op on two paths), and describes no operation the module does not
 * have: a row added without its description fails "nginx -t".
 */
static ngx_int_t
ngx_http_veto_sandbox_openapi_rows(ngx_conf_t *cf, json_t *doc)
{
    json_t                      *paths, *item, *v;
    size_t                       len;
    ngx_uint_t                   k, found;
    const char                  *path, *method, *id;
    ngx_http_veto_sandbox_op_t  *op;

    paths = json_object_get(doc, "paths");

    if (!json_is_object(paths)) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "veto_sandbox: the compiled-in OpenAPI document has "
                      "no \"paths\" object");
        return NGX_ERROR;
    }

    for (op = ngx_http_veto_sandbox_ops; op->name.len; op++) {

        for (k = 0; ngx_http_veto_sandbox_openapi_methods[k].name; k++) {
            method = ngx_http_veto_sandbox_openapi_methods[k].name;

            if ((op->methods & ngx_http_veto_sandbox_openapi_methods[k].method)
                == 0)
            {
                continue;
            }

            v = json_object_get(json_object_get(paths, op->path), method);
            id = json_string_value(json_object_get(v, "operationId"));
            len = op->name.len;

            if (id == NULL
                || ngx_strncmp(id, op->name.data, len) != 0
                || (id[len] != '\0'
                    && !(id[len] == '.'
                         && ngx_http_veto_sandbox_openapi_shared(op))))
            {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "veto_sandbox: op table row \"%V\": "
                              "docs/openapi.json has no \"%s\" of \"%s\" "
                              "whose operationId is the row's name",
                              &op->name, method, op->path);
                return NGX_ERROR;
            }
        }
    }

    json_object_foreach(paths, path, item) {

        /* the MCP endpoint is _mcp.c's location, not a row */
        if (ngx_strcmp(path, "/v1/mcp") == 0) {
            continue;
        }

        for (k = 0; ngx_http_veto_sandbox_openapi_methods[k].name; k++) {
            method = ngx_http_veto_sandbox_openapi_methods[k].name;

            if (json_object_get(item, method) == NULL) {
                continue;
            }

            found = 0;

            for (op = ngx_http_veto_sandbox_ops; op->name.len; op++) {
                if ((op->methods
                     & ngx_http_veto_sandbox_openapi_methods[k].method)
                    && ngx_strcmp(op->path, path) == 0)
                {
                    found = 1;
                    break;
                }
            }

            if (!found) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "veto_sandbox: docs/openapi.json describes "
                              "\"%s\" of \"%s\", which no op table row "
                              "has", method, path);
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


/*
 * At configuration: the compiled-in document is a JSON object that says
 * it is OpenAPI 3.1 and describes the op table's rows (a build from a
 * broken or stale file fails "nginx -t", not a client).  Blocking work
 * is fine here; no worker runs yet.
 */
ngx_int_t
ngx_http_veto_sandbox_openapi_init(ngx_conf_t *cf)
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
        return NGX_ERROR;
    }

    v = json_string_value(json_object_get(doc, "openapi"));

    if (v == NULL || ngx_strncmp(v, "3.1.", 4) != 0) {
        json_decref(doc);
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "veto_sandbox: the compiled-in OpenAPI document has "
                      "no \"openapi\": \"3.1.x\"");
        return NGX_ERROR;
    }

    if (ngx_http_veto_sandbox_openapi_rows(cf, doc) != NGX_OK) {
        json_decref(doc);
        return NGX_ERROR;
    }

    json_decref(doc);

    return NGX_OK;
}
