/*
 * The humans' side: GET /v1/approvals[?state=&limit=&cursor=],
 * GET /v1/approvals/{id}, POST /v1/approvals/{id}/approve and .../deny,
 * and GET /v1/audit.  Lists come in pages (a limit, and a byte budget
 * the scripts keep), each with the cursor of the next as "next".
 *
 * Tenant-scoped by the token: another tenant's approval answers 404 (the
 * Lua scripts compare the record's tenant).  Reviewing needs the review
 * scope; the requester may read its own approval but never decide it
 * (the scripts refuse reviewer == requester).  Runs after the Redis gate
 * (revocation); every answer needs Redis, so Redis down means 503.  Each
 * op's run() issues one command and names the answer (ctx->answer) that
 * reads its reply.
 *
 * The review op group, whole: its rows (approval.list, .get, .approve,
 * .deny, audit.read), their run()s and reply readers, and the MCP tool
 * an agent follows its own approval with (approval_status: entry, twin,
 * presenter).  The op table (_ops.c) and the MCP tool table
 * (_mcp_tool_table.c) take them from the arrays at the end of this file.
 * The unit tests link it as data (NGX_HTTP_VSB_OPS_DATA_ONLY: the rows
 * only); the MCP fuzz target adds NGX_HTTP_VSB_OPS_TOOLS for the tool.
 */

#include "ngx_http_veto_sandbox_faces.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


#ifndef NGX_HTTP_VSB_OPS_DATA_ONLY

#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_audit.h"
#include "ngx_http_veto_sandbox_metrics.h"
#include "ngx_http_veto_sandbox_fields.h"


static ngx_int_t ngx_http_veto_sandbox_review_listed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_review_got(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_review_approved(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_review_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_review_records(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);


/* an approve's or deny's body: docs/openapi.json's Decision */
static const char  *ngx_http_veto_sandbox_review_known[] = {
    NGX_HTTP_VSB_FIELDS_DECISION, NULL
};


/* every review is answered from Redis: without it there is nothing to
 * show */
static const char  ngx_http_veto_sandbox_review_no_redis[] =
    "approvals and audit need veto_sandbox_redis";


#define ngx_http_vsb_rstr(e)                                                  \
    ((e)->type == REDIS_REPLY_STRING || (e)->type == REDIS_REPLY_STATUS)


/* ?name= decoded into a NUL terminated copy; empty when absent */
static ngx_int_t
ngx_http_veto_sandbox_query(ngx_http_request_t *r, const char *name,
    ngx_str_t *out)
{
    u_char     *dst, *src;
    ngx_str_t   arg;

    ngx_str_null(out);

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &arg) != NGX_OK
        || arg.len == 0)
    {
        return NGX_OK;
    }

    dst = ngx_pnalloc(r->pool, arg.len + 1);
    if (dst == NULL) {
        return NGX_ERROR;
    }

    out->data = dst;
    src = arg.data;

    ngx_unescape_uri(&dst, &src, arg.len, 0);

    out->len = dst - out->data;
    *dst = '\0';

    return NGX_OK;
}


/* ?name= as unix time in milliseconds, 0 when absent; NGX_DECLINED when
 * it is not a number */
