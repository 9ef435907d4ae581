/*
 * The helper's side of an op: run() forwards the request built for it
 * (ctx->req, ctx->payload), and the reply comes back here exactly once:
 * on record first (the op's record), then as HTTP: the op's mapper for a
 * success, the helper's error name as the problem code otherwise.  Every
 * path ends the request with ngx_http_finalize_request().
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_output.h"


/* tar's words kept in a problem (the helper keeps 4 KiB of them) */
#define NGX_HTTP_VSB_PROBLEM_STDERR  2048


static ngx_int_t ngx_http_veto_sandbox_sent(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc);
static void ngx_http_veto_sandbox_pinged(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static void ngx_http_veto_sandbox_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_transport_error(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
static ngx_int_t ngx_http_veto_sandbox_reply_error(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


/* run() of the helper ops: sends ctx->req to the helper. */
ngx_int_t
ngx_http_veto_sandbox_forward(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t              *ping;
    ngx_int_t            rc;
    ngx_msec_t           ceiling;
    ngx_pool_cleanup_t  *cln;

    if (ctx->decision.len == 0) {
        ngx_str_set(&ctx->decision, "allow");
    }

    /* an ended sandbox no helper can be asked about: its routing
     * record's answer, as the helper's */
    if (ctx->route_local) {
        ctx->helper.json = ngx_http_veto_sandbox_where_ended(r, ctx);
        if (ctx->helper.json == NULL) {
            return ngx_http_veto_sandbox_sent(r, ctx, NGX_ERROR);
        }

        ctx->helper.status = NGX_OK;
        ngx_http_veto_sandbox_reply(r, ctx);
        return NGX_DONE;
    }

    /* the helper's exec timeout ceiling, as this worker heard it of late
     * (_heard.c) */
    ceiling = ctx->helper.ask_timeout ? ngx_http_veto_sandbox_heard_ceiling()
                                      : 0;
    if (ceiling) {
        ctx->helper.extra_read_ms = ceiling;
        ctx->helper.ask_timeout = 0;
    }

    if (!ctx->helper.ask_timeout) {
        rc = ngx_http_veto_sandbox_helper_send(r, ctx, ctx->req, ctx->payload,
                                               ctx->payload_len,
                                               ngx_http_veto_sandbox_reply);
        return ngx_http_veto_sandbox_sent(r, ctx, rc);
    }

    /* how long the exec may run is the helper's to say: its ceiling */

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return ngx_http_veto_sandbox_sent(r, ctx, NGX_ERROR);
    }

    ping = json_pack("{s:s}", "op", VSB_OP_PING);
    if (ping == NULL) {
        return ngx_http_veto_sandbox_sent(r, ctx, NGX_ERROR);
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = ping;

    rc = ngx_http_veto_sandbox_helper_send(r, ctx, ping, NULL, 0,
                                           ngx_http_veto_sandbox_pinged);

    return ngx_http_veto_sandbox_sent(r, ctx, rc);
}


/* What forward() answers for helper_send()'s rc: NGX_DONE when the
 * reply will finish the request. */
static ngx_int_t
ngx_http_veto_sandbox_sent(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc)
{
    if (rc == NGX_OK) {
        return NGX_DONE;
    }

    /* the gate may hold a quota slot: give it back */
    ngx_http_veto_sandbox_after(r, ctx);

    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                             "helper_unavailable",
                                             "the sandbox helper is not "
                                             "reachable",
                                             json_pack("{s:b}", "retry_safe",
                                                       1));
    }

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                         "internal",
                                         "the helper request could not be "
                                         "built", NULL);
}


/*
 * The helper's ping before an exec whose timeout is the sandbox's own:
 * heard (_heard.c), the read deadline covers the helper's ceiling
 * (limits_max.timeout_s), then the exec goes out.  A failed ping is the
 * exec's failure.
 */
