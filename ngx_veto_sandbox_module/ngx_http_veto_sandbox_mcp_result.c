/*
 * A tools/call's REST twin answered: its response, as the REST API would
 * have sent it, becomes the tool's result (ctx->sink).  Whatever the op
 * said goes to the agent as an MCP CallToolResult in a JSON-RPC response:
 *
 *   2xx    the tool's presenter (_mcp_present.c): a text an agent reads,
 *          and the data as structuredContent
 *   202    "approval required": not an error; the approval id, what the
 *          reviewer sees, and how to retry
 *   4xx/5xx  isError: the problem's detail, with what the agent can do
 *          (scope, ceiling, quota and when to retry, Redis down, an
 *          approval not (yet) usable)
 *   401    stays HTTP: the token is no good any more (revoked), and the
 *          client must get another (its challenge names the metadata)
 *
 * The headers the op pushed for its REST response (Location,
 * Retry-After, Content-Disposition, ...) are read here and dropped.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"


static json_t *ngx_http_veto_sandbox_mcp_approval_required(
    ngx_http_request_t *r, ngx_http_veto_sandbox_mcp_call_t *call,
    json_t *rest);
static json_t *ngx_http_veto_sandbox_mcp_problem(ngx_http_request_t *r,
    ngx_uint_t status, json_t *rest, ngx_str_t *retry_after);


static ngx_str_t *
ngx_http_veto_sandbox_mcp_out_header(ngx_http_request_t *r, const char *name)
{
    ngx_table_elt_t                    *h;
    ngx_http_veto_sandbox_header_it_t   it;

    it.part = NULL;
    h = ngx_http_veto_sandbox_header_next(&r->headers_out.headers, name, &it);

    return h ? &h->value : NULL;
}


ngx_int_t
ngx_http_veto_sandbox_mcp_result(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, ngx_chain_t *body, size_t len)
{
    u_char                            *data, *p;
    json_t                            *rest, *result;
    ngx_str_t                          retry, *v;
    ngx_chain_t                       *cl;
    ngx_http_veto_sandbox_ctx_t       *ctx;
    ngx_http_veto_sandbox_mcp_call_t  *call;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    call = ctx->mcp;

    /* the body in one piece */
    if (body->next == NULL) {
        data = body->buf->pos;

    } else {
        data = ngx_pnalloc(r->pool, len ? len : 1);
        if (data == NULL) {
            return NGX_ERROR;
        }

        for (p = data, cl = body; cl; cl = cl->next) {
            if (cl->buf->last > cl->buf->pos) {
                p = ngx_cpymem(p, cl->buf->pos,
                               cl->buf->last - cl->buf->pos);
            }
        }
    }

    if (len == 0) {
        data = (u_char *) "";       /* an empty body may have no memory */
    }

    if (status == NGX_HTTP_UNAUTHORIZED) {
        /* the token went bad while the call was on its way: HTTP's */
        return ngx_http_veto_sandbox_send(r, status, type, data, len);
    }

    ngx_str_null(&retry);

    v = ngx_http_veto_sandbox_mcp_out_header(r, "Retry-After");
    if (v != NULL) {
        retry = *v;
    }

    /* nothing the REST response carried in its headers goes out */
    if (ngx_list_init(&r->headers_out.headers, r->pool, 8,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    rest = NULL;

    if (ngx_strstrn((u_char *) type, "json", 4 - 1) != NULL) {
        rest = json_loadb((char *) data, len, 0, NULL);

        if (rest == NULL) {
            ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                          "veto_sandbox: MCP tool \"%s\": its op answered "
                          "JSON that does not parse", call->tool->name);
            return NGX_ERROR;
        }
    }

    if (status == NGX_HTTP_ACCEPTED) {
        result = ngx_http_veto_sandbox_mcp_approval_required(r, call, rest);

    } else if (status >= NGX_HTTP_MOVED_PERMANENTLY) {
        result = ngx_http_veto_sandbox_mcp_problem(r, status, rest, &retry);

    } else {
        result = json_object();

        if (result != NULL
            && call->tool->present(r, call, rest, data, len, result)
               != NGX_OK)
        {
            json_decref(result);
            result = NULL;
        }
    }

    json_decref(rest);

    if (result == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_mcp_respond(r, NGX_HTTP_OK, call->id,
                                             result, NULL);
}


/* 202: a human must approve the twin's request first. */
static json_t *
ngx_http_veto_sandbox_mcp_approval_required(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest)
{
    u_char      *text, *p, expires[32];
    char        *summary;
    size_t       len;
    json_t      *id, *result;
    json_int_t   threshold, at;
    const char  *action;

    id = json_object_get(rest, "approval_id");
    action = json_string_value(json_object_get(rest, "action"));
    threshold = json_integer_value(json_object_get(rest, "threshold"));
    at = json_integer_value(json_object_get(rest, "expires_at"));

    if (!json_is_string(id) || action == NULL) {
        return NULL;
    }

    summary = json_dumps(json_object_get(rest, "summary"), JSON_COMPACT);
    if (summary == NULL) {
        return NULL;
    }

    ngx_http_veto_sandbox_mcp_time(expires, (time_t) at);

    len = 1024 + ngx_strlen(summary) + ngx_strlen(action)
          + 3 * json_string_length(id) + 2 * ngx_strlen(call->tool->name);

    text = ngx_pnalloc(r->pool, len);
    if (text == NULL) {
        free(summary);
        return NULL;
    }

    p = ngx_snprintf(text, len,
                     "Approval required: the policy wants a human to approve "
                     "this %s before it runs. Nothing has been done yet.\n"
                     "Approval id: %s (needs %L approval%s; expires %s).\n"
                     "What the reviewer sees: %s\n"
                     "Tell your user what is waiting. Follow it with "
                     "approval_status {\"approval_id\": \"%s\"}; once it is "
                     "approved, call %s again with exactly the same "
                     "arguments plus \"approval_id\": \"%s\" (one use).",
                     action, json_string_value(id), threshold,
                     threshold == 1 ? "" : "s", expires, summary,
                     json_string_value(id), call->tool->name,
                     json_string_value(id));

    free(summary);

    result = json_object();
    if (result == NULL) {
        return NULL;
    }

    if (ngx_http_veto_sandbox_mcp_text(result, (char *) text, p - text)
        != NGX_OK
        || json_object_set_new(result, "structuredContent",
                    json_pack("{s:s, s:O, s:s, s:I, s:s, s:O?, s:O?, "
                              "s:{s:s, s:{s:O}}}",
                              "status", "approval_required",
                              "approval_id", id,
                              "action", action,
                              "threshold", threshold,
                              "expires_at", (char *) expires,
                              "summary", json_object_get(rest, "summary"),
                              "request_hash",
                              json_object_get(rest, "request_hash"),
                              "retry", "tool", call->tool->name,
                              "add_arguments", "approval_id", id))
           != 0
        || json_object_set_new(result, "isError", json_false()) != 0)
    {
        json_decref(result);
        return NULL;
    }

    return result;
}


/*
 * What an agent can do about a refusal, by its problem code; NULL: the
 * problem's own detail says it.
 */
static const char *
ngx_http_veto_sandbox_mcp_advice(const char *code, json_t *rest)
{
    static struct {
        const char  *code;
        const char  *advice;
    } advice[] = {
        { "insufficient_scope",
          "Your token does not carry the scope this tool needs (named "
          "above); ask whoever issues your tokens for one that does." },
        { "approval_expired",
          "That approval expired before it was used. Call the tool again "
          "without approval_id to ask a human anew." },
        { "approval_used",
          "That approval was used already: one approval covers one call. "
          "Call the tool again without approval_id to ask anew." },
        { "approval_mismatch",
          "That approval was given for another call (other arguments, "
          "another tool or another agent). Retry with exactly the "
          "arguments of the call that asked for it." },
        { "unknown_profile",
          "No profile of that name exists on this host. Choose one of "
          "those named (list_profiles describes them)." },
        { "approval_invalid",
          "No such approval is yours. Use the approval_id an \"approval "
          "required\" result gave, or call without approval_id." },
        { "quota_exceeded",
          "A quota of your tenant or agent is reached; see when to retry "
          "above (destroying a sandbox you no longer need frees a "
          "concurrent-sandbox slot at once)." },
        { "redis_unavailable",
          "The gateway cannot reach its decision store, so nothing was "
          "allowed and nothing ran. Retry in a few seconds." },
        { "helper_unavailable",
          "The sandbox service is not reachable now; nothing ran. Retry "
          "in a few seconds." },
        { "over_ceiling",
          "The policy caps this value; ask for less (the limit is named "
          "above)." },
        { "profile_not_allowed",
          "Your policy does not allow that profile; list_profiles lists "
          "the ones you may use." },
        { "profile_unavailable",
          "That profile's image is gone from this host; waiting will not "
          "bring it back. Choose another profile that list_profiles marks "
          "available, or tell your user." },
        { "not_found",
          "Check the id: it names no sandbox (or approval) of yours; "
          "list_sandboxes shows yours." },
        { NULL, NULL }
    };

    ngx_uint_t  i;

    if (ngx_strcmp(code, "approval_denied") == 0) {
        return "A reviewer denied that approval. Do not retry it; tell "
               "your user.";
    }

    if (ngx_strcmp(code, "approval_pending") == 0
        || ngx_strcmp(code, "approval_not_approved") == 0)
    {
        return "No human has approved that yet; nothing ran. Follow it "
               "with approval_status and retry once it is approved.";
    }

    for (i = 0; advice[i].code; i++) {
        if (ngx_strcmp(code, advice[i].code) == 0) {
            return advice[i].advice;
        }
    }

    return NULL;
}


/* 3xx-5xx: the problem as a tool error. */
static json_t *
ngx_http_veto_sandbox_mcp_problem(ngx_http_request_t *r, ngx_uint_t status,
    json_t *rest, ngx_str_t *retry_after)
{
    u_char      *text, *p, *last;
    size_t       i;
    json_t      *result, *structured, *v, *e;
    ngx_int_t    retry;
    const char  *type, *code, *detail, *title, *advice;

    type = json_string_value(json_object_get(rest, "type"));
    title = json_string_value(json_object_get(rest, "title"));
    detail = json_string_value(json_object_get(rest, "detail"));

    code = "error";

    /* urn:veto-sandbox:problem:<code> */
    if (type) {
        code = type + ngx_strlen(type);

        while (code > type && code[-1] != ':') {
            code--;
        }
    }

    retry = retry_after->len ? ngx_atoi(retry_after->data, retry_after->len)
                             : NGX_ERROR;

    advice = ngx_http_veto_sandbox_mcp_advice(code, rest);

    text = ngx_pnalloc(r->pool, 4096);
    if (text == NULL) {
        return NULL;
    }

    last = text + 4096;

    p = ngx_slprintf(text, last, "Error: %s%s%s [%s, HTTP %ui].",
                     title ? title : "refused", detail ? ": " : "",
                     detail ? detail : "", code, status);

    v = json_object_get(rest, "field");
    if (json_is_string(v) && json_string_length(v) <= 128) {
        p = ngx_slprintf(p, last, " Argument: %s.", json_string_value(v));
    }

    v = json_object_get(rest, "scope");
    if (json_is_string(v) && json_string_length(v) <= 128) {
        p = ngx_slprintf(p, last, " Scope needed: %s.", json_string_value(v));
    }

    if (retry != NGX_ERROR) {
        p = ngx_slprintf(p, last, " Retry in %i s.", retry);
    }

    /* what the problem names beyond its detail: a reviewer's reason, the
     * profiles to choose from, tar's words (bounded: the text is) */
    v = json_object_get(rest, "reason");
    if (json_is_string(v) && ngx_strcmp(code, "approval_denied") == 0) {
        p = ngx_slprintf(p, last, " The reviewer said: %*s.",
                         ngx_min(json_string_length(v), 512),
                         json_string_value(v));
    }

    v = json_object_get(rest, "profiles");
    if (json_is_array(v) && json_array_size(v)) {
        p = ngx_slprintf(p, last, " Profiles you may use:");
        json_array_foreach(v, i, e) {
            if (json_is_string(e) && json_string_length(e) <= 64) {
                p = ngx_slprintf(p, last, "%s %s", i ? "," : "",
                                 json_string_value(e));
            }
        }
        p = ngx_slprintf(p, last, ".");
    }

    v = json_object_get(rest, "stderr");
    if (json_is_string(v)) {
        p = ngx_slprintf(p, last, " tar said: %*s",
                         ngx_min(json_string_length(v), 1024),
                         json_string_value(v));
    }

    if (advice) {
        p = ngx_slprintf(p, last, " %s", advice);
    }

    /* a detail that is not UTF-8 once cut cannot be in a JSON string */
    structured = json_deep_copy(rest ? rest : json_object());
    if (structured == NULL) {
        return NULL;
    }

    json_object_set_new(structured, "status", json_integer(status));

    if (retry != NGX_ERROR) {
        json_object_set_new(structured, "retry_after_s",
                            json_integer((json_int_t) retry));
    }

    result = json_object();

    if (result == NULL
        || ngx_http_veto_sandbox_mcp_text(result, (char *) text, p - text)
           != NGX_OK)
    {
        json_decref(result);
        json_decref(structured);

        return ngx_http_veto_sandbox_mcp_error_result("Error: the request "
                                                      "was refused");
    }

    json_object_set_new(result, "structuredContent", structured);
    json_object_set_new(result, "isError", json_true());

    return result;
}
