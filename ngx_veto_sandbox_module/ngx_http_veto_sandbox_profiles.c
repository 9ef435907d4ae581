/*
 * What a sandbox can be made of, as a caller sees it: GET /v1/profiles
 * lists the helper's profiles (its "profiles" op: name, kind, the image's
 * digest, description, os-release, tool versions, availability) that the
 * caller's policy allows, each marked with what a create of it gets this
 * caller (the default, a human's approval).  A profile the policy does
 * not allow is not listed: an agent learns nothing of what others may
 * use.  Also here: the problem a create answers when its profile's image
 * has been removed from the store (409 profile_unavailable), and the MCP
 * tool list_profiles, the row's twin.
 */

#include "ngx_http_veto_sandbox_discovery.h"


/* text an MCP agent gets for one profile, at most */
#define NGX_HTTP_VSB_PROFILE_TEXT  1024
/* tool versions named in that text; all of them are in structuredContent */
#define NGX_HTTP_VSB_PROFILE_TOOLS 12


ngx_int_t
ngx_http_veto_sandbox_build_host(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ctx->req = ngx_http_veto_sandbox_req(r, ctx);
    if (ctx->req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the helper's schema for these ops has no owner: the policy, here,
     * decides what the caller sees of the answer */
    json_object_del(ctx->req, "tenant");
    json_object_del(ctx->req, "agent");

    return NGX_DECLINED;
}


const char *
ngx_http_veto_sandbox_profile_default(ngx_http_veto_sandbox_rule_t *rule)
{
    const char  *name;

    /* as the create's builder chooses: the policy's default_profile
     * (refused there if the policy does not allow it), else the helper's
     * "default" where the policy allows any profile or names it */

    name = rule->default_profile.len
           ? (const char *) rule->default_profile.data : "default";

    return ngx_http_veto_sandbox_policy_profile(rule, name) == NGX_OK
           ? name : NULL;
}


/* Does a create of this profile need a human, whatever else it asks?
 * approvals.always naming sandbox.create, or approvals.profiles naming
 * the profile; network and env can add to that per request. */
static ngx_uint_t
ngx_http_veto_sandbox_profile_approval(ngx_http_veto_sandbox_rule_t *rule,
    const char *name)
{
    ngx_str_t   *s;
    ngx_uint_t   i;

    if (rule->apr.always & NGX_HTTP_VSB_ACT_CREATE) {
        return 1;
    }

    if (rule->apr.profiles == NULL) {
        return 0;
    }

    s = rule->apr.profiles->elts;

    for (i = 0; i < rule->apr.profiles->nelts; i++) {
        if (ngx_strcmp(s[i].data, name) == 0) {
            return 1;
        }
    }

    return 0;
}


json_t *
ngx_http_veto_sandbox_profiles_allowed(ngx_http_veto_sandbox_ctx_t *ctx,
    json_t *list)
{
    size_t       i;
    json_t      *out, *p, *one;
    const char  *name, *def;

    out = json_array();
    if (out == NULL) {
        return NULL;
    }

    def = ngx_http_veto_sandbox_profile_default(ctx->rule);

    json_array_foreach(list, i, p) {

        name = json_string_value(json_object_get(p, "name"));

        if (name == NULL
            || ngx_http_veto_sandbox_policy_profile(ctx->rule, name)
               != NGX_OK)
        {
            continue;
        }

        one = json_copy(p);

        if (one == NULL
            || json_object_set_new(one, "default", json_boolean(
                                   def && ngx_strcmp(def, name) == 0)) != 0
            || json_object_set_new(one, "needs_approval", json_boolean(
                       ngx_http_veto_sandbox_profile_approval(ctx->rule,
                                                              name))) != 0
            || json_array_append_new(out, one) != 0)
        {
            json_decref(out);
            return NULL;
        }
    }

    return out;
}


/* GET /v1/profiles: the helper's list, less what the policy does not
 * allow; "default_profile": what a create without "profile" gets (null:
 * name one), as in GET /v1/about; "default", its old name, the same value
 * for one more release (deprecated) */
ngx_int_t
ngx_http_veto_sandbox_reply_profiles(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t      *list, *out;
    const char  *def;

    list = json_object_get(ctx->helper.json, "profiles");

    if (!json_is_array(list)) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                     "bad_gateway",
                                     "the sandbox helper sent no profiles",
                                     NULL);
    }

    out = ngx_http_veto_sandbox_profiles_allowed(ctx, list);
    if (out == NULL) {
        return NGX_ERROR;
    }

    def = ngx_http_veto_sandbox_profile_default(ctx->rule);

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK,
                              json_pack("{s:o, s:s?, s:s?}", "profiles", out,
                                        "default_profile", def,
                                        "default", def));
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


