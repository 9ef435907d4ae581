/*
 * The sandbox.create row's builder: POST /v1/sandboxes, its body's
 * profile (allowed by the policy, or refused: _request_profile.c),
 * limits, ttl_s and idle_s within the policy's ceilings, network and
 * credentials (_request_network.c), env (_env.c) and metadata, as the helper's
 * create request.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_fields.h"


/* docs/openapi.json's SandboxCreate (scripts/gen-op-fields) */
static const char  *ngx_http_veto_sandbox_create_fields[] = {
    NGX_HTTP_VSB_FIELDS_CREATE, NULL
};


ngx_int_t
ngx_http_veto_sandbox_build_create(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    char                          field[64];
    u_char                       *p;
    json_t                       *body, *req, *v, *lim, *out;
    uint64_t                      n;
    ngx_int_t                     rc;
    ngx_uint_t                    i;
    const char                   *key, *profile;
    ngx_http_veto_sandbox_rule_t *rule;

    body = ngx_http_veto_sandbox_read_json(r, &rc);
    if (body == NULL) {
        return rc;
    }

    rule = ctx->rule;

    if (ngx_http_veto_sandbox_known_fields(r, body,
                                           ngx_http_veto_sandbox_create_fields,
                                           &rc)
        != NGX_OK)
    {
        return rc;
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* a fork (_snapshots.c): "snap-" and 24 hex digits; its profile is
     * the snapshot's, as it was allowed when the snapshot's sandbox was
     * made, unless the body names one (then the helper compares) */
    v = json_object_get(body, "from_snapshot");

    if (v != NULL) {
        if (!json_is_string(v)
            || json_string_length(v) != VSB_SNAPSHOT_ID_LEN
            || ngx_strncmp(json_string_value(v), "snap-", 5) != 0
            || !ngx_http_veto_sandbox_hex_lower(
                          (u_char *) json_string_value(v) + 5,
                          VSB_SNAPSHOT_ID_LEN - 5))
        {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                                   "from_snapshot",
                                                   "\"from_snapshot\" is a "
                                                   "snapshot id: snap- and 24 "
                                                   "lowercase hex digits");
        }

        json_object_set(req, "from_snapshot", v);
    }

    /* profile: allowed by policy, or the policy's default */
    v = json_object_get(body, "profile");

    if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "profile",
                                               "\"profile\" must be a "
                                               "non-empty string");
    }

    profile = v ? json_string_value(v)
                : json_object_get(req, "from_snapshot") ? NULL
                : rule->default_profile.len
                  ? (const char *) rule->default_profile.data : NULL;

    if (profile != NULL) {
        if (ngx_http_veto_sandbox_policy_profile(rule, profile) != NGX_OK) {
            /* 403, or 404 when the host has no such profile */
            ctx->req = req;
            return ngx_http_veto_sandbox_profile_refused(r, ctx, profile);
        }

        json_object_set_new(req, "profile", json_string(profile));

    } else if (rule->profiles != NULL
               && json_object_get(req, "from_snapshot") == NULL
               && ngx_http_veto_sandbox_policy_profile(rule, "default")
                  != NGX_OK)
    {
        return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN, "profile_not_allowed",
                                   "the policy does not allow the default "
                                   "profile; name one",
                                   json_pack("{s:s}", "field", "profile"));
    }

    /* limits: known names, positive integers, within the ceilings;
     * the policy's defaults fill what is omitted */
    lim = json_object_get(body, "limits");

    if (lim != NULL && !json_is_object(lim)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "limits",
                                               "\"limits\" must be an "
                                               "object");
    }

    json_object_foreach(lim, key, v) {
        for (i = 0; i < NGX_HTTP_VSB_NHELPER_LIMITS; i++) {
            if (ngx_strcmp(key, ngx_http_veto_sandbox_limit_names[i]) == 0) {
                break;
            }
        }

        p = ngx_snprintf((u_char *) field, sizeof(field) - 1, "limits.%s",
                         key);
        *p = '\0';

        if (i == NGX_HTTP_VSB_NHELPER_LIMITS) {
            return ngx_http_veto_sandbox_bad_field(r, "unknown_field", field,
                                                   "unknown limit");
        }

        if (ngx_http_veto_sandbox_uint(v, &n) != NGX_OK) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type", field,
                                                   "a limit must be a "
                                                   "positive integer");
        }
    }

    out = json_object();
    if (out == NULL || json_object_set_new(req, "limits", out) != 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < NGX_HTTP_VSB_NHELPER_LIMITS; i++) {
        v = lim ? json_object_get(lim, ngx_http_veto_sandbox_limit_names[i])
                : NULL;

        if (v != NULL) {
            n = (uint64_t) json_integer_value(v);

        } else if (rule->def[i]) {
            n = rule->def[i];

        } else {
            continue;
        }

        if (rule->ceiling[i] && n > rule->ceiling[i]) {
            return ngx_http_veto_sandbox_over(r, i, n, rule->ceiling[i]);
        }

        json_object_set_new(out, ngx_http_veto_sandbox_limit_names[i],
                            json_integer((json_int_t) n));
    }

    if (json_object_size(out) == 0) {
        json_object_del(req, "limits");
    }

    if (ngx_http_veto_sandbox_limited(r, ctx, body, req, NGX_HTTP_VSB_L_TTL_S,
                                      &n, &rc)
        != NGX_OK
        || ngx_http_veto_sandbox_limited(r, ctx, body, req,
                                         NGX_HTTP_VSB_L_IDLE_S, &n, &rc)
           != NGX_OK)
    {
        return rc;
    }

    if (ngx_http_veto_sandbox_create_network(r, ctx, body, req, &rc)
        != NGX_OK)
    {
        return rc;
    }

    if (ngx_http_veto_sandbox_copy_field(r, body, req, "env",
                                         NGX_HTTP_VSB_FIELD_STRINGS, &rc)
        != NGX_OK
        || ngx_http_veto_sandbox_copy_field(r, body, req, "metadata",
                                            NGX_HTTP_VSB_FIELD_OBJECT, &rc)
           != NGX_OK
        || ngx_http_veto_sandbox_fits(r, req, &rc) != NGX_OK)
    {
        return rc;
    }

    rc = ngx_http_veto_sandbox_env_check(r, ctx, json_object_get(req, "env"));
    if (rc != NGX_DECLINED) {
        return rc;
    }

    ctx->req = req;

    return NGX_DECLINED;
}
