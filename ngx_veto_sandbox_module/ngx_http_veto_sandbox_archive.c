/*
 * The archive rows: PUT /v1/sandboxes/{id}/archive?path= takes a tar
 * (plain, gzip, zstd, xz) and has it extracted under path; GET
 * …/archive?path= returns path as a tar, streamed (_stream.c) as tar
 * writes it.  The helper parses nothing of an archive: the profile's tar
 * does, inside the sandbox, as the workload's user (vsb_protocol.h:
 * extract_archive, export_archive).
 *
 * An upload is bounded before its first byte is read: the policy's
 * archive_bytes (else NGX_HTTP_VSB_ARCHIVE_BYTES) from Content-Length,
 * and again on the bytes nginx read.  It goes to the helper as the
 * frame's payload from nginx's own body buffers (its temporary file, by
 * sendfile), never copied into the worker's memory.  Its approval kind
 * is a file write's, an export's a file read's (the policy's "export").
 */

#include "ngx_http_veto_sandbox_faces.h"


typedef struct {
    ngx_str_t    name;
    const char  *type;          /* Content-Type of an export */
} ngx_http_veto_sandbox_format_t;


static ngx_http_veto_sandbox_format_t  ngx_http_veto_sandbox_formats[] = {
    { ngx_string("tar"),     "application/x-tar" },
    { ngx_string("tar.gz"),  "application/gzip" },
    { ngx_string("tar.zst"), "application/zstd" },
    { ngx_string("tar.xz"),  "application/x-xz" },
    { ngx_null_string, NULL }
};


/*
 * ?path= (absent: the workspace) and ?format=, read as the hash reads
 * them, into req; *fmt the format named (NULL: none).  NGX_DECLINED: go
 * on; else the refusal was sent, the code to end with.
 */
static ngx_int_t
ngx_http_veto_sandbox_archive_query(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req,
    ngx_http_veto_sandbox_format_t **fmt)
{
    ngx_int_t                        rc;
    ngx_str_t                        at;
    const char                      *why;
    ngx_http_veto_sandbox_qarg_t     q[2];
    ngx_http_veto_sandbox_format_t  *f;

    *fmt = NULL;

    q[0].name = "path";
    q[1].name = "format";

    rc = ngx_http_veto_sandbox_hash_query_args(r->pool, &ctx->in.args, q, 2,
                                               &why, &at);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_ABORT) {
        return ngx_http_veto_sandbox_bad_query(r, &at, why);
    }

    if (q[0].value.data != NULL) {
        rc = ngx_http_veto_sandbox_path_check(r, "path", &q[0].value, 1);
        if (rc != NGX_DECLINED) {
            return rc;
        }

        ctx->path = q[0].value;

        if (json_object_set_new(req, "path",
                                ngx_http_veto_sandbox_json_ngx_str(&ctx->path))
            != 0)
        {
            return ngx_http_veto_sandbox_bad_field(r, "bad_path", "path",
                                                   "\"path\" must be UTF-8");
        }
    }

    if (q[1].value.data == NULL) {
        return NGX_DECLINED;
    }

    for (f = ngx_http_veto_sandbox_formats; f->type; f++) {
        if (f->name.len == q[1].value.len
            && ngx_strncmp(f->name.data, q[1].value.data, f->name.len) == 0)
        {
            break;
        }
    }

    if (f->type == NULL) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "format",
                                               "\"format\" is tar, tar.gz, "
                                               "tar.zst or tar.xz");
    }

    *fmt = f;

    if (json_object_set_new(req, "format",
                            json_stringn((char *) f->name.data, f->name.len))
        != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* The bound of an upload: the policy's archive_bytes, else the default. */
static uint64_t
ngx_http_veto_sandbox_archive_bound(ngx_http_veto_sandbox_ctx_t *ctx)
{
    uint64_t  n;

    n = ctx->rule->ceiling[NGX_HTTP_VSB_L_ARCHIVE_BYTES];

    return n ? ngx_min(n, VSB_MAX_STREAM_PAYLOAD) : NGX_HTTP_VSB_ARCHIVE_BYTES;
}


/* 413 naming archive_bytes */
ngx_int_t
ngx_http_veto_sandbox_archive_too_large(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    uint64_t  bound;
    u_char    detail[128];

    bound = ngx_http_veto_sandbox_archive_bound(ctx);

    /* the body may be unread: never take it for the next request */
    r->keepalive = 0;
    r->lingering_close = 1;

    ngx_snprintf(detail, sizeof(detail) - 1,
                 "the archive is larger than archive_bytes (%uL)%Z", bound);

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                         "over_ceiling", (char *) detail,
                                         json_pack("{s:s, s:I}", "limit",
                                                   VSB_LIMIT_ARCHIVE_BYTES,
                                                   "ceiling",
                                                   (json_int_t) bound));
}


/* Is Content-Length over the bound?  (before the body is read)
 * NGX_DECLINED: no; else the 413 was sent, the code to end with. */
ngx_int_t
ngx_http_veto_sandbox_archive_early(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    if (r->headers_in.content_length_n > 0
        && (uint64_t) r->headers_in.content_length_n
           > ngx_http_veto_sandbox_archive_bound(ctx))
    {
        return ngx_http_veto_sandbox_archive_too_large(r, ctx);
    }

    return NGX_DECLINED;
}


