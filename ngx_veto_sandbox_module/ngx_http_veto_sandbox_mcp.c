/*
 * The MCP endpoint: POST/GET/DELETE /v1/mcp with "veto_sandbox_mcp on",
 * the Streamable HTTP transport of MCP 2025-11-25 (and 2025-06-18, the
 * same for what is served here).
 *
 * Every HTTP request is identified first, exactly as a REST request (the
 * POST_READ check, again here: fail closed); a 401 names the protected
 * resource metadata (_mcp_meta.c).  A POST carries one JSON-RPC message
 * (a batch is refused: these versions have none) and is answered with
 * one JSON object, or 202 for a notification or a response; GET is 405
 * (no server-initiated stream is offered); DELETE ends the session.
 * initialize opens a session (_mcp_session.c) bound to the token's
 * tenant and agent, and every later message must name it in
 * Mcp-Session-Id.  A tools/call becomes its REST twin and runs the twin's
 * op table row (_mcp_tools.c), whose response becomes the result
 * (_mcp_result.c).
 *
 * Protocol misuse is a JSON-RPC error: parse error and invalid request
 * with HTTP 400 (and no id when none could be read), an unknown method
 * or bad params with 200 (the answer to a request).  Transport misuse
 * (no or unknown session, wrong media types, too large) is an HTTP error
 * whose body is a JSON-RPC error too.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"


#define NGX_HTTP_VSB_MCP_PATH  "/v1/mcp"


ngx_str_t  ngx_http_veto_sandbox_mcp_versions[] = {
    ngx_string("2025-11-25"),
    ngx_string("2025-06-18"),
    ngx_null_string
};


/* One JSON-RPC message, as far as it could be read. */
typedef struct {
    json_t                      *msg;
    json_t                      *id;        /* NULL: none (notification) */
    const char                  *method;    /* NULL: a response */
    json_t                      *params;    /* an object, or NULL */
} ngx_http_veto_sandbox_rpc_t;


static void ngx_http_veto_sandbox_mcp_post(ngx_http_request_t *r);
static ngx_int_t ngx_http_veto_sandbox_mcp_delete(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_mcp_message(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_rpc_t *rpc);
static ngx_int_t ngx_http_veto_sandbox_mcp_initialize(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_rpc_t *rpc);
static ngx_int_t ngx_http_veto_sandbox_mcp_tools_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_rpc_t *rpc);


static const char  ngx_http_veto_sandbox_mcp_instructions[] =
    "Veto Sandbox runs commands in isolated, disposable Linux sandboxes "
    "for you. Start with create_sandbox, then use write_file, exec and "
    "read_file with the sandbox_id it returns, and destroy_sandbox when "
    "done. Every call is checked against your token's scopes and your "
    "tenant's policy. Some calls need a human to approve them first: the "
    "result then says \"approval required\" and gives an approval_id; "
    "nothing has run. Tell your user what is waiting, check it with "
    "approval_status, and once it is approved call the same tool again "
    "with exactly the same arguments plus approval_id.";


ngx_int_t
ngx_http_veto_sandbox_mcp_uri(ngx_http_request_t *r)
{
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    return vscf->mcp.enable
           && r->uri.len == sizeof(NGX_HTTP_VSB_MCP_PATH) - 1
           && ngx_strncmp(r->uri.data, NGX_HTTP_VSB_MCP_PATH,
                          sizeof(NGX_HTTP_VSB_MCP_PATH) - 1) == 0;
}


/* Does a header value (a list of media ranges) name type, or cover it? */
static ngx_uint_t
ngx_http_veto_sandbox_mcp_accepts(ngx_str_t *v, const char *type)
{
    u_char  *last;

    last = v->data + v->len;

    return ngx_strlcasestrn(v->data, last, (u_char *) type,
                            ngx_strlen(type) - 1) != NULL
           || ngx_strlcasestrn(v->data, last, (u_char *) "application/*",
                               sizeof("application/*") - 2) != NULL
           || ngx_strlcasestrn(v->data, last, (u_char *) "*/*",
                               sizeof("*/*") - 2) != NULL;
}


