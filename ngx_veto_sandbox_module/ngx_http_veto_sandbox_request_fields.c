/*
 * A request's fields against what may be asked: the 400 naming a field
 * or query argument, the body's known fields, an optional field copied
 * by its type, the helper's request header bound (413), the policy's
 * limits (ttl_s, idle_s, timeout_s) within their ceilings, and the env's
 * rules (_env.c); a refusal on the tenant's audit record.  The builders
 * (_request*.c, _execs.c, _files.c) call these.
 */

#include "ngx_http_veto_sandbox_pipeline.h"


/* 400 for a query the hash would read otherwise (*why): unknown_field for
 * an argument the route does not take, else bad_value; naming the
 * argument at fault, cut to 63 bytes at a character's start (at: not NUL
 * terminated; empty: its name did not decode, "query" then, as for a
 * name that is not UTF-8) */
ngx_int_t
ngx_http_veto_sandbox_bad_query(ngx_http_request_t *r, ngx_str_t *at,
    const char *why)
{
    size_t       len;
    u_char      *name;
    json_t      *s;
    ngx_uint_t   utf8;

    len = ngx_min(at->len, 63);

    while (len && len < at->len && (at->data[len] & 0xc0) == 0x80) {
        len--;
    }

    name = ngx_pnalloc(r->pool, len + 1);
    if (name == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* a name that does not decode is no name at all (NULL, 0) */
    if (len) {
        ngx_memcpy(name, at->data, len);
    }

    name[len] = '\0';

    s = len ? json_string((char *) name) : NULL;
    utf8 = (s != NULL);
    json_decref(s);

    return ngx_http_veto_sandbox_bad_field(r,
                              ngx_strcmp(why, "unknown query argument") == 0
                              ? "unknown_field" : "bad_value",
                              utf8 ? (char *) name : "query", why);
}


ngx_int_t
ngx_http_veto_sandbox_bad_field(ngx_http_request_t *r, const char *code,
    const char *field, const char *detail)
{
    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST, code,
                                         detail,
                                         json_pack("{s:s}", "field", field));
}


/* names other APIs give what a field of ours is: "did you mean" them */
static const char  *ngx_http_veto_sandbox_field_aliases[][2] = {
    { "cmd", "argv" }, { "command", "argv" }, { "args", "argv" },
    { "dir", "cwd" }, { "workdir", "cwd" }, { "working_dir", "cwd" },
    { "environment", "env" }, { "input", "stdin" }, { "timeout", "timeout_s" },
    { "image", "profile" }, { "labels", "metadata" }, { "ttl", "ttl_s" },
    { NULL, NULL }
};


#define NGX_HTTP_VSB_SUGGEST_LEN  32

/* Edit distance (optimal string alignment: insert, delete, substitute,
 * swap two neighbours) of a and b, both at most
 * NGX_HTTP_VSB_SUGGEST_LEN bytes. */
static ngx_uint_t
ngx_http_veto_sandbox_distance(const char *a, size_t al, const char *b,
    size_t bl)
{
    size_t      i, j;
    ngx_uint_t  d[NGX_HTTP_VSB_SUGGEST_LEN + 1][NGX_HTTP_VSB_SUGGEST_LEN + 1];
    ngx_uint_t  c, m;

    for (i = 0; i <= al; i++) {
        d[i][0] = i;
    }

    for (j = 0; j <= bl; j++) {
        d[0][j] = j;
    }

    for (i = 1; i <= al; i++) {
        for (j = 1; j <= bl; j++) {
            c = (a[i - 1] != b[j - 1]);
            m = ngx_min(d[i - 1][j] + 1, d[i][j - 1] + 1);
            m = ngx_min(m, d[i - 1][j - 1] + c);

            if (i > 1 && j > 1 && a[i - 1] == b[j - 2]
                && a[i - 2] == b[j - 1])
            {
                m = ngx_min(m, d[i - 2][j - 2] + 1);
            }

            d[i][j] = m;
        }
    }

    return d[al][bl];
}


/* The known name an unknown key most likely meant, or NULL: an alias,
 * else the nearest within 2 edits (1 for a key of 3 bytes or fewer). */
const char *
ngx_http_veto_sandbox_field_suggest(const char *key, const char **names)
{
    size_t       kl, nl;
    ngx_uint_t   i, d, best;
    const char  *found;

    for (i = 0; ngx_http_veto_sandbox_field_aliases[i][0]; i++) {
        if (ngx_strcmp(key, ngx_http_veto_sandbox_field_aliases[i][0]) != 0) {
            continue;
        }

        for (d = 0; names[d]; d++) {
            if (ngx_strcmp(names[d],
                           ngx_http_veto_sandbox_field_aliases[i][1]) == 0)
            {
                return names[d];
            }
        }
    }

    kl = ngx_strlen(key);
    if (kl == 0 || kl > NGX_HTTP_VSB_SUGGEST_LEN) {
        return NULL;
    }

    best = kl <= 3 ? 2 : 3;
    found = NULL;

    for (i = 0; names[i]; i++) {
        nl = ngx_strlen(names[i]);

        if (nl > NGX_HTTP_VSB_SUGGEST_LEN) {
            continue;
        }

        d = ngx_http_veto_sandbox_distance(key, kl, names[i], nl);

        if (d < best) {
            best = d;
            found = names[i];
        }
    }

    return found;
}


