/*
 * Routing a request to its row of the op table (_ops.c), running the
 * row, and the table's check when the configuration is read: a row that
 * cannot work, or that the compiled-in OpenAPI document (_openapi.c)
 * does not describe, fails "nginx -t" with a message naming it.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_discovery.h"


/*
 * Does uri match the row's path?  A literal byte matches itself; "{id}"
 * matches a valid sandbox id and "{approval}" a valid approval id, which
 * are returned: an id that cannot exist is as unknown as one that does
 * not.  "{snap}", always last, matches a valid snapshot id, which its
 * builder reads from the URI's end.  "{key}", always last, matches the rest of the URI when it can be
 * a Redis key part (a jti, an agent); its builder reads it from there.
 * NGX_ERROR: a placeholder this function does not know.
 */
static ngx_int_t
ngx_http_veto_sandbox_op_match(const char *path, ngx_str_t *uri,
    ngx_str_t *sandbox, ngx_str_t *approval, ngx_str_t *exec)
{
    u_char      *p, *last;
    ngx_str_t    id;
    const char  *s;

    p = uri->data;
    last = p + uri->len;

    ngx_str_null(sandbox);
    ngx_str_null(approval);
    ngx_str_null(exec);

    for (s = path; *s; /* void */) {

        if (*s != '{') {
            if (p == last || *p != (u_char) *s) {
                return NGX_DECLINED;
            }

            p++;
            s++;
            continue;
        }

        if (ngx_strncmp(s, "{id}", 4) == 0) {
            if ((size_t) (last - p) < VSB_SANDBOX_ID_LEN
                || !ngx_http_veto_sandbox_id_valid(p, VSB_SANDBOX_ID_LEN))
            {
                return NGX_DECLINED;
            }

            sandbox->data = p;
            sandbox->len = VSB_SANDBOX_ID_LEN;

            p += VSB_SANDBOX_ID_LEN;
            s += 4;
            continue;
        }

        if (ngx_strncmp(s, "{approval}", 10) == 0) {
            id.data = p;
            id.len = NGX_HTTP_VSB_APPROVAL_ID_LEN;

            if ((size_t) (last - p) < NGX_HTTP_VSB_APPROVAL_ID_LEN
                || !ngx_http_veto_sandbox_approval_id_valid(&id))
            {
                return NGX_DECLINED;
            }

            *approval = id;

            p += NGX_HTTP_VSB_APPROVAL_ID_LEN;
            s += 10;
            continue;
        }

        if (ngx_strcmp(s, "{snap}") == 0) {
            /* "snap-" and 24 lowercase hex digits, the URI's end; the
             * builder reads it from there */
            return (size_t) (last - p) == VSB_SNAPSHOT_ID_LEN
                   && ngx_strncmp(p, "snap-", 5) == 0
                   && ngx_http_veto_sandbox_hex_lower(p + 5,
                                                  VSB_SNAPSHOT_ID_LEN - 5)
                   ? NGX_OK : NGX_DECLINED;
        }

        if (ngx_strcmp(s, "{key}") == 0) {
            return ngx_http_veto_sandbox_redis_key_part_valid(p, last - p)
                   ? NGX_OK : NGX_DECLINED;
        }

        if (ngx_strncmp(s, "{exec}", 6) == 0) {
            /* "ex-" and 16 lowercase hex digits (vsb_protocol.h) */
            if ((size_t) (last - p) < VSB_EXEC_ID_LEN
                || ngx_strncmp(p, "ex-", 3) != 0
                || !ngx_http_veto_sandbox_hex_lower(p + 3,
                                                    VSB_EXEC_ID_LEN - 3))
            {
                return NGX_DECLINED;
            }

            exec->data = p;
            exec->len = VSB_EXEC_ID_LEN;

            p += VSB_EXEC_ID_LEN;
            s += 6;
            continue;
        }

        return NGX_ERROR;
    }

    return p == last ? NGX_OK : NGX_DECLINED;
}


ngx_http_veto_sandbox_op_t *
ngx_http_veto_sandbox_op_find(ngx_http_request_t *r, ngx_uint_t *allow,
    ngx_str_t *sandbox, ngx_str_t *approval)
{
    ngx_str_t  exec;

    return ngx_http_veto_sandbox_op_route(r->method, &r->uri, allow, sandbox,
                                          approval, &exec);
}


ngx_http_veto_sandbox_op_t *
ngx_http_veto_sandbox_op_route(ngx_uint_t method, ngx_str_t *uri,
    ngx_uint_t *allow, ngx_str_t *sandbox, ngx_str_t *approval,
    ngx_str_t *exec)
{
    ngx_str_t                    sb, apr, ex;
    ngx_http_veto_sandbox_op_t  *op;

    *allow = 0;
    ngx_str_null(sandbox);
    ngx_str_null(approval);
    ngx_str_null(exec);

    for (op = ngx_http_veto_sandbox_ops; op->name.len; op++) {

        if (ngx_http_veto_sandbox_op_match(op->path, uri, &sb, &apr, &ex)
            != NGX_OK)
        {
            continue;
        }

        /* the ids are the URI's, whichever of its rows takes the method */
        *sandbox = sb;
        *approval = apr;
        *exec = ex;
        *allow |= op->methods;

        if (method & op->methods) {
            return op;
        }
    }

    return NULL;
}


/*
 * A routed op, its caller's identity and scope checked and its request
 * in ctx->in: build, then the gate (a public op has no caller to ask
 * about), then run.  The same for a REST request and for a tools/call's
 * REST twin.
 */