static ngx_int_t
ngx_http_veto_sandbox_review_ms(ngx_http_request_t *r, const char *name,
    uint64_t *ms)
{
    ngx_int_t  n;
    ngx_str_t  arg;

    *ms = 0;

    if (ngx_http_veto_sandbox_query(r, name, &arg) != NGX_OK) {
        return NGX_ERROR;
    }

    if (arg.len) {
        n = ngx_atoi(arg.data, arg.len);
        if (n == NGX_ERROR) {
            return NGX_DECLINED;
        }
        *ms = (uint64_t) n;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_review_bad(ngx_http_request_t *r, const char *field,
    const char *detail)
{
    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST, "bad_value",
                                         detail,
                                         json_pack("{s:s}", "field", field));
}


/* ?limit=: 1..max, def when absent; NGX_DECLINED when it is not */
static ngx_int_t
ngx_http_veto_sandbox_review_limit(ngx_http_request_t *r, ngx_uint_t def,
    ngx_uint_t max, ngx_uint_t *limit)
{
    ngx_int_t  n;
    ngx_str_t  arg;

    if (ngx_http_veto_sandbox_query(r, "limit", &arg) != NGX_OK) {
        return NGX_ERROR;
    }

    *limit = def;

    if (arg.len) {
        n = ngx_atoi(arg.data, arg.len);
        if (n < 1 || (ngx_uint_t) n > max) {
            return NGX_DECLINED;
        }

        *limit = (ngx_uint_t) n;
    }

    return NGX_OK;
}


/* GET /v1/approvals[?state=&limit=&cursor=] */
static ngx_int_t
ngx_http_veto_sandbox_review_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                            rc;
    ngx_str_t                            state, cursor;
    ngx_uint_t                           limit;
    ngx_http_veto_sandbox_redis_call_t   call;

    rc = ngx_http_veto_sandbox_answer_start(r, ctx, &call,
                                        ngx_http_veto_sandbox_review_listed,
                                        ngx_http_veto_sandbox_review_no_redis);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    if (ngx_http_veto_sandbox_query(r, "state", &state) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (state.len
        && ngx_strcmp(state.data, "pending") != 0
        && ngx_strcmp(state.data, "approved") != 0
        && ngx_strcmp(state.data, "denied") != 0
        && ngx_strcmp(state.data, "expired") != 0
        && ngx_strcmp(state.data, "consumed") != 0)
    {
        return ngx_http_veto_sandbox_review_bad(r, "state",
                               "state is one of pending, approved, "
                               "denied, expired, consumed");
    }

    rc = ngx_http_veto_sandbox_review_limit(r, NGX_HTTP_VSB_APPROVAL_PAGE,
                                            NGX_HTTP_VSB_APPROVAL_PAGE_MAX,
                                            &limit);
    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_review_bad(r, "limit",
                               "\"limit\" is 1..200 (100 when absent)");
    }

    if (rc != NGX_OK
        || ngx_http_veto_sandbox_query(r, "cursor", &cursor) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (cursor.len && !ngx_http_veto_sandbox_approval_cursor_valid(&cursor)) {
        return ngx_http_veto_sandbox_review_bad(r, "cursor",
                               "\"cursor\" is the \"next\" of an earlier "
                               "page");
    }

    rc = ngx_http_veto_sandbox_approval_list(&call, &ctx->tenant, &state,
                                             limit, &cursor);

    return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
}


/* GET /v1/approvals/{id} */
static ngx_int_t
ngx_http_veto_sandbox_review_get(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                            rc;
    ngx_http_veto_sandbox_redis_call_t   call;

    rc = ngx_http_veto_sandbox_answer_start(r, ctx, &call,
                                   ngx_http_veto_sandbox_review_got,
                                   ngx_http_veto_sandbox_review_no_redis);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    rc = ngx_http_veto_sandbox_approval_get(&call, &ctx->tenant,
                                            &ctx->apr_id);

    return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
}


/* POST /v1/approvals/{id}/approve and .../deny */
static ngx_int_t
ngx_http_veto_sandbox_review_decide(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t approve)
{
    json_t                              *v;
    ngx_int_t                            rc;
    ngx_str_t                            reason;
    ngx_http_veto_sandbox_redis_call_t   call;

    rc = ngx_http_veto_sandbox_answer_start(r, ctx, &call,
                                      approve
                                      ? ngx_http_veto_sandbox_review_approved
                                      : ngx_http_veto_sandbox_review_denied,
                                      ngx_http_veto_sandbox_review_no_redis);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    ngx_str_null(&reason);

    /* the body is optional: {"reason": "..."} */
    if (r->headers_in.content_length_n > 0 || r->headers_in.chunked) {
        ctx->body = ngx_http_veto_sandbox_read_json(r, &rc);
        if (ctx->body == NULL) {
            return rc;
        }

        if (ngx_http_veto_sandbox_known_fields(r, ctx->body,
                                          ngx_http_veto_sandbox_review_known,
                                          &rc)
            != NGX_OK)
        {
            return rc;
        }

        v = json_object_get(ctx->body, "reason");

        if (v != NULL && !json_is_string(v)) {
            return ngx_http_veto_sandbox_review_bad(r, "reason",
                                          "\"reason\" must be a string");
        }

        if (v != NULL) {
            if (json_string_length(v) > NGX_HTTP_VSB_REASON_MAX) {
                return ngx_http_veto_sandbox_review_bad(r, "reason",
                                   "\"reason\" is at most 1024 bytes");
            }

            reason.data = (u_char *) json_string_value(v);
            reason.len = json_string_length(v);
        }
    }

    rc = ngx_http_veto_sandbox_approval_decide(&call, &ctx->tenant,
                                               &ctx->apr_id, &ctx->agent,
                                               approve, &reason);

    return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
}


static ngx_int_t
ngx_http_veto_sandbox_review_approve(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ngx_http_veto_sandbox_review_decide(r, ctx, 1);
}


static ngx_int_t
ngx_http_veto_sandbox_review_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ngx_http_veto_sandbox_review_decide(r, ctx, 0);
}


