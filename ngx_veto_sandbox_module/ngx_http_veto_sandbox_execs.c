/*
 * The exec op group, whole: its rows, builders, field checks, reply
 * mappers, records and MCP tool (twin, presenter), side by side.  The op
 * table (_ops.c) and the MCP tool table (_mcp_tool_table.c) take its rows
 * and tools from the arrays at the end of this file; the group is named
 * once, in NGX_HTTP_VSB_OP_GROUPS (faces.h).
 *
 *   POST   /v1/sandboxes/{id}/exec                 sandbox.exec
 *   GET    /v1/sandboxes/{id}/execs/{exec}         sandbox.exec.get
 *   DELETE /v1/sandboxes/{id}/execs/{exec}         sandbox.exec.kill
 *   GET    /v1/sandboxes/{id}/execs/{exec}/output  sandbox.exec.output
 *
 * A plain exec's request (argv, cwd, env, timeout_s, stdin as the frame's
 * payload), its own output_bytes, a streamed exec (Accept:
 * application/x-ndjson, _stream.c), a background exec (202, then
 * /v1/sandboxes/{id}/execs/{exec}: its state, its output from an offset
 * or followed live, its kill), and where the output was cut between head
 * and tail.  The helper does the work (vsb_protocol.h: exec, exec_status,
 * exec_output, exec_kill).  The body's fields are docs/openapi.json's
 * ExecRequest, as scripts/gen-op-fields writes them (_fields.h): the
 * known-field list here and the MCP tool's arguments and schema.
 *
 * A streamed or background exec is the same row as a plain one
 * (sandbox.exec): the same scope, quota, approval kind and canonical
 * request.  Streaming is asked for in a header, so the hash of a
 * streamed exec is the plain one's: one approval covers either way of
 * reading the same command.  "background" is in the body, so it is in
 * the hash: a command left running with no client, until its deadline,
 * is not what a human approved for a request that waits for it.
 *
 * The unit tests link this file as data (NGX_HTTP_VSB_OPS_DATA_ONLY):
 * then only the rows are compiled, without the code they name; the MCP
 * fuzz target adds NGX_HTTP_VSB_OPS_TOOLS for the tool, its twin and
 * presenter (t/fuzz/fuzz_module_mcp.c), the parsers fuzz target
 * NGX_HTTP_VSB_OPS_CODE for the builders (t/fuzz/fuzz_module_parsers.c).
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_fields.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_CODE)

#include "ngx_http_veto_sandbox_output.h"
#include "ngx_http_veto_sandbox_redact.h"


/* ---- builders, mappers, records ----------------------------------------- */


static const char  *ngx_http_veto_sandbox_exec_known[] = {
    NGX_HTTP_VSB_FIELDS_EXEC, NULL
};


/*
 * output_bytes (within the policy's ceiling; the helper's own is
 * max_output_bytes) and how the exec runs: "background": true, or
 * streamed when the client accepts ndjson.  NGX_DECLINED: go on; else
 * the refusal was sent, the code to end with.
 */
