/*
 * Streamed replies: the events of a streaming helper request
 * (vsb_protocol.h, "Events") go out to the client as they come, each
 * as one flushed chunk of a chunked response: an exec's output and a
 * followed background exec's as ndjson lines, an export's archive as
 * its raw bytes.
 *
 * Nothing is held beyond what is being sent: while the client has not
 * taken the last chunk, the helper's connection is not read, so the
 * helper stops the workload (or tar) in turn; a stream of any length
 * holds one event frame and one line.  A client that goes away closes
 * the helper's connection, which kills a foreground exec or the tar of
 * an export, and that goes on record as "client_gone".
 *
 * Until the first byte goes out, a request fails as any other
 * (problem+json, _reply.c).  From then on the status line has been
 * sent: an exec's stream ends with a "result" line or an "error" line;
 * an export that fails is cut off without its last chunk, so that no
 * client takes a partial archive for a whole one.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_output.h"

#include <openssl/evp.h>


enum {
    NGX_HTTP_VSB_STREAM_EXEC = 0,   /* ndjson output, then "result" */
    NGX_HTTP_VSB_STREAM_FOLLOW,     /* ndjson output, then "end" */
    NGX_HTTP_VSB_STREAM_EXPORT,     /* raw archive bytes */
    NGX_HTTP_VSB_STREAM_SSE         /* an exec's output as MCP progress */
};

/* The longest ndjson line one event makes: its bytes and an incomplete
 * UTF-8 sequence held back from the one before, as base64, framed. */
#define NGX_HTTP_VSB_LINE_SIZE                                                \
    (ngx_base64_encoded_length(VSB_STREAM_CHUNK + 4)                          \
     + sizeof("{\"stream\":\"stderr\",\"offset\":,\"data_b64\":\"\"}\n")      \
     + NGX_OFF_T_LEN)

#define ngx_http_vsb_stream_tag  ((ngx_buf_tag_t) &ngx_http_veto_sandbox_module)


struct ngx_http_veto_sandbox_stream_s {
    ngx_uint_t                   kind;
    const char                  *type;      /* Content-Type */
    const char                  *encoding;  /* Content-Encoding, or NULL */
    ngx_chain_t                 *free;
    ngx_chain_t                 *busy;
    off_t                        bytes[2];  /* stdout, stderr; export: [0] */
    off_t                        next[2];   /* where each stream goes on */
    EVP_MD_CTX                  *md[2];
    u_char                      *scratch;   /* held-back bytes + an event */
    u_char                       carry[2][4];
    size_t                       carry_len[2];
    ngx_http_veto_sandbox_chunk_pt   chunk;  /* SSE: a chunk's message */
    ngx_http_veto_sandbox_stream_end_pt  end;    /* SSE: the result's */
    unsigned                     started:1; /* the status line went out */
    unsigned                     gone:1;    /* the client went away */
};


