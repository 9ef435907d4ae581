/*
 * Each MCP tools/call as its REST twin.
 *
 * A tool is a row of an op group's tool list (_mcp_tool_table.c walks
 * them): its name, description and JSON Schema for the agent, and a twin
 * that says which REST request the call is: method, path, query and
 * body, exactly as a REST client would send them.  Most twins are the
 * generic one here, ngx_http_veto_sandbox_mcp_rest_twin(), reading the
 * row's rest (the method, the route, the arguments, which are required,
 * whether they are the body); a twin that reshapes its arguments is
 * written by hand beside its tool and starts with the generic one.
 * ngx_http_veto_sandbox_mcp_call() puts the twin in ctx->in, routes it
 * through the op table and runs that row (_ops.c): the same scope check, builder, gate (revocation, quota,
 * approval bound to the twin's canonical request hash), helper op and
 * record as the REST API.  Nothing here reaches the helper or Redis
 * itself.
 *
 * A JSON body is the call's arguments (less sandbox_id and approval_id)
 * serialized compactly with sorted keys, so that the same arguments make
 * the same bytes, and the same request hash, whatever order the agent
 * sent them in: retrying with the approval id is retrying the same
 * request.  The twin checks only what it takes apart itself (the
 * sandbox id, the path, the file content); the rest is the REST
 * builder's to judge, with the same messages.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"


/* ---- the twins ------------------------------------------------------ */


