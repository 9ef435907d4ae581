/*
 * Requests in, their network part: the hosts a create's "network" or a
 * PATCH's "network.add" names, checked against the policy's network
 * section (_network.c decides; this file answers), and the helper
 * request they become; so with the credentials a create's
 * "credentials" or a PATCH's "credentials.add" attaches.  A host beyond the policy's allowlist is refused
 * naming it; one a human may grant (network.ask) sets ctx->net_ask, and
 * the gate then asks one.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_network.h"
#include "ngx_http_veto_sandbox_fields.h"


/*
 * Hosts a create or a PATCH asks for (entries, field names them for the
 * errors), against the policy: malformed is 400, beyond the allowlist
 * and not askable is 422 naming the entry, askable sets ctx->net_ask (the
 * gate then asks a human).  NGX_OK with ctx->net_hosts set, or NGX_ABORT
 * with *rc the refusal.
 */
ngx_int_t
ngx_http_veto_sandbox_network_entries(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *entries, const char *field,
    ngx_int_t *rc)
{
    char         why[512];
    u_char       detail[512], name[64], *p;
    size_t       i, bytes, bad;
    json_t      *v, *ask;
    ngx_int_t    n;
    const char  *entry;

    if (!json_is_array(entries)) {
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_type", field,
                                              "must be an array of "
                                              "\"host[:port]\" entries");
        return NGX_ABORT;
    }

    bytes = 0;

    json_array_foreach(entries, i, v) {
        if (!json_is_string(v)) {
            *rc = ngx_http_veto_sandbox_bad_field(r, "bad_type", field,
                                                  "must be an array of "
                                                  "\"host[:port]\" entries");
            return NGX_ABORT;
        }

        bytes += json_string_length(v);
    }

    /* the helper's hard ceilings, checked before any work */
    if (json_array_size(entries) > NGX_HTTP_VSB_NETWORK_MAX_ENTRIES
        || bytes > VSB_MAX_NETWORK_BYTES)
    {
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "at most %d entries of at most %d bytes together%Z",
                     NGX_HTTP_VSB_NETWORK_MAX_ENTRIES, VSB_MAX_NETWORK_BYTES);

        *rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:over_ceiling",
                                   NGX_HTTP_VSB_UNPROCESSABLE,
                                   "over_ceiling", (char *) detail,
                                   json_pack("{s:s, s:s}", "field", field,
                                             "limit",
                                             json_array_size(entries)
                                             > NGX_HTTP_VSB_NETWORK_MAX_ENTRIES
                                             ? VSB_LIMIT_NETWORK_ENTRIES
                                             : VSB_LIMIT_NETWORK_BYTES));
        return NGX_ABORT;
    }

    n = ngx_http_veto_sandbox_network_classify(r->pool, &ctx->rule->net,
                                               entries, &ask, &bad, why,
                                               sizeof(why));

    /* "network.allow[3]": the field and the entry at fault */
    p = ngx_snprintf(name, sizeof(name) - 1, "%s[%uz]", field, bad);
    *p = '\0';

    entry = json_string_value(json_array_get(entries, bad));

    switch (n) {

    case NGX_OK:
        break;

    case NGX_ERROR:
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_value", (char *) name,
                                              why);
        return NGX_ABORT;

    case NGX_DECLINED:
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "\"%s\" is not in the policy's network allowlist, and "
                     "may not be asked for%Z", entry);

        *rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_VSB_UNPROCESSABLE,
                                   "network_not_allowed", (char *) detail,
                                   json_pack("{s:s, s:s}", "field",
                                             (char *) name, "entry", entry));
        return NGX_ABORT;

    default: /* NGX_ABORT */
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    /* a human decides in Redis; without it the gate is open, and an
     * askable host must not pass an open gate (nginx -t refuses such a
     * policy without veto_sandbox_redis: this is the second lock) */
    if (ask != NULL && ngx_http_veto_sandbox_rds == NULL) {
        *rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN, "approval_unavailable",
                                   "these hosts need a human's approval, "
                                   "and this gateway has no approval store",
                                   json_pack("{s:s}", "field", field));
        return NGX_ABORT;
    }

    ctx->net_hosts = entries;
    ctx->net_ask = ask;

    return NGX_OK;
}


