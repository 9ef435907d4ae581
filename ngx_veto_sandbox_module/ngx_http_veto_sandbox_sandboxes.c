/*
 * The sandboxes op group, whole: its rows, builders, field checks, reply
 * mappers, records and MCP tools (twins, presenters), side by side.  The
 * op table (_ops.c) and the MCP tool table (_mcp_tool_table.c) take its
 * rows and tools from the arrays at the end of this file; the group is
 * named once, in NGX_HTTP_VSB_OP_GROUPS (faces.h).
 *
 *   GET    /v1/sandboxes            sandbox.list    list_sandboxes
 *   POST   /v1/sandboxes            sandbox.create  create_sandbox
 *   GET    /v1/sandboxes/{id}       sandbox.get     get_sandbox
 *   GET    /v1/sandboxes/{id}/usage sandbox.usage
 *   PATCH  /v1/sandboxes/{id}       sandbox.update  allow_hosts,
 *                                                   extend_sandbox
 *   DELETE /v1/sandboxes/{id}       sandbox.delete  destroy_sandbox
 *
 * The helper does the work (vsb_protocol.h: list, create, status, usage,
 * update_network or update_lifetime, destroy).  What other ops share
 * stays on its own floor and is called from here: a create's profile
 * (_request_profile.c), network and credentials (_request_network.c, as
 * PATCH's), env (_env.c), limits and lifetimes within the policy
 * (_request_fields.c, _request_lifetime.c); the audit, the quota slot
 * and ownership record (_record.c, _quota.c), a changed lifetime's
 * expiry in Redis and ENDED records as shown (_lifetime.c).  A fork
 * (from_snapshot) is a create: the snapshots group's file tells it.
 * The create body's fields are docs/openapi.json's SandboxCreate, PATCH's
 * SandboxUpdate, as scripts/gen-op-fields writes them (_fields.h): the
 * known-field lists here and create_sandbox's arguments and schema.
 *
 * The unit tests link this file as data (NGX_HTTP_VSB_OPS_DATA_ONLY):
 * then only the rows are compiled, without the code they name; the MCP
 * fuzz target adds NGX_HTTP_VSB_OPS_TOOLS for the tools, their twins and
 * presenters (t/fuzz/fuzz_module_mcp.c), the parsers and helper-reply
 * fuzz targets NGX_HTTP_VSB_OPS_CODE for the builders and the reply
 * mappers (t/fuzz/fuzz_module_parsers.c, _helper_reply.c).
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_fields.h"


#define NGX_HTTP_VSB_READ      (NGX_HTTP_GET|NGX_HTTP_HEAD)


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_CODE)

#include "ngx_http_veto_sandbox_audit.h"
#include "ngx_http_veto_sandbox_quota.h"
#include "ngx_http_veto_sandbox_summary.h"


/* ---- builders, mappers, records ----------------------------------------- */


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
    ngx_uint_t                    i, k;
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
            /* the helper's default, at most the ceiling */
            if (ngx_http_veto_sandbox_cap(req, rule, i) != NGX_OK) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

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

    for (i = 0; i < 2; i++) {
        k = i ? NGX_HTTP_VSB_L_IDLE_S : NGX_HTTP_VSB_L_TTL_S;

        if (ngx_http_veto_sandbox_limited(r, ctx, body, req, k, &n, &rc)
            != NGX_OK)
        {
            return rc;
        }

        /* none from the body or the policy: the helper's, capped */
        if (n == 0 && ngx_http_veto_sandbox_cap(req, rule, k) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
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


/* GET /v1/sandboxes: ?include=ended adds the sandboxes that ended within
 * the helper's retention; nothing else is a query of it. */
ngx_int_t
ngx_http_veto_sandbox_build_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_str_t  *args;

    args = &ctx->in.args;

    ctx->req = ngx_http_veto_sandbox_req(r, ctx);
    if (ctx->req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (args->len == 0) {
        return NGX_DECLINED;
    }

    if (args->len != sizeof("include=ended") - 1
        || ngx_strncmp(args->data, "include=ended", args->len) != 0)
    {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "include",
                                   "the list takes one query: "
                                   "?include=ended (the sandboxes that "
                                   "ended lately, with why and when)");
    }

    if (json_object_set_new(ctx->req, "ended", json_true()) != 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/* docs/openapi.json's SandboxUpdate (scripts/gen-op-fields) */
static const char  *ngx_http_veto_sandbox_update_fields[] = {
    NGX_HTTP_VSB_FIELDS_UPDATE, NULL
};


/* the kind of change a PATCH field is: one kind a request, each its own
 * decision (its own scope, approval and record) */
static ngx_uint_t
ngx_http_veto_sandbox_update_kind(const char *key)
{
    if (ngx_strcmp(key, "ttl_s") == 0 || ngx_strcmp(key, "idle_s") == 0) {
        return 1;                   /* the lifetime */
    }

    if (ngx_strcmp(key, "network") == 0) {
        return 2;
    }

    return ngx_strcmp(key, "credentials") == 0 ? 3 : 4;    /* secret */
}


/*
 * PATCH /v1/sandboxes/{id}: {"network": {"add": [...]}} adds hosts to an
 * allowlist sandbox (helper update_network); {"ttl_s": n, "idle_s": n}
 * changes its lifetime (_request_lifetime.c, helper update_lifetime);
 * {"credentials": ...} and {"secret": ...} attach credentials
 * (_request_network.c).  The body is an object of changes, one kind per
 * request.
 */
ngx_int_t
ngx_http_veto_sandbox_build_update(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char       field[64], *p;
    json_t      *body, *req, *net, *add, *v;
    ngx_int_t    rc;
    ngx_uint_t   lo, hi, k;
    const char  *key, *odd;

    body = ngx_http_veto_sandbox_read_json(r, &rc);
    if (body == NULL) {
        return rc;
    }

    /* a mistake worth its own words */
    if (json_object_get(body, "extend_s") != NULL) {
        return ngx_http_veto_sandbox_bad_field(r, "unknown_field", "extend_s",
                                 "a lifetime is \"ttl_s\", the whole of it "
                                 "counted from creation, not an increment");
    }

    if (ngx_http_veto_sandbox_known_fields(r, body,
                                           ngx_http_veto_sandbox_update_fields,
                                           &rc)
        != NGX_OK)
    {
        return rc;
    }

    /* more than one kind: the refusal names a field of the highest (the
     * lifetime's fields are never the odd ones out) */
    lo = 5;
    hi = 0;
    odd = NULL;

    json_object_foreach(body, key, v) {
        k = ngx_http_veto_sandbox_update_kind(key);
        lo = ngx_min(lo, k);

        if (k > hi) {
            hi = k;
            odd = key;
        }
    }

    if (lo != hi && odd != NULL) {
        p = ngx_snprintf(field, sizeof(field) - 1, "%s", odd);
        *p = '\0';

        return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                 (char *) field,
                                 "one kind of change a request: the "
                                 "lifetime ({\"ttl_s\": n, \"idle_s\": n}), "
                                 "\"network\", \"credentials\" or "
                                 "\"secret\" in separate PATCH requests, "
                                 "each its own decision");
    }

    /* the lifetime, or the scope this needs refused */
    if (ngx_http_veto_sandbox_build_lifetime(r, ctx, body, &rc) == NGX_OK) {
        return rc;
    }

    v = json_object_get(body, "secret");

    if (v != NULL) {
        return ngx_http_veto_sandbox_build_secret(r, ctx, v);
    }

    v = json_object_get(body, "credentials");

    if (v != NULL) {
        return ngx_http_veto_sandbox_build_attach(r, ctx, v);
    }

    net = json_object_get(body, "network");

    if (net == NULL) {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field", "network",
                                 "nothing to change; PATCH takes "
                                 "{\"network\": {\"add\": [...]}}, "
                                 "{\"credentials\": {\"add\": [...]}} or "
                                 "{\"ttl_s\": n, \"idle_s\": n}");
    }

    if (!json_is_object(net)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "network",
                                 "\"network\" must be {\"add\": [...]}");
    }

    json_object_foreach(net, key, v) {
        if (ngx_strcmp(key, "add") == 0) {
            continue;
        }

        p = ngx_snprintf(field, sizeof(field) - 1, "network.%s", key);
        *p = '\0';

        return ngx_http_veto_sandbox_bad_field(r, "unknown_field",
                                 (char *) field,
                                 "\"network\" takes \"add\" only: an "
                                 "allowlist grows, nothing is removed");
    }

    add = json_object_get(net, "add");

    if (add == NULL) {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field",
                                               "network.add",
                                               "\"network\" needs "
                                               "\"add\": [...]");
    }

    if (json_is_array(add) && json_array_size(add) == 0) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "network.add",
                                               "nothing to add");
    }

    if (ngx_http_veto_sandbox_network_entries(r, ctx, add, "network.add",
                                              &rc)
        != NGX_OK)
    {
        return rc;
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL || json_object_set(req, "add", add) != 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->req = req;

    return NGX_DECLINED;
}