/* GET /v1/audit?agent=&sandbox=&from=&to=&limit=&cursor= */
static ngx_int_t
ngx_http_veto_sandbox_review_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_int_t                             rc;
    ngx_http_veto_sandbox_redis_call_t    call;
    ngx_http_veto_sandbox_audit_query_t   q;

    rc = ngx_http_veto_sandbox_answer_start(r, ctx, &call,
                                       ngx_http_veto_sandbox_review_records,
                                       ngx_http_veto_sandbox_review_no_redis);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    ngx_memzero(&q, sizeof(q));

    if (ngx_http_veto_sandbox_query(r, "agent", &q.agent) != NGX_OK
        || ngx_http_veto_sandbox_query(r, "sandbox", &q.sandbox) != NGX_OK
        || ngx_http_veto_sandbox_query(r, "cursor", &q.cursor) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_veto_sandbox_review_ms(r, "from", &q.from_ms);
    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_review_bad(r, "from",
                               "\"from\" is unix time in milliseconds");
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_veto_sandbox_review_ms(r, "to", &q.to_ms);
    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_review_bad(r, "to",
                               "\"to\" is unix time in milliseconds");
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_veto_sandbox_review_limit(r, NGX_HTTP_VSB_AUDIT_PAGE,
                                            NGX_HTTP_VSB_AUDIT_PAGE_MAX,
                                            &q.limit);
    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_review_bad(r, "limit",
                               "\"limit\" is 1..1000");
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (q.cursor.len && !ngx_http_veto_sandbox_audit_cursor_valid(&q.cursor))
    {
        return ngx_http_veto_sandbox_review_bad(r, "cursor",
                               "\"cursor\" is the \"next\" of an earlier "
                               "page");
    }

    if ((q.agent.len
         && !ngx_http_veto_sandbox_redis_key_part_valid(q.agent.data,
                                                        q.agent.len))
        || (q.sandbox.len
            && !ngx_http_veto_sandbox_redis_key_part_valid(q.sandbox.data,
                                                           q.sandbox.len)))
    {
        return ngx_http_veto_sandbox_review_bad(r, "agent",
                               "\"agent\" or \"sandbox\" is not a valid "
                               "name");
    }

    rc = ngx_http_veto_sandbox_audit_query(&call, &ctx->tenant, &q);

    return ngx_http_veto_sandbox_answer_sent(r, ctx, rc);
}


/* [field, value, ...] as an object; numbers as numbers, the summary and
 * approve_reasons as the JSON they are. */
static json_t *
ngx_http_veto_sandbox_record(redisReply *a)
{
    json_t      *o, *v;
    size_t       i;
    redisReply  *k, *e;

    o = json_object();
    if (o == NULL || a->type != REDIS_REPLY_ARRAY) {
        json_decref(o);
        return NULL;
    }

    for (i = 0; i + 1 < a->elements; i += 2) {
        k = a->element[i];
        e = a->element[i + 1];

        if (!ngx_http_vsb_rstr(k) || !ngx_http_vsb_rstr(e)) {
            continue;
        }

        if (ngx_strcmp(k->str, "summary") == 0
            || ngx_strcmp(k->str, "approve_reasons") == 0)
        {
            v = json_loadb(e->str, e->len, 0, NULL);

        } else if (ngx_strcmp(k->str, "created_ms") == 0
                   || ngx_strcmp(k->str, "expires_ms") == 0
                   || ngx_strcmp(k->str, "decided_ms") == 0
                   || ngx_strcmp(k->str, "consumed_ms") == 0
                   || ngx_strcmp(k->str, "approvals") == 0
                   || ngx_strcmp(k->str, "threshold") == 0)
        {
            v = json_integer(strtoll(e->str, NULL, 10));

        } else {
            v = json_stringn(e->str, e->len);
        }

        if (v != NULL) {
            json_object_set_new(o, k->str, v);
        }
    }

    return o;
}