/*
 * Credentials a create ("credentials") or a PATCH ("credentials.add")
 * attaches, by name, against the policy's "credentials": malformed is
 * 400, one the policy does not list is 403 credential_not_allowed naming
 * it, one it lists under "ask" sets ctx->cred_ask (the gate then asks a
 * human).  No field of the API names a host, header or value: the
 * operator's bindings (the helper's) set them.  NGX_OK with
 * ctx->cred_names set, or NGX_ABORT with *rc the refusal.
 * Same shape as ngx_http_veto_sandbox_network_entries() above: kept
 * apart because each refuses in its own terms (422 network_not_allowed
 * or 403 credential_not_allowed, its own bounds, detail and record).
 */
static ngx_int_t
ngx_http_veto_sandbox_credential_names(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *names, const char *field,
    ngx_int_t *rc)
{
    char         why[256];
    u_char       detail[512], name[64], *p;
    size_t       bad;
    json_t      *ask;
    ngx_int_t    n;
    const char  *cred;

    if (!json_is_array(names) || json_array_size(names) == 0) {
        *rc = ngx_http_veto_sandbox_bad_field(r, json_is_array(names)
                                                 ? "bad_value" : "bad_type",
                                              field,
                                              "must be a non-empty array of "
                                              "credential names (the "
                                              "operator binds each to its "
                                              "host)");
        return NGX_ABORT;
    }

    if (json_array_size(names) > NGX_HTTP_VSB_CRED_PER_SANDBOX) {
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "a sandbox holds at most %d credentials%Z",
                     NGX_HTTP_VSB_CRED_PER_SANDBOX);

        *rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:over_ceiling",
                                   NGX_HTTP_VSB_UNPROCESSABLE,
                                   "over_ceiling", (char *) detail,
                                   json_pack("{s:s}", "field", field));
        return NGX_ABORT;
    }

    n = ngx_http_veto_sandbox_credentials_classify(r->pool, &ctx->rule->cred,
                                                   names, &ask, &bad, why,
                                                   sizeof(why));

    p = ngx_snprintf(name, sizeof(name) - 1, "%s[%uz]", field, bad);
    *p = '\0';

    switch (n) {

    case NGX_OK:
        break;

    case NGX_ERROR:
        *rc = ngx_http_veto_sandbox_bad_field(r, json_is_string(
                                                 json_array_get(names, bad))
                                                 ? "bad_value" : "bad_type",
                                              (char *) name, why);
        return NGX_ABORT;

    case NGX_DECLINED:
        cred = json_string_value(json_array_get(names, bad));

        ngx_snprintf(detail, sizeof(detail) - 1,
                     "credential \"%s\" is not one the policy lets this "
                     "agent attach%Z", cred);

        /* the record's "why"; json_pack() copies it before this returns */
        ctx->reason = (const char *) detail;

        *rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN,
                                   "credential_not_allowed", (char *) detail,
                                   json_pack("{s:s, s:s}", "field",
                                             (char *) name, "credential",
                                             cred));
        return NGX_ABORT;

    default: /* NGX_ABORT */
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    /* the second lock, as for askable hosts */
    if (ask != NULL && ngx_http_veto_sandbox_rds == NULL) {
        *rc = ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN, "approval_unavailable",
                                   "these credentials need a human's "
                                   "approval, and this gateway has no "
                                   "approval store",
                                   json_pack("{s:s}", "field", field));
        return NGX_ABORT;
    }

    ctx->cred_names = names;
    ctx->cred_ask = ask;

    return NGX_OK;
}


/*
 * A create's "credentials" go into its network object (the helper's
 * network.credentials): with "network": "none" they are refused (a
 * credential reaches its host through the egress proxy); with no
 * network at all the sandbox gets an empty allowlist, the credentials'
 * hosts joining it (the helper does that).
 */