/* ---- the MCP tool list_profiles ------------------------------------- */


ngx_int_t
ngx_http_veto_sandbox_mcp_twin_profiles(ngx_http_request_t *r,
    json_t *args, ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    if (json_object_size(args) != 0) {
        *why = "list_profiles takes no arguments";
        return NGX_DECLINED;
    }

    twin->method = NGX_HTTP_GET;
    ngx_str_set(&twin->method_name, "GET");
    ngx_str_set(&twin->uri, "/v1/profiles");

    return NGX_OK;
}


/* One profile, a line for a model: its name, what it is, its notable
 * tools and whether a create of it works now. */
static u_char *
ngx_http_veto_sandbox_profile_line(u_char *p, u_char *last, json_t *pr)
{
    size_t       n;
    json_t      *tools, *v;
    const char  *key, *kind, *digest, *desc, *os;

    kind = json_string_value(json_object_get(pr, "kind"));
    digest = json_string_value(json_object_get(pr, "digest"));
    desc = json_string_value(json_object_get(pr, "description"));
    os = json_string_value(json_object_get(json_object_get(pr, "os_release"),
                                           "pretty_name"));

    p = ngx_slprintf(p, last, "\n- %s (%s%s%s)%s%s%s",
                     json_string_value(json_object_get(pr, "name")),
                     kind ? kind : "?", digest ? " " : "",
                     digest ? digest : "",
                     json_is_true(json_object_get(pr, "default"))
                     ? ", the default" : "",
                     desc && *desc ? ": " : "", desc ? desc : "");

    if (os) {
        p = ngx_slprintf(p, last, "; %s", os);
    }

    tools = json_object_get(pr, "tools");
    n = 0;

    json_object_foreach(tools, key, v) {
        if (!json_is_string(v)) {
            continue;
        }

        if (n == NGX_HTTP_VSB_PROFILE_TOOLS) {
            p = ngx_slprintf(p, last, ", ...");
            break;
        }

        p = ngx_slprintf(p, last, "%s %s %s", n ? "," : "; tools:", key,
                         json_string_value(v));
        n++;
    }

    if (json_is_true(json_object_get(pr, "needs_approval"))) {
        p = ngx_slprintf(p, last, "; a create of it needs a human's "
                         "approval");
    }

    if (!json_is_true(json_object_get(pr, "available"))) {
        p = ngx_slprintf(p, last, "; NOT AVAILABLE now (its image was "
                         "removed): do not use it");
    }

    return p;
}


ngx_int_t
ngx_http_veto_sandbox_mcp_present_profiles(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last;
    size_t       i, size;
    json_t      *list, *pr;
    const char  *def;

    list = json_object_get(rest, "profiles");

    if (!json_is_array(list)) {
        return NGX_ERROR;
    }

    def = json_string_value(json_object_get(rest, "default_profile"));

    /* the helper lists at most 16 profiles; each line is bounded */
    size = 256 + NGX_HTTP_VSB_PROFILE_TEXT * json_array_size(list);

    text = ngx_pnalloc(r->pool, size);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = text + size;

    p = ngx_slprintf(text, last, "%uz profile%s you may create a sandbox "
                     "from (create_sandbox's \"profile\"; %s%s%s):",
                     json_array_size(list),
                     json_array_size(list) == 1 ? "" : "s",
                     def ? "omitted, you get \"" : "there is no default: "
                     "name one", def ? def : "", def ? "\"" : "");

    json_array_foreach(list, i, pr) {
        p = ngx_http_veto_sandbox_profile_line(p,
                                   ngx_min(last, p + NGX_HTTP_VSB_PROFILE_TEXT),
                                   pr);
    }

    if (ngx_http_veto_sandbox_mcp_text(result, (char *) text, p - text)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return json_object_set(result, "structuredContent", rest) == 0
           ? NGX_OK : NGX_ERROR;
}


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