static void
ngx_http_veto_sandbox_pinged(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                        rc;
    ngx_msec_t                       ceiling;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    if (h->status != NGX_OK) {
        /* the exec itself never went out */
        h->sent = 0;
        ngx_http_veto_sandbox_reply(r, ctx);
        return;
    }

    ngx_http_veto_sandbox_heard(h->json, r->connection->log);

    ceiling = ngx_http_veto_sandbox_heard_ceiling();

    if (ceiling == 0) {
        /* a reply without "ok" (or out of memory): nothing heard */
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "veto_sandbox: the helper's ping named no timeout "
                      "ceiling; an exec is waited for up to %d s",
                      NGX_HTTP_VSB_MAX_WAIT_S);
        ceiling = (ngx_msec_t) NGX_HTTP_VSB_MAX_WAIT_S * 1000;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "veto_sandbox: exec waited for up to the helper's "
                   "ceiling of %M ms", ceiling);

    h->extra_read_ms = ceiling;
    h->ask_timeout = 0;

    /* the exchange starts over, on the ping's kept connection or a new
     * one (helper_send() resets the per-call flags, sent included) */
    ngx_http_veto_sandbox_helper_reset(h);     /* the ping's reply: freed
                                                  with the pool */

    rc = ngx_http_veto_sandbox_helper_send(r, ctx, ctx->req, ctx->payload,
                                           ctx->payload_len,
                                           ngx_http_veto_sandbox_reply);

    rc = ngx_http_veto_sandbox_sent(r, ctx, rc);

    if (rc != NGX_DONE) {
        ngx_http_finalize_request(r, rc);
    }
}


/* The helper answered (or could not): on record, then the op's mapper
 * for a success, the helper's error as problem+json otherwise. */
static void
ngx_http_veto_sandbox_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *j;
    ngx_int_t                        rc;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    /* audit records, quota slots: whatever the outcome */
    ngx_http_veto_sandbox_after(r, ctx);

    /* a streamed reply ends its own way once it has begun (_stream.c) */
    if (ctx->stream) {
        rc = ngx_http_veto_sandbox_stream_reply(r, ctx);

        if (rc != NGX_DECLINED) {
            ngx_http_finalize_request(r, rc);
            return;
        }
    }

    if (h->status != NGX_OK) {
        rc = ngx_http_veto_sandbox_transport_error(r, ctx);
        ngx_http_finalize_request(r, rc);
        return;
    }

    j = h->json;

    if (!json_is_true(json_object_get(j, "ok"))) {
        rc = ngx_http_veto_sandbox_reply_error(r, ctx);
        ngx_http_finalize_request(r, rc);
        return;
    }

    json_object_del(j, "ok");
    json_object_del(j, "request_id");

    rc = ctx->op->reply(r, ctx);

    ngx_http_finalize_request(r, rc);
}


/*
 * The helper could not be asked, or did not answer: 503 (it may be
 * restarting: Retry-After), 502 for a reply that makes no sense.  Whether
 * the request may simply be sent again: yes if the helper never had all
 * of it (it acts on whole frames only) or the method is idempotent (GET,
 * HEAD, PUT: a write replaces the file atomically, DELETE); not for a
 * POST it had: the sandbox may exist, the exec may have run in part.
 */
