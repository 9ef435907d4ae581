/*
 * Veto Sandbox: audit records in a Redis stream and their query; every
 * field is redacted (ngx_http_veto_sandbox_redact.c) on its way in.
 * Contract: ngx_http_veto_sandbox_audit.h and docs/approvals.md.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_audit.h"
#include "ngx_http_veto_sandbox_redact.h"


static void ngx_http_veto_sandbox_audit_logged(ngx_int_t rc,
    redisReply *reply, void *data);
static ngx_int_t ngx_http_veto_sandbox_audit_redact_detail(ngx_pool_t *pool,
    ngx_str_t *in, ngx_str_t *out);


/* lua/audit_append.lua (the append, the prelude's vsb_audit_append, is
 * also how _ended.c's and _hosts.c's scripts write their entries) and
 * lua/audit_query.lua, after lua/prelude.lua */
NGX_HTTP_VSB_LUA(audit_append);
NGX_HTTP_VSB_LUA(audit_query);

static ngx_http_veto_sandbox_redis_script_t
    ngx_http_veto_sandbox_audit_scripts[] = {
    NGX_HTTP_VSB_SCRIPT(audit_append),
    NGX_HTTP_VSB_SCRIPT(audit_query),
    { NULL, NULL, "" }
};

#define ngx_http_veto_sandbox_audit_append_script                             \
    (&ngx_http_veto_sandbox_audit_scripts[0])
#define ngx_http_veto_sandbox_audit_query_script                              \
    (&ngx_http_veto_sandbox_audit_scripts[1])


/* the scripts' SHA-1s, once */
static ngx_int_t
ngx_http_veto_sandbox_audit_init(void)
{
    if (ngx_http_veto_sandbox_audit_scripts[1].sha1[0] != '\0') {
        return NGX_OK;
    }

    return ngx_http_veto_sandbox_redis_scripts_init(
                                        ngx_http_veto_sandbox_audit_scripts);
}


static void
ngx_http_veto_sandbox_audit_logged(ngx_int_t rc, redisReply *reply,
    void *data)
{
    ngx_http_veto_sandbox_redis_t  *rds = data;

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, rds->log, 0,
                      "veto_sandbox: audit record lost: redis %s",
                      rc == NGX_HTTP_GATEWAY_TIME_OUT ? "timed out"
                                                      : "unavailable");
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_ERR, rds->log, 0,
                      "veto_sandbox: audit record refused by redis: %*s",
                      (size_t) reply->len, reply->str);
    }
}


/* at most max bytes of s, not ending inside a UTF-8 sequence */
static size_t
ngx_http_veto_sandbox_audit_cut(ngx_str_t *s, size_t max)
{
    size_t  n;

    if (s->len <= max) {
        return s->len;
    }

    n = max;

    while (n > 0 && (s->data[n] & 0xc0) == 0x80) {
        n--;
    }

    return n;
}


