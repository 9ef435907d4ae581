/*
 * A create's profile refused: by the policy (403 profile_not_allowed,
 * or 404 unknown_profile when the helper, asked for its list, has no
 * such profile), or by the helper (no such profile: 404; its image gone
 * from the store: 409 profile_unavailable).  The create's builder
 * (_sandboxes.c) and the helper's error reply (_reply.c) answer
 * through these; GET /v1/profiles (_profiles.c) says what a caller may
 * choose instead.
 */

#include "ngx_http_veto_sandbox_pipeline.h"


/* profile names a 404 unknown_profile lists, at most (the helper has at
 * most 16) */
#define NGX_HTTP_VSB_UNKNOWN_PROFILE_NAMES  16


/*
 * 404 unknown_profile: the create named a profile this host does not
 * have.  "profiles": the names the caller may use here (the helper's
 * list, when known, narrowed by the policy); NULL list: the policy's
 * own list, if it has one.
 */
static ngx_int_t
ngx_http_veto_sandbox_profile_unknown(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *name, json_t *list)
{
    size_t       i;
    json_t      *names, *p;
    ngx_str_t   *s;
    const char  *n;

    names = json_array();
    if (names == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (list != NULL) {
        json_array_foreach(list, i, p) {
            n = json_string_value(json_object_get(p, "name"));

            if (n != NULL
                && json_array_size(names) < NGX_HTTP_VSB_UNKNOWN_PROFILE_NAMES
                && ngx_http_veto_sandbox_policy_profile(ctx->rule, n)
                   == NGX_OK)
            {
                json_array_append_new(names, json_string(n));
            }
        }

    } else if (ctx->rule->profiles != NULL) {
        s = ctx->rule->profiles->elts;

        for (i = 0; i < ctx->rule->profiles->nelts
                    && i < NGX_HTTP_VSB_UNKNOWN_PROFILE_NAMES; i++)
        {
            json_array_append_new(names,
                                  ngx_http_veto_sandbox_json_ngx_str(&s[i]));
        }
    }

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_NOT_FOUND,
                              "unknown_profile",
                              "no such profile on this host: \"profiles\" "
                              "names those you may use (GET /v1/profiles "
                              "describes them)",
                              json_pack("{s:s, s:s, s:o}", "field", "profile",
                                        "profile", name, "profiles", names));
}


/* the helper's list is in: the profile exists (403, the policy's word)
 * or not (404) */
static void
ngx_http_veto_sandbox_profile_checked(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    size_t             i;
    json_t            *list, *p;
    ngx_int_t          rc;
    const char        *name, *n;
    ngx_connection_t  *c;

    name = json_string_value(json_object_get(ctx->req, "profile"));
    list = ctx->helper.status == NGX_OK
           && json_is_true(json_object_get(ctx->helper.json, "ok"))
           ? json_object_get(ctx->helper.json, "profiles") : NULL;

    rc = NGX_DECLINED;

    if (name != NULL && json_is_array(list)) {
        rc = NGX_OK;

        json_array_foreach(list, i, p) {
            n = json_string_value(json_object_get(p, "name"));

            if (n != NULL && ngx_strcmp(n, name) == 0) {
                rc = NGX_DECLINED;
                break;
            }
        }
    }

    if (rc == NGX_OK) {
        rc = ngx_http_veto_sandbox_profile_unknown(r, ctx, name, list);

    } else {
        /* it exists, or the helper could not say: the policy's answer */
        rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN, "profile_not_allowed",
                                   "the policy does not allow this profile",
                                   json_pack("{s:s, s:s}", "field", "profile",
                                             "profile", name ? name : ""));
    }

    c = r->connection;
    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/*
 * A create names a profile the policy does not allow: whether this host
 * has it at all decides between 403 profile_not_allowed and 404
 * unknown_profile, so the helper is asked for its list (nothing is
 * created: the create itself never goes out).  NGX_DONE: asked.
 */