static ngx_int_t
ngx_http_veto_sandbox_transport_error(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                          *p, *detail;
    size_t                           len;
    ngx_str_t                       *method;
    ngx_uint_t                       status, safe, i;
    const char                      *code, *error, *more;
    ngx_http_veto_sandbox_helper_t  *h;

    static const char  *idempotent[] = { "GET", "HEAD", "PUT", "DELETE",
                                         NULL };

    h = &ctx->helper;

    status = h->status;
    code = "bad_gateway";

    if (status == NGX_HTTP_GATEWAY_TIME_OUT
        || status == NGX_HTTP_SERVICE_UNAVAILABLE)
    {
        status = NGX_HTTP_SERVICE_UNAVAILABLE;
        code = "helper_unavailable";

    } else if (status != NGX_HTTP_BAD_GATEWAY) {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        code = "internal";
    }

    /* the op's own method: an MCP tools/call runs a REST twin (ctx->in) */
    method = ctx->in.set ? &ctx->in.method_name : &r->method_name;

    safe = !h->sent;

    for (i = 0; !safe && idempotent[i]; i++) {
        safe = (method->len == ngx_strlen(idempotent[i])
                && ngx_strncmp(method->data, idempotent[i], method->len)
                   == 0);
    }

    more = safe ? "; the request may be sent again"
                : "; the request may have been carried out in part (a "
                  "sandbox created, a command run): check its state "
                  "(GET /v1/sandboxes/{id}) before sending it again";

    error = h->error ? h->error : "the sandbox helper failed";
    len = ngx_strlen(error) + ngx_strlen(more) + 1;

    detail = ngx_pnalloc(r->pool, len);
    if (detail == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(detail, error, ngx_strlen(error));
    p = ngx_cpymem(p, more, ngx_strlen(more));
    *p = '\0';

    return ngx_http_veto_sandbox_problem(r, status, code, (char *) detail,
                                         json_pack("{s:b}", "retry_safe",
                                                   (int) safe));
}


typedef struct {
    const char  *error;
    ngx_uint_t   status;
    const char  *detail;        /* NULL: the helper's */
} ngx_http_veto_sandbox_errmap_t;


/* The helper's errors as HTTP.  Those the module's own request caused
 * (a malformed one: a module and helper that disagree) are 502, like a
 * helper that makes no sense; so is a helper that refuses this gateway:
 * no client can fix either, waiting does not help, an operator must. */
static ngx_http_veto_sandbox_errmap_t  ngx_http_veto_sandbox_errors[] = {
    { VSB_E_NOT_FOUND,          NGX_HTTP_NOT_FOUND, "no such sandbox" },
    { VSB_E_ENDED,              NGX_HTTP_VSB_GONE, NULL },
    { VSB_E_OVER_CEILING,       NGX_HTTP_VSB_UNPROCESSABLE, NULL },
    { VSB_E_BAD_TYPE,           NGX_HTTP_BAD_REQUEST, NULL },
    { VSB_E_BAD_VALUE,          NGX_HTTP_BAD_REQUEST, NULL },
    { VSB_E_BAD_PATH,           NGX_HTTP_BAD_REQUEST, NULL },
    { VSB_E_NOT_A_FILE,         NGX_HTTP_BAD_REQUEST, NULL },
    { VSB_E_NOT_A_DIRECTORY,    NGX_HTTP_BAD_REQUEST, NULL },
    { VSB_E_BAD_ARCHIVE,        NGX_HTTP_VSB_UNPROCESSABLE, NULL },
    { VSB_E_BAD_CWD,            NGX_HTTP_VSB_UNPROCESSABLE, NULL },
    { VSB_E_TIMED_OUT,          NGX_HTTP_VSB_UNPROCESSABLE, NULL },
    { VSB_E_BAD_JSON,           NGX_HTTP_BAD_GATEWAY,
      "the sandbox helper could not read the gateway's request" },
    { VSB_E_UNKNOWN_FIELD,      NGX_HTTP_BAD_GATEWAY,
      "the sandbox helper could not read the gateway's request" },
    { VSB_E_MISSING_FIELD,      NGX_HTTP_BAD_GATEWAY,
      "the sandbox helper could not read the gateway's request" },
    { VSB_E_UNKNOWN_OP,         NGX_HTTP_BAD_GATEWAY,
      "the sandbox helper does not know this operation" },
    { VSB_E_BAD_FRAME,          NGX_HTTP_BAD_GATEWAY,
      "the sandbox helper could not read the gateway's request" },
    { VSB_E_NOT_PERMITTED,      NGX_HTTP_BAD_GATEWAY,
      "the sandbox helper does not accept this gateway" },
    { VSB_E_CAPACITY,           NGX_HTTP_SERVICE_UNAVAILABLE,
      "the host runs as many sandboxes as it may: delete one that is no "
      "longer needed, or retry later" },
    { VSB_E_BUSY,               NGX_HTTP_VSB_TOO_MANY_REQUESTS, NULL },
    { VSB_E_FILE_TOO_LARGE,     NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, NULL },
    { VSB_E_FRAME_TOO_LARGE,    NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, NULL },
    { VSB_E_NO_SPACE,           NGX_HTTP_VSB_INSUFFICIENT_STORAGE, NULL },
    { VSB_E_IO,                 NGX_HTTP_INTERNAL_SERVER_ERROR, NULL },
    { VSB_E_EXEC_FAILED,        NGX_HTTP_INTERNAL_SERVER_ERROR, NULL },
    { VSB_E_TERMINATION_FAILED, NGX_HTTP_INTERNAL_SERVER_ERROR, NULL },
    { VSB_E_UNAVAILABLE,        NGX_HTTP_SERVICE_UNAVAILABLE, NULL },
    { VSB_E_EPOCH_MISMATCH,     NGX_HTTP_SERVICE_UNAVAILABLE,
      "the sandbox's ownership record and this host's helper disagreed "
      "twice about which helper run holds it" },
    { VSB_E_CREDENTIAL_UNAVAILABLE, NGX_HTTP_VSB_UNPROCESSABLE, NULL },
    { VSB_E_INTERNAL,           NGX_HTTP_INTERNAL_SERVER_ERROR, NULL },
    { VSB_E_PAUSED,             NGX_HTTP_CONFLICT,
      "the sandbox is paused: resume it first (POST "
      "/v1/sandboxes/{id}/resume)" },
    { VSB_E_SNAPSHOT_PROFILE,   NGX_HTTP_CONFLICT,
      "the snapshot's profile no longer exists on this host, or its image "
      "is another now: it cannot be forked" },
    { VSB_E_UNSUPPORTED_FILE,   NGX_HTTP_VSB_UNPROCESSABLE, NULL },
    { NULL,                     NGX_HTTP_BAD_GATEWAY,
      "the sandbox helper answered an unknown error" }
};


/* A helper error's "stderr" (tar's words) in a problem: at most
 * NGX_HTTP_VSB_PROBLEM_STDERR bytes, a control byte or non-ASCII byte
 * as '?' (newlines and tabs kept), a cut said so. */
static ngx_int_t
ngx_http_veto_sandbox_reply_stderr(json_t *extra, json_t *v)
{
    u_char         buf[NGX_HTTP_VSB_PROBLEM_STDERR + sizeof(" [...]")];
    size_t         len, i;
    const u_char  *s;

    s = (const u_char *) json_string_value(v);
    len = ngx_min(json_string_length(v), NGX_HTTP_VSB_PROBLEM_STDERR);

    for (i = 0; i < len; i++) {
        buf[i] = ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
                  || s[i] >= 0x7f) ? '?' : s[i];
    }

    if (len < json_string_length(v)) {
        i = ngx_cpymem(buf + len, " [...]", sizeof(" [...]") - 1) - buf;
    }

    if (i == 0) {
        return NGX_OK;
    }

    return json_object_set_new(extra, "stderr",
                               json_stringn((char *) buf, i)) == 0
           ? NGX_OK : NGX_ERROR;
}