static ngx_int_t
ngx_http_veto_sandbox_exec_fields(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req)
{
    json_t    *v;
    uint64_t   n, ceiling;

    v = json_object_get(body, "output_bytes");

    if (v != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) <= 0) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type",
                                                   "output_bytes",
                                                   "\"output_bytes\" must be "
                                                   "a positive integer");
        }

        n = (uint64_t) json_integer_value(v);
        ceiling = ctx->rule->ceiling[NGX_HTTP_VSB_L_OUTPUT_BYTES];

        if (ceiling && n > ceiling) {
            return ngx_http_veto_sandbox_over(r, NGX_HTTP_VSB_L_OUTPUT_BYTES,
                                              n, ceiling);
        }

        if (json_object_set(req, "output_bytes", v) != 0) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

    } else if (ngx_http_veto_sandbox_cap(req, ctx->rule,
                                         NGX_HTTP_VSB_L_OUTPUT_BYTES)
               != NGX_OK)
    {
        /* the sandbox's own, at most the ceiling */
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    v = json_object_get(body, "background");

    if (v != NULL && !json_is_boolean(v)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "background",
                                               "\"background\" must be true "
                                               "or false");
    }

    if (json_is_true(v)) {
        /* the helper answers at once; the exec's deadline is its own
         * (no ping for the helper's ceiling either) */
        ctx->helper.extra_read_ms = 0;
        ctx->helper.ask_timeout = 0;

        if (json_object_set_new(req, "background", json_true()) != 0) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return NGX_DECLINED;
    }

    if (ngx_http_veto_sandbox_stream_ndjson(r, ctx)) {
        if (json_object_set_new(req, "stream", json_true()) != 0
            || ngx_http_veto_sandbox_stream_exec(r, ctx) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return NGX_DECLINED;
    }

    /* a tools/call that asked for progress came with its stream
     * (_mcp_progress.c): the exec is streamed to it */
    if (ctx->stream != NULL
        && json_object_set_new(req, "stream", json_true()) != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* POST /v1/sandboxes/{id}/exec: sandbox.exec's builder */
ngx_int_t
ngx_http_veto_sandbox_build_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                       *body, *req, *v, *e;
    uint64_t                      n;
    ngx_buf_t                    *b;
    ngx_int_t                     rc;
    ngx_uint_t                    i;
    ngx_chain_t                  *payload;
    ngx_http_veto_sandbox_rule_t *rule;

    body = ngx_http_veto_sandbox_read_json(r, &rc);
    if (body == NULL) {
        return rc;
    }

    rule = ctx->rule;

    if (ngx_http_veto_sandbox_known_fields(r, body,
                                           ngx_http_veto_sandbox_exec_known,
                                           &rc)
        != NGX_OK)
    {
        return rc;
    }

    v = json_object_get(body, "argv");

    if (v == NULL) {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field", "argv",
                                               "\"argv\" is required");
    }

    if (!json_is_array(v) || json_array_size(v) == 0
        || json_array_size(v) > VSB_MAX_ARGV)
    {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "argv",
                                               "\"argv\" must be a non-empty "
                                               "array of strings");
    }

    json_array_foreach(v, i, e) {
        if (!json_is_string(e)) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type", "argv",
                                                   "\"argv\" must be a "
                                                   "non-empty array of "
                                                   "strings");
        }
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set(req, "argv", v);

    if (ngx_http_veto_sandbox_copy_field(r, body, req, "cwd",
                                         NGX_HTTP_VSB_FIELD_STRING, &rc)
        != NGX_OK
        || ngx_http_veto_sandbox_copy_field(r, body, req, "env",
                                            NGX_HTTP_VSB_FIELD_STRINGS, &rc)
           != NGX_OK)
    {
        return rc;
    }

    rc = ngx_http_veto_sandbox_env_check(r, ctx, json_object_get(req, "env"));
    if (rc != NGX_DECLINED) {
        return rc;
    }

    if (ngx_http_veto_sandbox_limited(r, ctx, body, req,
                                      NGX_HTTP_VSB_L_TIMEOUT_S, &n, &rc)
        != NGX_OK
        || ngx_http_veto_sandbox_fits(r, req, &rc) != NGX_OK)
    {
        return rc;
    }

    /*
     * The exec's timeout is decided once, above: the body's timeout_s or
     * the policy's default, within its ceiling (or asked of a human up
     * to ask_ceilings); none sent, the helper applies the sandbox's own
     * (its exec.c, the one place it decides a deadline).  What follows
     * is not another decision but how long the gateway waits for the
     * reply, which comes after the command ends: that timeout; without
     * one, the policy's ceiling (within which a create puts the
     * sandbox's own when it names one); without that, the helper's
     * ceiling as this worker heard it (_heard.c), which forward()
     * (_reply.c) asks with a ping when nothing fresh is heard.  A
     * background exec's reply comes at once (no wait, below); following
     * its output (exec_output) waits for up to the policy's ceiling
     * (wait_ms(), _request.c): its timeout is not known there.
     */
    if (n == 0) {
        /* the sandbox's own, at most the ceiling */
        if (ngx_http_veto_sandbox_cap(req, rule, NGX_HTTP_VSB_L_TIMEOUT_S)
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        n = rule->ceiling[NGX_HTTP_VSB_L_TIMEOUT_S];
    }

    ctx->helper.extra_read_ms =
        (ngx_msec_t) ngx_min(n, NGX_HTTP_VSB_MAX_WAIT_S) * 1000;
    ctx->helper.ask_timeout = (n == 0);

    /* output_bytes, and how it runs: streamed, in the background */
    rc = ngx_http_veto_sandbox_exec_fields(r, ctx, body, req);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    /* stdin goes as the frame's payload, straight from the parsed body */
    payload = NULL;
    n = 0;

    v = json_object_get(body, "stdin");
    if (v != NULL) {
        if (!json_is_string(v)) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type", "stdin",
                                                   "\"stdin\" must be a "
                                                   "string");
        }

        n = json_string_length(v);

        if (n) {
            b = ngx_calloc_buf(r->pool);
            payload = ngx_alloc_chain_link(r->pool);

            if (b == NULL || payload == NULL) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            b->pos = (u_char *) json_string_value(v);
            b->last = b->pos + n;
            b->memory = 1;

            payload->buf = b;
            payload->next = NULL;
        }
    }

    ctx->req = req;
    ctx->payload = payload;
    ctx->payload_len = n;

    return NGX_DECLINED;
}