/* The PATCH's record: a lifetime changed (and Redis follows it), or the
 * hosts added to an allowlist. */
void
ngx_http_veto_sandbox_record_update(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    json_t     *j, *d;
    ngx_str_t   detail;

    if (!ctx->lifetime) {
        ngx_http_veto_sandbox_record_network(r, ctx, ok, error);
        return;
    }

    if (!ok) {
        ngx_http_veto_sandbox_audit(r, ctx, "error", error, NULL, NULL, 0);
        return;
    }

    j = ctx->helper.json;

    ngx_http_veto_sandbox_lifetime_extend(r, ctx,
                        json_integer_value(json_object_get(j, "expires_at")));

    /* a fork lives longer: so does its snapshot's routing record */
    if (json_is_string(json_object_get(j, "from_snapshot"))) {
        ngx_http_veto_sandbox_record_snapshot_route(r, ctx,
                                       json_object_get(j, "from_snapshot"),
                                       json_object_get(j, "expires_at"));
    }

    d = json_pack("{s:O?, s:O?, s:O?, s:b}",
                  "ttl_s", json_object_get(j, "ttl_s"),
                  "idle_s", json_object_get(j, "idle_s"),
                  "expires_at", json_object_get(j, "expires_at"),
                  "needed_approval", (int) ctx->limit_ask);

    ngx_http_veto_sandbox_json_text(r, d, &detail);
    json_decref(d);

    ngx_http_veto_sandbox_audit(r, ctx, "lifetime_updated", NULL, NULL,
                                detail.len ? &detail : NULL, NGX_HTTP_OK);
}


