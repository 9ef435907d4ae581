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
 *
 * The MCP tool describe_isolation is its twin: the same document, and a
 * text that says in plain words what the sandbox gets and what it does
 * not promise.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_discovery.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_CODE)

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

#endif /* the row's code */


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

/* ---- the MCP tool describe_isolation ----------------------------------- */

/* its twin is the generic one: its row's rest (_mcp_tools.c) */


/* "a, b, c" of a JSON array of strings; "-" when empty */
static u_char *
ngx_http_veto_sandbox_about_list(u_char *p, u_char *last, json_t *a)
{
    size_t   i;
    json_t  *v;

    if (json_array_size(a) == 0) {
        return ngx_slprintf(p, last, "-");
    }

    json_array_foreach(a, i, v) {
        if (json_is_string(v)) {
            p = ngx_slprintf(p, last, "%s%s", i ? ", " : "",
                             json_string_value(v));
        }
    }

    return p;
}


/* "memory_mb 512, pids 256" of an object of integers */
static u_char *
ngx_http_veto_sandbox_about_limits(u_char *p, u_char *last, json_t *o)
{
    json_t      *v;
    ngx_uint_t   n;
    const char  *key;

    n = 0;

    json_object_foreach(o, key, v) {
        if (json_is_integer(v)) {
            p = ngx_slprintf(p, last, "%s%s %L", n++ ? ", " : "", key,
                             (int64_t) json_integer_value(v));
        }
    }

    return n ? p : ngx_slprintf(p, last, "none set");
}


static ngx_int_t
ngx_http_veto_sandbox_mcp_present_about(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last;
    size_t       i, size;
    json_t      *iso, *pr, *list;
    json_int_t   abi;
    const char  *cg, *sc, *def, *name, *kind;

    /* at most 16 profiles, each a bounded line */
    size = 2048 + 192 * 16;

    text = ngx_pnalloc(r->pool, size);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = text + size;

    iso = json_object_get(rest, "isolation");
    cg = json_string_value(json_object_get(iso, "cgroup"));
    sc = json_string_value(json_object_get(iso, "seccomp"));
    abi = json_integer_value(json_object_get(iso, "landlock_abi"));

    p = ngx_slprintf(text, last, "Each command you run here runs in "
                     "namespaces of its own: ");
    p = ngx_http_veto_sandbox_about_list(p, last,
                                   json_object_get(iso, "namespaces"));
    p = ngx_slprintf(p, last, "; as an unprivileged user with no "
                     "capabilities, ");

    if (sc && ngx_strcmp(sc, "allowlist") == 0) {
        p = ngx_slprintf(p, last, "under a seccomp allowlist (a syscall "
                         "not on it fails)");

    } else {
        p = ngx_slprintf(p, last, "under seccomp mode \"%s\"",
                         sc ? sc : "unknown");
    }

    p = ngx_slprintf(p, last, ", within cgroup %s limits",
                     cg ? cg : "(unknown version)");

    if (abi > 0) {
        p = ngx_slprintf(p, last, ", and Landlock (ABI %L) limits which "
                         "files it may read, write and run.", (int64_t) abi);

    } else {
        p = ngx_slprintf(p, last, "; this kernel has no Landlock, so file "
                         "access rests on the mounts and file modes alone.");
    }

    p = ngx_slprintf(p, last, "\nNetwork: ");
    p = ngx_http_veto_sandbox_about_list(p, last,
                       json_object_get(json_object_get(rest, "network"),
                                       "modes"));
    p = ngx_slprintf(p, last, " (\"none\" is loopback only; \"allowlist\" "
                     "reaches only the hosts allowed, through the gateway's "
                     "egress proxy).");

    list = json_object_get(rest, "profiles");
    def = json_string_value(json_object_get(rest, "default_profile"));

    p = ngx_slprintf(p, last, "\nProfiles you may use (list_profiles has "
                     "their tools): ");

    json_array_foreach(list, i, pr) {
        if (i == 16) {
            break;
        }

        name = json_string_value(json_object_get(pr, "name"));
        kind = json_string_value(json_object_get(pr, "kind"));

        p = ngx_slprintf(p, ngx_min(last, p + 192), "%s%s (%s%s%s)",
                         i ? ", " : "", name ? name : "?",
                         kind ? kind : "?",
                         json_is_true(json_object_get(pr, "default"))
                         ? ", default" : "",
                         json_is_true(json_object_get(pr, "available"))
                         ? "" : ", NOT AVAILABLE");
    }

    if (json_array_size(list) == 0) {
        p = ngx_slprintf(p, last, "none");
    }

    if (def == NULL) {
        p = ngx_slprintf(p, last, "; there is no default: name one.");
    }

    p = ngx_slprintf(p, last, "\nYour ceilings: ");
    p = ngx_http_veto_sandbox_about_limits(p, last,
                           json_object_get(json_object_get(rest, "limits"),
                                           "policy"));
    p = ngx_slprintf(p, last, "; the host's: ");
    p = ngx_http_veto_sandbox_about_limits(p, last,
                           json_object_get(json_object_get(rest, "limits"),
                                           "helper"));
    p = ngx_slprintf(p, last, " (a request gets the lower).\nWhat this "
                     "does not promise: a sandbox shares the host's kernel "
                     "(a kernel bug reachable from it can break out); the "
                     "host's operators can read what you put here; ending "
                     "a sandbox does not undo what it "
                     "did outside it (jobs started, data sent); what you "
                     "send your model provider never passes through here; "
                     "files you read out are untrusted.");

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}

#endif /* the MCP tool's code */


/* ---- the row (_ops.c's table) ------------------------------------------ */


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_about_ops[] = {

    /* any caller with a token: it is reconnaissance to anyone else */
    ngx_http_vsb_op("about", NGX_HTTP_VSB_READ, "/v1/about",
                    NGX_HTTP_VSB_SANDBOXES|NGX_HTTP_VSB_SCOPE_REVIEW
                    |NGX_HTTP_VSB_SCOPE_AUDIT, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_PING,
                    ngx_http_veto_sandbox_build_host,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_about,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

/* ---- the MCP tool (_mcp_tool_table.c's list) --------------------------- */


ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_about_tools[] = {

    { "describe_isolation", "What a sandbox here gets",
      "What isolates a sandbox on this host, as it is in force now: the "
      "namespaces each command runs in, the cgroup version of its limits, "
      "its seccomp filter, the kernel's Landlock ABI, the network modes "
      "available, the profiles you may use, your ceilings and the host's; "
      "and what a sandbox does not promise. Read it before trusting a "
      "sandbox with a task, rather than assuming.",
      "{\"type\":\"object\",\"properties\":{},"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_about,
      { NGX_HTTP_GET, "/v1/about", NULL, NULL, NULL, 0 } },

    ngx_http_vsb_null_tool
};

#endif /* the MCP tool */