/* The helper request of an {exec} row: the sandbox's and the exec id
 * (ctx->exec, the route's). */
static json_t *
ngx_http_veto_sandbox_exec_req(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t  *req;

    req = ngx_http_veto_sandbox_req(r, ctx);

    if (req == NULL || ctx->exec.len == 0
        || json_object_set_new(req, "exec",
                               ngx_http_veto_sandbox_json_ngx_str(&ctx->exec))
           != 0)
    {
        return NULL;
    }

    return req;
}


/* GET and DELETE /v1/sandboxes/{id}/execs/{exec}: the route says it all */
ngx_int_t
ngx_http_veto_sandbox_build_exec_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->req = ngx_http_veto_sandbox_exec_req(r, ctx);
    if (ctx->req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* A query argument that is a decimal integer of 0 .. 2^53. */
static ngx_int_t
ngx_http_veto_sandbox_query_uint(ngx_str_t *v, json_int_t *n)
{
    size_t  i;

    if (v->len == 0 || v->len > 16) {
        return NGX_ERROR;
    }

    *n = 0;

    for (i = 0; i < v->len; i++) {
        if (v->data[i] < '0' || v->data[i] > '9') {
            return NGX_ERROR;
        }

        *n = *n * 10 + (v->data[i] - '0');
    }

    return *n <= ((json_int_t) 1 << 53) ? NGX_OK : NGX_ERROR;
}


/*
 * GET /v1/sandboxes/{id}/execs/{exec}/output?stream=stdout&offset=N
 * (&max_bytes=M): one bounded run of the output from offset; with
 * Accept: application/x-ndjson, followed live until the exec has ended.
 */
ngx_int_t
ngx_http_veto_sandbox_build_exec_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                        *req;
    ngx_int_t                      rc;
    ngx_str_t                      at;
    json_int_t                     n;
    const char                    *why;
    ngx_http_veto_sandbox_qarg_t   q[3];

    q[0].name = "stream";
    q[1].name = "offset";
    q[2].name = "max_bytes";

    rc = ngx_http_veto_sandbox_hash_query_args(r->pool, &ctx->in.args, q, 3,
                                               &why, &at);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_ABORT) {
        return ngx_http_veto_sandbox_bad_query(r, &at, why);
    }

    req = ngx_http_veto_sandbox_exec_req(r, ctx);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (q[0].value.data == NULL) {
        ngx_str_set(&q[0].value, "stdout");
    }

    if (!(q[0].value.len == 6
          && (ngx_strncmp(q[0].value.data, "stdout", 6) == 0
              || ngx_strncmp(q[0].value.data, "stderr", 6) == 0)))
    {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "stream",
                                               "\"stream\" is stdout or "
                                               "stderr");
    }

    json_object_set_new(req, "stream",
                        json_stringn((char *) q[0].value.data, 6));

    if (q[1].value.data != NULL) {
        if (ngx_http_veto_sandbox_query_uint(&q[1].value, &n) != NGX_OK) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value", "offset",
                                                   "\"offset\" is a byte "
                                                   "position: 0 or more");
        }

        json_object_set_new(req, "offset", json_integer(n));
    }

    if (ngx_http_veto_sandbox_stream_ndjson(r, ctx)) {

        if (q[2].value.data != NULL) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                                   "max_bytes",
                                                   "a followed output "
                                                   "(Accept: application/"
                                                   "x-ndjson) has no "
                                                   "\"max_bytes\"");
        }

        /* no output for a while is no failure: the exec's deadline */
        ctx->helper.extra_read_ms = ngx_http_veto_sandbox_wait_ms(ctx);

        if (json_object_set_new(req, "follow", json_true()) != 0
            || ngx_http_veto_sandbox_stream_follow(r, ctx) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

    } else if (q[2].value.data != NULL) {
        if (ngx_http_veto_sandbox_query_uint(&q[2].value, &n) != NGX_OK
            || n == 0)
        {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                                   "max_bytes",
                                                   "\"max_bytes\" is a "
                                                   "positive integer");
        }

        json_object_set_new(req, "max_bytes", json_integer(n));
    }

    ctx->req = req;

    return NGX_DECLINED;
}