static ngx_int_t
ngx_http_veto_sandbox_create_credentials(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_int_t *rc)
{
    json_t  *names, *net;

    names = json_object_get(body, "credentials");
    if (names == NULL) {
        return NGX_OK;
    }

    if (ngx_http_veto_sandbox_credential_names(r, ctx, names, "credentials",
                                               rc)
        != NGX_OK)
    {
        return NGX_ABORT;
    }

    net = json_object_get(req, "network");

    if (json_is_string(net)) {
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_value", "credentials",
                                     "credentials need a network allowlist "
                                     "(their hosts join it): not with "
                                     "\"network\": \"none\"");
        return NGX_ABORT;
    }

    if (net == NULL) {
        net = json_pack("{s:[]}", "allow");

        if (net == NULL || json_object_set_new(req, "network", net) != 0) {
            *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
            return NGX_ABORT;
        }

        if (json_array_size(ctx->rule->net.ask_json)
            && json_object_set(net, "ask", ctx->rule->net.ask_json) != 0)
        {
            *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
            return NGX_ABORT;
        }

        ctx->net_hosts = json_object_get(net, "allow");
    }

    if (json_object_set(net, "credentials", names) != 0) {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    return NGX_OK;
}


/*
 * A create's "network": "none", {"allow": [...]}, or when absent the
 * policy's default.  The helper gets {"allow": [...], "ask": [...]}: ask
 * is the policy's, so that a refusal inside the sandbox names the hosts
 * a human could grant.
 */
static ngx_int_t
ngx_http_veto_sandbox_create_hosts(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_int_t *rc)
{
    u_char                            field[64], *p;
    json_t                           *v, *entries, *net, *e;
    const char                       *key;
    ngx_http_veto_sandbox_net_rule_t *rule;

    rule = &ctx->rule->net;
    v = json_object_get(body, "network");

    if (v == NULL) {
        entries = rule->def;

        if (entries == NULL) {
            return NGX_OK;          /* "none": the helper's default */
        }

    } else if (json_is_string(v)) {

        if (ngx_strcmp(json_string_value(v), "none") != 0) {
            *rc = ngx_http_veto_sandbox_bad_field(r, "bad_value", "network",
                                         "\"network\" is \"none\" or "
                                         "{\"allow\": [\"host[:port]\", ...]}");
            return NGX_ABORT;
        }

        if (json_object_set(req, "network", v) != 0) {
            *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
            return NGX_ABORT;
        }

        return NGX_OK;

    } else if (json_is_object(v)) {

        json_object_foreach(v, key, e) {
            if (ngx_strcmp(key, "allow") == 0) {
                continue;
            }

            p = ngx_snprintf(field, sizeof(field) - 1, "network.%s", key);
            *p = '\0';

            *rc = ngx_http_veto_sandbox_bad_field(r, "unknown_field",
                                     (char *) field,
                                     ngx_strcmp(key, "ask") == 0
                                     ? "askable hosts come from the policy: "
                                       "list them in \"allow\" and a human "
                                       "will be asked"
                                     : "\"network\" takes \"allow\" only");
            return NGX_ABORT;
        }

        entries = json_object_get(v, "allow");

        if (entries == NULL) {
            *rc = ngx_http_veto_sandbox_bad_field(r, "missing_field",
                                                  "network.allow",
                                                  "\"network\" needs "
                                                  "\"allow\": [...]");
            return NGX_ABORT;
        }

    } else {
        *rc = ngx_http_veto_sandbox_bad_field(r, "bad_type", "network",
                                     "\"network\" is \"none\" or "
                                     "{\"allow\": [\"host[:port]\", ...]}");
        return NGX_ABORT;
    }

    if (ngx_http_veto_sandbox_network_entries(r, ctx, entries,
                                              v ? "network.allow"
                                                : "network.default", rc)
        != NGX_OK)
    {
        return NGX_ABORT;
    }

    net = json_pack("{s:O}", "allow", entries);

    if (net == NULL
        || (json_array_size(rule->ask_json)
            && json_object_set(net, "ask", rule->ask_json) != 0)
        || json_object_set_new(req, "network", net) != 0)
    {
        *rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ABORT;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_create_network(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *body, json_t *req,
    ngx_int_t *rc)
{
    if (ngx_http_veto_sandbox_create_hosts(r, ctx, body, req, rc) != NGX_OK
        || ngx_http_veto_sandbox_create_credentials(r, ctx, body, req, rc)
           != NGX_OK)
    {
        return NGX_ABORT;
    }

    return NGX_OK;
}


/*
 * PATCH /v1/sandboxes/{id} {"credentials": {"remove": [NAME...]}}: helper
 * update_network's "credentials_remove".  Taking a credential away needs
 * no policy and no human: any attached one may go.  NGX_DECLINED with
 * ctx->req, or the refusal.
 */
static ngx_int_t
ngx_http_veto_sandbox_build_detach(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *names)
{
    u_char   field[64], *p;
    size_t   i, j;
    json_t  *req, *v;

    if (!json_is_array(names) || json_array_size(names) == 0) {
        return ngx_http_veto_sandbox_bad_field(r, json_is_array(names)
                                                  ? "bad_value" : "bad_type",
                                               "credentials.remove",
                                               "must be a non-empty array of "
                                               "the names of credentials the "
                                               "sandbox holds");
    }

    if (json_array_size(names) > NGX_HTTP_VSB_CRED_PER_SANDBOX) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                               "credentials.remove",
                                               "a sandbox holds at most 16 "
                                               "credentials");
    }

    json_array_foreach(names, i, v) {
        p = ngx_snprintf(field, sizeof(field) - 1, "credentials.remove[%uz]",
                         i);
        *p = '\0';

        if (!ngx_http_veto_sandbox_credentials_name_ok(v)) {
            return ngx_http_veto_sandbox_bad_field(r, json_is_string(v)
                                                   ? "bad_value" : "bad_type",
                                                   (char *) field,
                                                   "a credential name is 1 .. "
                                                   "64 bytes of [a-z0-9._-]");
        }

        for (j = 0; j < i; j++) {
            if (json_equal(json_array_get(names, j), v)) {
                return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                                       (char *) field,
                                                       "a credential named "
                                                       "twice");
            }
        }
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL
        || json_object_set(req, "credentials_remove", names) != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->cred_detach = names;
    ctx->req = req;

    return NGX_DECLINED;
}