static ngx_int_t
ngx_http_veto_sandbox_review_decided(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply, ngx_uint_t approve)
{
    ngx_uint_t                               status;
    const char                              *code, *detail;
    ngx_http_veto_sandbox_approval_result_t  ar;

    ngx_http_veto_sandbox_approval_result(reply, &ar);

    switch (ar.code) {

    case NGX_HTTP_VSB_AR_OK:
        ngx_http_veto_sandbox_metrics_approval(&ar.state);

        /* the reason given, either way (the body was checked: a string
         * of at most 1024 bytes, or none) */
        ngx_http_veto_sandbox_audit(r, ctx,
                                    approve ? "approval_approved"
                                            : "approval_denied",
                                    ctx->body
                                    ? json_string_value(
                                          json_object_get(ctx->body,
                                                          "reason"))
                                    : NULL,
                                    &ctx->agent, NULL, NGX_HTTP_OK);

        return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                   json_pack("{s:s%, s:s%, s:I}",
                             "id", ctx->apr_id.data, ctx->apr_id.len,
                             "state", ar.state.data ? ar.state.data
                                                    : (u_char *) "",
                             ar.state.len,
                             "approvals",
                             (json_int_t) (ar.detail.len
                                           ? ngx_atoi(ar.detail.data,
                                                      ar.detail.len)
                                           : 0)));

    case NGX_HTTP_VSB_AR_NOT_FOUND:
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                                             "not_found", "no such approval",
                                             NULL);

    case NGX_HTTP_VSB_AR_EXPIRED:
        if (ar.just_expired) {
            ngx_http_veto_sandbox_audit(r, ctx, "approval_expired", NULL,
                                        NULL, NULL, 0);
        }

        status = NGX_HTTP_CONFLICT;
        code = "approval_expired";
        detail = "the approval has expired";
        break;

    case NGX_HTTP_VSB_AR_NOT_PENDING:
        status = NGX_HTTP_CONFLICT;
        code = "not_pending";
        detail = "the approval was decided already";
        break;

    case NGX_HTTP_VSB_AR_SELF_APPROVAL:
        status = NGX_HTTP_FORBIDDEN;
        code = "self_approval";
        detail = "the requester cannot decide its own request";
        break;

    case NGX_HTTP_VSB_AR_ALREADY_APPROVED:
        status = NGX_HTTP_CONFLICT;
        code = "already_approved";
        detail = "this reviewer approved already; another must";
        break;

    case NGX_HTTP_VSB_AR_REASON_REQUIRED:
        status = NGX_HTTP_VSB_UNPROCESSABLE;
        code = "reason_required";
        detail = "a denial needs a \"reason\"";
        break;

    default:
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    ngx_http_veto_sandbox_audit(r, ctx, "denied", code, &ctx->agent, NULL,
                                status);

    return ngx_http_veto_sandbox_problem(r, status, code, detail,
                   json_pack("{s:s%}", "state",
                             ar.state.data ? ar.state.data : (u_char *) "",
                             ar.state.len));
}


static ngx_int_t
ngx_http_veto_sandbox_review_approved(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    return ngx_http_veto_sandbox_review_decided(r, ctx, reply, 1);
}


static ngx_int_t
ngx_http_veto_sandbox_review_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    return ngx_http_veto_sandbox_review_decided(r, ctx, reply, 0);
}


/* GET /v1/approvals/{id} */
static ngx_int_t
ngx_http_veto_sandbox_review_got(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    json_t                                  *rec, *list, *v;
    size_t                                   i;
    redisReply                              *e;
    ngx_http_veto_sandbox_approval_result_t  ar;

    ngx_http_veto_sandbox_approval_result(reply, &ar);

    if (ar.code == NGX_HTTP_VSB_AR_NOT_FOUND) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                                             "not_found",
                                             "no such approval", NULL);
    }

    if (ar.code != NGX_HTTP_VSB_AR_OK || reply->elements < 5) {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    if (ar.just_expired) {
        ngx_http_veto_sandbox_audit(r, ctx, "approval_expired", NULL,
                                    NULL, NULL, 0);
    }

    rec = ngx_http_veto_sandbox_record(reply->element[3]);
    if (rec == NULL) {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    /* a requester without the review scope sees only its own */
    v = json_object_get(rec, "agent");

    if (!(ctx->scopes & NGX_HTTP_VSB_SCOPE_REVIEW)
        && !(json_is_string(v)
             && json_string_length(v) == ctx->agent.len
             && ngx_strncmp(json_string_value(v), ctx->agent.data,
                            ctx->agent.len) == 0))
    {
        json_decref(rec);
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                                             "not_found",
                                             "no such approval", NULL);
    }

    json_object_del(rec, "tenant");

    list = json_array();
    e = reply->element[4];

    for (i = 0; list && e->type == REDIS_REPLY_ARRAY && i < e->elements;
         i++)
    {
        if (ngx_http_vsb_rstr(e->element[i])) {
            json_array_append_new(list,
                                  json_stringn(e->element[i]->str,
                                               e->element[i]->len));
        }
    }

    json_object_set_new(rec, "reviewers", list ? list : json_array());

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, rec);
}