/* A JSON-RPC error, as the answer to id (NULL: none could be read). */
static ngx_int_t
ngx_http_veto_sandbox_mcp_error(ngx_http_request_t *r, ngx_uint_t status,
    json_t *id, ngx_int_t code, const char *message)
{
    json_t  *error;

    error = json_pack("{s:I, s:s}", "code", (json_int_t) code,
                      "message", message);
    if (error == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_mcp_respond(r, status, id, NULL, error);
}


ngx_int_t
ngx_http_veto_sandbox_mcp_handler(ngx_http_request_t *r)
{
    ngx_int_t                          rc;
    ngx_table_elt_t                   *h;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    ctx = ngx_http_veto_sandbox_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the same identity as every REST request (POST_READ checked it
     * already; internal redirects skip that phase) */
    if (ngx_http_veto_sandbox_identify(r, ctx, 0) != NGX_OK) {
        return ngx_http_veto_sandbox_deny(r, ctx);
    }

    /* DNS rebinding: a browser's Origin must be one this gateway trusts */
    h = ngx_http_veto_sandbox_header_in(r, "Origin");

    if (h != NULL && !ngx_http_veto_sandbox_mcp_origin_allowed(r, &h->value))
    {
        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_FORBIDDEN, NULL,
                                   NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Forbidden: this Origin may not use the "
                                   "MCP endpoint");
    }

    if (r->method == NGX_HTTP_DELETE) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_veto_sandbox_mcp_delete(r, ctx);
    }

    if (r->method != NGX_HTTP_POST) {
        /* no server-initiated stream: GET is 405, as the spec allows */
        if (ngx_http_veto_sandbox_header(r, "Allow", "POST, DELETE")
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_ALLOWED,
                                   "method_not_allowed",
                                   "the MCP endpoint takes POST (JSON-RPC "
                                   "messages) and DELETE (end a session); "
                                   "it offers no GET stream", NULL);
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    h = r->headers_in.content_type;

    if (h == NULL
        || h->value.len < sizeof("application/json") - 1
        || ngx_strncasecmp(h->value.data, (u_char *) "application/json",
                           sizeof("application/json") - 1) != 0
        || (h->value.len > sizeof("application/json") - 1
            && h->value.data[sizeof("application/json") - 1] != ';'
            && h->value.data[sizeof("application/json") - 1] != ' '))
    {
        return ngx_http_veto_sandbox_mcp_error(r,
                                   NGX_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL,
                                   NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Unsupported Media Type: a JSON-RPC "
                                   "message is sent as application/json");
    }

    h = ngx_http_veto_sandbox_header_in(r, "Accept");

    if (h != NULL
        && !ngx_http_veto_sandbox_mcp_accepts(&h->value, "application/json"))
    {
        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_VSB_NOT_ACCEPTABLE,
                                   NULL, NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Not Acceptable: answers are "
                                   "application/json; accept it (and "
                                   "text/event-stream)");
    }

    if (r->headers_in.content_length_n > (off_t) vscf->mcp.max_body) {
        return ngx_http_veto_sandbox_mcp_error(r,
                                   NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, NULL,
                                   NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Content Too Large: a message is at most "
                                   "veto_sandbox_mcp_max_body bytes; send "
                                   "large files through the REST API");
    }

    rc = ngx_http_read_client_request_body(r, ngx_http_veto_sandbox_mcp_post);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* The whole body in one buffer; NULL with *rc set when it cannot be. */
