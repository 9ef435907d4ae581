/*
 * A request's environment.  A create's env applies to every later exec
 * of the sandbox, an exec's to that exec, over it: both can change what
 * an approved command does without being in its argv (PATH pointing at
 * a planted "git", LD_PRELOAD, BASH_ENV, ...).  Checked before the gate
 * (the builders' ngx_http_veto_sandbox_env_check(), _request_fields.c,
 * which records a refusal) by the rules here: the helper's own (so an
 * approval is never burnt on an env the helper refuses), and the
 * policy's "env" (a dangerous name refused, or left to the gate to ask a
 * human for: every name that is not inert is dangerous).  A reviewer
 * sees the whole env, every value, its dangerous names flagged; an audit
 * record its view (ngx_http_veto_sandbox_summary.h): the names, and the
 * redacted values of the dangerous ones.
 */

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_summary.h"


/* an env kept in a sandbox's ownership record, and a helper frame, stay
 * small: 256 variables (the helper's bound) of this much JSON at most */
#define NGX_HTTP_VSB_ENV_JSON_MAX  (32 * 1024)


static ngx_uint_t
ngx_http_veto_sandbox_env_is_dangerous(void *data, const char *name)
{
    return ngx_http_veto_sandbox_policy_env_dangerous(data, name);
}


json_t *
ngx_http_veto_sandbox_env_view_of(ngx_pool_t *pool,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *base, json_t *env,
    ngx_uint_t *dropped)
{
    return ngx_http_veto_sandbox_env_view(pool, base, env,
                                      ngx_http_veto_sandbox_env_is_dangerous,
                                      ctx->rule, dropped);
}


json_t *
ngx_http_veto_sandbox_env_review_of(ngx_http_veto_sandbox_ctx_t *ctx,
    json_t *base, json_t *env, json_t **flagged)
{
    return ngx_http_veto_sandbox_env_review(base, env,
                                      ngx_http_veto_sandbox_env_is_dangerous,
                                      ctx->rule, flagged);
}


/* [A-Za-z_][A-Za-z0-9_]*, as the helper takes it */
static ngx_uint_t
ngx_http_veto_sandbox_env_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    {
        return 0;
    }

    for (s++; *s; s++) {
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')
              || (*s >= '0' && *s <= '9') || *s == '_'))
        {
            return 0;
        }
    }

    return 1;
}


static ngx_int_t
ngx_http_veto_sandbox_env_bad(ngx_http_request_t *r, const char *detail)
{
    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_REQUEST, "bad_value",
                                         detail,
                                         json_pack("{s:s}", "field", "env"));
}


/* the helper's rules: NGX_DECLINED, or the 400 or 413 sent */
ngx_int_t
ngx_http_veto_sandbox_env_valid(ngx_http_request_t *r, json_t *env)
{
    size_t       size;
    json_t      *v;
    const char  *name;

    if (env == NULL) {
        return NGX_DECLINED;
    }

    /* the builders checked it is an object of strings */

    if (json_object_size(env) > VSB_MAX_ENV) {
        return ngx_http_veto_sandbox_env_bad(r, "\"env\" has more than 256 "
                                             "variables");
    }

    json_object_foreach(env, name, v) {
        if (ngx_strlen(name) > VSB_MAX_NAME
            || !ngx_http_veto_sandbox_env_name_ok(name))
        {
            return ngx_http_veto_sandbox_env_bad(r, "an \"env\" name must "
                                       "match [A-Za-z_][A-Za-z0-9_]* and be "
                                       "at most 255 bytes");
        }

        if (ngx_strlen(json_string_value(v)) != json_string_length(v)) {
            return ngx_http_veto_sandbox_env_bad(r, "an \"env\" value "
                                                 "contains a NUL byte");
        }
    }

    size = json_dumpb(env, NULL, 0, JSON_COMPACT);

    if (size > NGX_HTTP_VSB_ENV_JSON_MAX) {
        return ngx_http_veto_sandbox_problem(r,
                               NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                               "over_ceiling",
                               "\"env\" is at most 32768 bytes as JSON",
                               json_pack("{s:s, s:s, s:I, s:I}",
                                         "field", "env", "limit", "env_bytes",
                                         "requested", (json_int_t) size,
                                         "ceiling", (json_int_t)
                                         NGX_HTTP_VSB_ENV_JSON_MAX));
    }

    return NGX_DECLINED;
}


/*
 * The policy's: the first name of env it refuses (with the detail that
 * says why, NUL terminated, in detail), or NULL when it refuses none
 * (allowed, or the gate asks a human).
 */
const char *
ngx_http_veto_sandbox_env_refused(ngx_http_veto_sandbox_ctx_t *ctx,
    json_t *env, u_char *detail, size_t size)
{
    const char  *name;

    if (env == NULL || ctx->rule->env_mode != NGX_HTTP_VSB_ENV_REFUSE) {
        return NULL;     /* allowed, or the gate asks a human */
    }

    name = ngx_http_veto_sandbox_policy_env_first(ctx->rule, env);
    if (name == NULL) {
        return NULL;
    }

    /* a long name is cut: "%Z" would not fit, so terminate here */
    *ngx_snprintf(detail, size - 1, "the policy does not allow "
                  "setting %s: it is not on the policy's list of inert "
                  "names, so it can change what a command does", name)
        = '\0';

    return name;
}