/* GET /v1/approvals */
static ngx_int_t
ngx_http_veto_sandbox_review_listed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    json_t                                  *rec, *list;
    size_t                                   i;
    redisReply                              *e;
    ngx_http_veto_sandbox_approval_result_t  ar;

    ngx_http_veto_sandbox_approval_result(reply, &ar);

    if (ar.code != NGX_HTTP_VSB_AR_OK || reply->elements < 5
        || reply->element[3]->type != REDIS_REPLY_ARRAY)
    {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    list = json_array();
    if (list == NULL) {
        return NGX_ERROR;
    }

    e = reply->element[3];

    for (i = 0; i < e->elements; i++) {
        rec = ngx_http_veto_sandbox_record(e->element[i]);
        if (rec != NULL) {
            json_array_append_new(list, rec);
        }
    }

    /* records this listing found past their expiry */
    e = reply->element[4];

    for (i = 0; e->type == REDIS_REPLY_ARRAY && i < e->elements; i++) {
        if (ngx_http_vsb_rstr(e->element[i])) {
            ctx->apr_id.data = ngx_pnalloc(r->pool, e->element[i]->len);
            if (ctx->apr_id.data == NULL) {
                break;
            }

            ngx_memcpy(ctx->apr_id.data, e->element[i]->str,
                       e->element[i]->len);
            ctx->apr_id.len = e->element[i]->len;

            ngx_http_veto_sandbox_audit(r, ctx, "approval_expired", NULL,
                                        NULL, NULL, 0);
        }
    }

    ngx_str_null(&ctx->apr_id);

    /* the cursor of the next page, when there is more */
    e = reply->elements >= 6 ? reply->element[5] : NULL;

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                   json_pack("{s:o, s:o}", "approvals", list, "next",
                             e && e->type == REDIS_REPLY_STRING && e->len
                             ? json_stringn(e->str, e->len) : json_null()));
}


/* GET /v1/audit */
static ngx_int_t
ngx_http_veto_sandbox_review_records(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    json_t     *list;
    ngx_str_t   next;

    list = ngx_http_veto_sandbox_audit_to_json(reply, &next);
    if (list == NULL) {
        return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                   json_pack("{s:o, s:o}", "records", list, "next",
                             next.len ? json_stringn((char *) next.data,
                                                     next.len)
                                      : json_null()));
}

#endif /* the rows' code */


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_mcp.h"


/* ---- the group's MCP tool (_mcp_tool_table.c's list) -------------------- */


static const char  *ngx_http_veto_sandbox_mcp_approval_args[] = {
    "approval_id", NULL
};


/* approval_status: GET /v1/approvals/{approval}: written by hand, as its
 * approval_id is the path's id, not the Veto-Approval the generic twin
 * makes of one */