static u_char *
ngx_http_veto_sandbox_mcp_body(ngx_http_request_t *r, size_t max,
    size_t *len, ngx_int_t *rc)
{
    u_char       *buf, *p;
    off_t         size;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    size = 0;

    for (cl = r->request_body ? r->request_body->bufs : NULL; cl;
         cl = cl->next)
    {
        size += ngx_buf_size(cl->buf);
    }

    if (size > (off_t) max) {
        *rc = ngx_http_veto_sandbox_mcp_error(r,
                                   NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, NULL,
                                   NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Content Too Large: a message is at most "
                                   "veto_sandbox_mcp_max_body bytes");
        return NULL;
    }

    buf = ngx_pnalloc(r->pool, (size_t) size + 1);
    if (buf == NULL) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NULL;
    }

    p = buf;

    for (cl = r->request_body ? r->request_body->bufs : NULL; cl;
         cl = cl->next)
    {
        b = cl->buf;

        if (b->in_file) {
            n = ngx_read_file(b->file, p,
                              (size_t) (b->file_last - b->file_pos),
                              b->file_pos);

            if (n != b->file_last - b->file_pos) {
                *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
                return NULL;
            }

            p += n;
            continue;
        }

        /* an empty body may come as a buffer with no memory at all */
        if (b->last > b->pos) {
            p = ngx_cpymem(p, b->pos, b->last - b->pos);
        }
    }

    *len = p - buf;

    return buf;
}


/*
 * The envelope of one message: NGX_OK with rpc filled, or the answer
 * (already sent) to a message that is none: its code in *rc.
 */
static ngx_int_t
ngx_http_veto_sandbox_mcp_envelope(ngx_http_request_t *r, u_char *buf,
    size_t len, ngx_http_veto_sandbox_rpc_t *rpc, ngx_int_t *rc)
{
    json_t              *msg, *v;
    json_error_t         err;
    ngx_pool_cleanup_t  *cln;

    ngx_memzero(rpc, sizeof(ngx_http_veto_sandbox_rpc_t));

    /* any JSON value: 42 is JSON, but no JSON-RPC message */
    msg = json_loadb((char *) buf, len,
                     JSON_REJECT_DUPLICATES|JSON_DECODE_ANY, &err);

    if (msg == NULL) {
        if (json_error_code(&err) == json_error_numeric_overflow) {
            /* valid JSON, but a number no one could answer to */
            *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   NULL, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: a number is out of "
                                   "range (an id is a string or an integer "
                                   "of at most 64 bits)");
            return NGX_DECLINED;
        }

        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                   NGX_HTTP_VSB_RPC_PARSE_ERROR,
                                   "Parse error: the body is not one JSON "
                                   "value (or has a duplicate key, or "
                                   "\\u0000 in a string)");
        return NGX_DECLINED;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        json_decref(msg);
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = msg;

    rpc->msg = msg;

    if (json_is_array(msg)) {
        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                   NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: batches are not part of "
                                   "MCP 2025-06-18 and later; send one "
                                   "message per POST");
        return NGX_DECLINED;
    }

    if (!json_is_object(msg)) {
        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                   NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: a message is a JSON "
                                   "object");
        return NGX_DECLINED;
    }

    /* the id first, so that what follows can answer to it */
    v = json_object_get(msg, "id");

    if (v != NULL) {
        if (!(json_is_integer(v)
              || (json_is_string(v)
                  && json_string_length(v) <= NGX_HTTP_VSB_MCP_MAX_ID)))
        {
            *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   NULL, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: \"id\" must be an "
                                   "integer or a string of at most 256 "
                                   "bytes (not null)");
            return NGX_DECLINED;
        }

        rpc->id = v;
    }

    v = json_object_get(msg, "jsonrpc");

    if (!json_is_string(v) || ngx_strcmp(json_string_value(v), "2.0") != 0) {
        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   rpc->id, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: \"jsonrpc\" must be "
                                   "\"2.0\"");
        return NGX_DECLINED;
    }

    v = json_object_get(msg, "method");

    if (v == NULL) {
        /* a response to a request of ours (there are none) */
        if (rpc->id != NULL
            && (json_object_get(msg, "result") != NULL
                || json_is_object(json_object_get(msg, "error"))))
        {
            return NGX_OK;
        }

        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   rpc->id, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: no \"method\"");
        return NGX_DECLINED;
    }

    if (!json_is_string(v) || json_string_length(v) == 0
        || json_string_length(v) > 128)
    {
        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   rpc->id, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: \"method\" must be a "
                                   "non-empty string");
        return NGX_DECLINED;
    }

    rpc->method = json_string_value(v);

    v = json_object_get(msg, "params");

    if (v != NULL && !json_is_object(v)) {
        if (!json_is_array(v)) {
            *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   rpc->id, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: \"params\" must be "
                                   "structured");
            return NGX_DECLINED;
        }

        /* structured, but MCP's are objects: the method's params are bad */
        if (rpc->id == NULL) {
            *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   NULL, NGX_HTTP_VSB_RPC_INVALID_PARAMS,
                                   "Invalid params: MCP params are an "
                                   "object");
            return NGX_DECLINED;
        }

        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_OK, rpc->id,
                                   NGX_HTTP_VSB_RPC_INVALID_PARAMS,
                                   "Invalid params: MCP params are an "
                                   "object");
        return NGX_DECLINED;
    }

    rpc->params = v;

    return NGX_OK;
}


