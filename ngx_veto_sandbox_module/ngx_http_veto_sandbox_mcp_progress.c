/*
 * An exec's output as MCP progress notifications.  A tools/call of exec
 * that carries params._meta.progressToken, from a client that accepts
 * text/event-stream, is answered as an SSE stream: the exec runs
 * streamed (the helper's "output" events, _stream.c), each chunk of
 * output goes out at once as a notifications/progress message, and the
 * call's JSON-RPC response ends the stream.  Until the first chunk, and
 * for an exec that writes nothing, the answer is the plain application/
 * json one.
 *
 * A notification's message carries the output: "stdout: <text>" or
 * "stderr: <text>", or "stdout (base64): <base64>" for bytes that are
 * not UTF-8; progress is the bytes written so far, both streams.  Of
 * each stream only the first max bytes are carried (the exec's
 * output_bytes, at most veto_sandbox_mcp_reply_bytes); after that a
 * notification says how much was written and carries none of it, at
 * most one per max bytes.  The result is the plain exec's: its head
 * (ceil(max / 2)) and tail (floor(max / 2)) of each stream are kept
 * here as the chunks pass, and the rest is counted as left out, as the
 * helper counts it for a plain exec.  So a stream holds at most 2 max
 * bytes per exec and one event, whatever the command writes.
 *
 * Flow control and the helper's connection are _stream.c's, as for an
 * ndjson stream: the helper is not read while the client has not taken
 * the last message; a client that goes away kills the exec (on record
 * as "client_gone"), and the connection is kept only after the reply.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"
#include "ngx_http_veto_sandbox_output.h"


struct ngx_http_veto_sandbox_mcp_progress_s {
    json_t                      *token;
    size_t                       max;           /* carried per stream */
    size_t                       head_max;
    size_t                       tail_max;
    off_t                        total[2];      /* written, per stream */
    off_t                        quiet_next;    /* next output-less one */
    u_char                      *head[2];
    size_t                       head_len[2];
    u_char                      *tail[2];       /* a ring of tail_max */
    size_t                       tail_pos[2];
    size_t                       tail_len[2];
};


static ngx_int_t ngx_http_veto_sandbox_mcp_progress_chunk(
    ngx_http_request_t *r, ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_uint_t stream, off_t offset, u_char *data, size_t len);
static ngx_int_t ngx_http_veto_sandbox_mcp_progress_end(
    ngx_http_request_t *r, ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_mcp_sse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *msg, ngx_uint_t last);


static const char  *ngx_http_veto_sandbox_mcp_streams[2] = {
    "stdout", "stderr"
};