static ngx_int_t
ngx_http_veto_sandbox_mcp_twin_approval(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_tool_t *tool, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    json_t     *v;
    ngx_int_t   rc;
    ngx_str_t   id;

    rc = ngx_http_veto_sandbox_mcp_known(r, args,
                               ngx_http_veto_sandbox_mcp_approval_args, why);
    if (rc != NGX_OK) {
        return rc;
    }

    v = json_object_get(args, "approval_id");

    if (json_is_string(v)) {
        id.data = (u_char *) json_string_value(v);
        id.len = json_string_length(v);
    }

    if (!json_is_string(v) || !ngx_http_veto_sandbox_approval_id_valid(&id)) {
        *why = "approval_id is required: \"apr_\" and 32 lowercase hex "
               "digits, as an \"approval required\" result gave it";
        return NGX_DECLINED;
    }

    twin->method = NGX_HTTP_GET;
    ngx_str_set(&twin->method_name, "GET");

    twin->uri.len = sizeof("/v1/approvals/") - 1 + id.len;
    twin->uri.data = ngx_pnalloc(r->pool, twin->uri.len);
    if (twin->uri.data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(twin->uri.data, "/v1/approvals/%V", &id);

    return NGX_OK;
}


/* approval_status: the approval's record */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_approval(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last, expires[32];
    const char  *id, *state, *action, *reason, *what;

    id = json_string_value(json_object_get(rest, "id"));
    state = json_string_value(json_object_get(rest, "state"));
    action = json_string_value(json_object_get(rest, "action"));
    reason = json_string_value(json_object_get(rest, "reason"));

    if (id == NULL || state == NULL) {
        return NGX_ERROR;
    }

    ngx_http_veto_sandbox_mcp_time(expires, (time_t) (json_integer_value(
                                   json_object_get(rest, "expires_ms"))
                                   / 1000));

    what = ngx_strcmp(state, "pending") == 0
           ? "A human has not decided yet; nothing has run. Check again "
             "later."
           : ngx_strcmp(state, "approved") == 0
           ? "Call the original tool again with exactly the same arguments "
             "plus this approval_id; it can be used once."
           : ngx_strcmp(state, "denied") == 0
           ? "A reviewer said no. Do not retry it; tell your user."
           : ngx_strcmp(state, "expired") == 0
           ? "It expired unused. Call the tool again without approval_id "
             "to ask anew."
           : ngx_strcmp(state, "consumed") == 0
           ? "It was used already (one approval covers one call)."
           : "";

    text = ngx_pnalloc(r->pool, 2048);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = text + 2048;

    p = ngx_slprintf(text, last, "Approval %s for %s is %s (%L of %L "
                     "approvals; expires %s).", id, action ? action : "?",
                     state,
                     json_integer_value(json_object_get(rest, "approvals")),
                     json_integer_value(json_object_get(rest, "threshold")),
                     expires);

    if (reason && ngx_strlen(reason) <= NGX_HTTP_VSB_REASON_MAX) {
        p = ngx_slprintf(p, last, " Reason given: %s.", reason);
    }

    p = ngx_slprintf(p, last, " %s", what);

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}

#endif /* the MCP tool's code */


/* ---- the group's rows (_ops.c's table) ---------------------------------- */


/* the humans' side, answered from Redis */
ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_review_ops[] = {

    ngx_http_vsb_op("approval.list", NGX_HTTP_VSB_READ, "/v1/approvals",
                    NGX_HTTP_VSB_SCOPE_REVIEW, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_list, NULL, NULL),

    /* reviewers, and requesters reading their own approvals */
    ngx_http_vsb_op("approval.get", NGX_HTTP_VSB_READ,
                    "/v1/approvals/{approval}",
                    NGX_HTTP_VSB_SCOPE_REVIEW|NGX_HTTP_VSB_SANDBOXES, 0,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_get, NULL, NULL),

    ngx_http_vsb_op("approval.approve", NGX_HTTP_POST,
                    "/v1/approvals/{approval}/approve",
                    NGX_HTTP_VSB_SCOPE_REVIEW, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, 0, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_approve, NULL, NULL),

    ngx_http_vsb_op("approval.deny", NGX_HTTP_POST,
                    "/v1/approvals/{approval}/deny",
                    NGX_HTTP_VSB_SCOPE_REVIEW, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, 0, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_deny, NULL, NULL),

    ngx_http_vsb_op("audit.read", NGX_HTTP_VSB_READ, "/v1/audit",
                    NGX_HTTP_VSB_SCOPE_AUDIT, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, NULL,
                    ngx_http_veto_sandbox_build_nothing,
                    ngx_http_veto_sandbox_review_audit, NULL, NULL),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_review_tools[] = {

    { "approval_status", "Check an approval",
      "Where an approval this agent asked for stands: pending (a human "
      "has not decided yet), approved (retry the original call with the "
      "same arguments plus approval_id; it can be used once), denied, "
      "expired or consumed (already used).",
      "{\"type\":\"object\",\"properties\":{"
        "\"approval_id\":{\"type\":\"string\",\"pattern\":"
        "\"^apr_[0-9a-f]{32}$\",\"description\":\"The approval_id an "
        "\\\"approval required\\\" result gave.\"}"
      "},\"required\":[\"approval_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_approval,
      ngx_http_veto_sandbox_mcp_present_approval,
      { 0, NULL, NULL, NULL, NULL, 0 } },     /* its twin's own */

    ngx_http_vsb_null_tool
};

#endif /* the MCP tool */