/* A failed helper reply as problem+json: the helper's error name is the
 * problem code; field, limit and step come along. */
static ngx_int_t
ngx_http_veto_sandbox_reply_error(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *j, *extra, *v;
    ngx_uint_t                       status;
    const char                      *error, *detail, *field;
    ngx_http_veto_sandbox_errmap_t  *e;

    j = ctx->helper.json;

    v = json_object_get(j, "error");
    error = json_is_string(v) ? json_string_value(v) : "internal";

    /* the agent can choose another profile at once (_profiles.c) */
    if (ngx_strcmp(error, VSB_E_PROFILE_UNAVAILABLE) == 0) {
        return ngx_http_veto_sandbox_profile_unavailable(r, ctx);
    }

    v = json_object_get(j, "detail");
    detail = json_is_string(v) ? json_string_value(v) : NULL;

    v = json_object_get(j, "field");
    field = json_is_string(v) ? json_string_value(v) : NULL;

    /* a fork on a host whose snapshot store cannot be mounted idmapped:
     * waiting does not help, a plain create (or another host) does */
    if (ngx_strcmp(error, VSB_E_UNAVAILABLE) == 0 && field
        && ngx_strcmp(field, "from_snapshot") == 0)
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_CONFLICT,
                                   "forks_unavailable",
                                   "this host cannot fork snapshots (its "
                                   "snapshot store's file system cannot be "
                                   "mounted idmapped; the helper's log says "
                                   "why): create a sandbox without "
                                   "from_snapshot",
                                   json_pack("{s:s}", "field",
                                             "from_snapshot"));
    }

    /* a create of a profile the host does not have (_profiles.c) */
    if (ngx_strcmp(error, VSB_E_BAD_VALUE) == 0 && field
        && ngx_strcmp(field, "profile") == 0
        && (ctx->op->flags & NGX_HTTP_VSB_ROW_MAKES))
    {
        return ngx_http_veto_sandbox_profile_missing(r, ctx);
    }

    for (e = ngx_http_veto_sandbox_errors; e->error; e++) {
        if (ngx_strcmp(e->error, error) == 0) {
            break;
        }
    }

    if (e->error == NULL) {
        error = "helper_error";
    }

    status = e->status;

    if (status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "veto_sandbox: helper answered %s: %s", error,
                      detail ? detail : "");
    }

    if (e->detail) {
        detail = e->detail;
    }

    /* the egress proxy is down: the helper restarts it, so waiting helps
     * (503 carries Retry-After); nftables missing is the one state it
     * cannot leave by itself, and the helper's detail says so */
    if (ngx_strcmp(error, VSB_E_UNAVAILABLE) == 0) {
        detail = (detail && ngx_strstr(detail, "nftables"))
                 ? "network egress is unavailable on this host (nftables "
                   "does not work); only \"network\": \"none\" works"
                 : "network egress is restarting (the egress proxy is "
                   "being started again); retry in a moment";
    }

    extra = json_object();
    if (extra == NULL) {
        return NGX_ERROR;
    }

    if (status < NGX_HTTP_INTERNAL_SERVER_ERROR
        || status == NGX_HTTP_VSB_INSUFFICIENT_STORAGE
        || ngx_strcmp(error, VSB_E_TERMINATION_FAILED) == 0)
    {
        if (field) {
            json_object_set_new(extra, "field", json_string(field));
        }

        if (json_is_string(v = json_object_get(j, "limit"))) {
            json_object_set(extra, "limit", v);
        }

        if (json_is_string(v = json_object_get(j, "step"))) {
            json_object_set(extra, "step", v);
        }
    }

    /* what tar said of an archive it refused (the helper's head and
     * tail of its stderr): bounded again, printable ASCII only */
    if (json_is_string(v = json_object_get(j, "stderr"))
        && ngx_http_veto_sandbox_reply_stderr(extra, v) != NGX_OK)
    {
        json_decref(extra);
        return NGX_ERROR;
    }

    /* 410: it ended, and why (GET tells the rest) */
    if (json_is_string(v = json_object_get(j, "end_reason"))) {
        json_object_set(extra, "end_reason", v);
    }

    if (ngx_strcmp(error, VSB_E_CREDENTIAL_UNAVAILABLE) == 0) {
        /* the policy allows it, the proxy refused its secret at load
         * (the operator's to fix: the detail says why, never a value) */
        json_object_set_new(extra, "field",
                            json_string(ctx->op->flags & NGX_HTTP_VSB_ROW_MAKES
                                        ? "credentials" : "credentials.add"));

    } else if (ngx_strcmp(error, VSB_E_NOT_FOUND) == 0 && field
               && ngx_strcmp(field, "credentials_remove") == 0)
    {
        /* the sandbox is the caller's: it does not hold that one */
        detail = "the sandbox holds no credential of that name";
        json_object_set_new(extra, "field",
                            json_string("credentials.remove"));

    } else if (ngx_strcmp(error, VSB_E_NOT_FOUND) == 0 && field
               && ngx_strstr(field, "credentials"))
    {
        /* the policy allows a name the helper has no binding for */
        error = "credential_unavailable";
        status = NGX_HTTP_VSB_UNPROCESSABLE;
        json_object_set_new(extra, "field",
                            json_string(ngx_strcmp(field, "credentials") == 0
                                        ? "credentials.add" : "credentials"));

    } else if (ngx_strcmp(error, VSB_E_NOT_FOUND) == 0) {

        if (field && ngx_strcmp(field, "path") == 0 && ctx->path.len) {
            /* the sandbox is the caller's: only a file is missing */
            error = "file_not_found";
            detail = "no such file or directory in the sandbox";
            json_object_set_new(extra, "path",
                            ngx_http_veto_sandbox_json_ngx_str(&ctx->path));

        } else if (field && (ngx_strcmp(field, "snapshot") == 0
                             || ngx_strcmp(field, "from_snapshot") == 0
                             || ngx_strcmp(field, "since") == 0))
        {
            /* the sandbox, if any, is the caller's; the snapshot is
             * unknown, or another owner's, or on another host */
            error = "snapshot_not_found";
            detail = "no such snapshot of yours on this host";

        } else if (field && ngx_strcmp(field, "exec") == 0) {
            /* the sandbox is there (and the caller's) */
            detail = "no such exec in this sandbox (an ended background "
                     "exec is forgotten once newer ones end)";

        } else {
            /* nothing that tells apart "never existed" and "not yours" */
            json_object_clear(extra);
        }

    } else if (ngx_strcmp(error, VSB_E_BUSY) == 0) {

        if ((field && ngx_strcmp(field, "id") == 0)
            || (json_is_string(v = json_object_get(j, "limit"))
                && ngx_strcmp(json_string_value(v), "forks") == 0))
        {
            /* destroying, or could not be destroyed, or a snapshot with
             * live forks: waiting on it does not help (a DELETE may be
             * retried) */
            status = NGX_HTTP_CONFLICT;

        } else if (ngx_http_veto_sandbox_header(r, "Retry-After", "1")
                   != NGX_OK)
        {
            json_decref(extra);
            return NGX_ERROR;
        }

    } else if (ngx_strcmp(error, VSB_E_FILE_TOO_LARGE) == 0
               || ngx_strcmp(error, VSB_E_FRAME_TOO_LARGE) == 0)
    {
        if (ctx->op->body == NGX_HTTP_VSB_BODY_JSON) {
            /* an exec's stdin is the frame's payload */
            json_object_set_new(extra, "field", json_string("stdin"));
            detail = "stdin is larger than the sandbox helper takes "
                     "(its max_file_bytes)";

        } else if (ctx->op->body == NGX_HTTP_VSB_BODY_ARCHIVE) {
            json_object_set_new(extra, "limit",
                                json_string(VSB_LIMIT_ARCHIVE_BYTES));
            detail = "the archive is larger than the sandbox helper takes "
                     "(its max_archive_bytes)";

        } else if (json_is_string(v = json_object_get(j, "limit"))
                   && ngx_strcmp(json_string_value(v),
                                 VSB_LIMIT_ARCHIVE_BYTES) == 0)
        {
            /* an export: the request is fine, the archive too big */
            status = NGX_HTTP_VSB_UNPROCESSABLE;
            detail = "the archive is larger than the sandbox helper sends "
                     "(its max_archive_bytes): export a smaller directory "
                     "(?path=)";

        } else if (json_is_string(v = json_object_get(j, "limit"))
                   && ngx_strcmp(json_string_value(v),
                                 VSB_LIMIT_CHANGES_BYTES) == 0)
        {
            /* a change set: the request is fine, the reply too big */
            status = NGX_HTTP_VSB_UNPROCESSABLE;
            detail = "the change set is larger than the sandbox helper "
                     "sends (its max_file_bytes): ask for json rather "
                     "than a diff or tar, or since a later snapshot";

        } else {
            json_object_set_new(extra, "limit",
                                json_string(VSB_LIMIT_FILE_BYTES));

            if (ctx->op->body == NGX_HTTP_VSB_BODY_FILE) {
                detail = "the file is larger than the sandbox helper takes "
                         "(its max_file_bytes)";

            } else {
                /* the request is fine, the file is too big to send back */
                status = NGX_HTTP_VSB_UNPROCESSABLE;
                detail = "the file is larger than the sandbox helper "
                         "reads (its max_file_bytes): read it in parts "
                         "with an exec (split, head -c)";
            }
        }

    } else if (ngx_strcmp(error, VSB_E_OVER_CEILING) == 0) {
        ngx_str_set(&ctx->decision, "deny:over_ceiling");

    } else if (ngx_strcmp(error, VSB_E_BAD_CWD) == 0
               && json_is_string(v = json_object_get(ctx->req, "cwd")))
    {
        /* the exec's cwd as asked: nothing ran */
        json_object_set(extra, "path", v);
    }

    return ngx_http_veto_sandbox_problem(r, status, error, detail, extra);
}