ngx_int_t
ngx_http_veto_sandbox_profile_refused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *name)
{
    json_t              *req;
    ngx_pool_cleanup_t  *cln;

    if (json_object_set_new(ctx->req, "profile", json_string(name)) != 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    req = json_pack("{s:s}", "op", VSB_OP_PROFILES);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = req;

    if (ngx_http_veto_sandbox_helper_send(r, ctx, req, NULL, 0,
                                      ngx_http_veto_sandbox_profile_checked)
        == NGX_OK)
    {
        return NGX_DONE;
    }

    /* the helper cannot say: the policy's answer stands */
    return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN, "profile_not_allowed",
                                   "the policy does not allow this profile",
                                   json_pack("{s:s, s:s}", "field", "profile",
                                             "profile", name));
}


/* the helper has no such profile (a create's bad_value of "profile") */
ngx_int_t
ngx_http_veto_sandbox_profile_missing(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    const char  *name;

    name = json_string_value(json_object_get(ctx->req, "profile"));

    return ngx_http_veto_sandbox_profile_unknown(r, ctx,
                                                 name ? name : "default",
                                                 NULL);
}


/* "sha256:" and 64 hex digits in s, or NULL */
static json_t *
ngx_http_veto_sandbox_find_digest(const char *s)
{
    const char  *p;

    for (p = s; (p = ngx_strstr(p, "sha256:")) != NULL; p++) {

        /* stops at the NUL of a shorter string */
        if (ngx_http_veto_sandbox_hex_lower((const u_char *) p + 7, 64)) {
            return json_stringn(p, sizeof("sha256:") - 1 + 64);
        }
    }

    return NULL;
}


/*
 * A create's profile is configured but its image is no longer in the
 * helper's store (an operator removed it).  409, not 503: waiting does
 * not bring it back (only an operator's import, or a helper restarted
 * without the profile), so the agent is told to choose another profile,
 * which it can do at once; a 503 would invite retries that cannot help.
 * The helper's detail (the store's path, the import command) is the
 * operator's: it goes to the error log.
 */
ngx_int_t
ngx_http_veto_sandbox_profile_unavailable(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char      *detail, *p;
    size_t       size;
    json_t      *v, *extra, *digest;
    const char  *name, *hd;

    v = json_object_get(ctx->req, "profile");
    name = json_is_string(v) ? json_string_value(v) : "default";

    v = json_object_get(ctx->helper.json, "detail");
    hd = json_is_string(v) ? json_string_value(v) : "";

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "veto_sandbox: a create of profile \"%s\" failed: %s",
                  name, hd);

    digest = ngx_http_veto_sandbox_find_digest(hd);

    size = sizeof("profile \"\" is configured on this host but its image "
                  "() is no longer in the image store: choose another "
                  "profile (GET /v1/profiles, or the MCP tool list_profiles, "
                  "marks each \"available\"), or ask the operator to import "
                  "the image again")
           + ngx_strlen(name) + 80;

    detail = ngx_pnalloc(r->pool, size);
    if (detail == NULL) {
        json_decref(digest);
        return NGX_ERROR;
    }

    p = ngx_slprintf(detail, detail + size - 1,
                     "profile \"%s\" is configured on this host but its "
                     "image (%s) is no longer in the image store: choose "
                     "another profile (GET /v1/profiles, or the MCP tool "
                     "list_profiles, marks each \"available\"), or ask the "
                     "operator to import the image again", name,
                     digest ? json_string_value(digest) : "its digest");
    *p = '\0';

    extra = json_pack("{s:s, s:s, s:o?}", "field", "profile",
                      "profile", name, "digest", digest);

    return ngx_http_veto_sandbox_problem(r, NGX_HTTP_CONFLICT,
                                         VSB_E_PROFILE_UNAVAILABLE,
                                         (char *) detail, extra);
}