/* bytes as {name: text} or {name_b64: base64}, whichever is smaller */
static ngx_int_t
ngx_http_veto_sandbox_exec_data(ngx_http_request_t *r, json_t *out,
    const char *name, const char *name_b64, u_char *data, size_t len)
{
    u_char                          *p;
    json_t                          *s;
    ngx_http_veto_sandbox_output_t   o;

    o.data = data;
    o.len = len;
    ngx_http_veto_sandbox_output_choose(&o);

    if (!o.base64) {
        s = json_stringn((char *) data, len);
        return json_object_set_new(out, name, s) == 0 ? NGX_OK : NGX_ERROR;
    }

    p = ngx_pnalloc(r->pool, o.size + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_http_veto_sandbox_output_write(p, &o);

    s = json_stringn((char *) p, o.size);

    return json_object_set_new(out, name_b64, s) == 0 ? NGX_OK : NGX_ERROR;
}


/*
 * Where a stream's head and tail meet, when bytes were left out between
 * them, a line says how many:
 *
 *     [veto-sandbox: 13840330 bytes of stdout left out]
 *
 * (after a newline of its own when the head does not end with one).  The
 * payload is rebuilt with the lines and the lengths follow; *_head_len
 * stays the head's length, so the line starts at that byte.
 */
static ngx_int_t
ngx_http_veto_sandbox_exec_cut(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                          *buf, *p, *src;
    size_t                           size;
    json_t                          *j;
    json_int_t                       len[2], head[2], dropped[2];
    ngx_uint_t                       i, cut;
    ngx_http_veto_sandbox_helper_t  *h;

    static const char  *names[2] = { "stdout", "stderr" };

    static const char  *flen[2] = { "stdout_len", "stderr_len" };
    static const char  *fhead[2] = { "stdout_head_len", "stderr_head_len" };
    static const char  *fdrop[2] = { "stdout_dropped_bytes",
                                     "stderr_dropped_bytes" };

    h = &ctx->helper;
    j = h->json;
    cut = 0;

    for (i = 0; i < 2; i++) {
        len[i] = json_integer_value(json_object_get(j, flen[i]));
        head[i] = json_integer_value(json_object_get(j, fhead[i]));
        dropped[i] = json_integer_value(json_object_get(j, fdrop[i]));

        if (len[i] < 0 || head[i] < 0 || head[i] > len[i] || dropped[i] < 0) {
            return NGX_DECLINED;        /* reply_exec refuses it */
        }

        cut += (dropped[i] > 0);
    }

    if (cut == 0 || len[0] + len[1] != (json_int_t) h->payload_len) {
        return NGX_OK;
    }

    size = h->payload_len + 2 * (sizeof("\n[veto-sandbox:  bytes of stdout "
                                        "left out]\n") + NGX_OFF_T_LEN);

    buf = ngx_pnalloc(r->pool, size);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = buf;
    src = h->payload;

    for (i = 0; i < 2; i++) {
        u_char  *start = p;

        p = ngx_cpymem(p, src, (size_t) head[i]);

        if (dropped[i] > 0) {
            if (head[i] > 0 && src[head[i] - 1] != '\n') {
                *p++ = '\n';
            }

            p = ngx_sprintf(p, "[veto-sandbox: %L bytes of %s left out]\n",
                            (int64_t) dropped[i], names[i]);
        }

        p = ngx_cpymem(p, src + head[i], (size_t) (len[i] - head[i]));
        src += len[i];

        json_object_set_new(j, flen[i], json_integer(p - start));
    }

    h->payload = buf;
    h->payload_len = p - buf;

    return NGX_OK;
}


/* POST …/exec: a background exec's 202, else the exec's result */
ngx_int_t
ngx_http_veto_sandbox_reply_exec_any(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char  *loc;
    json_t  *ex, *id;

    if (!json_is_true(json_object_get(ctx->req, "background"))) {

        if (ngx_http_veto_sandbox_exec_cut(r, ctx) == NGX_ERROR) {
            return NGX_ERROR;
        }

        return ngx_http_veto_sandbox_reply_exec(r, ctx);
    }

    ex = json_object_get(ctx->helper.json, "exec");
    id = json_object_get(ex, "id");

    if (!json_is_string(id) || json_string_length(id) != VSB_EXEC_ID_LEN
        || ngx_strncmp(json_string_value(id), "ex-", 3) != 0
        || strspn(json_string_value(id) + 3, "0123456789abcdef")
           != VSB_EXEC_ID_LEN - 3)
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                             "bad_gateway",
                                             "the sandbox helper sent no "
                                             "valid exec id", NULL);
    }

    loc = ngx_pnalloc(r->pool, sizeof("/v1/sandboxes//execs/")
                               + VSB_SANDBOX_ID_LEN + VSB_EXEC_ID_LEN);
    if (loc == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(loc, "/v1/sandboxes/%V/execs/%s%Z", &ctx->sandbox,
                json_string_value(id));

    if (ngx_http_veto_sandbox_header(r, "Location", (char *) loc) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_ACCEPTED,
                                           json_incref(ex));
}