/*
 * PATCH /v1/sandboxes/{id} {"credentials": {"add": [NAME...]}}: helper
 * update_network's "credentials"; {"credentials": {"remove": [...]}}:
 * build_detach().  NGX_DECLINED with ctx->req, or the refusal.
 */
ngx_int_t
ngx_http_veto_sandbox_build_attach(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *creds)
{
    u_char       field[64], *p;
    json_t      *req, *add, *v;
    ngx_int_t    rc;
    const char  *key;

    if (!json_is_object(creds)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "credentials",
                                 "\"credentials\" must be {\"add\": "
                                 "[NAME, ...]} or {\"remove\": [NAME, ...]}");
    }

    json_object_foreach(creds, key, v) {
        if (ngx_strcmp(key, "add") == 0 || ngx_strcmp(key, "remove") == 0) {
            continue;
        }

        p = ngx_snprintf(field, sizeof(field) - 1, "credentials.%s", key);
        *p = '\0';

        return ngx_http_veto_sandbox_bad_field(r, "unknown_field",
                                 (char *) field,
                                 "\"credentials\" takes \"add\" or "
                                 "\"remove\": a credential is "
                                 "attached and detached by name, the "
                                 "operator binds its host, header and "
                                 "value");
    }

    if (json_object_get(creds, "remove") != NULL
        && json_object_get(creds, "add") != NULL)
    {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "credentials",
                                 "attach and detach in two PATCH requests: "
                                 "each is one decision");
    }

    if (json_object_get(creds, "remove") != NULL) {
        return ngx_http_veto_sandbox_build_detach(r, ctx,
                                        json_object_get(creds, "remove"));
    }

    add = json_object_get(creds, "add");

    if (add == NULL) {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field",
                                               "credentials.add",
                                               "\"credentials\" needs "
                                               "\"add\": [...] or "
                                               "\"remove\": [...]");
    }

    if (ngx_http_veto_sandbox_credential_names(r, ctx, add,
                                               "credentials.add", &rc)
        != NGX_OK)
    {
        return rc;
    }

    req = ngx_http_veto_sandbox_req(r, ctx);
    if (req == NULL || json_object_set(req, "credentials", add) != 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->req = req;

    return NGX_DECLINED;
}