static ngx_int_t ngx_http_veto_sandbox_stream_start(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_stream_writer(ngx_http_request_t *r);
static void ngx_http_veto_sandbox_stream_gone(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_stream_cleanup(void *data);
static void ngx_http_veto_sandbox_stream_md_cleanup(void *data);
static ngx_chain_t *ngx_http_veto_sandbox_stream_buf(ngx_http_request_t *r,
    ngx_http_veto_sandbox_stream_t *st, size_t size);
static ngx_int_t ngx_http_veto_sandbox_stream_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *event, u_char *data,
    size_t len);
static ngx_int_t ngx_http_veto_sandbox_stream_data(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *event, u_char *data,
    size_t len);


/* Does the client ask for ndjson (Accept: application/x-ndjson)?  Never
 * for a tools/call's twin: it answers to its sink, in one piece. */
ngx_int_t
ngx_http_veto_sandbox_stream_ndjson(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_table_elt_t                    *h;
    ngx_http_veto_sandbox_header_it_t   it;

    static u_char  ndjson[] = "application/x-ndjson";

    if (ctx->sink) {
        return 0;
    }

    it.part = NULL;

    while ((h = ngx_http_veto_sandbox_header_next(&r->headers_in.headers,
                                                  "Accept", &it))
           != NULL)
    {
        if (ngx_strlcasestrn(h->value.data, h->value.data + h->value.len,
                             ndjson, sizeof(ndjson) - 2)
            != NULL)
        {
            return 1;
        }
    }

    return 0;
}


/* A stream of kind for ctx: the helper's events go to handler. */
static ngx_http_veto_sandbox_stream_t *
ngx_http_veto_sandbox_stream_create(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t kind,
    ngx_http_veto_sandbox_event_pt handler)
{
    ngx_uint_t                       i;
    ngx_pool_cleanup_t              *cln;
    ngx_http_cleanup_t              *hcln;
    ngx_http_veto_sandbox_stream_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_veto_sandbox_stream_t));
    if (st == NULL) {
        return NULL;
    }

    st->kind = kind;

    if (kind != NGX_HTTP_VSB_STREAM_EXPORT) {
        st->type = "application/x-ndjson";

        st->scratch = ngx_pnalloc(r->pool, VSB_STREAM_CHUNK + 4);
        if (st->scratch == NULL) {
            return NULL;
        }
    }

    if (kind == NGX_HTTP_VSB_STREAM_EXEC || kind == NGX_HTTP_VSB_STREAM_SSE) {
        for (i = 0; i < 2; i++) {
            cln = ngx_pool_cleanup_add(r->pool, 0);
            if (cln == NULL) {
                return NULL;
            }

            st->md[i] = EVP_MD_CTX_new();
            if (st->md[i] == NULL
                || EVP_DigestInit_ex(st->md[i], EVP_sha256(), NULL) != 1)
            {
                EVP_MD_CTX_free(st->md[i]);
                st->md[i] = NULL;
                return NULL;
            }

            cln->handler = ngx_http_veto_sandbox_stream_md_cleanup;
            cln->data = st->md[i];
        }
    }

    /* the request may end without the helper's reply (client gone,
     * timeout, worker exiting): then the record says so */
    hcln = ngx_http_cleanup_add(r, 0);
    if (hcln == NULL) {
        return NULL;
    }

    hcln->handler = ngx_http_veto_sandbox_stream_cleanup;
    hcln->data = r;

    ctx->stream = st;
    ctx->helper.event = handler;

    return st;
}


static void
ngx_http_veto_sandbox_stream_md_cleanup(void *data)
{
    EVP_MD_CTX_free(data);
}


/* An exec whose output goes out as it is written ("stream": true). */
ngx_int_t
ngx_http_veto_sandbox_stream_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    if (ngx_http_veto_sandbox_stream_create(r, ctx, NGX_HTTP_VSB_STREAM_EXEC,
                                         ngx_http_veto_sandbox_stream_output)
        == NULL)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* A background exec's output followed live ("follow": true). */
ngx_int_t
ngx_http_veto_sandbox_stream_follow(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    if (ngx_http_veto_sandbox_stream_create(r, ctx,
                                         NGX_HTTP_VSB_STREAM_FOLLOW,
                                         ngx_http_veto_sandbox_stream_output)
        == NULL)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* An export: the archive's bytes as the body, of type (and encoding). */
ngx_int_t
ngx_http_veto_sandbox_stream_export(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *type, const char *encoding)
{
    ngx_http_veto_sandbox_stream_t  *st;

    st = ngx_http_veto_sandbox_stream_create(r, ctx,
                                             NGX_HTTP_VSB_STREAM_EXPORT,
                                             ngx_http_veto_sandbox_stream_data);
    if (st == NULL) {
        return NGX_ERROR;
    }

    st->type = type;
    st->encoding = encoding;

    return NGX_OK;
}


/* A tools/call's exec whose output goes out as MCP progress
 * notifications (_mcp_progress.c): each chunk of output, whole UTF-8
 * characters as for ndjson, goes to chunk(); the helper's reply to end()
 * (NGX_DECLINED: answered as a plain exec's, to the sink). */
ngx_int_t
ngx_http_veto_sandbox_stream_sse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_chunk_pt chunk,
    ngx_http_veto_sandbox_stream_end_pt end)
{
    ngx_http_veto_sandbox_stream_t  *st;

    st = ngx_http_veto_sandbox_stream_create(r, ctx, NGX_HTTP_VSB_STREAM_SSE,
                                         ngx_http_veto_sandbox_stream_output);
    if (st == NULL) {
        return NGX_ERROR;
    }

    st->type = "text/event-stream";
    st->chunk = chunk;
    st->end = end;

    return NGX_OK;
}


