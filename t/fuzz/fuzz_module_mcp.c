/*
 * libFuzzer target for the MCP endpoint's parsing of what an agent
 * POSTs to /v1/mcp (_mcp.c: the body, the JSON-RPC envelope, the
 * session headers, initialize, tools/list, tools/call) and the tool
 * arguments it turns into a REST twin (_mcp_tool_table.c: the tools;
 * _mcp_tools.c: each tool's arguments checked against its schema and
 * written as the method, path, query and body a REST client would send,
 * by the generic twin from the tool's row or by a group's own twin).
 *
 * The first byte picks the headers the message comes with: bit 0 an
 * Mcp-Session-Id the sessions know, bit 1 one they do not, bit 2 a
 * served MCP-Protocol-Version, bit 3 an unknown one.  The rest is the
 * body, in one buffer or, with bit 4, split in two.
 *
 * Whatever the body, the client gets one answer: a JSON-RPC message
 * ("jsonrpc": "2.0", an id that is the request's, exactly one of result
 * and error), a 202 with no body, or an HTTP error code; or the twin
 * runs.  A twin is a request the REST API could get: a path under
 * /v1/, a body that is a JSON object, a query that reads back (as the
 * REST builders read ?path=) as exactly the path the agent gave.
 * Anything else aborts.  Sessions, the op table and running an op are
 * the harness's: each is fuzzed or tested where it lives.
 *
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_headers.c:ngx_http_veto_sandbox_header_(next|in)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_mcp.c:ngx_http_veto_sandbox_mcp_(post|body|envelope|message|session|initialize|tools_call|error|header|accepted)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_mcp_respond.c:ngx_http_veto_sandbox_mcp_respond
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_mcp_tools.c:ngx_http_veto_sandbox_mcp_(known|ids|path|method|json_body|rest_twin|input|call)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_mcp_tool_table.c:ngx_http_veto_sandbox_mcp_(tool|tool_list|tool_json)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_sandboxes.c:ngx_http_veto_sandbox_mcp_twin_hosts
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_snapshots.c:ngx_http_veto_sandbox_mcp_twin_(changes|snapshot_delete)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_review.c:ngx_http_veto_sandbox_mcp_twin_approval
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_files.c:ngx_http_veto_sandbox_mcp_(query|twin_.*)
 *
 * The op groups' tools (the discovery, sandboxes, snapshots, execs,
 * review and files groups'; the admin group has none, its empty list
 * comes too) come with their group file, its MCP part only
 * (NGX_HTTP_VSB_OPS_TOOLS): a change set's twin
 * has a query that reads back as the since and format the agent gave
 * ("created" and "json" when it gave none).
 */

#include "ngx_http_veto_sandbox_headers.c"
#include "ngx_http_veto_sandbox_mcp.c"
#include "ngx_http_veto_sandbox_mcp_respond.c"
#include "ngx_http_veto_sandbox_mcp_tool_table.c"
#include "ngx_http_veto_sandbox_mcp_tools.c"
#include "ngx_http_veto_sandbox_mcp_present.c"
#define NGX_HTTP_VSB_OPS_TOOLS
#include "ngx_http_veto_sandbox_health.c"
#include "ngx_http_veto_sandbox_openapi.c"
#include "ngx_http_veto_sandbox_about.c"
#include "ngx_http_veto_sandbox_profiles.c"
#include "ngx_http_veto_sandbox_sandboxes.c"
#include "ngx_http_veto_sandbox_snapshots.c"
#include "ngx_http_veto_sandbox_execs.c"
#include "ngx_http_veto_sandbox_review.c"
#include "ngx_http_veto_sandbox_admin.c"
#include "ngx_http_veto_sandbox_files.c"

#include "ngx_http_veto_sandbox_hash.h"

#include "ngx_core_stub.h"
#include "fuzz_module_request.h"
#include "fuzz_module_unreached.h"


ngx_int_t
ngx_http_veto_sandbox_reply_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();                    /* a twin's answer: not fuzzed here */
}