/* PUT …/archive?path=&format=: the body is the archive */
ngx_int_t
ngx_http_veto_sandbox_build_archive_in(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    off_t                            size;
    json_t                          *req;
    ngx_int_t                        rc;
    ngx_chain_t                     *cl;
    ngx_http_veto_sandbox_format_t  *fmt;

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_veto_sandbox_archive_query(r, ctx, req, &fmt);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    size = 0;

    for (cl = ctx->in.body; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
    }

    /* a chunked body had no Content-Length to check first */
    if ((uint64_t) size > ngx_http_veto_sandbox_archive_bound(ctx)) {
        return ngx_http_veto_sandbox_archive_too_large(r, ctx);
    }

    if (size == 0) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "body",
                                               "the body is the archive: a "
                                               "tar, tar.gz, tar.zst or "
                                               "tar.xz; it is empty");
    }

    ctx->req = req;
    ctx->payload = ctx->in.body;
    ctx->payload_len = (size_t) size;

    /* streamed to tar as it is sent, within the archive's own bound;
     * tar runs under the sandbox's deadline */
    ctx->helper.stream_payload = 1;
    ctx->helper.extra_read_ms = ngx_http_veto_sandbox_wait_ms(ctx);

    return NGX_DECLINED;
}


/* Does the client take gzip (Accept-Encoding, q not 0)? */
static ngx_uint_t
ngx_http_veto_sandbox_accepts_gzip(ngx_http_request_t *r)
{
    u_char                             *p, *last, *tok, *end;
    ngx_table_elt_t                    *h;
    ngx_http_veto_sandbox_header_it_t   it;

    it.part = NULL;

    while ((h = ngx_http_veto_sandbox_header_next(&r->headers_in.headers,
                                                  "Accept-Encoding", &it))
           != NULL)
    {
        p = h->value.data;
        last = p + h->value.len;

        while (p < last) {
            while (p < last && (*p == ' ' || *p == ',' || *p == '\t')) {
                p++;
            }

            tok = p;

            while (p < last && *p != ',') {
                p++;
            }

            end = ngx_strlchr(tok, p, ';');

            if (end == NULL) {
                end = p;
            }

            while (end > tok && (end[-1] == ' ' || end[-1] == '\t')) {
                end--;
            }

            if (end - tok != 4 || ngx_strncasecmp(tok, (u_char *) "gzip", 4)
                                  != 0)
            {
                continue;
            }

            /* "gzip;q=0" (0, 0.0, 0.00, 0.000) refuses it */
            tok = ngx_strlcasestrn(end, p, (u_char *) "q=", 1);

            if (tok == NULL) {
                return 1;
            }

            for (tok += 2; tok < p && (*tok == '0' || *tok == '.'); tok++) {
                /* void */
            }

            return tok < p && *tok >= '1' && *tok <= '9';
        }
    }

    return 0;
}


/* GET …/archive?path=&format=: the archive streamed as tar writes it */
ngx_int_t
ngx_http_veto_sandbox_build_archive_out(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *req;
    ngx_int_t                        rc;
    const char                      *encoding;
    ngx_http_veto_sandbox_format_t  *fmt;

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_veto_sandbox_archive_query(r, ctx, req, &fmt);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    /* a tools/call's twin answers to its sink, in one piece */
    if (ctx->sink) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST,
                                             "not_streamable",
                                             "an archive export is streamed: "
                                             "GET /v1/sandboxes/{id}/archive",
                                             NULL);
    }

    encoding = NULL;

    if (fmt == NULL) {
        fmt = &ngx_http_veto_sandbox_formats[0];

        /* a tar, sent gzip-encoded when the client takes that */
        if (ngx_http_veto_sandbox_accepts_gzip(r)) {
            encoding = "gzip";

            if (json_object_set_new(req, "format", json_string("tar.gz"))
                != 0)
            {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }
        }
    }

    if (ngx_http_veto_sandbox_stream_export(r, ctx, fmt->type, encoding)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->req = req;

    return NGX_DECLINED;
}


/* PUT …/archive: what was extracted, and from what (size, sha256) */
ngx_int_t
ngx_http_veto_sandbox_reply_archive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                                           json_incref(ctx->helper.json));
}


/* Archives in and out: path, format, size and sha256 (of the upload, or
 * of the export as tar wrote it), and for an export what went out. */
void
ngx_http_veto_sandbox_record_archive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t     *d, *j;
    ngx_str_t   detail;

    j = ok ? ctx->helper.json : NULL;
    detail.len = 0;

    d = json_pack("{s:s%, s:O?, s:O?, s:O?}",
                  "path", ctx->path.len ? (char *) ctx->path.data : ".",
                  ctx->path.len ? ctx->path.len : 1,
                  "format", j ? json_object_get(j, "format")
                              : json_object_get(ctx->req, "format"),
                  "size", json_object_get(j, "size"),
                  "sha256", json_object_get(j, "sha256"));

    if (d != NULL) {
        if (ctx->stream != NULL) {
            json_object_set_new(d, "bytes_sent",
                          json_integer(ngx_http_veto_sandbox_stream_sent(ctx)));
        }

        ngx_http_veto_sandbox_json_text(r, d, &detail);
        json_decref(d);
    }

    ngx_http_veto_sandbox_audit(r, ctx, ok ? "allowed" : "error",
                                ok ? NULL : error, NULL,
                                detail.len ? &detail : NULL,
                                ok ? NGX_HTTP_OK : 0);
}