/* The helper takes a request header of at most VSB_MAX_JSON bytes: a
 * bigger one is refused here, before any approval is asked for it.
 * NGX_OK, or NGX_ABORT with *rc the 413. */
ngx_int_t
ngx_http_veto_sandbox_fits(ngx_http_request_t *r, json_t *req,
    ngx_int_t *rc)
{
    if (json_dumpb(req, NULL, 0, JSON_COMPACT) <= VSB_MAX_JSON) {
        return NGX_OK;
    }

    *rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                              "body_too_large",
                              "argv, env and cwd of an exec (env and metadata "
                              "of a create) come to more than the sandbox "
                              "helper takes",
                              json_pack("{s:s, s:i}", "limit", "request_json",
                                        "ceiling", VSB_MAX_JSON));
    return NGX_ABORT;
}


/* The policy said no: on the tenant's audit record, then answered. */
ngx_int_t
ngx_http_veto_sandbox_policy_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *decision,
    ngx_uint_t status, const char *code, const char *detail, json_t *extra)
{
    ctx->decision.data = (u_char *) decision;
    ctx->decision.len = ngx_strlen(decision);

    ngx_http_veto_sandbox_audit_denied(r, ctx, code, status);

    return ngx_http_veto_sandbox_problem(r, status, code, detail, extra);
}


/*
 * A request's env (_env.c): the helper's rules, then the policy's; a
 * name the policy refuses is on the tenant's audit record ("why": the
 * detail), then answered 403.  NGX_DECLINED: fine.
 */
ngx_int_t
ngx_http_veto_sandbox_env_check(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *env)
{
    u_char       detail[384];
    ngx_int_t    rc;
    const char  *name;

    rc = ngx_http_veto_sandbox_env_valid(r, env);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    name = ngx_http_veto_sandbox_env_refused(ctx, env, detail,
                                             sizeof(detail));
    if (name == NULL) {
        return NGX_DECLINED;
    }

    /* the record's "why"; json_pack() copies it before this returns */
    ctx->reason = (const char *) detail;

    rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                             NGX_HTTP_FORBIDDEN,
                                             "env_not_allowed",
                                             (char *) detail,
                                             json_pack("{s:s, s:s}", "field",
                                                       "env", "name", name));
    ctx->reason = NULL;

    return rc;
}


ngx_int_t
ngx_http_veto_sandbox_over(ngx_http_request_t *r, ngx_uint_t i,
    uint64_t asked, uint64_t ceiling)
{
    u_char  detail[160];

    ngx_snprintf(detail, sizeof(detail) - 1,
                 "%s %uL is over the policy ceiling %uL%Z",
                 ngx_http_veto_sandbox_limit_names[i], asked, ceiling);

    return ngx_http_veto_sandbox_policy_refuse(r,
                               ngx_http_get_module_ctx(r,
                                               ngx_http_veto_sandbox_module),
                               "deny:over_ceiling",
                               NGX_HTTP_VSB_UNPROCESSABLE,
                               "over_ceiling", (char *) detail,
                               json_pack("{s:s, s:I, s:I}", "limit",
                                         ngx_http_veto_sandbox_limit_names[i],
                                         "requested", (json_int_t) asked,
                                         "ceiling", (json_int_t) ceiling));
}


/* A positive integer; *v untouched and NGX_DECLINED if absent. */
ngx_int_t
ngx_http_veto_sandbox_uint(json_t *j, uint64_t *v)
{
    if (j == NULL) {
        return NGX_DECLINED;
    }

    if (!json_is_integer(j) || json_integer_value(j) <= 0) {
        return NGX_ERROR;
    }

    *v = (uint64_t) json_integer_value(j);

    return NGX_OK;
}


/*
 * A value a request leaves to the helper (a create's limit, ttl_s or
 * idle_s; an exec's timeout_s or output_bytes: then the sandbox's own)
 * is the helper's default: the policy's ceiling goes with it as a cap
 * (vsb_protocol.h, "caps"), so a policy with a ceiling and no default
 * never lets the helper's default past it.  NGX_OK, or NGX_ERROR: no
 * memory.
 */