ngx_int_t
ngx_http_veto_sandbox_op_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                    rc;
    ngx_http_veto_sandbox_op_t  *op;

    op = ctx->op;

    rc = op->build(r, ctx);

    if (rc != NGX_DECLINED) {
        return rc;
    }

    if (r->header_sent) {
        /* a builder that answered must not say "go on" */
        return NGX_ERROR;
    }

    if (op->scopes == NGX_HTTP_VSB_PUBLIC) {
        return op->run(r, ctx);
    }

    return ngx_http_veto_sandbox_gate(r, ctx, op->run);
}


/* the helper's ops (vsb_protocol.h): a row names one of them */
#define NGX_HTTP_VSB_HELPER_OP(op)  #op,

static const char *ngx_http_veto_sandbox_helper_ops[] = {
    VSB_OPS(NGX_HTTP_VSB_HELPER_OP)
    NULL
};


static ngx_int_t
ngx_http_veto_sandbox_op_helper_known(const char *helper)
{
    const char  **h;

    for (h = ngx_http_veto_sandbox_helper_ops; *h; h++) {
        if (ngx_strcmp(*h, helper) == 0) {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_veto_sandbox_op_refuse(ngx_conf_t *cf,
    ngx_http_veto_sandbox_op_t *op, const char *why)
{
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "veto_sandbox: op table row \"%V\" (%s): %s", &op->name,
                  op->path ? op->path : "no path", why);

    return NGX_ERROR;
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
 * At configuration: the compiled-in OpenAPI document (_openapi.c)
 * describes the table's rows and nothing else.
 */
static ngx_int_t
ngx_http_veto_sandbox_ops_described(ngx_conf_t *cf)
{
    json_t     *doc;
    ngx_int_t   rc;

    doc = ngx_http_veto_sandbox_openapi_load(cf);
    if (doc == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_veto_sandbox_openapi_rows(cf, doc);

    json_decref(doc);

    return rc;
}


/*
 * The table holds together: every row has all it needs, and nothing it
 * would never use (a mapper no reply reaches would be dead code that
 * looks alive).  Called at postconfiguration: a bad row fails "nginx -t".
 */
ngx_int_t
ngx_http_veto_sandbox_ops_init(ngx_conf_t *cf)
{
    const char                  *s;
    ngx_http_veto_sandbox_op_t  *op, *o;

    /* the core rows and the op groups' (a configuration without a
     * policy directive assembles it here) */
    if (ngx_http_veto_sandbox_ops_table() == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "veto_sandbox: the op table has more rows than "
                      "NGX_HTTP_VSB_MAX_OPS");
        return NGX_ERROR;
    }

    for (op = ngx_http_veto_sandbox_ops; op->name.len; op++) {

        if (op->methods == 0 || op->path == NULL
            || ngx_strncmp(op->path, "/v1/", 4) != 0)
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                         "needs methods and a /v1/ path");
        }

        for (s = op->path; *s; s++) {
            if (*s == '{' && ngx_strncmp(s, "{id}", 4) != 0
                && ngx_strncmp(s, "{approval}", 10) != 0
                && ngx_strncmp(s, "{exec}", 6) != 0
                && ngx_strcmp(s, "{snap}") != 0
                && ngx_strcmp(s, "{key}") != 0)
            {
                return ngx_http_veto_sandbox_op_refuse(cf, op,
                                      "unknown placeholder (known: {id}, "
                                      "{approval}, {exec}, and {snap} or "
                                      "{key} at the end)");
            }
        }

        if (op->scopes == 0) {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "needs scopes, or NGX_HTTP_VSB_PUBLIC");
        }

        if (op->scopes == NGX_HTTP_VSB_PUBLIC
            && (op->approval || op->quota
                || (op->helper == NULL
                    && op->run != ngx_http_veto_sandbox_openapi)))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "a public op knows no caller: no "
                                  "approval, no quota, and it is forwarded "
                                  "(or is the OpenAPI document)");
        }

        if (op->build == NULL || op->run == NULL) {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                            "needs build() and run()");
        }

        /* health asks Redis first, then forwards (_health.c) */
        if (op->helper != NULL
            && ((op->run != ngx_http_veto_sandbox_forward
                 && op->run != ngx_http_veto_sandbox_health_run)
                || op->reply == NULL || op->record == NULL))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "a helper op runs ngx_http_veto_sandbox_"
                                  "forward() and needs reply() and record()");
        }

        if (op->helper != NULL
            && !ngx_http_veto_sandbox_op_helper_known(op->helper))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "its helper op is not one of the helper's "
                                  "(VSB_OPS in vsb_protocol.h)");
        }

        if (op->helper == NULL
            && (op->run == ngx_http_veto_sandbox_forward
                || op->reply != NULL || op->record != NULL))
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "an op answered by run() has no helper "
                                  "reply to map or record");
        }

        if (op->approval
            && ngx_http_veto_sandbox_policy_action(ngx_http_veto_sandbox_ops,
                                                   &op->name)
               != op->approval)
        {
            return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "its approval kind is not the policy's "
                                  "for this action name");
        }

        for (o = ngx_http_veto_sandbox_ops; o < op; o++) {
            if ((o->methods & op->methods)
                && ngx_strcmp(o->path, op->path) == 0)
            {
                return ngx_http_veto_sandbox_op_refuse(cf, op,
                                  "another row has this method and path");
            }
        }
    }

    if (ngx_http_veto_sandbox_ops_described(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* the identity phase looks r's row up here: a public op needs no
     * token (_identity.c) */
    ngx_http_veto_sandbox_identity_op_find = ngx_http_veto_sandbox_op_find;

    return NGX_OK;
}