static void
ngx_http_veto_sandbox_mcp_post(ngx_http_request_t *r)
{
    u_char                            *buf;
    size_t                             len;
    ngx_int_t                          rc;
    ngx_http_veto_sandbox_rpc_t        rpc;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    buf = ngx_http_veto_sandbox_mcp_body(r, vscf->mcp.max_body, &len, &rc);

    if (buf != NULL
        && ngx_http_veto_sandbox_mcp_envelope(r, buf, len, &rpc, &rc)
           == NGX_OK)
    {
        rc = ngx_http_veto_sandbox_mcp_message(r, ctx, &rpc);
    }

    if (rc == NGX_DONE) {
        return;         /* a tools/call's twin will finish it */
    }

    ngx_http_finalize_request(r, rc);
}


/* 202 Accepted, no body: a notification or a response was taken. */
static ngx_int_t
ngx_http_veto_sandbox_mcp_accepted(ngx_http_request_t *r)
{
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    ctx->own_response = 1;

    r->headers_out.status = NGX_HTTP_ACCEPTED;
    r->headers_out.content_length_n = 0;
    r->header_only = 1;

    return ngx_http_send_header(r);
}


/*
 * The session the message names, checked: NGX_OK, or the refusal sent
 * (its code in *rc).  A supported MCP-Protocol-Version header must be
 * the session's.
 */
