/*
 * Responses: JSON bodies, RFC 9457 problem+json errors, RFC 6750
 * WWW-Authenticate challenges, and a header/body filter that turns any
 * other error on an API path (nginx's own 400/404/405/413/500/..., a
 * "return 404") into problem+json as well.  An op run for an MCP
 * tools/call responds to its sink (ctx->sink) instead of the client.
 */

#include "ngx_http_veto_sandbox_base.h"


#define NGX_HTTP_VSB_PROBLEM_TYPE  "urn:veto-sandbox:problem:"


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;

ngx_http_veto_sandbox_routed_failed_pt  ngx_http_veto_sandbox_routed_failed;


typedef struct {
    ngx_uint_t   status;
    const char  *title;
    const char  *code;
    const char  *detail;       /* for nginx's own errors */
} ngx_http_veto_sandbox_status_t;


static ngx_http_veto_sandbox_status_t  ngx_http_veto_sandbox_statuses[] = {
    { 400, "Bad Request", "bad_request", "the request is malformed" },
    { 401, "Unauthorized", "unauthorized", "authentication is required" },
    { 403, "Forbidden", "forbidden", "the request is not permitted" },
    { 404, "Not Found", "not_found", "no such resource" },
    { 405, "Method Not Allowed", "method_not_allowed",
      "the method is not allowed on this resource" },
    { 408, "Request Timeout", "request_timeout",
      "the request was not received in time" },
    { 409, "Conflict", "conflict",
      "the resource is in a state that does not allow this" },
    { 410, "Gone", "gone", "the resource has ended" },
    { 411, "Length Required", "length_required",
      "a Content-Length is required" },
    { 413, "Content Too Large", "body_too_large",
      "the request body exceeds client_max_body_size" },
    { 414, "URI Too Long", "uri_too_long", "the request URI is too long" },
    { 415, "Unsupported Media Type", "unsupported_media_type",
      "the request body has the wrong media type" },
    { 421, "Misdirected Request", "misdirected",
      "the request was sent to the wrong host" },
    { 422, "Unprocessable Content", "unprocessable",
      "the request cannot be processed" },
    { 429, "Too Many Requests", "too_many_requests",
      "too many requests" },
    { 500, "Internal Server Error", "internal", "internal error" },
    { 501, "Not Implemented", "not_implemented", "not implemented" },
    { 502, "Bad Gateway", "bad_gateway", "the sandbox helper failed" },
    { 503, "Service Unavailable", "unavailable",
      "the service is unavailable" },
    { 504, "Gateway Timeout", "timeout", "the sandbox helper timed out" },
    { 507, "Insufficient Storage", "no_space",
      "the sandbox is out of space" },
    { 0, "Error", "error", "error" }
};


static ngx_http_veto_sandbox_status_t *
ngx_http_veto_sandbox_status(ngx_uint_t status)
{
    ngx_http_veto_sandbox_status_t  *s;

    for (s = ngx_http_veto_sandbox_statuses; s->status; s++) {
        if (s->status == status) {
            break;
        }
    }

    return s;
}


ngx_int_t
ngx_http_veto_sandbox_send(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, u_char *data, size_t len)
{
    ngx_buf_t    *b;
    ngx_chain_t   out;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = data;
    b->last = data + len;
    b->memory = len ? 1 : 0;

    out.buf = b;
    out.next = NULL;

    return ngx_http_veto_sandbox_send_chain(r, status, type, &out, len);
}