/* Has the status line of ctx's stream gone out? */
ngx_uint_t
ngx_http_veto_sandbox_stream_started(ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ctx->stream != NULL && ctx->stream->started;
}


/* A buffer of at least size for the next piece of ctx's stream. */
ngx_chain_t *
ngx_http_veto_sandbox_stream_alloc(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, size_t size)
{
    return ngx_http_veto_sandbox_stream_buf(r, ctx->stream, size);
}


/* The status line and headers, once, before the first byte. */
static ngx_int_t
ngx_http_veto_sandbox_stream_start(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                        rc;
    ngx_table_elt_t                 *h;
    ngx_http_veto_sandbox_stream_t  *st;

    st = ctx->stream;

    if (st->started) {
        return NGX_OK;
    }

    st->started = 1;
    ctx->own_response = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = -1;
    r->headers_out.content_type.data = (u_char *) st->type;
    r->headers_out.content_type.len = ngx_strlen(st->type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->allow_ranges = 0;

    /* per caller, and a proxy in front must pass each chunk on as it
     * comes (nginx's proxy_buffering honours X-Accel-Buffering) */
    if (ngx_http_veto_sandbox_header(r, "Cache-Control", "no-store")
        != NGX_OK
        || ngx_http_veto_sandbox_header(r, "X-Accel-Buffering", "no")
           != NGX_OK
        || ngx_http_veto_sandbox_header(r, "X-Content-Type-Options",
                                        "nosniff") != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (st->kind == NGX_HTTP_VSB_STREAM_EXPORT) {

        /* the workspace is the agent's untrusted data, as a file is */
        if (ngx_http_veto_sandbox_header(r, "Content-Disposition",
                                         "attachment") != NGX_OK
            || ngx_http_veto_sandbox_header(r, "Content-Security-Policy",
                                            "sandbox; default-src 'none'")
               != NGX_OK
            || ngx_http_veto_sandbox_header(r, "Veto-Untrusted", "true")
               != NGX_OK
            || ngx_http_veto_sandbox_header(r, "Vary", "Accept-Encoding")
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (st->encoding) {
            /* set as nginx's own, so that its gzip filter leaves it be */
            h = ngx_list_push(&r->headers_out.headers);
            if (h == NULL) {
                return NGX_ERROR;
            }

            h->hash = 1;
            ngx_str_set(&h->key, "Content-Encoding");
            h->value.data = (u_char *) st->encoding;
            h->value.len = ngx_strlen(st->encoding);

            r->headers_out.content_encoding = h;
        }
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * Hands out to nginx, flushed (and the last chunk when last).  NGX_OK:
 * all went out; NGX_AGAIN: the client has not taken it all yet, the
 * helper must wait (the writer resumes it); NGX_ERROR: the client is
 * gone (on record) or the response failed.
 */
ngx_int_t
ngx_http_veto_sandbox_stream_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_chain_t *out, ngx_uint_t last)
{
    ngx_int_t                        rc;
    ngx_buf_t                       *b;
    ngx_chain_t                     *cl;
    ngx_event_t                     *wev;
    ngx_http_core_loc_conf_t        *clcf;
    ngx_http_veto_sandbox_stream_t  *st;

    st = ctx->stream;

    if (ngx_http_veto_sandbox_stream_start(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (last) {
        b = ngx_calloc_buf(r->pool);
        cl = ngx_alloc_chain_link(r->pool);
        if (b == NULL || cl == NULL) {
            return NGX_ERROR;
        }

        b->last_buf = 1;
        b->last_in_chain = 1;
        b->flush = 1;

        cl->buf = b;
        cl->next = NULL;

        if (out == NULL) {
            out = cl;

        } else {
            ngx_chain_t  *ln;

            for (ln = out; ln->next; ln = ln->next) { /* void */ }
            ln->next = cl;
        }
    }

    rc = ngx_http_output_filter(r, out);

    ngx_chain_update_chains(r->pool, &st->free, &st->busy, &out,
                            ngx_http_vsb_stream_tag);

    if (rc == NGX_ERROR) {
        ngx_http_veto_sandbox_stream_gone(r, ctx);
        return NGX_ERROR;
    }

    if (last) {
        /* what is left is nginx's to send (ngx_http_writer) */
        return rc;
    }

    if (st->busy == NULL && !r->connection->buffered) {
        return NGX_OK;
    }

    wev = r->connection->write;
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    r->write_event_handler = ngx_http_veto_sandbox_stream_writer;

    if (!wev->delayed) {
        ngx_add_timer(wev, clcf->send_timeout);
    }

    if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_AGAIN;
}


/* The client took (or did not take) what was pending. */
static void
ngx_http_veto_sandbox_stream_writer(ngx_http_request_t *r)
{
    ngx_int_t                        rc;
    ngx_event_t                     *wev;
    ngx_chain_t                     *out;
    ngx_http_core_loc_conf_t        *clcf;
    ngx_http_veto_sandbox_ctx_t     *ctx;
    ngx_http_veto_sandbox_stream_t  *st;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    st = ctx->stream;
    wev = r->connection->write;
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (wev->timedout) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, NGX_ETIMEDOUT,
                      "veto_sandbox: client took nothing of the stream for "
                      "send_timeout");
        r->connection->timedout = 1;
        ngx_http_veto_sandbox_stream_gone(r, ctx);
        ngx_http_finalize_request(r, NGX_HTTP_REQUEST_TIME_OUT);
        return;
    }

    out = NULL;
    rc = ngx_http_output_filter(r, NULL);

    ngx_chain_update_chains(r->pool, &st->free, &st->busy, &out,
                            ngx_http_vsb_stream_tag);

    if (rc == NGX_ERROR) {
        ngx_http_veto_sandbox_stream_gone(r, ctx);
        ngx_http_finalize_request(r, NGX_ERROR);
        return;
    }

    if (st->busy != NULL || r->connection->buffered) {
        if (!wev->delayed) {
            ngx_add_timer(wev, clcf->send_timeout);
        }

        if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
            ngx_http_veto_sandbox_stream_gone(r, ctx);
            ngx_http_finalize_request(r, NGX_ERROR);
        }

        return;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    r->write_event_handler = ngx_http_request_empty_handler;

    /* may end the request: nothing after it */
    ngx_http_veto_sandbox_helper_resume(r, ctx);
}


/* The client went away before the helper's reply: on record once, and
 * the helper's connection closed (a foreground exec is killed). */
static void
ngx_http_veto_sandbox_stream_gone(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_http_veto_sandbox_stream_t  *st;

    st = ctx->stream;

    if (st->gone || ctx->helper.peer.connection == NULL) {
        return;
    }

    st->gone = 1;

    ngx_http_veto_sandbox_helper_close(ctx);

    ctx->helper.status = NGX_HTTP_CLIENT_CLOSED_REQUEST;
    ctx->helper.error = "the client went away";

    if (ngx_http_veto_sandbox_rds != NULL
        && ctx->step != NGX_HTTP_VSB_STEP_AFTER)
    {
        ctx->step = NGX_HTTP_VSB_STEP_AFTER;
        ctx->op->record(r, ctx, 0, "client_gone");
    }
}


static void
ngx_http_veto_sandbox_stream_cleanup(void *data)
{
    ngx_http_request_t  *r = data;

    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    if (ctx != NULL && ctx->stream != NULL) {
        ngx_http_veto_sandbox_stream_gone(r, ctx);
    }
}


/* A buffer of size for the next line: one of the free ones, or new. */
static ngx_chain_t *
ngx_http_veto_sandbox_stream_buf(ngx_http_request_t *r,
    ngx_http_veto_sandbox_stream_t *st, size_t size)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    cl = ngx_chain_get_free_buf(r->pool, &st->free);
    if (cl == NULL) {
        return NULL;
    }

    b = cl->buf;

    if (b->start == NULL || (size_t) (b->end - b->start) < size) {
        size = ngx_max(size, NGX_HTTP_VSB_LINE_SIZE);

        b->start = ngx_palloc(r->pool, size);
        if (b->start == NULL) {
            return NULL;
        }

        b->end = b->start + size;
    }

    b->pos = b->start;
    b->last = b->start;
    b->temporary = 1;
    b->flush = 1;
    b->tag = ngx_http_vsb_stream_tag;

    return cl;
}


/* The bytes at the end of p .. last that begin a UTF-8 sequence it
 * does not finish: held back for the next chunk of the stream. */
static size_t
ngx_http_veto_sandbox_utf8_tail(u_char *p, u_char *last)
{
    size_t  j, need;
    u_char  c;

    for (j = 1; j <= 3 && (size_t) (last - p) >= j; j++) {
        c = last[-(ssize_t) j];

        if ((c & 0xc0) == 0x80) {
            continue;               /* a continuation byte: look further */
        }

        need = (c >= 0xf0 && c <= 0xf4) ? 4
               : (c >= 0xe0) ? 3
               : (c >= 0xc2 && c <= 0xdf) ? 2 : 0;

        return (need > j) ? j : 0;
    }

    return 0;
}


/* One ndjson line of stream i's bytes from offset (final: nothing is
 * held back, the stream has ended). */
static ngx_int_t
ngx_http_veto_sandbox_stream_line(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t i, off_t offset,
    u_char *data, size_t len, ngx_uint_t final)
{
    u_char                          *p;
    size_t                           keep;
    ngx_chain_t                     *cl;
    ngx_http_veto_sandbox_output_t   o;
    ngx_http_veto_sandbox_stream_t  *st;

    static const char  *names[2] = { "stdout", "stderr" };

    st = ctx->stream;

    if (st->carry_len[i]) {
        p = ngx_cpymem(st->scratch, st->carry[i], st->carry_len[i]);

        if (len) {
            ngx_memcpy(p, data, len);
        }

        offset -= st->carry_len[i];
        len += st->carry_len[i];
        data = st->scratch;
        st->carry_len[i] = 0;
    }

    keep = final ? 0 : ngx_http_veto_sandbox_utf8_tail(data, data + len);

    if (keep) {
        ngx_memcpy(st->carry[i], data + len - keep, keep);
        st->carry_len[i] = keep;
        len -= keep;
    }

    if (len == 0) {
        return NGX_OK;
    }

    if (st->chunk) {
        return st->chunk(r, ctx, i, offset, data, len);
    }

    o.data = data;
    o.len = len;
    ngx_http_veto_sandbox_output_choose(&o);

    cl = ngx_http_veto_sandbox_stream_buf(r, st, NGX_HTTP_VSB_LINE_SIZE);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(cl->buf->last, "{\"stream\":\"%s\",\"offset\":%O,\"%s\":\"",
                    names[i], offset, o.base64 ? "data_b64" : "data");
    p = ngx_http_veto_sandbox_output_write(p, &o);
    *p++ = '"';
    *p++ = '}';
    *p++ = '\n';

    cl->buf->last = p;
    cl->next = NULL;

    return ngx_http_veto_sandbox_stream_send(r, ctx, cl, 0);
}


/* An "output" event: a line of it. */
static ngx_int_t
ngx_http_veto_sandbox_stream_output(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *event, u_char *data,
    size_t len)
{
    off_t                            offset;
    json_t                          *v;
    ngx_int_t                        rc;
    ngx_uint_t                       i;
    const char                      *s;
    ngx_http_veto_sandbox_stream_t  *st;

    st = ctx->stream;

    s = json_string_value(json_object_get(event, "event"));
    v = json_object_get(event, "stream");

    i = json_is_string(v) && ngx_strcmp(json_string_value(v), "stderr") == 0;

    if (s == NULL || ngx_strcmp(s, VSB_EVENT_OUTPUT) != 0
        || !json_is_string(v)
        || (!i && ngx_strcmp(json_string_value(v), "stdout") != 0)
        || !json_is_integer(json_object_get(event, "offset"))
        || json_integer_value(json_object_get(event, "offset")) < 0)
    {
        ctx->helper.status = NGX_HTTP_BAD_GATEWAY;
        ctx->helper.error = "the sandbox helper sent a bad output event";
        return NGX_ERROR;
    }

    if (st->md[i] != NULL && EVP_DigestUpdate(st->md[i], data, len) != 1) {
        return NGX_ERROR;
    }

    st->bytes[i] += len;
    offset = (off_t) json_integer_value(json_object_get(event, "offset"));

    /* a followed exec's offsets jump over what was not retained: what
     * was held back before the jump goes out on its own */
    if (st->carry_len[i] && offset != st->next[i]) {
        rc = ngx_http_veto_sandbox_stream_line(r, ctx, i, st->next[i], NULL,
                                               0, 1);
        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }
    }

    st->next[i] = offset + len;

    return ngx_http_veto_sandbox_stream_line(r, ctx, i, offset, data, len, 0);
}


/* A "data" event of an export: its bytes as they are.  They stay in the
 * helper client's event buffer, which is not read into again until the
 * client has taken them (NGX_AGAIN). */
static ngx_int_t
ngx_http_veto_sandbox_stream_data(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *event, u_char *data,
    size_t len)
{
    const char                      *s;
    ngx_buf_t                       *b;
    ngx_chain_t                     *cl;
    ngx_http_veto_sandbox_stream_t  *st;

    st = ctx->stream;

    s = json_string_value(json_object_get(event, "event"));

    if (s == NULL || ngx_strcmp(s, VSB_EVENT_DATA) != 0
        || json_integer_value(json_object_get(event, "offset"))
           != st->bytes[0])
    {
        ctx->helper.status = NGX_HTTP_BAD_GATEWAY;
        ctx->helper.error = "the sandbox helper sent a bad data event";
        return NGX_ERROR;
    }

    cl = ngx_chain_get_free_buf(r->pool, &st->free);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    b = cl->buf;
    ngx_memzero(b, sizeof(ngx_buf_t));

    b->pos = data;
    b->last = data + len;
    b->memory = 1;
    b->flush = 1;
    b->tag = ngx_http_vsb_stream_tag;

    cl->next = NULL;

    st->bytes[0] += len;

    return ngx_http_veto_sandbox_stream_send(r, ctx, cl, 0);
}


/* The helper's reply, or its failure, as the stream's end: the code to
 * finalize with; NGX_DECLINED: nothing went out yet and it failed, so it
 * is answered as any failure is (_reply.c). */
ngx_int_t
ngx_http_veto_sandbox_stream_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                          *p;
    size_t                           len;
    json_t                          *j, *line, *v;
    ngx_int_t                        rc;
    ngx_uint_t                       i, ok;
    ngx_chain_t                     *cl;
    const char                      *code, *detail;
    ngx_http_veto_sandbox_stream_t  *st;

    st = ctx->stream;
    j = ctx->helper.json;

    if (st->gone) {
        return NGX_ERROR;
    }

    ok = ctx->helper.status == NGX_OK && json_is_true(json_object_get(j,
                                                                      "ok"));

    if (!ok && !st->started) {
        return NGX_DECLINED;
    }

    if (st->kind == NGX_HTTP_VSB_STREAM_EXPORT) {

        if (!ok) {
            /* no last chunk: the client sees the archive cut off */
            v = json_object_get(j, "error");

            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "veto_sandbox: export failed after %O bytes: %s",
                          st->bytes[0],
                          json_is_string(v) ? json_string_value(v)
                                            : ctx->helper.error);
            return NGX_ERROR;
        }

        return ngx_http_veto_sandbox_stream_send(r, ctx, NULL, 1);
    }

    /* what an exec left mid-character goes out as it is */
    for (i = 0; i < 2; i++) {
        if (st->carry_len[i]) {
            rc = ngx_http_veto_sandbox_stream_line(r, ctx, i, st->next[i],
                                                   NULL, 0, 1);
            if (rc == NGX_ERROR) {
                return NGX_ERROR;
            }
        }
    }

    if (st->end) {
        return st->end(r, ctx);
    }

    if (ok) {
        v = json_copy(j);
        if (v == NULL) {
            return NGX_ERROR;
        }

        json_object_del(v, "ok");
        json_object_del(v, "request_id");

        line = json_pack("{s:o}", st->kind == NGX_HTTP_VSB_STREAM_EXEC
                                  ? "result" : "end", v);

    } else {
        v = json_object_get(j, "error");
        code = json_is_string(v) ? json_string_value(v)
                                 : "helper_unavailable";

        v = json_object_get(j, "detail");
        detail = json_is_string(v) ? json_string_value(v)
                                   : ctx->helper.error;

        line = json_pack("{s:{s:s, s:s, s:s?}}", "error",
                         "type", "urn:veto-sandbox:problem:helper_error",
                         "code", code, "detail", detail);
        if (line != NULL) {
            v = json_object_get(line, "error");
            json_object_set_new(v, "type",
                                json_sprintf("urn:veto-sandbox:problem:%s",
                                             code));
        }
    }

    if (line == NULL) {
        return NGX_ERROR;
    }

    len = json_dumpb(line, NULL, 0, JSON_COMPACT);

    p = ngx_pnalloc(r->pool, len + 1);
    cl = ngx_alloc_chain_link(r->pool);

    if (p == NULL || cl == NULL || len == 0
        || json_dumpb(line, (char *) p, len, JSON_COMPACT) != len)
    {
        json_decref(line);
        return NGX_ERROR;
    }

    json_decref(line);
    p[len] = '\n';

    cl->buf = ngx_calloc_buf(r->pool);
    if (cl->buf == NULL) {
        return NGX_ERROR;
    }

    cl->buf->pos = p;
    cl->buf->last = p + len + 1;
    cl->buf->memory = 1;
    cl->next = NULL;

    return ngx_http_veto_sandbox_stream_send(r, ctx, cl, 1);
}