ngx_int_t
ngx_http_veto_sandbox_mcp_progress(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                                *v;
    size_t                                 max;
    ngx_uint_t                             i;
    ngx_http_veto_sandbox_mcp_call_t      *call;
    ngx_http_veto_sandbox_mcp_progress_t  *pg;

    call = ctx->mcp;

    if (call == NULL || call->progress == NULL) {
        return 0;
    }

    max = call->reply_bytes;

    /* output_bytes is the exec builder's to judge (it runs next and
     * refuses a bad one); here only a usable smaller bound is taken */
    v = json_object_get(call->args, "output_bytes");

    if (json_is_integer(v) && json_integer_value(v) > 0
        && (uint64_t) json_integer_value(v) < max)
    {
        max = (size_t) json_integer_value(v);
    }

    pg = ngx_pcalloc(r->pool, sizeof(ngx_http_veto_sandbox_mcp_progress_t));
    if (pg == NULL) {
        return NGX_ERROR;
    }

    pg->token = call->progress;
    pg->max = max;
    pg->head_max = (max + 1) / 2;
    pg->tail_max = max / 2;
    pg->quiet_next = 0;

    for (i = 0; i < 2; i++) {
        pg->head[i] = ngx_pnalloc(r->pool, pg->head_max);
        pg->tail[i] = ngx_pnalloc(r->pool, pg->tail_max ? pg->tail_max : 1);

        if (pg->head[i] == NULL || pg->tail[i] == NULL) {
            return NGX_ERROR;
        }
    }

    call->pg = pg;

    if (ngx_http_veto_sandbox_stream_sse(r, ctx,
                                     ngx_http_veto_sandbox_mcp_progress_chunk,
                                     ngx_http_veto_sandbox_mcp_progress_end)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return 1;
}


/* The chunk's bytes into stream i's head, then its tail ring. */
static void
ngx_http_veto_sandbox_mcp_progress_keep(
    ngx_http_veto_sandbox_mcp_progress_t *pg, ngx_uint_t i, u_char *data,
    size_t len)
{
    size_t  n;

    n = ngx_min(len, pg->head_max - pg->head_len[i]);

    if (n) {
        ngx_memcpy(pg->head[i] + pg->head_len[i], data, n);
        pg->head_len[i] += n;
        data += n;
        len -= n;
    }

    if (len == 0 || pg->tail_max == 0) {
        return;
    }

    /* only the last tail_max bytes can stay */
    if (len > pg->tail_max) {
        data += len - pg->tail_max;
        len = pg->tail_max;
    }

    while (len) {
        n = ngx_min(len, pg->tail_max - pg->tail_pos[i]);

        ngx_memcpy(pg->tail[i] + pg->tail_pos[i], data, n);

        pg->tail_pos[i] = (pg->tail_pos[i] + n) % pg->tail_max;
        pg->tail_len[i] = ngx_min(pg->tail_len[i] + n, pg->tail_max);
        data += n;
        len -= n;
    }
}


/* One notifications/progress: the part of the chunk still carried. */
static ngx_int_t
ngx_http_veto_sandbox_mcp_progress_chunk(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t i, off_t offset,
    u_char *data, size_t len)
{
    u_char                                *msg, *p;
    off_t                                  done, all;
    size_t                                 n, size;
    json_t                                *note;
    ngx_int_t                              rc;
    ngx_http_veto_sandbox_output_t         o;
    ngx_http_veto_sandbox_mcp_progress_t  *pg;

    pg = ctx->mcp->pg;

    /* offset is where this chunk starts: the bytes before it were
     * carried (a streamed exec's offsets are contiguous) */
    done = offset;
    pg->total[i] = offset + len;

    ngx_http_veto_sandbox_mcp_progress_keep(pg, i, data, len);

    all = pg->total[0] + pg->total[1];

    n = done < (off_t) pg->max ? ngx_min(len, pg->max - (size_t) done) : 0;

    if (n == 0 && all < pg->quiet_next) {
        return NGX_OK;
    }

    if (n) {
        o.data = data;
        o.len = n;
        ngx_http_veto_sandbox_output_choose(&o);

        size = sizeof("stderr (base64): ") + o.size;
        msg = ngx_pnalloc(r->pool, size);
        if (msg == NULL) {
            return NGX_ERROR;
        }

        p = ngx_sprintf(msg, "%s%s: ", ngx_http_veto_sandbox_mcp_streams[i],
                        o.base64 ? " (base64)" : "");

        /* the text as it is: JSON escapes it when the message is sent */
        p = o.base64 ? ngx_http_veto_sandbox_output_write(p, &o)
                     : ngx_cpymem(p, data, n);

    } else {
        size = 256;
        msg = ngx_pnalloc(r->pool, size);
        if (msg == NULL) {
            return NGX_ERROR;
        }

        p = ngx_snprintf(msg, size, "%s: %O bytes written so far; output "
                         "past the first %uz bytes of each stream is not "
                         "carried in progress (the result has its end)",
                         ngx_http_veto_sandbox_mcp_streams[i], pg->total[i],
                         pg->max);

        pg->quiet_next = all + (off_t) pg->max;
    }

    note = json_pack("{s:s, s:s, s:{s:O, s:I, s:s%}}",
                     "jsonrpc", "2.0", "method", "notifications/progress",
                     "params", "progressToken", pg->token,
                     "progress", (json_int_t) all,
                     "message", msg, (size_t) (p - msg));
    if (note == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_veto_sandbox_mcp_sse(r, ctx, note, 0);

    json_decref(note);

    return rc;
}


/* The helper's reply: a success as a plain exec's RESULT with what was
 * kept, for the exec row's mapper and presenter; then (NGX_DECLINED) it
 * is answered as any exec's, to the sink, which ends the stream. */
static ngx_int_t
ngx_http_veto_sandbox_mcp_progress_end(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                                *buf, *p;
    size_t                                 size, k;
    json_t                                *j;
    ngx_uint_t                             i;
    json_int_t                             dropped;
    ngx_http_veto_sandbox_helper_t        *h;
    ngx_http_veto_sandbox_mcp_progress_t  *pg;

    static const char  *flen[2] = { "stdout_len", "stderr_len" };
    static const char  *fhead[2] = { "stdout_head_len", "stderr_head_len" };
    static const char  *fdrop[2] = { "stdout_dropped_bytes",
                                     "stderr_dropped_bytes" };
    static const char  *ftrunc[2] = { "stdout_truncated",
                                      "stderr_truncated" };

    h = &ctx->helper;
    j = h->json;
    pg = ctx->mcp->pg;

    if (h->status != NGX_OK || !json_is_true(json_object_get(j, "ok"))) {
        return NGX_DECLINED;
    }

    size = pg->head_len[0] + pg->tail_len[0] + pg->head_len[1]
           + pg->tail_len[1];

    buf = ngx_pnalloc(r->pool, size ? size : 1);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = buf;

    for (i = 0; i < 2; i++) {
        p = ngx_cpymem(p, pg->head[i], pg->head_len[i]);

        /* the ring from its oldest byte */
        k = pg->tail_len[i] < pg->tail_max ? 0 : pg->tail_pos[i];
        p = ngx_cpymem(p, pg->tail[i] + k, pg->tail_len[i] - k);
        p = ngx_cpymem(p, pg->tail[i], k);

        dropped = (json_int_t) pg->total[i]
                  - (json_int_t) (pg->head_len[i] + pg->tail_len[i]);

        if (json_object_set_new(j, flen[i],
                                json_integer(pg->head_len[i]
                                             + pg->tail_len[i])) != 0
            || json_object_set_new(j, fhead[i],
                                   json_integer(pg->head_len[i])) != 0
            || json_object_set_new(j, fdrop[i], json_integer(dropped)) != 0
            || json_object_set_new(j, ftrunc[i], json_boolean(dropped > 0))
               != 0)
        {
            return NGX_ERROR;
        }
    }

    h->payload = buf;
    h->payload_len = p - buf;

    return NGX_DECLINED;
}


/* msg as one SSE event ("message"), flushed; the last one ends it. */
static ngx_int_t
ngx_http_veto_sandbox_mcp_sse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *msg, ngx_uint_t last)
{
    size_t        len;
    ngx_chain_t  *cl;

    len = json_dumpb(msg, NULL, 0, JSON_COMPACT);
    if (len == 0) {
        return NGX_ERROR;
    }

    cl = ngx_http_veto_sandbox_stream_alloc(r, ctx,
                                            sizeof("event: message\ndata: ")
                                            + len + 2);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    /* compact JSON has no newline: one data line */
    cl->buf->last = ngx_cpymem(cl->buf->last, "event: message\ndata: ",
                               sizeof("event: message\ndata: ") - 1);

    if (json_dumpb(msg, (char *) cl->buf->last, len, JSON_COMPACT) != len) {
        return NGX_ERROR;
    }

    cl->buf->last += len;
    *cl->buf->last++ = '\n';
    *cl->buf->last++ = '\n';
    cl->next = NULL;

    return ngx_http_veto_sandbox_stream_send(r, ctx, cl, last);
}


/* The call's JSON-RPC response as the stream's last event. */
ngx_int_t
ngx_http_veto_sandbox_mcp_progress_final(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *msg)
{
    return ngx_http_veto_sandbox_mcp_sse(r, ctx, msg, 1);
}