static ngx_int_t
ngx_http_veto_sandbox_mcp_session(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_rpc_t *rpc,
    ngx_uint_t what, ngx_int_t *rc)
{
    ngx_int_t                          found;
    ngx_str_t                         *v;
    ngx_uint_t                         version, i;
    ngx_table_elt_t                   *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    h = ngx_http_veto_sandbox_header_in(r, "Mcp-Session-Id");

    if (h == NULL) {
        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   rpc->id, NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Bad Request: no Mcp-Session-Id; send "
                                   "initialize first (without one) and then "
                                   "the session id it returns");
        return NGX_DECLINED;
    }

    found = ngx_http_veto_sandbox_mcp_session_use(r, vscf->mcp.sessions, ctx,
                                                  &h->value, what, &version,
                                                  NULL);
    if (found == NGX_ERROR) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_DECLINED;
    }

    if (found == NGX_DECLINED) {
        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_NOT_FOUND, rpc->id,
                                   NGX_HTTP_VSB_RPC_NO_SESSION,
                                   "Session not found: it ended, expired or "
                                   "was never this agent's; initialize a new "
                                   "one");
        return NGX_DECLINED;
    }

    h = ngx_http_veto_sandbox_header_in(r, "MCP-Protocol-Version");

    if (h == NULL) {
        return NGX_OK;
    }

    for (i = 0; ngx_http_veto_sandbox_mcp_versions[i].len; i++) {
        v = &ngx_http_veto_sandbox_mcp_versions[i];

        if (h->value.len == v->len
            && ngx_strncmp(h->value.data, v->data, v->len) == 0)
        {
            break;
        }
    }

    if (ngx_http_veto_sandbox_mcp_versions[i].len == 0 || i != version) {
        *rc = ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   rpc->id, NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Bad Request: MCP-Protocol-Version is not "
                                   "the version this session negotiated");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_message(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_rpc_t *rpc)
{
    json_t      *tools;
    ngx_int_t    rc;
    ngx_uint_t   what;

    if (rpc->method && ngx_strcmp(rpc->method, "initialize") == 0) {

        if (rpc->id == NULL) {
            return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   NULL, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: initialize is a "
                                   "request (it needs an id)");
        }

        if (ngx_http_veto_sandbox_header_in(r, "Mcp-Session-Id") != NULL) {
            return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST,
                                   rpc->id, NGX_HTTP_VSB_RPC_INVALID_REQUEST,
                                   "Invalid Request: initialize opens a new "
                                   "session; send it without "
                                   "Mcp-Session-Id");
        }

        return ngx_http_veto_sandbox_mcp_initialize(r, ctx, rpc);
    }

    what = (rpc->method
            && ngx_strcmp(rpc->method, "notifications/initialized") == 0)
           ? NGX_HTTP_VSB_MCP_INITIALIZED : NGX_HTTP_VSB_MCP_TOUCH;

    if (ngx_http_veto_sandbox_mcp_session(r, ctx, rpc, what, &rc)
        != NGX_OK)
    {
        return rc;
    }

    if (rpc->method == NULL || rpc->id == NULL) {
        /* a response or a notification: taken, nothing to answer */
        return ngx_http_veto_sandbox_mcp_accepted(r);
    }

    if (ngx_strcmp(rpc->method, "ping") == 0) {
        return ngx_http_veto_sandbox_mcp_respond(r, NGX_HTTP_OK, rpc->id,
                                                 json_object(), NULL);
    }

    if (ngx_strcmp(rpc->method, "tools/list") == 0) {
        /* one page: a cursor can only be one we never gave */
        if (rpc->params && json_object_get(rpc->params, "cursor")) {
            return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_OK, rpc->id,
                                   NGX_HTTP_VSB_RPC_INVALID_PARAMS,
                                   "Invalid params: no such cursor (the "
                                   "tool list is one page)");
        }

        tools = ngx_http_veto_sandbox_mcp_tool_list();
        if (tools == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_veto_sandbox_mcp_respond(r, NGX_HTTP_OK, rpc->id,
                                   json_pack("{s:O}", "tools", tools), NULL);
    }

    if (ngx_strcmp(rpc->method, "tools/call") == 0) {
        return ngx_http_veto_sandbox_mcp_tools_call(r, ctx, rpc);
    }

    return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_OK, rpc->id,
                                   NGX_HTTP_VSB_RPC_METHOD_NOT_FOUND,
                                   "Method not found: this server offers "
                                   "ping, tools/list and tools/call");
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_initialize(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_rpc_t *rpc)
{
    u_char                            *sid;
    json_t                            *v, *result;
    ngx_int_t                          rc;
    ngx_str_t                         *ver;
    ngx_uint_t                         i;
    const char                        *asked;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    v = rpc->params ? json_object_get(rpc->params, "protocolVersion") : NULL;

    if (!json_is_string(v)
        || !json_is_object(json_object_get(rpc->params, "capabilities"))
        || (json_object_get(rpc->params, "clientInfo") != NULL
            && !json_is_object(json_object_get(rpc->params, "clientInfo"))))
    {
        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_OK, rpc->id,
                                   NGX_HTTP_VSB_RPC_INVALID_PARAMS,
                                   "Invalid params: initialize needs "
                                   "\"protocolVersion\" (a string), "
                                   "\"capabilities\" and \"clientInfo\" "
                                   "(objects)");
    }

    /* the client's version if served here, else the newest served */
    asked = json_string_value(v);

    for (i = 0; ngx_http_veto_sandbox_mcp_versions[i].len; i++) {
        ver = &ngx_http_veto_sandbox_mcp_versions[i];

        if (ngx_strlen(asked) == ver->len
            && ngx_strncmp(asked, ver->data, ver->len) == 0)
        {
            break;
        }
    }

    if (ngx_http_veto_sandbox_mcp_versions[i].len == 0) {
        i = 0;
    }

    ver = &ngx_http_veto_sandbox_mcp_versions[i];

    sid = ngx_pnalloc(r->pool, NGX_HTTP_VSB_MCP_SID_LEN + 1);
    if (sid == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_veto_sandbox_mcp_session_create(r, vscf->mcp.sessions, ctx,
                                                  i, sid);
    if (rc == NGX_BUSY) {
        if (ngx_http_veto_sandbox_header(r, "Retry-After", "60") != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_veto_sandbox_mcp_error(r,
                                   NGX_HTTP_SERVICE_UNAVAILABLE, rpc->id,
                                   NGX_HTTP_VSB_RPC_INTERNAL_ERROR,
                                   "Service Unavailable: this gateway holds "
                                   "as many MCP sessions as it may; end "
                                   "unused ones (DELETE) or retry later");
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    sid[NGX_HTTP_VSB_MCP_SID_LEN] = '\0';

    if (ngx_http_veto_sandbox_header(r, "Mcp-Session-Id", (char *) sid)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    result = json_pack("{s:s%, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
                       "protocolVersion", ver->data, ver->len,
                       "capabilities", "tools", "listChanged", 0,
                       "serverInfo", "name", "veto-sandbox",
                       "title", "Veto Sandbox", "version", "1.0.0",
                       "instructions", ngx_http_veto_sandbox_mcp_instructions);

    return ngx_http_veto_sandbox_mcp_respond(r, NGX_HTTP_OK, rpc->id, result,
                                             NULL);
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_tools_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_rpc_t *rpc)
{
    json_t                            *name, *args, *meta, *token;
    u_char                             msg[200];
    ngx_table_elt_t                   *h;
    ngx_http_veto_sandbox_mcp_call_t  *call;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    name = rpc->params ? json_object_get(rpc->params, "name") : NULL;
    args = rpc->params ? json_object_get(rpc->params, "arguments") : NULL;

    if (!json_is_string(name) || (args != NULL && !json_is_object(args))) {
        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_OK, rpc->id,
                                   NGX_HTTP_VSB_RPC_INVALID_PARAMS,
                                   "Invalid params: tools/call needs "
                                   "\"name\" (a string) and \"arguments\" "
                                   "(an object, if any)");
    }

    /* a progress token is a string or an integer (MCP "ProgressToken") */
    meta = rpc->params ? json_object_get(rpc->params, "_meta") : NULL;
    token = json_object_get(meta, "progressToken");

    if ((meta != NULL && !json_is_object(meta))
        || (token != NULL && !json_is_integer(token)
            && !(json_is_string(token)
                 && json_string_length(token) <= NGX_HTTP_VSB_MCP_MAX_ID)))
    {
        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_OK, rpc->id,
                                   NGX_HTTP_VSB_RPC_INVALID_PARAMS,
                                   "Invalid params: \"_meta\" is an object, "
                                   "and its \"progressToken\" a string (of "
                                   "at most 256 bytes) or an integer");
    }

    call = ngx_pcalloc(r->pool, sizeof(ngx_http_veto_sandbox_mcp_call_t));
    if (call == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h = ngx_http_veto_sandbox_header_in(r, "Accept");

    if (token != NULL && h != NULL
        && ngx_http_veto_sandbox_mcp_accepts(&h->value, "text/event-stream"))
    {
        call->progress = token;
    }

    call->tool = ngx_http_veto_sandbox_mcp_tool(json_string_value(name));

    if (call->tool == NULL) {
        /* a name no tool has is repeated only when short (and so whole) */
        if (json_string_length(name) <= 64) {
            ngx_snprintf(msg, sizeof(msg) - 1, "Unknown tool: %s%Z",
                         json_string_value(name));
        } else {
            ngx_cpystrn(msg, (u_char *) "Unknown tool (no tool has so long "
                        "a name)", sizeof(msg));
        }

        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_OK, rpc->id,
                                   NGX_HTTP_VSB_RPC_INVALID_PARAMS,
                                   (char *) msg);
    }

    call->id = rpc->id;
    call->args = args;
    call->reply_bytes = vscf->mcp.reply_bytes;

    ctx->mcp = call;

    return ngx_http_veto_sandbox_mcp_call(r, ctx, call);
}


/* DELETE /v1/mcp: the caller's session ends. */
static ngx_int_t
ngx_http_veto_sandbox_mcp_delete(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                          rc;
    ngx_uint_t                         version;
    ngx_table_elt_t                   *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    h = ngx_http_veto_sandbox_header_in(r, "Mcp-Session-Id");

    if (h == NULL) {
        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_BAD_REQUEST, NULL,
                                   NGX_HTTP_VSB_RPC_BAD_REQUEST,
                                   "Bad Request: DELETE ends the session "
                                   "named in Mcp-Session-Id");
    }

    rc = ngx_http_veto_sandbox_mcp_session_use(r, vscf->mcp.sessions, ctx,
                                               &h->value,
                                               NGX_HTTP_VSB_MCP_END,
                                               &version, NULL);
    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_mcp_error(r, NGX_HTTP_NOT_FOUND, NULL,
                                   NGX_HTTP_VSB_RPC_NO_SESSION,
                                   "Session not found");
    }

    return ngx_http_veto_sandbox_send(r, NGX_HTTP_NO_CONTENT,
                                      "application/json", NULL, 0);
}