/* GET /v1/sandboxes: the live ones, and with ?include=ended the ended. */
ngx_int_t
ngx_http_veto_sandbox_reply_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    size_t   i;
    json_t  *j, *v;

    j = ctx->helper.json;

    json_array_foreach(json_object_get(j, "ended"), i, v) {
        ngx_http_veto_sandbox_ended_view(v);
    }

    return ngx_http_veto_sandbox_send_json(r, NGX_HTTP_OK, json_incref(j));
}


/* the reply's "sandbox"; a new one answers 201 with its Location */
static ngx_int_t
ngx_http_veto_sandbox_reply_sb(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t created)
{
    u_char      *loc;
    json_t      *sb;
    ngx_uint_t   status;

    sb = json_object_get(ctx->helper.json, "sandbox");

    if (!json_is_object(sb)) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                     "bad_gateway",
                                     "the sandbox helper sent no sandbox",
                                     NULL);
    }

    status = NGX_HTTP_OK;

    /* an ended one: its ENDED record */
    ngx_http_veto_sandbox_ended_view(sb);

    if (created) {
        if (ngx_http_veto_sandbox_created(r, ctx) != NGX_OK) {
            return ngx_http_veto_sandbox_problem(r, NGX_HTTP_BAD_GATEWAY,
                                     "bad_gateway",
                                     "the sandbox helper sent no valid "
                                     "sandbox id", NULL);
        }

        loc = ngx_pnalloc(r->pool, sizeof("/v1/sandboxes/")
                                   + VSB_SANDBOX_ID_LEN);

        if (loc) {
            ngx_sprintf(loc, "/v1/sandboxes/%V%Z", &ctx->sandbox);

            if (ngx_http_veto_sandbox_header(r, "Location", (char *) loc)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }

        status = NGX_HTTP_CREATED;
    }

    return ngx_http_veto_sandbox_send_json(r, status, json_incref(sb));
}


ngx_int_t
ngx_http_veto_sandbox_reply_sandbox(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ngx_http_veto_sandbox_reply_sb(r, ctx, 0);
}


ngx_int_t
ngx_http_veto_sandbox_reply_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ngx_http_veto_sandbox_reply_sb(r, ctx, 1);
}