/* out: memory buffers of len bytes in all; the last one ends the body */
ngx_int_t
ngx_http_veto_sandbox_send_chain(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, ngx_chain_t *out, off_t len)
{
    ngx_int_t                      rc;
    ngx_chain_t                   *cl;
    ngx_http_veto_sandbox_ctx_t   *ctx;
    ngx_http_veto_sandbox_sink_pt  sink;

    ctx = ngx_http_veto_sandbox_get_ctx(r);
    if (ctx == NULL || out == NULL) {
        return NGX_ERROR;
    }

    if (ctx->sink) {
        /* once: what the sink sends goes to the client */
        sink = ctx->sink;
        ctx->sink = NULL;

        return sink(r, status, type, out, (size_t) len);
    }

    ctx->own_response = 1;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    r->headers_out.content_type.data = (u_char *) type;
    r->headers_out.content_type.len = ngx_strlen(type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    /* responses are per caller; no cache may keep them */
    if (ngx_http_veto_sandbox_header(r, "Cache-Control", "no-store")
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    for (cl = out; cl->next; cl = cl->next) { /* void */ }

    cl->buf->last_buf = (r == r->main) ? 1 : 0;
    cl->buf->last_in_chain = 1;

    return ngx_http_output_filter(r, out);
}


/* Adds an output header; name and value must outlive the request. */
ngx_int_t
ngx_http_veto_sandbox_header(ngx_http_request_t *r, const char *name,
    const char *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value.data = (u_char *) value;
    h->value.len = ngx_strlen(value);
    h->lowcase_key = NULL;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_send_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *body)
{
    u_char  *p;
    size_t   len;

    if (body == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_veto_sandbox_json_dump(r->pool, body, 0, 1, &len);
    if (p == NULL) {
        json_decref(body);
        return NGX_ERROR;
    }

    p[len++] = '\n';

    json_decref(body);

    return ngx_http_veto_sandbox_send(r, status, "application/json", p, len);
}


static u_char *
ngx_http_veto_sandbox_problem_body(ngx_http_request_t *r, ngx_uint_t status,
    const char *code, const char *detail, json_t *extra, size_t *len)
{
    u_char                          *p;
    json_t                          *j;
    ngx_http_veto_sandbox_status_t  *s;
    char                             type[128];

    s = ngx_http_veto_sandbox_status(status);

    if (code == NULL) {
        code = s->code;
    }

    if (detail == NULL) {
        detail = s->detail;
    }

    ngx_snprintf((u_char *) type, sizeof(type) - 1, NGX_HTTP_VSB_PROBLEM_TYPE
                 "%s%Z", code);

    j = json_pack("{s:s, s:s, s:i, s:s}", "type", type, "title", s->title,
                  "status", (int) status, "detail", detail);

    if (j == NULL) {
        /* detail was not UTF-8; the status still has to go out */
        j = json_pack("{s:s, s:s, s:i}", "type", type, "title", s->title,
                      "status", (int) status);
        if (j == NULL) {
            json_decref(extra);
            return NULL;
        }
    }

    if (extra) {
        json_object_update(j, extra);
        json_decref(extra);
    }

    *len = json_dumpb(j, NULL, 0, JSON_COMPACT);

    p = ngx_pnalloc(r->pool, *len + 1);
    if (p == NULL) {
        json_decref(j);
        return NULL;
    }

    *len = json_dumpb(j, (char *) p, *len, JSON_COMPACT);
    p[(*len)++] = '\n';

    json_decref(j);

    return p;
}


ngx_int_t
ngx_http_veto_sandbox_problem(ngx_http_request_t *r, ngx_uint_t status,
    const char *code, const char *detail, json_t *extra)
{
    u_char  *p;
    size_t   len;

    /* an unread body must not be taken for the next request */
    if (ngx_http_discard_request_body(r) != NGX_OK) {
        r->keepalive = 0;
    }

    p = ngx_http_veto_sandbox_problem_body(r, status, code, detail, extra,
                                           &len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (status == NGX_HTTP_SERVICE_UNAVAILABLE
        && ngx_http_veto_sandbox_header(r, "Retry-After", "1") != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send(r, status, "application/problem+json",
                                      p, len);
}


/* the challenges' extra parameters for r; NULL: none (_mcp.c sets it) */
ngx_http_veto_sandbox_challenge_pt  ngx_http_veto_sandbox_challenge_extra;


/*
 * Who puts a refusal answered by ngx_http_veto_sandbox_deny() on the
 * tenant's audit record: the pipeline's ngx_http_veto_sandbox_audit_
 * denied(), set by ngx_http_veto_sandbox_identity_init(); NULL: nobody.
 */
ngx_http_veto_sandbox_deny_record_pt  ngx_http_veto_sandbox_deny_record;


static void
ngx_http_veto_sandbox_deny_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status)
{
    if (ngx_http_veto_sandbox_deny_record) {
        ngx_http_veto_sandbox_deny_record(r, ctx, code, status);
    }
}


/* 401 or 403 after identity, policy or scope refused the request. */
ngx_int_t
ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char      *p, *rm;
    size_t       len;
    ngx_str_t   *d;
    const char  *reason;

    d = &ctx->decision;
    reason = ctx->reason ? ctx->reason : "invalid token";

    /* on the MCP endpoint, where its protected resource metadata is */
    rm = ngx_http_veto_sandbox_challenge_extra
         ? ngx_http_veto_sandbox_challenge_extra(r) : (u_char *) "";
    if (rm == NULL) {
        return NGX_ERROR;
    }

#define ngx_http_vsb_is(s)                                                    \
    (d->len == sizeof(s) - 1 && ngx_strncmp(d->data, s, d->len) == 0)

    if (ngx_http_vsb_is("deny:invalid_token")) {
        ngx_http_veto_sandbox_deny_audit(r, ctx, "invalid_token",
                                         NGX_HTTP_UNAUTHORIZED);

        len = sizeof("Bearer realm=\"veto-sandbox\", error=\"invalid_token\", "
                     "error_description=\"\"") - 1 + ngx_strlen(reason)
              + ngx_strlen(rm);

        p = ngx_pnalloc(r->pool, len + 1);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(p, "Bearer realm=\"veto-sandbox\", "
                    "error=\"invalid_token\", error_description=\"%s\"%s%Z",
                    reason, rm);

        if (ngx_http_veto_sandbox_header(r, "WWW-Authenticate", (char *) p)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_UNAUTHORIZED,
                                             "invalid_token", reason, NULL);
    }

    if (ngx_http_vsb_is("deny:insufficient_scope")) {
        ngx_http_veto_sandbox_deny_audit(r, ctx, "insufficient_scope",
                                         NGX_HTTP_FORBIDDEN);

        len = sizeof("Bearer realm=\"veto-sandbox\", "
                     "error=\"insufficient_scope\", scope=\"\"") - 1
              + ngx_strlen(reason) + ngx_strlen(rm);

        p = ngx_pnalloc(r->pool, len + 1);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(p, "Bearer realm=\"veto-sandbox\", "
                    "error=\"insufficient_scope\", scope=\"%s\"%s%Z", reason,
                    rm);

        if (ngx_http_veto_sandbox_header(r, "WWW-Authenticate", (char *) p)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_FORBIDDEN,
                                   "insufficient_scope",
                                   "the token lacks the scope this needs",
                                   json_pack("{s:s}", "scope", reason));
    }

    if (ngx_http_vsb_is("deny:policy")) {
        ngx_http_veto_sandbox_deny_audit(r, ctx, "policy",
                                         NGX_HTTP_FORBIDDEN);

        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_FORBIDDEN,
                                   "policy",
                                   "the policy has no rule for this tenant",
                                   NULL);
    }

#undef ngx_http_vsb_is

    /* no token at all: RFC 6750 3.1, no error code */
    p = ngx_pnalloc(r->pool, sizeof("Bearer realm=\"veto-sandbox\"")
                             + ngx_strlen(rm));
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(p, "Bearer realm=\"veto-sandbox\"%s%Z", rm);

    if (ngx_http_veto_sandbox_header(r, "WWW-Authenticate", (char *) p)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_UNAUTHORIZED,
                                         "unauthorized",
                                         "a bearer token is required", NULL);
}


/*
 * nginx's own 413 (client_max_body_size, before or while the body is
 * read) names the limit that applies to the caller: a file body over
 * the policy's file_bytes is over file_bytes, as the module's own check
 * says; anything else is over client_max_body_size.
 */
static void
ngx_http_veto_sandbox_too_large(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char **code, const char **detail,
    json_t **extra)
{
    off_t                      max;
    uint64_t                   ceiling;
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
    max = clcf->client_max_body_size;

    ceiling = (ctx->file_body && ctx->rule)
              ? ctx->rule->ceiling[NGX_HTTP_VSB_L_FILE_BYTES] : 0;

    if (ceiling
        && ((uint64_t) max >= ceiling
            || r->headers_in.content_length_n > (off_t) ceiling))
    {
        *code = "over_ceiling";
        *detail = "the file is larger than the policy allows";
        *extra = json_pack("{s:s, s:I}", "limit", VSB_LIMIT_FILE_BYTES,
                           "ceiling", (json_int_t) ceiling);
        return;
    }

    *code = "body_too_large";
    *detail = "the request body is larger than this gateway takes "
              "(client_max_body_size)";
    *extra = json_pack("{s:s, s:I}", "limit", "client_max_body_size",
                       "ceiling", (json_int_t) max);
}


/*
 * nginx's own 502 or 504 on the hop to a sandbox's owner: the owner died
 * (or stopped answering) before its lease ran out, so the lease still
 * names it.  The agent hears what it would hear once the lease is gone:
 * 503 host_unavailable naming the host.  Waiting helps (Retry-After)
 * only when the request never reached the owner; when it did, it may
 * have run, and repeating it is the agent's call.
 */
static ngx_int_t
ngx_http_veto_sandbox_host_unavailable(ngx_http_request_t *r,
    ngx_str_t *host, ngx_uint_t sent, const char **code,
    const char **detail, json_t **extra)
{
    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "veto_sandbox: host \"%V\" did not answer a request "
                  "routed to it (%s): %ui", host,
                  sent ? "after it was sent" : "before it was sent",
                  r->headers_out.status);

    if (!sent
        && ngx_http_veto_sandbox_header(r, "Retry-After", "1") != NGX_OK)
    {
        return NGX_ERROR;
    }

    r->headers_out.status = NGX_HTTP_SERVICE_UNAVAILABLE;

    *code = "host_unavailable";
    *detail = sent
              ? "the gateway host that holds this sandbox (\"host\") "
                "stopped answering while it had this request: it may have "
                "run there.  Ask for the sandbox (or the exec) before "
                "repeating it"
              : "the gateway host that holds this sandbox (\"host\") is "
                "not answering (its lease has not run out yet); nothing "
                "ran.  If it comes back, the sandbox answers again; if it "
                "stays away past the grace period, the sandbox is ended "
                "as host_lost and its files are gone with the host";
    *extra = json_pack("{s:s%, s:b}", "host", host->data, host->len,
                       "request_sent", (int) sent);

    return NGX_OK;
}


/* Any other error on an API path leaves as problem+json too. */
static ngx_int_t
ngx_http_veto_sandbox_header_filter(ngx_http_request_t *r)
{
    u_char                            *p;
    size_t                             len;
    json_t                            *extra;
    ngx_buf_t                         *b;
    ngx_str_t                          host;
    ngx_uint_t                         sent;
    const char                        *code, *detail;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    if (r->headers_out.status < NGX_HTTP_BAD_REQUEST || r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (vscf == NULL || !ngx_http_veto_sandbox_protected(r, vscf)) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_veto_sandbox_get_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    if (ctx->own_response) {
        return ngx_http_next_header_filter(r);
    }

    code = NULL;
    detail = NULL;
    extra = NULL;

    switch (ngx_http_veto_sandbox_routed_failed
            ? ngx_http_veto_sandbox_routed_failed(r, &host, &sent)
            : NGX_DECLINED)
    {

    case NGX_OK:
        /* the owner's host answered: its problem+json goes on as it is */
        return ngx_http_next_header_filter(r);

    case NGX_ABORT:
        if (ngx_http_veto_sandbox_host_unavailable(r, &host, sent, &code,
                                                   &detail, &extra)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        break;

    default:
        if (r->headers_out.status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
            ngx_http_veto_sandbox_too_large(r, ctx, &code, &detail, &extra);
        }
    }

    p = ngx_http_veto_sandbox_problem_body(r, r->headers_out.status, code,
                                           detail, extra, &len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = p;
    b->last = p + len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    ctx->problem = b;
    ctx->filter_error = 1;

    ngx_http_clear_content_length(r);
    ngx_http_clear_accept_ranges(r);
    ngx_http_clear_last_modified(r);
    ngx_http_clear_etag(r);

    r->headers_out.content_length_n = len;
    ngx_str_set(&r->headers_out.content_type, "application/problem+json");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.charset.len = 0;

    r->filter_need_in_memory = 1;

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_veto_sandbox_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t                   out, *cl;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    if (ctx == NULL || !ctx->filter_error) {
        return ngx_http_next_body_filter(r, in);
    }

    /* the original error body is replaced: consume it */
    for (cl = in; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
        cl->buf->file_pos = cl->buf->file_last;
    }

    if (ctx->problem == NULL) {
        return NGX_OK;
    }

    out.buf = ctx->problem;
    out.next = NULL;
    ctx->problem = NULL;

    return ngx_http_next_body_filter(r, &out);
}


ngx_int_t
ngx_http_veto_sandbox_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_veto_sandbox_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_veto_sandbox_body_filter;

    return NGX_OK;
}


/* Finishes a request that waited (for Redis, for the helper), unless the
 * next step took it over (NGX_DONE); then what it posted runs. */
void
ngx_http_veto_sandbox_resume(ngx_http_request_t *r, ngx_int_t rc)
{
    ngx_connection_t  *c;

    if (rc == NGX_DONE) {
        return;
    }

    c = r->connection;

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


json_t *
ngx_http_veto_sandbox_json_ngx_str(ngx_str_t *s)
{
    return json_stringn((const char *) s->data, s->len);
}


/* NGX_HTTP_VSB_DUMP_GUESS: most bodies and helper requests are smaller */
#define NGX_HTTP_VSB_DUMP_GUESS  2048

/*
 * j's compact JSON in pool memory, "before" bytes into it and with
 * "after" bytes free behind it (*len: the JSON's own; 0 if jansson could
 * not encode it).  One encoding for what fits a first guess, two for the
 * rest, rather than always two (the size, then the bytes): encoding is
 * what a small reply costs most (jansson checks every object and array
 * for loops with a formatted pointer in a hash table).
 */
u_char *
ngx_http_veto_sandbox_json_dump(ngx_pool_t *pool, json_t *j, size_t before,
    size_t after, size_t *len)
{
    u_char  *p;
    size_t   n;

    p = ngx_pnalloc(pool, before + NGX_HTTP_VSB_DUMP_GUESS + after);
    if (p == NULL) {
        return NULL;
    }

    n = json_dumpb(j, (char *) p + before, NGX_HTTP_VSB_DUMP_GUESS,
                   JSON_COMPACT);

    if (n > NGX_HTTP_VSB_DUMP_GUESS) {
        p = ngx_pnalloc(pool, before + n + after);
        if (p == NULL) {
            return NULL;
        }

        n = json_dumpb(j, (char *) p + before, n, JSON_COMPACT);
    }

    *len = n;

    return p;
}


/* to's fields names (NULL-ended) copied from from, null where from has
 * none (json_pack()'s "O?" for a list of names): what a record keeps of
 * a helper's reply */
ngx_int_t
ngx_http_veto_sandbox_json_pick(json_t *to, json_t *from,
    const char *const *names)
{
    json_t  *v;

    for ( /* void */ ; *names != NULL; names++) {
        v = json_object_get(from, *names);

        if (json_object_set(to, *names, v != NULL ? v : json_null()) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


void
ngx_http_veto_sandbox_json_cleanup(void *data)
{
    json_decref((json_t *) data);
}