/* GET …/execs/{exec}: its state (and result, once it has ended) */
ngx_int_t
ngx_http_veto_sandbox_reply_exec_state(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t  *ex;

    ex = json_object_get(ctx->helper.json, "exec");

    if (!json_is_object(ex)) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                             "bad_gateway",
                                             "the sandbox helper sent no "
                                             "exec", NULL);
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, json_incref(ex));
}


/* GET …/execs/{exec}/output: the run of bytes as "data" (or "data_b64")
 * with where it starts and where to go on */
ngx_int_t
ngx_http_veto_sandbox_reply_exec_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *out;
    json_int_t                       len;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    len = json_integer_value(json_object_get(h->json, "len"));

    if (len < 0 || (size_t) len != h->payload_len) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                             "bad_gateway",
                                             "the sandbox helper's output "
                                             "length does not add up", NULL);
    }

    out = json_copy(h->json);
    if (out == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_veto_sandbox_exec_data(r, out, "data", "data_b64",
                                        h->payload, h->payload_len)
        != NGX_OK)
    {
        json_decref(out);
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, out);
}


/*
 * The exec row's record: a plain exec's as ever; a streamed one's with
 * what it sent; a background one's start ("exec_started", its id; its
 * end is the helper's to tell, GET …/execs/{exec}); a client gone
 * mid-stream: the exec was killed ("error", "client_gone", what it had
 * sent).
 */