/*
 * PATCH /v1/sandboxes/{id} {"secret": {"name", "value", "host", "env",
 * "header"?, "template"?, "path"?}}: an agent hands over a secret of its
 * own for this sandbox (helper update_network's "secret").  The host
 * must be within the policy's credentials.agent_hosts (403
 * secret_host_not_allowed; none listed: every host is refused); the
 * value is 1 .. 4096 bytes of printable ASCII (a control byte is 400,
 * and no error, record or log line holds it).  The binding's other
 * rules are the helper's (the operator's bindings' rules).
 * ctx->secret is s (borrowed, with the body): records take its name,
 * host and header, never the whole object.
 * NGX_DECLINED with ctx->req, or the refusal.
 */
ngx_int_t
ngx_http_veto_sandbox_build_secret(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *s)
{
    /* docs/openapi.json's SandboxUpdate (scripts/gen-op-fields) */
    static const char *const  known[] = {
        NGX_HTTP_VSB_FIELDS_UPDATE_SECRET, NULL
    };
    char         why[512];
    u_char       field[64], detail[512], *p;
    size_t       i, len;
    json_t      *req, *v, *name, *host, *value;
    ngx_int_t    n;
    const char  *key, *val;

    if (!json_is_object(s)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_type", "secret",
                                 "\"secret\" must be {\"name\", \"value\", "
                                 "\"host\", \"env\", \"header\"?, "
                                 "\"template\"?, \"path\"?}");
    }

    json_object_foreach(s, key, v) {
        for (i = 0; known[i] != NULL; i++) {
            if (ngx_strcmp(known[i], key) == 0) {
                break;
            }
        }

        p = ngx_snprintf(field, sizeof(field) - 1, "secret.%s", key);
        *p = '\0';

        if (known[i] == NULL) {
            return ngx_http_veto_sandbox_bad_field(r, "unknown_field",
                                 (char *) field,
                                 "\"secret\" takes name, value, host, env, "
                                 "header, template and path");
        }

        if (!json_is_string(v)) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_type",
                                                   (char *) field,
                                                   "must be a string");
        }
    }

    name = json_object_get(s, "name");
    value = json_object_get(s, "value");
    host = json_object_get(s, "host");

    if (name == NULL || value == NULL || host == NULL
        || json_object_get(s, "env") == NULL)
    {
        return ngx_http_veto_sandbox_bad_field(r, "missing_field", "secret",
                                 "\"secret\" needs \"name\", \"value\", "
                                 "\"host\" and \"env\"");
    }

    if (!ngx_http_veto_sandbox_credentials_name_ok(name)) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "secret.name",
                                 "a secret's name is 1 .. 64 bytes of "
                                 "[a-z0-9._-], starting with a letter or "
                                 "digit");
    }

    /* the value: never in an error */
    val = json_string_value(value);
    len = json_string_length(value);

    if (len == 0 || len > NGX_HTTP_VSB_SECRET_MAX) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                 "secret.value", "a secret's value is 1 .. "
                                 "4096 bytes");
    }

    for (i = 0; i < len; i++) {
        if ((u_char) val[i] < 0x20 || (u_char) val[i] == 0x7f) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                 "secret.value", "a secret's value holds no "
                                 "control byte (CR, LF, NUL, ...): it goes "
                                 "into a header");
        }

        if ((u_char) val[i] > 0x7e) {
            return ngx_http_veto_sandbox_bad_field(r, "bad_value",
                                 "secret.value", "a secret's value is "
                                 "printable ASCII");
        }
    }

    n = ngx_http_veto_sandbox_credentials_agent_host(&ctx->rule->cred, host,
                                                     why, sizeof(why));

    if (n < 0) {
        return ngx_http_veto_sandbox_bad_field(r, "bad_value", "secret.host",
                                               why);
    }

    if (n == 0) {
        ngx_snprintf(detail, sizeof(detail) - 1,
                     "\"%s\" is not a host the policy lets this agent bind "
                     "a secret of its own to (credentials.agent_hosts)%Z",
                     json_string_value(host));

        ctx->reason = (const char *) detail;

        return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                   NGX_HTTP_FORBIDDEN,
                                   "secret_host_not_allowed",
                                   (char *) detail,
                                   json_pack("{s:s, s:s, s:O}", "field",
                                             "secret.host", "host",
                                             json_string_value(host),
                                             "secret", name));
    }

    req = ngx_http_veto_sandbox_req(r, ctx);

    if (req == NULL || json_object_set(req, "secret", s) != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->secret = s;
    ctx->req = req;

    return NGX_DECLINED;
}