/* "veto_sandbox_mcp on" needs the API and a sessions zone in its server;
 * the bounds have defaults. */
char *
ngx_http_veto_sandbox_mcp_merge(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *prev,
    ngx_http_veto_sandbox_srv_conf_t *conf)
{
    ngx_uint_t                         here;
    ngx_http_veto_sandbox_mcp_conf_t  *mcp, *pmcp;

    mcp = &conf->mcp;
    pmcp = &prev->mcp;

    here = (mcp->enable != NGX_CONF_UNSET);

    ngx_conf_merge_value(mcp->enable, pmcp->enable, 0);
    ngx_conf_merge_ptr_value(mcp->sessions, pmcp->sessions, NULL);
    ngx_conf_merge_str_value(mcp->resource, pmcp->resource, "");
    ngx_conf_merge_size_value(mcp->max_body, pmcp->max_body, 4 * 1024 * 1024);
    ngx_conf_merge_size_value(mcp->reply_bytes, pmcp->reply_bytes,
                              32 * 1024);
    ngx_conf_merge_ptr_value(mcp->origins, pmcp->origins, NULL);

    if (!mcp->enable) {
        return NGX_CONF_OK;
    }

    /* 401s name the endpoint's protected resource metadata (_mcp_meta.c:
     * only on the MCP endpoint of a server where it is on) */
    ngx_http_veto_sandbox_challenge_extra =
                                          ngx_http_veto_sandbox_mcp_challenge;

    if (conf->prefixes == NULL) {
        if (!here) {
            return NGX_CONF_OK;     /* inherited by a server without the API */
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_mcp\" needs \"veto_sandbox_api\" "
                           "in a location of its server (\"location /v1/\")");
        return NGX_CONF_ERROR;
    }

    if (mcp->sessions == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_mcp\" needs "
                           "\"veto_sandbox_mcp_sessions zone=name:size\" in "
                           "its server");
        return NGX_CONF_ERROR;
    }

    if (mcp->max_body < 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_mcp_max_body\" must be at least "
                           "1k");
        return NGX_CONF_ERROR;
    }

    if (mcp->reply_bytes < 256 || mcp->reply_bytes > 16 * 1024 * 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_mcp_reply_bytes\" must be "
                           "256 .. 16m");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}