void
ngx_http_veto_sandbox_record_exec_any(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t     *extra, *ex;
    ngx_str_t   detail;

    if (!ok && ngx_strcmp(error, "client_gone") == 0) {
        extra = ngx_http_veto_sandbox_stream_detail(ctx);

        if (extra != NULL) {
            json_object_set_new(extra, "killed", json_true());
        }

        ngx_http_veto_sandbox_exec_detail(r, ctx, NULL, extra, &detail);
        ngx_http_veto_sandbox_audit(r, ctx, "error", "client_gone", NULL,
                                    detail.len ? &detail : NULL,
                                    NGX_HTTP_CLIENT_CLOSED_REQUEST);
        return;
    }

    if (ok && json_is_true(json_object_get(ctx->req, "background"))) {
        ex = json_object_get(ctx->helper.json, "exec");

        extra = json_pack("{s:b, s:O?, s:O?}", "background", 1,
                          "exec", json_object_get(ex, "id"),
                          "deadline_s", json_object_get(ctx->req,
                                                        "timeout_s"));

        ngx_http_veto_sandbox_exec_detail(r, ctx, NULL, extra, &detail);
        ngx_http_veto_sandbox_audit(r, ctx, "exec_started", NULL, NULL,
                                    detail.len ? &detail : NULL,
                                    NGX_HTTP_ACCEPTED);
        return;
    }

    ngx_http_veto_sandbox_record_exec(r, ctx, ok, error);
}


/* DELETE …/execs/{exec}: a kill is on record, with whether it killed */
void
ngx_http_veto_sandbox_record_exec_kill(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t     *d, *j;
    ngx_str_t   detail;

    j = ctx->helper.json;
    detail.len = 0;

    d = json_pack("{s:s%, s:O?, s:O?}",
                  "exec", ctx->exec.data, ctx->exec.len,
                  "killed", ok ? json_object_get(j, "killed") : NULL,
                  "state", ok ? json_object_get(json_object_get(j, "exec"),
                                                "state")
                              : NULL);
    if (d != NULL) {
        ngx_http_veto_sandbox_json_text(r, d, &detail);
        json_decref(d);
    }

    ngx_http_veto_sandbox_audit(r, ctx, ok ? "exec_killed" : "error",
                                ok ? NULL : error, NULL,
                                detail.len ? &detail : NULL,
                                ok ? NGX_HTTP_OK : 0);
}

#endif /* the rows' code */


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

#include "ngx_http_veto_sandbox_mcp.h"


/* ---- MCP: the exec tool's twin and presenter ---------------------------- */


/* the arguments it takes (its row's rest.args): its twin is the generic
 * one (_mcp_tools.c), POST /v1/sandboxes/{id}/exec with them as the body */
static const char  *ngx_http_veto_sandbox_mcp_exec_args[] = {
    "sandbox_id", NGX_HTTP_VSB_MCP_FIELDS_EXEC, "approval_id", NULL
};