ngx_int_t
ngx_http_veto_sandbox_cap(json_t *req, ngx_http_veto_sandbox_rule_t *rule,
    ngx_uint_t limit)
{
    json_t  *caps;

    if (rule->ceiling[limit] == 0) {
        return NGX_OK;
    }

    caps = json_object_get(req, "caps");

    if (caps == NULL) {
        caps = json_object();

        if (caps == NULL || json_object_set_new(req, "caps", caps) != 0) {
            return NGX_ERROR;
        }
    }

    if (json_object_set_new(caps, ngx_http_veto_sandbox_limit_names[limit],
                            json_integer((json_int_t) rule->ceiling[limit]))
        != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * ttl_s and idle_s of a create or a PATCH, timeout_s of an exec: the
 * body's positive integer or the policy's default, within the policy's
 * ceiling, set in req; between the ceiling and an askable ceiling
 * (ask_ceilings) a human decides (ctx->limit_ask: the gate asks).  *n:
 * the value (0: none).  NGX_OK, or NGX_ABORT with *rc the refusal's code.
 */
ngx_int_t
ngx_http_veto_sandbox_limited(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_uint_t limit, uint64_t *n, ngx_int_t *rc)
{
    const char                    *name;
    ngx_http_veto_sandbox_rule_t  *rule;

    rule = ctx->rule;
    name = ngx_http_veto_sandbox_limit_names[limit];

    switch (ngx_http_veto_sandbox_uint(json_object_get(body, name), n)) {

    case NGX_ERROR:
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_type", name,
                                              "must be a positive integer");
        return NGX_ABORT;

    case NGX_DECLINED:
        *n = rule->def[limit];
        break;
    }

    if (*n == 0) {
        return NGX_OK;
    }

    if (rule->ceiling[limit] && *n > rule->ceiling[limit]) {

        if (rule->ask[limit] == 0 || *n > rule->ask[limit]) {
            *rc = ngx_http_veto_sandbox_over(r, limit, *n,
                                             rule->ask[limit]
                                             ? rule->ask[limit]
                                             : rule->ceiling[limit]);
            return NGX_ABORT;
        }

        ctx->limit_ask = 1;
    }

    if (json_object_set_new(req, name, json_integer((json_int_t) *n)) != 0) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    return NGX_OK;
}


/* Every key of body is one of names; else NGX_ABORT with the 400 in *rc:
 * it names the field, the known ones and the one it likely meant. */
ngx_int_t
ngx_http_veto_sandbox_known_fields(ngx_http_request_t *r, json_t *body,
    const char **names, ngx_int_t *rc)
{
    u_char       field[64], detail[320], *p, *last;
    size_t       n;
    json_t      *v;
    ngx_uint_t   i;
    const char  *key, *hint;

    json_object_foreach(body, key, v) {
        for (i = 0; names[i]; i++) {
            if (ngx_strcmp(key, names[i]) == 0) {
                break;
            }
        }

        if (names[i] == NULL) {
            /* a long name is cut, at a character's start (the detail
             * repeats it: it must stay UTF-8) */
            n = ngx_min(ngx_strlen(key), sizeof(field) - 1);

            while (n && n < ngx_strlen(key)
                   && ((u_char) key[n] & 0xc0) == 0x80)
            {
                n--;
            }

            p = ngx_cpymem(field, key, n);
            *p = '\0';

            hint = ngx_http_veto_sandbox_field_suggest(key, names);

            last = detail + sizeof(detail) - 1;
            p = ngx_slprintf(detail, last, "unknown field \"%s\"", field);

            if (hint) {
                p = ngx_slprintf(p, last, ": did you mean \"%s\"?", hint);
            }

            p = ngx_slprintf(p, last, " (known:");

            for (i = 0; names[i]; i++) {
                p = ngx_slprintf(p, last, "%s %s", i ? "," : "", names[i]);
            }

            p = ngx_slprintf(p, last, ")");
            *p = '\0';

            *rc = ngx_http_veto_sandbox_bad_field(r, "unknown_field",
                                                  (char *) field,
                                                  (char *) detail);
            return NGX_ABORT;
        }
    }

    return NGX_OK;
}


/* An optional field copied from the body into the helper request when it
 * has the type; else NGX_ABORT with the 400 in *rc. */
ngx_int_t
ngx_http_veto_sandbox_copy_field(ngx_http_request_t *r, json_t *body,
    json_t *req, const char *name, ngx_uint_t type, ngx_int_t *rc)
{
    json_t      *v, *e;
    ngx_uint_t   ok;
    const char  *k;

    static const char  *want[] = {
        "must be a string", "must be an object", "must be an object of strings"
    };

    v = json_object_get(body, name);

    if (v == NULL) {
        return NGX_OK;
    }

    ok = (type == NGX_HTTP_VSB_FIELD_STRING) ? json_is_string(v)
                                       : json_is_object(v);

    if (ok && type == NGX_HTTP_VSB_FIELD_STRINGS) {
        json_object_foreach(v, k, e) {
            if (!json_is_string(e)) {
                ok = 0;
                break;
            }
        }
    }

    if (!ok) {
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_type", name, want[type]);
        return NGX_ABORT;
    }

    if (json_object_set(req, name, v) != 0) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    return NGX_OK;
}
