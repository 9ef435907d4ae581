/*
 * GET /v1/about: the isolation layers in force on this host, so that an
 * agent or an operator sees what a sandbox here actually gets instead of
 * assuming it.  Everything comes from the helper's ping, as the helper
 * found it when it started (the namespaces every exec runs in, the
 * cgroup version it drives, its seccomp filter, the kernel's Landlock
 * ABI it uses, its egress proxy, its profiles and ceilings); the caller's
 * policy narrows the profiles and adds its own ceilings.
 *
 * It needs a token (any scope), unlike /v1/health: what it adds is
 * reconnaissance to anyone else (the kernel's Landlock ABI dates the
 * kernel, image digests name exact package sets, the ceilings say how
 * much one request may burn), while every party with a decision to make
 * on it (an agent choosing where to run a task, a reviewer granting
 * hosts, an operator) holds a token.  The gate applies as to any op: a
 * revoked token is refused, Redis down is a 503.
 */

#include "ngx_http_veto_sandbox_discovery.h"


/* the caller's policy ceilings: only those it sets */
static json_t *
ngx_http_veto_sandbox_about_policy(ngx_http_veto_sandbox_rule_t *rule)
{
    json_t      *o;
    ngx_uint_t   i;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    for (i = 0; i < NGX_HTTP_VSB_NLIMITS; i++) {
        if (rule->ceiling[i]
            && json_object_set_new(o, ngx_http_veto_sandbox_limit_names[i],
                                   json_integer((json_int_t) rule->ceiling[i]))
               != 0)
        {
            json_decref(o);
            return NULL;
        }
    }

    return o;
}


ngx_int_t
ngx_http_veto_sandbox_reply_about(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t  *j, *eg, *modes, *profiles, *policy, *doc;
    json_t  *list;

    j = ctx->helper.json;

    list = json_object_get(j, "profiles");

    if (!json_is_object(json_object_get(j, "egress"))
        || !json_is_array(list)
        || !json_is_array(json_object_get(j, "namespaces")))
    {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                     "bad_gateway",
                                     "the sandbox helper's ping does not "
                                     "describe its isolation (a helper "
                                     "older than this gateway?)", NULL);
    }

    eg = json_object_get(j, "egress");

    /* allowlist sandboxes can be made while the egress proxy serves */
    modes = json_is_true(json_object_get(eg, "available"))
            ? json_pack("[s, s]", "none", "allowlist")
            : json_pack("[s]", "none");

    profiles = ngx_http_veto_sandbox_profiles_allowed(ctx, list);
    policy = ngx_http_veto_sandbox_about_policy(ctx->rule);

    doc = json_pack("{s:{s:O, s:O?, s:O?, s:O?},"
                    " s:{s:o, s:{s:O?, s:O?}},"
                    " s:o, s:s?,"
                    " s:{s:O?, s:o},"
                    " s:{s:O?, s:O?, s:O?}}",
                    "isolation",
                      "namespaces", json_object_get(j, "namespaces"),
                      "cgroup", json_object_get(j, "cgroup"),
                      "seccomp", json_object_get(j, "seccomp"),
                      "landlock_abi", json_object_get(j, "landlock_abi"),
                    "network",
                      "modes", modes,
                      "egress",
                        "available", json_object_get(eg, "available"),
                        "state", json_object_get(eg, "state"),
                    "profiles", profiles,
                    "default_profile",
                    ngx_http_veto_sandbox_profile_default(ctx->rule),
                    "limits",
                      "helper", json_object_get(j, "limits_max"),
                      "policy", policy,
                    "helper",
                      "version", json_object_get(j, "version"),
                      "epoch", json_object_get(j, "epoch"),
                      "started_at", json_object_get(j, "started_at"));

    if (doc == NULL) {
        /* "o" took modes, profiles and policy even so */
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, doc);
}