/* No SSE stream here: a progress token is parsed (fuzzed) but its
 * stream is _mcp_progress.c's, tested through nginx (t/module/mcp-client.t,
 * t/module/mcp-hostile.t). */
ngx_int_t
ngx_http_veto_sandbox_mcp_progress(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return 0;
}


ngx_uint_t
ngx_http_veto_sandbox_stream_started(ngx_http_veto_sandbox_ctx_t *ctx)
{
    return 0;
}


ngx_int_t
ngx_http_veto_sandbox_mcp_progress_final(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *msg)
{
    abort();                    /* no stream was started */
}


#define must(cond)  do { if (!(cond)) abort(); } while (0)


ngx_module_t  ngx_http_veto_sandbox_module;


static struct {
    ngx_uint_t    answered;     /* send_json, send or 202 */
    ngx_uint_t    finalized;
    ngx_uint_t    ran;          /* the twin's op */
    ngx_int_t     rc;
    json_t       *req_id;       /* the message's "id", as sent */
} out;

static json_t  *msg_id;


/* sessions: "s-good" is the caller's live one, on version 0 */

static const char  good_sid[] = "0123456789abcdef0123456789abcdef";


ngx_int_t
ngx_http_veto_sandbox_mcp_session_create(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_uint_t version, u_char *id)
{
    must(version < 2);
    ngx_memcpy(id, good_sid, NGX_HTTP_VSB_MCP_SID_LEN);

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_mcp_session_use(ngx_http_request_t *r,
    ngx_shm_zone_t *zone, ngx_http_veto_sandbox_ctx_t *ctx, ngx_str_t *id,
    ngx_uint_t what, ngx_uint_t *version, ngx_uint_t *initialized)
{
    *version = 0;

    if (initialized) {
        *initialized = 1;
    }

    return (id->len == sizeof(good_sid) - 1
            && ngx_memcmp(id->data, good_sid, id->len) == 0)
           ? NGX_OK : NGX_DECLINED;
}


/* the module's answers */

ngx_int_t
ngx_http_veto_sandbox_header(ngx_http_request_t *r, const char *name,
    const char *value)
{
    must(name != NULL && value != NULL);

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_send_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *body)
{
    json_t  *id;
    char    *text;

    must(status >= 200 && status <= 599);
    must(json_is_object(body));
    must(ngx_strcmp(json_string_value(json_object_get(body, "jsonrpc")),
                    "2.0") == 0);
    must((json_object_get(body, "result") == NULL)
         != (json_object_get(body, "error") == NULL));

    /* the request's id, or none when none could be read */
    id = json_object_get(body, "id");
    must(id == NULL || (msg_id != NULL && json_equal(id, msg_id)));

    text = json_dumps(body, JSON_COMPACT);
    must(text != NULL);
    free(text);

    json_decref(body);
    out.answered++;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_send(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, u_char *data, size_t len)
{
    abort();                    /* DELETE only, not fuzzed */
}


ngx_int_t
ngx_http_send_header(ngx_http_request_t *r)
{
    must(r->headers_out.status == NGX_HTTP_ACCEPTED && r->header_only);
    out.answered++;

    return NGX_OK;
}


void
ngx_http_finalize_request(ngx_http_request_t *r, ngx_int_t rc)
{
    out.finalized++;
    out.rc = rc;
}


void
ngx_http_run_posted_requests(ngx_connection_t *c)
{
}


/* a create's profile check (_profiles.c): no helper here, so the policy's
 * answer */
ngx_int_t
ngx_http_veto_sandbox_helper_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, ngx_chain_t *payload,
    size_t payload_len, ngx_http_veto_sandbox_reply_pt handler)
{
    return NGX_DECLINED;
}


void
ngx_http_veto_sandbox_json_cleanup(void *data)
{
    json_decref((json_t *) data);
}


/* ids as record.c and approval.c check them (linking those would
 * bring Redis): "sb-" and 24 lowercase hex, "apr_" and hex */

static ngx_uint_t
hex_tail(u_char *p, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) {
            return 0;
        }
    }

    return 1;
}