/* What a streamed exec sent, for its record: bytes and SHA-256 of each
 * stream as they went out; NULL when ctx is no streamed exec. */
json_t *
ngx_http_veto_sandbox_stream_detail(ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                           md[EVP_MAX_MD_SIZE];
    u_char                           hex[2 * EVP_MAX_MD_SIZE];
    json_t                          *d;
    ngx_uint_t                       i;
    unsigned int                     mdlen;
    ngx_http_veto_sandbox_stream_t  *st;

    static const char  *bytes[2] = { "stdout_bytes", "stderr_bytes" };
    static const char  *sha[2] = { "stdout_sha256", "stderr_sha256" };

    st = ctx->stream;

    if (st == NULL || st->kind == NGX_HTTP_VSB_STREAM_EXPORT) {
        return NULL;
    }

    d = json_pack("{s:b}", "streamed", 1);
    if (d == NULL) {
        return NULL;
    }

    for (i = 0; i < 2; i++) {
        json_object_set_new(d, bytes[i], json_integer(st->bytes[i]));

        /* a copy: the stream may go on after its record (client gone) */
        if (st->md[i] != NULL) {
            EVP_MD_CTX  *c;

            c = EVP_MD_CTX_new();

            if (c != NULL && EVP_MD_CTX_copy_ex(c, st->md[i]) == 1
                && EVP_DigestFinal_ex(c, md, &mdlen) == 1)
            {
                ngx_hex_dump(hex, md, mdlen);
                json_object_set_new(d, sha[i],
                                    json_stringn((char *) hex, 2 * mdlen));
            }

            EVP_MD_CTX_free(c);
        }
    }

    return d;
}


/* Bytes of an export sent so far (for its record). */
off_t
ngx_http_veto_sandbox_stream_sent(ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ctx->stream ? ctx->stream->bytes[0] : 0;
}