/* the helper's reply as it is (delete, write, PATCH) */
ngx_int_t
ngx_http_veto_sandbox_reply_json(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    /* a delete's: the ENDED record it left */
    ngx_http_veto_sandbox_ended_view(json_object_get(ctx->helper.json,
                                                     "ended"));

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                                           json_incref(ctx->helper.json));
}


/* appends the bytes start..end to the chain as a memory buffer */
static ngx_int_t
ngx_http_veto_sandbox_link(ngx_http_request_t *r, ngx_chain_t ***ll,
    u_char *start, u_char *end)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    if (start == end) {
        return NGX_OK;
    }

    b = ngx_calloc_buf(r->pool);
    cl = ngx_alloc_chain_link(r->pool);

    if (b == NULL || cl == NULL) {
        return NGX_ERROR;
    }

    b->pos = start;
    b->last = end;
    b->memory = 1;

    cl->buf = b;
    cl->next = NULL;

    **ll = cl;
    *ll = &cl->next;

    return NGX_OK;
}


/*
 * The exec reply: the helper's JSON without the lengths, and each output
 * stream as a JSON string or base64 (_output.c), whichever is smaller.
 * Built as a chain: a stream that is its own encoding is sent from the
 * helper's payload as it lies; the others are encoded once, into one
 * buffer, and then the payload is let go.  What a worker holds for one
 * reply is at most the payload P and 4/3 of it (README, "Exec").
 */