ngx_uint_t
ngx_http_veto_sandbox_id_valid(u_char *id, size_t len)
{
    return len == VSB_SANDBOX_ID_LEN && ngx_strncmp(id, "sb-", 3) == 0
           && hex_tail(id + 3, len - 3);
}


ngx_uint_t
ngx_http_veto_sandbox_approval_id_valid(ngx_str_t *id)
{
    return id->len == NGX_HTTP_VSB_APPROVAL_ID_LEN
           && ngx_strncmp(id->data, "apr_", 4) == 0
           && hex_tail(id->data + 4, id->len - 4);
}


/* the handler around mcp_post() and the twin's answer: not reached
 * (nor what the discovery endpoints' files link: no Redis, no audit) */

ngx_http_veto_sandbox_redis_t  *ngx_http_veto_sandbox_rds;


void
ngx_http_veto_sandbox_audit_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status)
{
    abort();
}


json_t *
ngx_http_veto_sandbox_json_ngx_str(ngx_str_t *s)
{
    return json_stringn((const char *) s->data, s->len);
}

void
ngx_gmtime(time_t t, ngx_tm_t *tp)
{
    abort();                    /* presenting a twin's answer */
}


ngx_http_veto_sandbox_ctx_t *
ngx_http_veto_sandbox_get_ctx(ngx_http_request_t *r)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_identify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t may_wait)
{
    abort();
}


ngx_uint_t
ngx_http_veto_sandbox_mcp_origin_allowed(ngx_http_request_t *r,
    ngx_str_t *origin)
{
    abort();
}


ngx_int_t
ngx_http_read_client_request_body(ngx_http_request_t *r,
    ngx_http_client_body_handler_pt post_handler)
{
    abort();
}


ngx_int_t
ngx_http_discard_request_body(ngx_http_request_t *r)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_problem(ngx_http_request_t *r, ngx_uint_t status,
    const char *code, const char *detail, json_t *extra)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_mcp_result(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, ngx_chain_t *body, size_t len)
{
    abort();
}


/* the op table and running an op: the twin is checked and recorded */

static ngx_http_veto_sandbox_op_t  twin_op;


ngx_http_veto_sandbox_op_t *
ngx_http_veto_sandbox_op_route(ngx_uint_t method, ngx_str_t *uri,
    ngx_uint_t *allow, ngx_str_t *sandbox, ngx_str_t *approval,
    ngx_str_t *exec)
{
    must(uri->len > sizeof("/v1/") - 1
         && ngx_strncmp(uri->data, "/v1/", 4) == 0);
    must(method & (NGX_HTTP_GET|NGX_HTTP_POST|NGX_HTTP_PUT|NGX_HTTP_PATCH
                   |NGX_HTTP_DELETE));

    return &twin_op;
}


ngx_int_t
ngx_http_veto_sandbox_scope_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


/* what "veto_sandbox_mcp on" sets at configuration (_mcp.c's merge):
 * the 401s' metadata parameter, not fuzzed here */
ngx_http_veto_sandbox_challenge_pt  ngx_http_veto_sandbox_challenge_extra;


