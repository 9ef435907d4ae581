/*
 * The exec rows: a plain exec's request (argv, cwd, env, timeout_s,
 * stdin as the frame's payload), its own output_bytes, a streamed exec
 * (Accept: application/x-ndjson, _stream.c), a background exec (202,
 * then /v1/sandboxes/{id}/execs/{exec}: its state, its output from an
 * offset or followed live, its kill), and where the output was cut
 * between head and tail.  Builders, mappers and records of those rows;
 * the helper does the work (vsb_protocol.h: exec, exec_status,
 * exec_output, exec_kill).
 *
 * A streamed or background exec is the same row as a plain one
 * (sandbox.exec): the same scope, quota, approval kind and canonical
 * request.  Streaming is asked for in a header, so the hash of a
 * streamed exec is the plain one's: one approval covers either way of
 * reading the same command.  "background" is in the body, so it is in
 * the hash: a command left running with no client, until its deadline,
 * is not what a human approved for a request that waits for it.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_output.h"
#include "ngx_http_veto_sandbox_redact.h"


static const char  *ngx_http_veto_sandbox_exec_known[] = {
    "argv", "cwd", "env", "stdin", "timeout_s", "output_bytes", "background",
    NULL
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

    /* the reply comes after the command ends: wait that long too; with
     * no timeout here the sandbox's own applies, up to the helper's
     * ceiling, which run() asks for first */
    if (n == 0) {
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