/* output as the REST API gave it (utf-8 or base64) back to bytes */
static ngx_int_t
ngx_http_veto_sandbox_mcp_output(ngx_http_request_t *r, json_t *rest,
    const char *name, const char *enc_name, ngx_str_t *out)
{
    json_t      *v;
    ngx_str_t    src;
    const char  *enc;

    v = json_object_get(rest, name);
    enc = json_string_value(json_object_get(rest, enc_name));

    if (!json_is_string(v)) {
        ngx_str_null(out);
        return NGX_OK;
    }

    src.data = (u_char *) json_string_value(v);
    src.len = json_string_length(v);

    if (enc == NULL || ngx_strcmp(enc, "base64") != 0) {
        *out = src;
        return NGX_OK;
    }

    out->data = ngx_pnalloc(r->pool, ngx_base64_decoded_length(src.len) + 1);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    return ngx_decode_base64(out, &src);
}


/* does the exec result's limits_hit name limit? */
static ngx_uint_t
ngx_http_veto_sandbox_mcp_hit(json_t *rest, const char *limit)
{
    size_t   i;
    json_t  *v;

    json_array_foreach(json_object_get(rest, "limits_hit"), i, v) {
        if (json_is_string(v) && ngx_strcmp(json_string_value(v), limit) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* exec: how it ended, the output's head and tail, the usage */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last;
    char        *usage;
    size_t       size;
    json_t      *structured, *v;
    ngx_str_t    out, err, tout, terr;

    if (ngx_http_veto_sandbox_mcp_output(r, rest, "stdout", "stdout_encoding",
                                         &out)
        != NGX_OK
        || ngx_http_veto_sandbox_mcp_output(r, rest, "stderr",
                                            "stderr_encoding", &err)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    structured = json_deep_copy(rest);
    if (structured == NULL) {
        return NGX_ERROR;
    }

    json_object_del(structured, "stdout");
    json_object_del(structured, "stderr");
    json_object_del(structured, "stdout_encoding");
    json_object_del(structured, "stderr_encoding");

    if (ngx_http_veto_sandbox_mcp_bounded(r, out.data, out.len,
                                          call->reply_bytes, "stdout",
                                          structured, &tout)
        == NULL
        || ngx_http_veto_sandbox_mcp_bounded(r, err.data, err.len,
                                             call->reply_bytes, "stderr",
                                             structured, &terr)
           == NULL)
    {
        json_decref(structured);
        return NGX_ERROR;
    }

    usage = json_dumps(json_object_get(rest, "usage"), JSON_COMPACT);

    size = 1024 + tout.len + terr.len;
    text = ngx_pnalloc(r->pool, size);
    if (text == NULL) {
        free(usage);
        json_decref(structured);
        return NGX_ERROR;
    }

    last = text + size;

    v = json_object_get(rest, "signal");

    if (json_is_true(json_object_get(rest, "timed_out"))) {
        p = ngx_slprintf(text, last, "Timed out: killed at its time limit");

    } else if (json_is_true(json_object_get(rest, "oom_killed"))) {
        p = ngx_slprintf(text, last, "Out of memory: killed at its memory "
                         "limit");

    } else if (json_is_integer(v) || json_is_string(v)) {
        p = json_is_integer(v)
            ? ngx_slprintf(text, last, "Killed by signal %L",
                           json_integer_value(v))
            : ngx_slprintf(text, last, "Killed by signal %s",
                           json_string_value(v));

    } else {
        p = ngx_slprintf(text, last, "Exit code %L",
                         json_integer_value(json_object_get(rest,
                                                            "exit_code")));
    }

    p = ngx_slprintf(p, last, ". Usage: %s\n", usage ? usage : "{}");

    free(usage);

    if (json_is_true(json_object_get(rest, "stdout_truncated"))
        || json_is_true(json_object_get(rest, "stderr_truncated")))
    {
        p = ngx_slprintf(p, last, "(The sandbox kept only the start and end "
                         "of long output: its output_bytes limit.)\n");
    }

    if (ngx_http_veto_sandbox_mcp_hit(rest, "pids")) {
        p = ngx_slprintf(p, last, "(Process limit reached: the sandbox "
                         "refused some of its forks, fork() failed with "
                         "EAGAIN; the sandbox goes on.)\n");
    }

    p = ngx_slprintf(p, last, "--- stdout (%uz bytes) ---\n%V\n"
                     "--- stderr (%uz bytes) ---\n%V", out.len, &tout,
                     err.len, &terr);

    if (ngx_http_veto_sandbox_mcp_text(result, (char *) text, p - text)
        != NGX_OK
        || json_object_set_new(result, "structuredContent", structured) != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}

#endif /* the MCP tool's code */


/* ---- the group's rows (_ops.c's table) ---------------------------------- */


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_execs_ops[] = {

    /* plain, streamed (Accept: application/x-ndjson) or in the
     * background: one row, one gate */
    ngx_http_vsb_op("sandbox.exec", NGX_HTTP_POST, "/v1/sandboxes/{id}/exec",
                    NGX_HTTP_VSB_SCOPE_EXEC, NGX_HTTP_VSB_ACT_EXEC,
                    NGX_HTTP_VSB_QUOTA_EXECS,
                    NGX_HTTP_VSB_BODY_JSON, 0, VSB_OP_EXEC,
                    ngx_http_veto_sandbox_build_exec,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_exec_any,
                    ngx_http_veto_sandbox_record_exec_any),

    /* background execs: reading one's own is no decision on record; a
     * kill is */
    ngx_http_vsb_op("sandbox.exec.get", NGX_HTTP_VSB_READ,
                    "/v1/sandboxes/{id}/execs/{exec}",
                    NGX_HTTP_VSB_SCOPE_EXEC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_EXEC_STATUS,
                    ngx_http_veto_sandbox_build_exec_id,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_exec_state,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_op("sandbox.exec.kill", NGX_HTTP_DELETE,
                    "/v1/sandboxes/{id}/execs/{exec}",
                    NGX_HTTP_VSB_SCOPE_EXEC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_EXEC_KILL,
                    ngx_http_veto_sandbox_build_exec_id,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_exec_kill),

    ngx_http_vsb_op("sandbox.exec.output", NGX_HTTP_GET,
                    "/v1/sandboxes/{id}/execs/{exec}/output",
                    NGX_HTTP_VSB_SCOPE_EXEC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_EXEC_OUTPUT,
                    ngx_http_veto_sandbox_build_exec_output,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_exec_output,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

/* ---- the group's MCP tool (_mcp_tool_table.c's list) -------------------- */


ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_execs_tools[] = {

    { "exec", "Run a command",
      "Run a command in a sandbox and wait for it to end. The result has "
      "the exit code (or the signal), whether it timed out or ran out of "
      "memory, the start and end of stdout and stderr (the middle of long "
      "output is left out, and says how much), and the resources it used. A "
      "non-zero exit is a result, not an error. With a progress token "
      "(_meta.progressToken) the output also comes as it is written, in "
      "notifications/progress: each message is \"stdout: <text>\" or "
      "\"stderr: <text>\" (\"stdout (base64): ...\" for bytes that are "
      "not UTF-8), progress the bytes written so far; only the first "
      "output_bytes (at most the gateway's result bound) of each stream "
      "are carried, then the messages say how much more was written."
      NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        NGX_HTTP_VSB_MCP_PROPS_EXEC ","
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"required\":[\"sandbox_id\"," NGX_HTTP_VSB_MCP_REQUIRED_EXEC "],"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":true,"
      "\"idempotentHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_exec,
      { NGX_HTTP_POST, "/v1/sandboxes/{id}/exec",
        ngx_http_veto_sandbox_mcp_exec_args, NULL, NULL,
        NGX_HTTP_VSB_MCP_BODY|NGX_HTTP_VSB_MCP_PROGRESS } },

    ngx_http_vsb_null_tool
};

#endif /* the MCP tool */
