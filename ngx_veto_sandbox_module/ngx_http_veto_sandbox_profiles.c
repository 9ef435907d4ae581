/*
 * What a sandbox can be made of, as a caller sees it: GET /v1/profiles
 * lists the helper's profiles (its "profiles" op: name, kind, the image's
 * digest, description, os-release, tool versions, availability) that the
 * caller's policy allows, each marked with what a create of it gets this
 * caller (the default, a human's approval).  A profile the policy does
 * not allow is not listed: an agent learns nothing of what others may
 * use.  Also here: the MCP tool list_profiles, the row's twin.  What a
 * create answers when its profile is refused, missing or unavailable is
 * the create's (_request_profile.c).
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_discovery.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


/* text an MCP agent gets for one profile, at most */
#define NGX_HTTP_VSB_PROFILE_TEXT  1024
/* tool versions named in that text; all of them are in structuredContent */
#define NGX_HTTP_VSB_PROFILE_TOOLS 12


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_CODE)

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

#endif /* the row's code */


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

/* ---- the MCP tool list_profiles ------------------------------------- */

/* its twin is the generic one: its row's rest (_mcp_tools.c) */


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


static ngx_int_t
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

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}

#endif /* the MCP tool's code */


/* ---- the row (_ops.c's table) ------------------------------------------ */


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_profiles_ops[] = {

    /* the profiles the caller's policy allows */
    ngx_http_vsb_op("profile.list", NGX_HTTP_VSB_READ, "/v1/profiles",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_PROFILES,
                    ngx_http_veto_sandbox_build_host,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_profiles,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

/* ---- the MCP tool (_mcp_tool_table.c's list) --------------------------- */


ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_profiles_tools[] = {

    { "list_profiles", "List the profiles I may use",
      "The root filesystems (profiles) you may create a sandbox from: "
      "each one's name (create_sandbox's profile), whether it is an OCI "
      "image (with its sha256 digest) or a directory of this host, its "
      "OS and notable tool versions (python3, gcc, nodejs, ...), whether "
      "it is your default, whether a create of it needs a human's "
      "approval, and whether it is available now.",
      "{\"type\":\"object\",\"properties\":{},"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_profiles,
      { NGX_HTTP_GET, "/v1/profiles", NULL, NULL, NULL, 0 } },

    ngx_http_vsb_null_tool
};

#endif /* the MCP tool */