u_char *
ngx_http_veto_sandbox_mcp_challenge(ngx_http_request_t *r)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_op_run(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                         *body, *path, *enc;
    ngx_str_t                       value;
    ngx_buf_t                      *b;
    ngx_int_t                       rc;
    const char                     *why;
    ngx_http_veto_sandbox_input_t  *in;

    in = &ctx->in;

    must(in->set && ctx->mcp != NULL && ctx->sink != NULL);

    if (in->body && in->content_type) {
        /* POST, PATCH: a JSON object without the ids */
        b = in->body->buf;
        body = json_loadb((char *) b->pos, b->last - b->pos,
                          JSON_REJECT_DUPLICATES, NULL);
        must(json_is_object(body));
        must(json_object_get(body, "sandbox_id") == NULL
             && json_object_get(body, "approval_id") == NULL);
        json_decref(body);

    } else if (in->body
               && ngx_strcmp(ctx->mcp->tool->name, "upload_archive") == 0)
    {
        /* PUT of an archive: the content's bytes, decoded from base64 */
        ngx_str_t  src, dst;

        b = in->body->buf;
        body = json_object_get(ctx->mcp->args, "content");
        must(json_is_string(body));
        src.data = (u_char *) json_string_value(body);
        src.len = json_string_length(body);
        dst.data = ngx_pnalloc(r->pool, ngx_base64_decoded_length(src.len));
        must(dst.data != NULL);
        must(ngx_decode_base64(&dst, &src) == NGX_OK);
        must((size_t) (b->last - b->pos) == dst.len
             && ngx_memcmp(b->pos, dst.data, dst.len) == 0);

    } else if (in->body) {
        /* PUT: a file's bytes, the content as given unless base64 */
        b = in->body->buf;
        body = json_object_get(ctx->mcp->args, "content");
        enc = json_object_get(ctx->mcp->args, "encoding");

        must(in->method_name.len == 3
             && ngx_strncmp(in->method_name.data, "PUT", 3) == 0
             && json_is_string(body));
        must((enc != NULL && ngx_strcmp(json_string_value(enc), "utf-8"))
             || ((size_t) (b->last - b->pos) == json_string_length(body)
                 && ngx_memcmp(b->pos, json_string_value(body),
                               b->last - b->pos) == 0));
    }

    if (ngx_strcmp(ctx->mcp->tool->name, "sandbox_changes") == 0) {
        /* since and format, read back as the REST builder reads them */
        static const char  *dflt[] = { "created", "json" };
        ngx_str_t                     at;
        ngx_uint_t                    k;
        ngx_http_veto_sandbox_qarg_t  q[2];

        q[0].name = "since";
        q[1].name = "format";

        must(ngx_http_veto_sandbox_hash_query_args(r->pool, &in->args, q, 2,
                                                   &why, &at)
             == NGX_OK);

        for (k = 0; k < 2; k++) {
            path = json_object_get(ctx->mcp->args, q[k].name);

            must(path == NULL || json_is_string(path));
            must(q[k].value.data != NULL
                 && q[k].value.len == (path ? json_string_length(path)
                                            : ngx_strlen(dflt[k]))
                 && ngx_memcmp(q[k].value.data,
                               path ? json_string_value(path) : dflt[k],
                               q[k].value.len) == 0);
        }

    } else if (in->args.len
               && ngx_strcmp(ctx->mcp->tool->name, "upload_archive") != 0)
    {
        /* read back as the REST builders read it: the agent's path (an
         * archive's query, path and format, is _files.c's builders', fuzzed
         * by fuzz_module_parsers) */
        rc = ngx_http_veto_sandbox_hash_query_arg(r->pool, &in->args, "path",
                                                  &value, &why);
        path = json_object_get(ctx->mcp->args, "path");

        must(rc == NGX_OK && json_is_string(path));
        must(value.len == json_string_length(path)
             && ngx_memcmp(value.data, json_string_value(path), value.len)
                == 0);
    }

    out.ran++;

    return NGX_DONE;
}


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* the configuration's, for the life of the process */
static ngx_pool_t  *conf_pool;


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ngx_conf_t  cf;

    ngx_stub_init();

    conf_pool = ngx_create_pool(1024, ngx_cycle->log);
    must(conf_pool != NULL);

    ngx_stub_conf(&cf, conf_pool);
    must(ngx_http_veto_sandbox_mcp_tools_init(&cf) == NGX_OK);

    ngx_str_set(&twin_op.name, "twin");

    return 0;
}