/* Every argument is one of names; else *why names the first other. */
ngx_int_t
ngx_http_veto_sandbox_mcp_known(ngx_http_request_t *r, json_t *args,
    const char **names, const char **why)
{
    u_char      *p, *msg;
    json_t      *v;
    ngx_uint_t   i;
    const char  *key, *hint;

    json_object_foreach(args, key, v) {
        for (i = 0; names[i]; i++) {
            if (ngx_strcmp(key, names[i]) == 0) {
                break;
            }
        }

        if (names[i] != NULL) {
            continue;
        }

        msg = ngx_pnalloc(r->pool, 200);
        if (msg == NULL) {
            return NGX_ERROR;
        }

        hint = ngx_http_veto_sandbox_field_suggest(key, names);

        /* a name cut short could end inside a UTF-8 sequence: only whole
         * short names are repeated */
        p = ngx_strlen(key) <= 64
            ? ngx_snprintf(msg, 159, "unknown argument \"%s\"; the tool "
                           "takes only those in its input schema", key)
            : ngx_snprintf(msg, 159, "unknown argument (a long name); the "
                           "tool takes only those in its input schema");

        if (hint != NULL) {
            p = ngx_snprintf(p, 199 - (p - msg), " (did you mean \"%s\"?)",
                             hint);
        }

        *p = '\0';

        *why = (const char *) msg;
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* sandbox_id and approval_id, the two every twin may take apart */
static ngx_int_t
ngx_http_veto_sandbox_mcp_ids(json_t *args, ngx_str_t *sandbox,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    json_t  *v;

    if (sandbox != NULL) {
        v = json_object_get(args, "sandbox_id");

        if (!json_is_string(v)
            || !ngx_http_veto_sandbox_id_valid(
                   (u_char *) json_string_value(v), json_string_length(v)))
        {
            *why = v == NULL
                   ? "sandbox_id is required: the id create_sandbox or "
                     "list_sandboxes gave"
                   : "sandbox_id must be a sandbox id: \"sb-\" and 24 "
                     "lowercase hex digits, as create_sandbox gave it";
            return NGX_DECLINED;
        }

        sandbox->data = (u_char *) json_string_value(v);
        sandbox->len = json_string_length(v);
    }

    v = json_object_get(args, "approval_id");

    if (v != NULL) {
        if (!json_is_string(v)) {
            *why = "approval_id must be a string: the approval_id an "
                   "\"approval required\" result gave";
            return NGX_DECLINED;
        }

        twin->approval.data = (u_char *) json_string_value(v);
        twin->approval.len = json_string_length(v);
    }

    return NGX_OK;
}


/* "/v1/sandboxes/<id><tail>" */
static ngx_int_t
ngx_http_veto_sandbox_mcp_path(ngx_http_request_t *r, ngx_str_t *sandbox,
    const char *tail, ngx_str_t *uri)
{
    uri->len = sizeof("/v1/sandboxes/") - 1 + sandbox->len
               + ngx_strlen(tail);
    uri->data = ngx_pnalloc(r->pool, uri->len);
    if (uri->data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(uri->data, "/v1/sandboxes/%V%s", sandbox, tail);

    return NGX_OK;
}


/* the method of a twin, and its name as a REST request's line has it */
static void
ngx_http_veto_sandbox_mcp_method(ngx_http_veto_sandbox_mcp_twin_t *twin,
    ngx_uint_t method)
{
    twin->method = method;

    switch (method) {
    case NGX_HTTP_POST:
        ngx_str_set(&twin->method_name, "POST");
        break;
    case NGX_HTTP_PUT:
        ngx_str_set(&twin->method_name, "PUT");
        break;
    case NGX_HTTP_PATCH:
        ngx_str_set(&twin->method_name, "PATCH");
        break;
    case NGX_HTTP_DELETE:
        ngx_str_set(&twin->method_name, "DELETE");
        break;
    default:
        ngx_str_set(&twin->method_name, "GET");
        break;
    }
}


/* The arguments but the ids, as the JSON body: compact, keys sorted. */
ngx_int_t
ngx_http_veto_sandbox_mcp_json_body(ngx_http_request_t *r, json_t *args,
    ngx_str_t *body)
{
    size_t   len;
    json_t  *copy;

    copy = json_copy(args);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    json_object_del(copy, "sandbox_id");
    json_object_del(copy, "approval_id");

    len = json_dumpb(copy, NULL, 0, JSON_COMPACT|JSON_SORT_KEYS);

    body->data = ngx_pnalloc(r->pool, len ? len : 1);
    if (body->data == NULL) {
        json_decref(copy);
        return NGX_ERROR;
    }

    body->len = json_dumpb(copy, (char *) body->data, len,
                           JSON_COMPACT|JSON_SORT_KEYS);

    json_decref(copy);

    return body->len ? NGX_OK : NGX_ERROR;
}


/*
 * The twin tool->rest describes: the arguments all among rest.args,
 * approval_id taken apart (and sandbox_id, into the URI, for a route
 * under /v1/sandboxes/{id}), the method and the URI set, one of
 * rest.one_of given, and with NGX_HTTP_VSB_MCP_BODY the arguments but the
 * ids as the body (the REST builder judges them, with its messages).
 * NGX_DECLINED with *why for the agent.
 */
ngx_int_t
ngx_http_veto_sandbox_mcp_rest_twin(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_tool_t *tool, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    u_char                            *msg;
    ngx_int_t                          rc;
    ngx_str_t                          sandbox;
    ngx_uint_t                         i;
    ngx_http_veto_sandbox_mcp_rest_t  *rest;

    static const char  sandboxes[] = "/v1/sandboxes/{id}";

    rest = &tool->rest;

    if (rest->args == NULL && json_object_size(args) != 0) {
        msg = ngx_pnalloc(r->pool, ngx_strlen(tool->name)
                                   + sizeof(" takes no arguments"));
        if (msg == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(msg, "%s takes no arguments%Z", tool->name);

        *why = (const char *) msg;
        return NGX_DECLINED;
    }

    if (rest->args != NULL) {
        rc = ngx_http_veto_sandbox_mcp_known(r, args, rest->args, why);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (ngx_strncmp(rest->route, sandboxes, sizeof(sandboxes) - 1) == 0) {
        rc = ngx_http_veto_sandbox_mcp_ids(args, &sandbox, twin, why);
        if (rc != NGX_OK) {
            return rc;
        }

        rc = ngx_http_veto_sandbox_mcp_path(r, &sandbox,
                                  rest->route + sizeof(sandboxes) - 1,
                                  &twin->uri);
        if (rc != NGX_OK) {
            return rc;
        }

    } else {
        rc = ngx_http_veto_sandbox_mcp_ids(args, NULL, twin, why);
        if (rc != NGX_OK) {
            return rc;
        }

        twin->uri.data = (u_char *) rest->route;
        twin->uri.len = ngx_strlen(rest->route);
    }

    ngx_http_veto_sandbox_mcp_method(twin, rest->method);

    if (rest->one_of != NULL) {
        for (i = 0; rest->one_of[i]; i++) {
            if (json_object_get(args, rest->one_of[i]) != NULL) {
                break;
            }
        }

        if (rest->one_of[i] == NULL) {
            *why = rest->why_none;
            return NGX_DECLINED;
        }
    }

    twin->progress = (rest->flags & NGX_HTTP_VSB_MCP_PROGRESS) ? 1 : 0;

    if (rest->flags & NGX_HTTP_VSB_MCP_BODY) {
        return ngx_http_veto_sandbox_mcp_json_body(r, args, &twin->body);
    }

    return NGX_OK;
}


/* ---- the call ------------------------------------------------------- */


/* The twin as the request its op sees. */
static ngx_int_t
ngx_http_veto_sandbox_mcp_input(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_mcp_twin_t *twin)
{
    ngx_buf_t                      *b;
    ngx_chain_t                    *cl;
    ngx_http_veto_sandbox_input_t  *in;

    static ngx_str_t  json_type = ngx_string("application/json");

    in = &ctx->in;

    ngx_memzero(in, sizeof(ngx_http_veto_sandbox_input_t));

    in->method_name = twin->method_name;
    in->uri = twin->uri;
    in->args = twin->args;

    if (twin->body.len) {
        b = ngx_calloc_buf(r->pool);
        cl = ngx_alloc_chain_link(r->pool);

        if (b == NULL || cl == NULL) {
            return NGX_ERROR;
        }

        b->pos = twin->body.data;
        b->last = twin->body.data + twin->body.len;
        b->memory = 1;

        cl->buf = b;
        cl->next = NULL;

        in->body = cl;
    }

    /* a JSON body says so, as a REST client's would */
    if (twin->method & (NGX_HTTP_POST|NGX_HTTP_PATCH)) {
        in->content_type = &json_type;
    }

    if (twin->approval.data) {
        in->approval = twin->approval;
        in->has_approval = 1;
    }

    in->set = 1;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_mcp_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_mcp_call_t *call)
{
    json_t                            *args, *result;
    ngx_int_t                          rc;
    ngx_uint_t                         allow;
    const char                        *why;
    ngx_pool_cleanup_t                *cln;
    ngx_http_veto_sandbox_mcp_twin_t   twin;

    ngx_memzero(&twin, sizeof(ngx_http_veto_sandbox_mcp_twin_t));

    args = call->args;

    if (args == NULL) {
        /* no "arguments": none, as "arguments": {} */
        cln = ngx_pool_cleanup_add(r->pool, 0);
        args = json_object();

        if (cln == NULL || args == NULL) {
            json_decref(args);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        cln->handler = ngx_http_veto_sandbox_json_cleanup;
        cln->data = args;

        call->args = args;
    }

    why = NULL;

    rc = call->tool->twin(r, call->tool, args, &twin, &why);

    if (rc == NGX_DECLINED) {
        /* the agent can fix its arguments: a tool error, not a protocol one */
        result = ngx_http_veto_sandbox_mcp_error_result(why);
        if (result == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_veto_sandbox_mcp_respond(r, NGX_HTTP_OK, call->id,
                                                 result, NULL);
    }

    if (rc != NGX_OK
        || ngx_http_veto_sandbox_mcp_input(r, ctx, &twin) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->op = ngx_http_veto_sandbox_op_route(twin.method, &twin.uri, &allow,
                                             &ctx->sandbox, &ctx->apr_id,
                                             &ctx->exec);
    if (ctx->op == NULL) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "veto_sandbox: MCP tool \"%s\" made \"%V %V\", which "
                      "no op table row takes", call->tool->name,
                      &twin.method_name, &twin.uri);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* from here on, every answer the op gives is the tool's result */
    ctx->sink = ngx_http_veto_sandbox_mcp_result;

    if (ngx_http_veto_sandbox_scope_check(r, ctx) != NGX_OK) {
        return ngx_http_veto_sandbox_deny(r, ctx);
    }

    /* an exec with a progress token streams its output as progress */
    if (twin.progress
        && ngx_http_veto_sandbox_mcp_progress(r, ctx) == NGX_ERROR)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_veto_sandbox_op_run(r, ctx);
}