ngx_int_t
ngx_http_veto_sandbox_reply_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                          *buf, *p, *seg;
    size_t                           head, size;
    json_t                          *j, *out;
    json_int_t                       olen, elen;
    ngx_uint_t                       i, n, verbatim;
    ngx_chain_t                     *cl, **ll, *chain;
    ngx_http_veto_sandbox_output_t   o[2];
    ngx_http_veto_sandbox_helper_t  *h;

    static const char  *names[2] = { "stdout", "stderr" };

    h = &ctx->helper;
    j = h->json;

    olen = json_integer_value(json_object_get(j, "stdout_len"));
    elen = json_integer_value(json_object_get(j, "stderr_len"));

    /* each bounded first: the sum of two helper numbers must not wrap */
    if (olen < 0 || elen < 0 || (size_t) olen > h->payload_len
        || (size_t) elen != h->payload_len - (size_t) olen)
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                             "bad_gateway",
                                             "the sandbox helper's output "
                                             "lengths do not add up", NULL);
    }

    out = json_copy(j);
    if (out == NULL) {
        return NGX_ERROR;
    }

    json_object_del(out, "stdout_len");
    json_object_del(out, "stderr_len");

    o[0].data = h->payload;
    o[0].len = (size_t) olen;
    o[1].data = h->payload + olen;
    o[1].len = (size_t) elen;

    /* {head,"stdout":"..","stdout_encoding":"base64","stderr":"..",
     *  "stderr_encoding":"base64"}\n, the streams that are their own
     * encoding left out of the buffer */

    head = json_dumpb(out, NULL, 0, JSON_COMPACT);
    size = head
           + 2 * sizeof(",\"stdout\":\"\",\"stdout_encoding\":\"base64\"");
    verbatim = 0;

    for (i = 0; i < 2; i++) {
        ngx_http_veto_sandbox_output_choose(&o[i]);

        if (ngx_http_veto_sandbox_output_verbatim(&o[i])) {
            verbatim++;

        } else {
            size += o[i].size;
        }
    }

    buf = ngx_pnalloc(r->pool, size);
    if (buf == NULL) {
        json_decref(out);
        return NGX_ERROR;
    }

    n = json_dumpb(out, (char *) buf, head, JSON_COMPACT);
    json_decref(out);

    if (n != head || head < 2) {
        return NGX_ERROR;
    }

    /* the object stays open: drop its '}' */
    p = buf + head - 1;
    seg = buf;
    chain = NULL;
    ll = &chain;

    for (i = 0; i < 2; i++) {
        p = ngx_sprintf(p, "%s\"%s\":\"", (i || head > 2) ? "," : "",
                        names[i]);

        if (ngx_http_veto_sandbox_output_verbatim(&o[i]) && o[i].len) {
            /* what is in buf so far, then the stream from the payload */
            if (ngx_http_veto_sandbox_link(r, &ll, seg, p) != NGX_OK
                || ngx_http_veto_sandbox_link(r, &ll, o[i].data,
                                              o[i].data + o[i].len)
                   != NGX_OK)
            {
                return NGX_ERROR;
            }

            seg = p;

        } else {
            p = ngx_http_veto_sandbox_output_write(p, &o[i]);
        }

        p = ngx_sprintf(p, "\",\"%s_encoding\":\"%s\"", names[i],
                        o[i].base64 ? "base64" : "utf-8");
    }

    *p++ = '}';
    *p++ = '\n';

    if (ngx_http_veto_sandbox_link(r, &ll, seg, p) != NGX_OK) {
        return NGX_ERROR;
    }

    /* nothing points into the payload any more: let it go now, not with
     * the request (it is a large allocation of the pool); the buffer of
     * events (_stream.c) is not the payload's own */
    if (verbatim == 0 && h->in && h->in != h->ev) {
        ngx_pfree(r->pool, h->in);
        h->in = NULL;
        h->payload = NULL;
        h->payload_len = 0;
    }

    size = 0;

    for (cl = chain; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
    }

    return ngx_http_veto_sandbox_send_chain(r, NGX_HTTP_OK,
                                            "application/json", chain,
                                            (off_t) size);
}