/* the main conf: where this host's name and address are (several hosts) */
static ngx_http_veto_sandbox_main_conf_t *
ngx_http_veto_sandbox_sb_mcf(ngx_http_request_t *r)
{
    return ngx_http_get_module_main_conf(r, ngx_http_veto_sandbox_module);
}


/* a create: the ownership record (with the helper run that made it and
 * what its env shows a reviewer), the slot under the real id */
void
ngx_http_veto_sandbox_record_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    u_char                                sha[NGX_HTTP_VSB_HASH_HEX_LEN + 1];
    json_t                               *j, *sb, *v, *env, *view;
    ngx_str_t                             sid, detail;
    const char                           *name;
    ngx_http_veto_sandbox_srv_conf_t     *vscf;
    ngx_http_veto_sandbox_redis_call_t    call;
    ngx_http_veto_sandbox_quota_owner_t   owner;
    ngx_http_veto_sandbox_quota_limits_t  lim;

    j = ctx->helper.json;

    ngx_memzero(&lim, sizeof(lim));
    lim.exec_window = 60000;

    if (ok && ngx_http_veto_sandbox_created(r, ctx) == NGX_OK) {
        sid = ctx->sandbox;
        sb = json_object_get(j, "sandbox");

        /* a fork: its snapshot is kept while it lives, and so is the
         * snapshot's routing record (_where.c) */
        if (json_is_string(json_object_get(sb, "from_snapshot"))) {
            ngx_http_veto_sandbox_record_snapshot_route(r, ctx,
                                   json_object_get(sb, "from_snapshot"),
                                   json_object_get(sb, "expires_at"));
        }

        ngx_memzero(&owner, sizeof(owner));
        owner.gateway = ngx_http_veto_sandbox_sb_mcf(r)->host;

        v = json_object_get(sb, "epoch");

        if (json_is_string(v) && json_string_length(v) <= 64) {
            owner.epoch.data = (u_char *) json_string_value(v);
            owner.epoch.len = json_string_length(v);
        }

        /* the env every exec of it gets, whole (at most 32 KiB of JSON,
         * _env.c), and its digest: an exec's approval shows the one and
         * binds the other */
        env = json_object_get(ctx->req, "env");
        view = json_is_object(env) ? json_copy(env) : json_object();

        /* unless reviewers may see credentials, one never reaches Redis:
         * its value is withheld ({"withheld": "credential"}), and an
         * exec needing approval there is refused (_gate_approval.c) */
        vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

        if (view != NULL && !vscf->approval_credentials) {
            json_object_foreach(view, name, v) {
                if (ngx_http_veto_sandbox_env_secret(r->pool, name, v)
                    != NGX_OK)
                {
                    json_object_set_new(view, name,
                                        json_pack("{s:s}", "withheld",
                                                  "credential"));
                }
            }
        }

        if (view != NULL
            && ngx_http_veto_sandbox_env_digest(env, sha) == NGX_OK)
        {
            ngx_http_veto_sandbox_json_text(r, view, &owner.env);

            if (owner.env.len) {
                owner.env_sha256.data = sha;
                owner.env_sha256.len = NGX_HTTP_VSB_HASH_HEX_LEN;
                owner.env_dropped = 0;
            }
        }

        json_decref(view);

        v = json_object_get(sb, "expires_at");

        /* ownership record and the slot under the real id;
         * counted without a limit: the provisional one was */
        ngx_http_veto_sandbox_bookkeeping_call(r, &call, "ownership");

        (void) ngx_http_veto_sandbox_quota_acquire(&call, &ctx->tenant,
                   &ctx->agent, &sid, &lim,
                   json_is_integer(v)
                   && json_integer_value(v) > ngx_time()
                   ? (ngx_msec_t) (json_integer_value(v) - ngx_time())
                     * 1000
                   : 86400000,
                   &owner);

        ngx_http_veto_sandbox_create_detail(r, ctx, j, &detail);
        ngx_http_veto_sandbox_audit(r, ctx, "sandbox_created", NULL,
                                    NULL, detail.len ? &detail : NULL,
                                    NGX_HTTP_CREATED);

    } else {
        ngx_http_veto_sandbox_audit(r, ctx, "error", error, NULL, NULL, 0);
    }

    ngx_http_veto_sandbox_release_slot(r, ctx);
}