static void
add_header(ngx_http_request_t *r, const char *name, const char *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_in.headers);
    must(h != NULL);

    ngx_memzero(h, sizeof(ngx_table_elt_t));
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value.data = (u_char *) value;
    h->value.len = ngx_strlen(value);
    h->hash = 1;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void                              *ctxs[1];
    void                              *srv[1];
    u_char                            *copy;
    size_t                             half;
    json_t                            *msg;
    ngx_buf_t                         *b1, *b2;
    ngx_pool_t                        *pool;
    ngx_chain_t                       *c1, *c2;
    ngx_connection_t                   c;
    ngx_http_request_t                 r;
    ngx_http_request_body_t            rb;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_srv_conf_t   vscf;

    if (size == 0) {
        return 0;
    }

    pool = ngx_create_pool(1024, ngx_cycle->log);
    ctx = pool ? ngx_pcalloc(pool, sizeof(ngx_http_veto_sandbox_ctx_t))
               : NULL;
    copy = pool ? ngx_pnalloc(pool, size) : NULL;
    b1 = pool ? ngx_pcalloc(pool, sizeof(ngx_buf_t)) : NULL;
    b2 = pool ? ngx_pcalloc(pool, sizeof(ngx_buf_t)) : NULL;
    c1 = pool ? ngx_pcalloc(pool, sizeof(ngx_chain_t)) : NULL;
    c2 = pool ? ngx_pcalloc(pool, sizeof(ngx_chain_t)) : NULL;
    must(ctx && copy && b1 && b2 && c1 && c2);

    /* its own allocation, so ASan sees a read past the body */
    ngx_memcpy(copy, data + 1, size - 1);

    ngx_memzero(&out, sizeof(out));
    ngx_memzero(&rb, sizeof(ngx_http_request_body_t));
    ngx_memzero(&vscf, sizeof(vscf));

    fuzz_request_init(&r, &c, ctxs, srv, pool, ctx, &vscf);
    r.method = NGX_HTTP_POST;
    ngx_str_set(&r.uri, "/v1/mcp");

    vscf.mcp.enable = 1;
    vscf.mcp.max_body = 64 * 1024;
    vscf.mcp.reply_bytes = 64 * 1024;

    ngx_str_set(&ctx->tenant, "acme");
    ngx_str_set(&ctx->agent, "fuzz");
    ctx->identified = 1;
    ctx->scopes = (1 << NGX_HTTP_VSB_NSCOPES) - 1;

    must(ngx_list_init(&r.headers_in.headers, pool, 4,
                       sizeof(ngx_table_elt_t)) == NGX_OK);

    add_header(&r, "Content-Type", "application/json");
    add_header(&r, "Accept", "application/json, text/event-stream");

    if (data[0] & 1) {
        add_header(&r, "Mcp-Session-Id", good_sid);
    }

    if (data[0] & 2) {
        add_header(&r, "mcp-session-id", "fedcba9876543210fedcba9876543210");
    }

    if (data[0] & 4) {
        add_header(&r, "MCP-Protocol-Version", "2025-11-25");
    }

    if (data[0] & 8) {
        add_header(&r, "MCP-Protocol-Version", "1999-01-01");
    }

    /* the body, whole or in two buffers */
    half = (data[0] & 16) ? (size - 1) / 2 : size - 1;

    b1->pos = copy;
    b1->last = copy + half;
    b1->memory = 1;
    c1->buf = b1;

    b2->pos = copy + half;
    b2->last = copy + size - 1;
    b2->memory = 1;
    c2->buf = b2;

    c1->next = (half < size - 1) ? c2 : NULL;
    rb.bufs = c1;
    r.request_body = &rb;

    /* the id the answer must carry: the message's, as the parser reads
     * it (JSON-RPC ids are integers or strings; no id, no answer id) */
    msg = json_loadb((char *) copy, size - 1,
                     JSON_REJECT_DUPLICATES|JSON_DECODE_ANY, NULL);
    msg_id = json_object_get(msg, "id");

    ngx_http_veto_sandbox_mcp_post(&r);

    /* one outcome: the twin ran (and answers later), or it was answered
     * and finalized once */
    if (out.ran) {
        must(out.ran == 1 && out.answered == 0 && out.finalized == 0);

    } else {
        must(out.finalized == 1);
        must(out.answered == 1
             || out.rc == NGX_HTTP_INTERNAL_SERVER_ERROR
             || out.rc == NGX_ERROR);
    }

    json_decref(msg);
    msg_id = NULL;

    ngx_destroy_pool(pool);

    return 0;
}