ngx_int_t
ngx_http_veto_sandbox_audit_append(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_uint_t maxlen, size_t bytes, ngx_http_veto_sandbox_audit_rec_t *rec)
{
    int           argc;
    u_char       *p, *num, *start;
    size_t        size;
    ngx_tm_t      tm;
    ngx_str_t     red, key, counter, detail;
    ngx_uint_t    i;
    ngx_time_t   *tp;
    size_t        argvlen[40];
    const char   *argv[40];

    ngx_http_veto_sandbox_redis_call_t  logged;

    struct {
        const char  *name;
        ngx_str_t   *value;
        ngx_uint_t   redact;
    } fields[] = {
        { "tenant", &rec->tenant, 0 },
        { "agent", &rec->agent, 1 },
        { "action", &rec->action, 1 },
        { "outcome", &rec->outcome, 1 },
        { "reason", &rec->reason, 1 },
        { "request_hash", &rec->request_hash, 0 },
        { "approval", &rec->approval, 1 },
        { "reviewer", &rec->reviewer, 1 },
        { "sandbox", &rec->sandbox, 1 },
        { "request_id", &rec->request_id, 1 },
        { NULL, NULL, 0 }
    };

    if (ngx_http_veto_sandbox_audit_init() != NGX_OK) {
        return NGX_ERROR;
    }

    if (!ngx_http_veto_sandbox_redis_key_part_valid(rec->tenant.data,
                                                    rec->tenant.len))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_veto_sandbox_tenant_key(call->pool, &key, "audit",
                                         &rec->tenant, NULL)
        != NGX_OK
        || ngx_http_veto_sandbox_tenant_key(call->pool, &counter,
                                            "audit:bytes", &rec->tenant,
                                            NULL)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    num = ngx_pnalloc(call->pool, NGX_INT_T_LEN * 4
                            + sizeof("1970-01-01T00:00:00.000Z")
                            + sizeof("{\"dropped\":true,\"bytes\":}"));
    if (num == NULL) {
        return NGX_ERROR;
    }

    argc = 0;

    argv[argc] = (const char *) key.data;
    argvlen[argc++] = key.len;
    argv[argc] = (const char *) counter.data;
    argvlen[argc++] = counter.len;

    p = num;

    start = p;
    p = ngx_sprintf(p, "%uz", bytes ? bytes : NGX_HTTP_VSB_AUDIT_BYTES);
    argv[argc] = (const char *) start;
    argvlen[argc++] = p - start;

    start = p;
    p = ngx_sprintf(p, "%ui", maxlen ? maxlen : NGX_HTTP_VSB_AUDIT_MAXLEN);
    argv[argc] = (const char *) start;
    argvlen[argc++] = p - start;

    tp = ngx_timeofday();
    ngx_gmtime(tp->sec, &tm);

    argv[argc] = "time";
    argvlen[argc++] = 4;
    start = p;
    p = ngx_sprintf(p, "%4d-%02d-%02dT%02d:%02d:%02d.%03MZ",
                    tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                    tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec, tp->msec);
    argv[argc] = (const char *) start;
    argvlen[argc++] = p - start;

    size = 4 + (p - start);

    /* each field redacted and at most NGX_HTTP_VSB_AUDIT_FIELD_MAX */
    for (i = 0; fields[i].name; i++) {
        if (fields[i].value->len == 0) {
            continue;
        }

        red = *fields[i].value;

        if (fields[i].redact
            && ngx_http_veto_sandbox_redact(call->pool, fields[i].value,
                                                  &red)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        red.len = ngx_http_veto_sandbox_audit_cut(&red,
                                              NGX_HTTP_VSB_AUDIT_FIELD_MAX);

        argv[argc] = fields[i].name;
        argvlen[argc++] = ngx_strlen(fields[i].name);
        argv[argc] = (const char *) red.data;
        argvlen[argc++] = red.len;

        size += ngx_strlen(fields[i].name) + red.len;
    }

    if (rec->status) {
        argv[argc] = "status";
        argvlen[argc++] = 6;
        start = p;
        p = ngx_sprintf(p, "%i", rec->status);
        argv[argc] = (const char *) start;
        argvlen[argc++] = p - start;

        size += 6 + (p - start);
    }

    /* the detail (JSON text) whole, or a note that it did not fit: a cut
     * would not be JSON */
    if (rec->detail.len) {
        if (ngx_http_veto_sandbox_audit_redact_detail(call->pool,
                                                      &rec->detail, &detail)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (size + sizeof("detail") - 1 + detail.len
            > NGX_HTTP_VSB_AUDIT_ENTRY_MAX)
        {
            start = p;
            p = ngx_sprintf(p, "{\"dropped\":true,\"bytes\":%uz}",
                            detail.len);
            detail.data = start;
            detail.len = p - start;
        }

        argv[argc] = "detail";
        argvlen[argc++] = 6;
        argv[argc] = (const char *) detail.data;
        argvlen[argc++] = detail.len;
    }

    if (call->handler == NULL) {
        logged = *call;
        logged.handler = ngx_http_veto_sandbox_audit_logged;
        logged.data = call->rds;
        call = &logged;
    }

    return ngx_http_veto_sandbox_redis_eval(call,
                                     ngx_http_veto_sandbox_audit_append_script,
                                     2, argc, argv, argvlen);
}


/*
 * Keys the gateway writes that name credentials, never hold one (the
 * value is the operator's, at the egress proxy; these are names, hosts
 * and variables): kept, not hidden, where the gateway puts them only:
 * a create's or PATCH's detail (credentials, credentials_requested,
 * credentials_needed_approval, credentials_detached, credentials_agent:
 * an agent's own secret's name, host and header), the sandbox's
 * network (credentials)
 * and an exec's network attempts (credential).  Their strings are still
 * redacted.  A workload's own key (an env variable "credentials") is
 * under "env": hidden as before.
 */
static ngx_uint_t
ngx_http_veto_sandbox_audit_names_credentials(const char *parent,
    const char *key)
{
    if (parent == NULL) {
        return ngx_strcmp(key, "credentials") == 0
               || ngx_strcmp(key, "credentials_requested") == 0
               || ngx_strcmp(key, "credentials_needed_approval") == 0
               || ngx_strcmp(key, "credentials_detached") == 0
               || ngx_strcmp(key, "credentials_agent") == 0;
    }

    if (ngx_strcmp(parent, "network") == 0) {
        return ngx_strcmp(key, "credentials") == 0;
    }

    if (ngx_strcmp(parent, "attempts") == 0) {
        return ngx_strcmp(key, "credential") == 0;
    }

    return 0;
}


/*
 * A copy of v with every string redacted and the value of a secret-
 * looking key hidden: redaction of the JSON as text would turn
 * {"token": null} into {"token": [redacted]}, which is no JSON.  parent
 * is the key v is under (an array's elements: the array's), NULL at the
 * top.
 */
static json_t *
ngx_http_veto_sandbox_audit_redact_json(ngx_pool_t *pool, json_t *v,
    ngx_uint_t depth, const char *parent)
{
    size_t       i;
    json_t      *c, *e, *r;
    ngx_str_t    in, out;
    const char  *key;

    ngx_http_veto_sandbox_redact_state_t  st;

    if (depth > 16) {
        return json_string("[too deep]");
    }

    switch (json_typeof(v)) {

    case JSON_STRING:
        in.data = (u_char *) json_string_value(v);
        in.len = json_string_length(v);

        if (ngx_http_veto_sandbox_redact(pool, &in, &out) != NGX_OK) {
            return NULL;
        }

        return json_stringn((char *) out.data, out.len);

    case JSON_ARRAY:
        /* an argv: "--password" "x", "curl" "-u" "u:p" span elements */
        ngx_memzero(&st, sizeof(st));
        c = json_array();

        json_array_foreach(v, i, e) {
            if (json_is_string(e)) {
                in.data = (u_char *) json_string_value(e);
                in.len = json_string_length(e);

                r = ngx_http_veto_sandbox_redact_next(pool, &in, &out, &st)
                    == NGX_OK
                    ? json_stringn((char *) out.data, out.len) : NULL;

            } else {
                ngx_memzero(&st, sizeof(st));
                r = ngx_http_veto_sandbox_audit_redact_json(pool, e,
                                                            depth + 1,
                                                            parent);
            }

            if (c == NULL || json_array_append_new(c, r) != 0) {
                json_decref(c);
                return NULL;
            }
        }

        return c;

    case JSON_OBJECT:
        c = json_object();

        json_object_foreach(v, key, e) {
            if (c == NULL) {
                return NULL;
            }

            if (!json_is_null(e)
                && ngx_http_veto_sandbox_secret_name((u_char *) key,
                                                     ngx_strlen(key))
                && !ngx_http_veto_sandbox_audit_names_credentials(parent,
                                                                  key))
            {
                e = json_string("[redacted]");

            } else {
                e = ngx_http_veto_sandbox_audit_redact_json(pool, e,
                                                            depth + 1, key);
            }

            if (json_object_set_new(c, key, e) != 0) {
                json_decref(c);
                return NULL;
            }
        }

        return c;

    default:
        return json_copy(v);
    }
}


/* a detail that is JSON redacted as JSON, any other as text */
static ngx_int_t
ngx_http_veto_sandbox_audit_redact_detail(ngx_pool_t *pool, ngx_str_t *in,
    ngx_str_t *out)
{
    char    *text;
    json_t  *d, *r;

    d = json_loadb((char *) in->data, in->len, 0, NULL);
    if (d == NULL) {
        return ngx_http_veto_sandbox_redact(pool, in, out);
    }

    r = ngx_http_veto_sandbox_audit_redact_json(pool, d, 0, NULL);
    json_decref(d);

    text = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);

    if (text == NULL) {
        return NGX_ERROR;
    }

    out->len = ngx_strlen(text);
    out->data = ngx_pnalloc(pool, out->len);

    if (out->data == NULL) {
        free(text);
        return NGX_ERROR;
    }

    ngx_memcpy(out->data, text, out->len);
    free(text);

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_audit_query(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_http_veto_sandbox_audit_query_t *q)
{
    u_char      *p;
    ngx_str_t    key;
    size_t       argvlen[8];
    const char  *argv[8];

    if (ngx_http_veto_sandbox_audit_init() != NGX_OK) {
        return NGX_ERROR;
    }

    if (!ngx_http_veto_sandbox_redis_key_part_valid(tenant->data,
                                                    tenant->len))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_veto_sandbox_tenant_key(call->pool, &key, "audit", tenant,
                                         NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(call->pool, 6 * (NGX_INT64_LEN + 2) + q->cursor.len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    argv[0] = (const char *) key.data;
    argvlen[0] = key.len;

    /* stream ids are "<ms>-<seq>": a time range is an id range; a cursor
     * goes on below the last entry a page examined */

    argv[1] = (const char *) p;
    p = q->cursor.len ? ngx_sprintf(p, "(%V", &q->cursor)
        : q->to_ms ? ngx_sprintf(p, "%uL", q->to_ms)
        : ngx_cpymem(p, "+", 1);
    argvlen[1] = p - (u_char *) argv[1];

    argv[2] = (const char *) p;
    p = q->from_ms ? ngx_sprintf(p, "%uL", q->from_ms) : ngx_cpymem(p, "-", 1);
    argvlen[2] = p - (u_char *) argv[2];

    argv[3] = (const char *) p;
    p = ngx_sprintf(p, "%ui",
                    (q->limit && q->limit <= NGX_HTTP_VSB_AUDIT_PAGE_MAX)
                    ? q->limit : (ngx_uint_t) NGX_HTTP_VSB_AUDIT_PAGE);
    argvlen[3] = p - (u_char *) argv[3];

    argv[4] = (const char *) q->agent.data;
    argvlen[4] = q->agent.len;
    argv[5] = (const char *) q->sandbox.data;
    argvlen[5] = q->sandbox.len;

    argv[6] = (const char *) p;
    p = ngx_sprintf(p, "%ui", (ngx_uint_t) NGX_HTTP_VSB_AUDIT_SCAN);
    argvlen[6] = p - (u_char *) argv[6];

    argv[7] = (const char *) p;
    p = ngx_sprintf(p, "%ui", (ngx_uint_t) NGX_HTTP_VSB_AUDIT_PAGE_BYTES);
    argvlen[7] = p - (u_char *) argv[7];

    return ngx_http_veto_sandbox_redis_eval(call,
                                      ngx_http_veto_sandbox_audit_query_script,
                                      1, 8, argv, argvlen);
}


ngx_uint_t
ngx_http_veto_sandbox_audit_cursor_valid(ngx_str_t *cursor)
{
    size_t      i;
    ngx_uint_t  dash, digits;

    dash = 0;
    digits = 0;

    if (cursor->len == 0 || cursor->len > 2 * NGX_INT64_LEN) {
        return 0;
    }

    for (i = 0; i < cursor->len; i++) {
        if (cursor->data[i] == '-' && !dash && digits) {
            dash = 1;
            digits = 0;
            continue;
        }

        if (cursor->data[i] < '0' || cursor->data[i] > '9') {
            return 0;
        }

        digits++;
    }

    return dash && digits;
}


/* a stored detail as the object it is; {"text": ...} if it is not one */
static json_t *
ngx_http_veto_sandbox_audit_detail(redisReply *v)
{
    json_t  *d;

    d = json_loadb(v->str, v->len, 0, NULL);

    if (json_is_object(d)) {
        return d;
    }

    json_decref(d);

    return json_pack("{s:s%}", "text", v->str, (size_t) v->len);
}


json_t *
ngx_http_veto_sandbox_audit_to_json(redisReply *reply, ngx_str_t *next)
{
    size_t       i, j;
    json_t      *list, *obj, *v;
    redisReply  *all, *e, *f, *n;

    ngx_str_null(next);

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_ARRAY)
    {
        return NULL;
    }

    all = reply->element[0];
    n = reply->element[1];

    if (n->type == REDIS_REPLY_STRING && n->len > 0) {
        next->data = (u_char *) n->str;
        next->len = n->len;
    }

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    for (i = 0; i < all->elements; i++) {
        e = all->element[i];

        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2
            || e->element[0]->type != REDIS_REPLY_STRING
            || e->element[1]->type != REDIS_REPLY_ARRAY)
        {
            goto failed;
        }

        obj = json_object();
        if (obj == NULL || json_array_append_new(list, obj) != 0) {
            goto failed;
        }

        if (json_object_set_new(obj, "id", json_stringn(e->element[0]->str,
                                                        e->element[0]->len))
            != 0)
        {
            goto failed;
        }

        f = e->element[1];

        for (j = 0; j + 1 < f->elements; j += 2) {
            if (f->element[j]->type != REDIS_REPLY_STRING
                || f->element[j + 1]->type != REDIS_REPLY_STRING)
            {
                goto failed;
            }

            if (ngx_strcmp(f->element[j]->str, "detail") == 0) {
                v = ngx_http_veto_sandbox_audit_detail(f->element[j + 1]);

            } else {
                v = json_stringn(f->element[j + 1]->str,
                                 f->element[j + 1]->len);
            }

            /* a value that is not UTF-8 is left out, not the record */
            if (v != NULL && json_object_set_new(obj, f->element[j]->str, v)
                             != 0)
            {
                goto failed;
            }
        }
    }

    return list;

failed:

    json_decref(list);
    return NULL;
}