/* a destroy: the sandbox's slot is free */
void
ngx_http_veto_sandbox_record_destroyed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error)
{
    ngx_http_veto_sandbox_redis_call_t  call;

    if (ok) {
        ngx_http_veto_sandbox_bookkeeping_call(r, &call, "quota release");

        /* with hosts, its routing record stays (_where.c) */
        if (ngx_http_veto_sandbox_sb_mcf(r)->host_addr.len) {
            (void) ngx_http_veto_sandbox_quota_release_ended(&call,
                       &ctx->tenant, &ctx->agent, &ctx->sandbox,
                       json_object_get(ctx->helper.json, "ended"));

        } else {
            (void) ngx_http_veto_sandbox_quota_release(&call, &ctx->tenant,
                                                       &ctx->agent,
                                                       &ctx->sandbox);
        }

        ngx_http_veto_sandbox_audit(r, ctx, "sandbox_destroyed", NULL,
                                    NULL, NULL, NGX_HTTP_OK);
    } else {
        ngx_http_veto_sandbox_audit(r, ctx, "error", error, NULL, NULL, 0);
    }
}

#endif /* the rows' code */


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

#include "ngx_http_veto_sandbox_mcp.h"


/* ---- MCP: the tools' twins and presenters ------------------------------- */


/* the arguments each tool takes (its row's rest.args) */

