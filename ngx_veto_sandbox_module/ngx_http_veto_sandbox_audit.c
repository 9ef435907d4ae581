/*
 * Veto Sandbox: audit records in a Redis stream and their query; every
 * field is redacted (ngx_http_veto_sandbox_redact.c) on its way in.
 * Contract: ngx_http_veto_sandbox_audit.h and docs/approvals.md.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_audit.h"
#include "ngx_http_veto_sandbox_redact.h"


static void ngx_http_veto_sandbox_audit_logged(ngx_int_t rc,
    redisReply *reply, void *data);


/* KEYS: stream
 * ARGV: newest id or '+', oldest id or '-', max results, agent or '',
 *       sandbox or '', max entries scanned */
static const char ngx_http_veto_sandbox_audit_query_lua[] =
    "local want = tonumber(ARGV[3]) or 100\n"
    "local budget = tonumber(ARGV[6]) or 10000\n"
    "local out = {}\n"
    "local hi = ARGV[1]\n"
    "while #out < want and budget > 0 do\n"
    "  local n = 200\n"
    "  if n > budget then n = budget end\n"
    "  local batch = redis.call('XREVRANGE', KEYS[1], hi, ARGV[2], 'COUNT', n)\n"
    "  if #batch == 0 then break end\n"
    "  budget = budget - #batch\n"
    "  for _, e in ipairs(batch) do\n"
    "    local ok = true\n"
    "    local fl = e[2]\n"
    "    local agent, sandbox = '', ''\n"
    "    for i = 1, #fl, 2 do\n"
    "      if fl[i] == 'agent' then agent = fl[i + 1] end\n"
    "      if fl[i] == 'sandbox' then sandbox = fl[i + 1] end\n"
    "    end\n"
    "    if ARGV[4] ~= '' and agent ~= ARGV[4] then ok = false end\n"
    "    if ARGV[5] ~= '' and sandbox ~= ARGV[5] then ok = false end\n"
    "    if ok and #out < want then table.insert(out, e) end\n"
    "  end\n"
    "  if #batch < n then break end\n"
    "  hi = '(' .. batch[#batch][1]\n"
    "end\n"
    "return out\n"
    ;

static ngx_http_veto_sandbox_redis_script_t  ngx_http_veto_sandbox_audit_script
    = { "audit_query", ngx_http_veto_sandbox_audit_query_lua, "" };



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


ngx_int_t
ngx_http_veto_sandbox_audit_append(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_uint_t maxlen, ngx_http_veto_sandbox_audit_rec_t *rec)
{
    int           argc;
    u_char       *p, *num, *start;
    ngx_tm_t      tm;
    ngx_str_t     red, key;
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
        { "detail", &rec->detail, 1 },
        { NULL, NULL, 0 }
    };

    if (!ngx_http_veto_sandbox_redis_key_part_valid(rec->tenant.data,
                                                    rec->tenant.len))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_veto_sandbox_tenant_key(call->pool, &key, "audit",
                                         &rec->tenant, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    num = ngx_pnalloc(call->pool, NGX_INT_T_LEN * 2
                            + sizeof("1970-01-01T00:00:00.000Z"));
    if (num == NULL) {
        return NGX_ERROR;
    }

    argc = 0;

    argv[argc] = "XADD";
    argvlen[argc++] = 4;

    argv[argc] = (const char *) key.data;
    argvlen[argc++] = key.len;

    /* "~": trimming by whole macro nodes, cheap; the bound is approximate */
    argv[argc] = "MAXLEN";
    argvlen[argc++] = 6;
    argv[argc] = "~";
    argvlen[argc++] = 1;

    p = num;
    start = p;
    p = ngx_sprintf(p, "%ui", maxlen ? maxlen
                                     : NGX_HTTP_VSB_AUDIT_MAXLEN);
    argv[argc] = (const char *) start;
    argvlen[argc++] = p - start;

    argv[argc] = "*";
    argvlen[argc++] = 1;

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

        argv[argc] = fields[i].name;
        argvlen[argc++] = ngx_strlen(fields[i].name);
        argv[argc] = (const char *) red.data;
        argvlen[argc++] = red.len;
    }

    if (rec->status) {
        argv[argc] = "status";
        argvlen[argc++] = 6;
        start = p;
        p = ngx_sprintf(p, "%i", rec->status);
        argv[argc] = (const char *) start;
        argvlen[argc++] = p - start;
    }

    if (call->handler == NULL) {
        logged = *call;
        logged.handler = ngx_http_veto_sandbox_audit_logged;
        logged.data = call->rds;
        call = &logged;
    }

    return ngx_http_veto_sandbox_redis_command(call, argc, argv, argvlen);
}


ngx_int_t
ngx_http_veto_sandbox_audit_query(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, uint64_t from_ms, uint64_t to_ms, ngx_str_t *agent,
    ngx_str_t *sandbox, ngx_uint_t limit)
{
    u_char      *p;
    ngx_str_t    key;
    size_t       argvlen[7];
    const char  *argv[7];

    if (ngx_http_veto_sandbox_audit_script.sha1[0] == '\0'
        && ngx_http_veto_sandbox_redis_script_init(
                                   &ngx_http_veto_sandbox_audit_script)
           != NGX_OK)
    {
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

    p = ngx_pnalloc(call->pool, 4 * (NGX_INT64_LEN + 2));
    if (p == NULL) {
        return NGX_ERROR;
    }

    argv[0] = (const char *) key.data;
    argvlen[0] = key.len;

    /* stream ids are "<ms>-<seq>": a time range is an id range */

    argv[1] = (const char *) p;
    p = to_ms ? ngx_sprintf(p, "%uL", to_ms) : ngx_cpymem(p, "+", 1);
    argvlen[1] = p - (u_char *) argv[1];

    argv[2] = (const char *) p;
    p = from_ms ? ngx_sprintf(p, "%uL", from_ms) : ngx_cpymem(p, "-", 1);
    argvlen[2] = p - (u_char *) argv[2];

    argv[3] = (const char *) p;
    p = ngx_sprintf(p, "%ui", (limit && limit <= 1000) ? limit : 100);
    argvlen[3] = p - (u_char *) argv[3];

    argv[4] = agent ? (const char *) agent->data : "";
    argvlen[4] = agent ? agent->len : 0;
    argv[5] = sandbox ? (const char *) sandbox->data : "";
    argvlen[5] = sandbox ? sandbox->len : 0;

    argv[6] = "10000";
    argvlen[6] = 5;

    return ngx_http_veto_sandbox_redis_eval(call,
                                           &ngx_http_veto_sandbox_audit_script,
                                           1, 7, argv, argvlen);
}


json_t *
ngx_http_veto_sandbox_audit_to_json(redisReply *reply)
{
    size_t       i, j;
    json_t      *list, *obj;
    redisReply  *e, *f;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    for (i = 0; i < reply->elements; i++) {
        e = reply->element[i];

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

            if (json_object_set_new(obj, f->element[j]->str,
                                    json_stringn(f->element[j + 1]->str,
                                                 f->element[j + 1]->len))
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