static const char  *ngx_http_veto_sandbox_mcp_create_args[] = {
    NGX_HTTP_VSB_MCP_FIELDS_CREATE, "approval_id", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_get_args[] = {
    "sandbox_id", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_sandbox_args[] = {
    "sandbox_id", "approval_id", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_hosts_args[] = {
    "sandbox_id", "hosts", "approval_id", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_hosts_one[] = {
    "hosts", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_lifetime_args[] = {
    "sandbox_id", NGX_HTTP_VSB_MCP_FIELDS_EXTEND, "approval_id", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_lifetime_one[] = {
    NGX_HTTP_VSB_MCP_FIELDS_EXTEND, NULL
};


/*
 * allow_hosts: PATCH /v1/sandboxes/{id} {"network": {"add": hosts}}, the
 * body a REST client sends (compact, keys sorted).  The one twin of the
 * group written by hand: its body is not its arguments but hosts put
 * into network.add; the rest is its row's (the generic twin's).
 */
static ngx_int_t
ngx_http_veto_sandbox_mcp_twin_hosts(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_tool_t *tool, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    json_t     *body;
    ngx_int_t   rc;

    rc = ngx_http_veto_sandbox_mcp_rest_twin(r, tool, args, twin, why);
    if (rc != NGX_OK) {
        return rc;
    }

    /* the entries are the REST builder's to judge, as ever */
    body = json_pack("{s:{s:O}}", "network", "add",
                     json_object_get(args, "hosts"));
    if (body == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_veto_sandbox_mcp_json_body(r, body, &twin->body);

    json_decref(body);

    return rc;
}


/* get_sandbox of one that ended: why, when, and that it is over */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_ended(ngx_http_request_t *r,
    json_t *rest, json_t *result)
{
    u_char      *text, *p, *last, ended[32];
    const char  *id, *reason, *limit, *step, *detail;

    id = json_string_value(json_object_get(rest, "id"));
    reason = json_string_value(json_object_get(rest, "end_reason"));
    limit = json_string_value(json_object_get(rest, "limit"));
    step = json_string_value(json_object_get(rest, "step"));
    detail = json_string_value(json_object_get(rest, "detail"));

    ngx_http_veto_sandbox_mcp_time(ended, (time_t) json_integer_value(
                                       json_object_get(rest, "ended_at")));

    text = ngx_pnalloc(r->pool, 1024);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = text + 1024;

    p = ngx_slprintf(text, last, "Sandbox %s has ended (%s%s%s%s%s) at %s",
                     id ? id : "?", reason ? reason : "?",
                     limit ? ": " : "", limit ? limit : "",
                     step ? ", at step " : "", step ? step : "", ended);

    if (detail) {
        p = ngx_slprintf(p, last, ": %s", detail);
    }

    p = ngx_slprintf(p, last, ".\nNothing more can run in it and its files "
                     "are gone; create another with create_sandbox.");

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}


/* create_sandbox, get_sandbox: the sandbox */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_sandbox(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last, expires[32];
    char        *limits, *usage, *network;
    json_t      *id, *net;
    const char  *state, *profile;

    id = json_object_get(rest, "id");

    if (!json_is_string(id)) {
        return NGX_ERROR;
    }

    state = json_string_value(json_object_get(rest, "state"));

    if (state && ngx_strcmp(state, "ended") == 0) {
        return ngx_http_veto_sandbox_mcp_present_ended(r, rest, result);
    }
    profile = json_string_value(json_object_get(rest, "profile"));

    /* "none", or the allowlist as an object */
    net = json_object_get(rest, "network");
    network = net ? json_dumps(net, JSON_COMPACT|JSON_ENCODE_ANY) : NULL;

    ngx_http_veto_sandbox_mcp_time(expires, (time_t) json_integer_value(
                                       json_object_get(rest, "expires_at")));

    limits = json_dumps(json_object_get(rest, "limits"), JSON_COMPACT);
    usage = json_dumps(json_object_get(rest, "usage"), JSON_COMPACT);

    text = ngx_pnalloc(r->pool, 16384);
    if (text == NULL) {
        free(limits);
        free(usage);
        free(network);
        return NGX_ERROR;
    }

    last = text + 16384;

    p = ngx_slprintf(text, last,
                     "Sandbox %s is %s (profile %s, network %s); it "
                     "expires %s.\nLimits: %s\n",
                     json_string_value(id), state ? state : "?",
                     profile ? profile : "default",
                     network ? network : "\"none\"", expires,
                     limits ? limits : "{}");

    if (usage) {
        p = ngx_slprintf(p, last, "Usage: %s\n", usage);
    }

    p = ngx_slprintf(p, last, "Use sandbox_id \"%s\" with write_file, exec, "
                     "read_file and destroy_sandbox.", json_string_value(id));

    free(limits);
    free(usage);
    free(network);

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}


/* list_sandboxes */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_list(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last, expires[32];
    size_t       i, size;
    json_t      *list, *sb;
    const char  *id, *state;

    list = json_object_get(rest, "sandboxes");

    if (!json_is_array(list)) {
        return NGX_ERROR;
    }

    size = 128 + 128 * ngx_min(json_array_size(list), 200);

    text = ngx_pnalloc(r->pool, size);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = text + size;

    p = ngx_slprintf(text, last, "%uz sandbox%s%s", json_array_size(list),
                     json_array_size(list) == 1 ? "" : "es",
                     json_array_size(list) ? ":" : " (create one with "
                     "create_sandbox).");

    json_array_foreach(list, i, sb) {
        if (i == 200) {
            p = ngx_slprintf(p, last, "\n... and %uz more (see "
                             "structuredContent)", json_array_size(list) - i);
            break;
        }

        id = json_string_value(json_object_get(sb, "id"));
        state = json_string_value(json_object_get(sb, "state"));

        ngx_http_veto_sandbox_mcp_time(expires, (time_t) json_integer_value(
                                         json_object_get(sb, "expires_at")));

        p = ngx_slprintf(p, last, "\n%s %s, expires %s", id ? id : "?",
                         state ? state : "?", expires);
    }

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}


/* allow_hosts: {id, network: {allow, ask}, added} */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_hosts(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    char        *added, *allow;
    size_t       size;
    ngx_int_t    rc;
    const char  *id;

    id = json_string_value(json_object_get(rest, "id"));
    added = json_dumps(json_object_get(rest, "added"), JSON_COMPACT);
    allow = json_dumps(json_object_get(json_object_get(rest, "network"),
                                       "allow"), JSON_COMPACT);

    size = 256 + (added ? ngx_strlen(added) : 0)
           + (allow ? ngx_strlen(allow) : 0);

    rc = ngx_http_veto_sandbox_mcp_text_restf(r, result, rest, size,
                     "Sandbox %s: added %s (new connections only). Its "
                     "allowlist now: %s.", id ? id : "?",
                     added ? added : "[]", allow ? allow : "[]");

    free(added);
    free(allow);

    return rc;
}


/* extend_sandbox: {id, ttl_s, idle_s, created_at, expires_at, active_at} */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_lifetime(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last, expires[32];
    const char  *id;
    json_int_t   ttl, idle;

    id = json_string_value(json_object_get(rest, "id"));
    ttl = json_integer_value(json_object_get(rest, "ttl_s"));
    idle = json_integer_value(json_object_get(rest, "idle_s"));

    ngx_http_veto_sandbox_mcp_time(expires, (time_t) json_integer_value(
                                       json_object_get(rest, "expires_at")));

    text = ngx_pnalloc(r->pool, 512);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = text + 512;

    p = ngx_slprintf(text, last, "Sandbox %s now ends at %s (a lifetime of "
                     "%L s from its creation)", id ? id : "?", expires,
                     (int64_t) ttl);

    if (idle > 0) {
        p = ngx_slprintf(p, last, ", or after %L s with no command running "
                         "and no call naming it", (int64_t) idle);
    }

    p = ngx_slprintf(p, last, ".");

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}


/* destroy_sandbox: {id, state, confirmed} */
static ngx_int_t
ngx_http_veto_sandbox_mcp_present_destroyed(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    char        *confirmed;
    ngx_int_t    rc;
    const char  *id, *state;

    id = json_string_value(json_object_get(rest, "id"));
    state = json_string_value(json_object_get(rest, "state"));
    confirmed = json_dumps(json_object_get(rest, "confirmed"), JSON_COMPACT);

    rc = ngx_http_veto_sandbox_mcp_text_restf(r, result, rest, 512,
                     "Sandbox %s ended: %s. Confirmed gone: %s.",
                     id ? id : "?", state ? state : "?",
                     confirmed ? confirmed : "{}");

    free(confirmed);

    return rc;
}

#endif /* the MCP tools' code */


/* ---- the group's rows (_ops.c's table) ---------------------------------- */


ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_sandboxes_ops[] = {

    ngx_http_vsb_op("sandbox.list", NGX_HTTP_VSB_READ, "/v1/sandboxes",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_LIST,
                    ngx_http_veto_sandbox_build_list,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_list,
                    ngx_http_veto_sandbox_record_nothing),

    ngx_http_vsb_op("sandbox.create", NGX_HTTP_POST, "/v1/sandboxes",
                    NGX_HTTP_VSB_SCOPE_CREATE, NGX_HTTP_VSB_ACT_CREATE,
                    NGX_HTTP_VSB_QUOTA_SANDBOXES,
                    NGX_HTTP_VSB_BODY_JSON,
                    NGX_HTTP_VSB_ROW_MAKES, VSB_OP_CREATE,
                    ngx_http_veto_sandbox_build_create,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_created,
                    ngx_http_veto_sandbox_record_created),

    ngx_http_vsb_op("sandbox.get", NGX_HTTP_VSB_READ, "/v1/sandboxes/{id}",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE,
                    NGX_HTTP_VSB_ROW_STATE, VSB_OP_STATUS,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_sandbox,
                    ngx_http_veto_sandbox_record_nothing),

    /* what a live sandbox uses now against its limits (cgroup, tmpfs) */
    ngx_http_vsb_op("sandbox.usage", NGX_HTTP_VSB_READ,
                    "/v1/sandboxes/{id}/usage",
                    NGX_HTTP_VSB_SANDBOXES, 0, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_USAGE,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_nothing),

    /* changes to a live sandbox: hosts added to its allowlist (helper
     * update_network, scope sandbox:network), or its lifetime (the
     * builder asks update_lifetime instead, scope sandbox:create) */
    ngx_http_vsb_op("sandbox.update", NGX_HTTP_PATCH, "/v1/sandboxes/{id}",
                    NGX_HTTP_VSB_SCOPE_NETWORK|NGX_HTTP_VSB_SCOPE_CREATE,
                    NGX_HTTP_VSB_ACT_UPDATE,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_JSON, 0, VSB_OP_UPDATE_NETWORK,
                    ngx_http_veto_sandbox_build_update,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_update),

    ngx_http_vsb_op("sandbox.delete", NGX_HTTP_DELETE, "/v1/sandboxes/{id}",
                    NGX_HTTP_VSB_SCOPE_CREATE, NGX_HTTP_VSB_ACT_DELETE,
                    NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_DESTROY,
                    ngx_http_veto_sandbox_build_simple,
                    ngx_http_veto_sandbox_forward,
                    ngx_http_veto_sandbox_reply_json,
                    ngx_http_veto_sandbox_record_destroyed),

    ngx_http_vsb_null_op
};


#if !defined(NGX_HTTP_VSB_OPS_DATA_ONLY) || defined(NGX_HTTP_VSB_OPS_TOOLS)

/* ---- the group's MCP tools (_mcp_tool_table.c's list) ------------------- */


ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_sandboxes_tools[] = {

    { "create_sandbox", "Create a sandbox",
      "Create an isolated Linux sandbox to run commands and keep files in "
      "(its /workspace), with no network (loopback only) unless the policy "
      "allows more. Returns the sandbox's id (sandbox_id for the other "
      "tools), its limits and when it expires. Omitted fields get the "
      "policy's defaults; values above the policy's ceilings are refused. "
      "Destroy it with destroy_sandbox when done."
      NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_PROPS_CREATE ","
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":false,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_sandbox,
      { NGX_HTTP_POST, "/v1/sandboxes",
        ngx_http_veto_sandbox_mcp_create_args, NULL, NULL,
        NGX_HTTP_VSB_MCP_BODY } },

    { "list_sandboxes", "List my sandboxes",
      "List the sandboxes this agent owns that are still running: id, "
      "state, limits and expiry of each.",
      "{\"type\":\"object\",\"properties\":{},"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_list,
      { NGX_HTTP_GET, "/v1/sandboxes", NULL, NULL, NULL, 0 } },

    { "get_sandbox", "Show a sandbox",
      "One of this agent's sandboxes: its state, limits, usage and "
      "expiry; for one that ended lately, why (deleted, expired, idle, "
      "killed_by_limit, helper_restart, termination_failed) and when.",
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_sandbox,
      { NGX_HTTP_GET, "/v1/sandboxes/{id}",
        ngx_http_veto_sandbox_mcp_get_args, NULL, NULL, 0 } },

    { "allow_hosts", "Let a sandbox reach more hosts",
      "Add hosts to the network allowlist of a sandbox created with one "
      "(network {\"allow\": [...]}): its commands may then connect to them "
      "through the gateway's egress proxy. An allowlist only grows; a "
      "sandbox created with network \"none\" cannot get one (create "
      "another). Hosts the policy allows are added at once, hosts it lets "
      "a human decide make the call approval required, others are "
      "refused by name." NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        "\"hosts\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
        "\"minItems\":1,\"description\":\"host, host:port or *.suffix "
        "entries, such as registry.npmjs.org or *.pythonhosted.org.\"},"
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"required\":[\"sandbox_id\",\"hosts\"],"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":true,\"openWorldHint\":true}",
      ngx_http_veto_sandbox_mcp_twin_hosts,
      ngx_http_veto_sandbox_mcp_present_hosts,
      { NGX_HTTP_PATCH, "/v1/sandboxes/{id}",
        ngx_http_veto_sandbox_mcp_hosts_args,
        ngx_http_veto_sandbox_mcp_hosts_one,
        "hosts is required: the host, host:port or *.suffix entries to add",
        0 } },

    { "extend_sandbox", "Change a sandbox's lifetime",
      "Set how long a sandbox lives: ttl_s is its whole lifetime counted "
      "from its creation (not added to what is left: the same call twice "
      "changes nothing), idle_s how long it may sit with no command "
      "running and no call naming it. Within the policy's ceilings it "
      "takes effect at once; past a ceiling, up to what the policy lets a "
      "human grant, the call is approval required; beyond, refused with "
      "the ceiling. A sandbox that ended cannot be extended: create "
      "another." NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        NGX_HTTP_VSB_MCP_PROPS_EXTEND ","
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_lifetime,
      { NGX_HTTP_PATCH, "/v1/sandboxes/{id}",
        ngx_http_veto_sandbox_mcp_lifetime_args,
        ngx_http_veto_sandbox_mcp_lifetime_one,
        "ttl_s or idle_s is required: the new lifetime (from the "
        "sandbox's creation) or idle timeout, in seconds",
        NGX_HTTP_VSB_MCP_BODY } },

    { "destroy_sandbox", "Destroy a sandbox",
      "End a sandbox: every process in it is killed and its files are "
      "deleted, both confirmed. The result says whether that was "
      "confirmed." NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":true,"
      "\"idempotentHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_rest_twin,
      ngx_http_veto_sandbox_mcp_present_destroyed,
      { NGX_HTTP_DELETE, "/v1/sandboxes/{id}",
        ngx_http_veto_sandbox_mcp_sandbox_args, NULL, NULL, 0 } },

    ngx_http_vsb_null_tool
};

#endif /* the MCP tools */
