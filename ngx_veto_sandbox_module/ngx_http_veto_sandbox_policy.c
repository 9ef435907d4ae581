/*
 * The policy file ("veto_sandbox_policy file"), read at configuration
 * time, so "nginx -s reload" picks up a changed file and "nginx -t"
 * rejects a bad one, naming the file and the field:
 *
 *   {
 *     "version": 1,
 *     "tenants": {
 *       "<tenant>": {
 *         "profiles": ["default"],            allowed; absent: any
 *         "default_profile": "default",
 *         "ceilings": {"memory_mb": 512, ...},  (422 above these)
 *         "ask_ceilings": {"ttl_s": 86400},  (above the ceiling up to
 *                                             these: a human decides, 202)
 *         "defaults": {"memory_mb": 256, ...},  (sent when omitted)
 *         "approvals": {                      (a human must approve)
 *             "always": ["sandbox.exec", ...],  these actions, always
 *             "network": true,                   a create asking egress
 *             "exec_argv": ["git push*", ...],   exec whose argv, joined
 *                                                by spaces, fnmatch()es
 *             "export": true,                    reading files out
 *             "profiles": ["privileged"],        creating these profiles
 *             "irreversible_actions": [...],     marked in the summary
 *             "irreversible_argv": ["git push*"],
 *             "threshold": 2, "ttl_s": 900 },    reviewers needed, life
 *         "quotas": {
 *             "concurrent_sandboxes": 10,        tenant total (agent: own)
 *             "execs_per_minute": 120,           tenant total (agent: own)
 *             "per_agent": {"concurrent_sandboxes": 2,
 *                           "execs_per_minute": 30} },  tenant only
 *         "env": {"also_inert": ["MY_*"],     names that cannot change
 *                  "on_dangerous": "approve"},  what runs; the others:
 *                                               allow|approve|refuse
 *         "network": {                         egress (_network.c)
 *             "allow": ["host[:port]", "*.suffix", ...],  the ceiling
 *             "ask": [...],                      a human may grant these
 *             "default": "none" | [...] },       a create without network
 *         "credentials": {                     the operator's (_network.c)
 *             "allow": ["git-deploy"],           attached on the agent's own
 *             "ask": ["prod-api"] },             a human must approve these
 *         "agents": { "<agent>": { same keys but "agents" } }
 *       }
 *     }
 *   }
 *
 * Limit names: memory_mb, pids, cpu_percent, disk_mb, timeout_s,
 * output_bytes, ttl_s, file_bytes, archive_bytes, idle_s; ask_ceilings
 * take ttl_s and idle_s, each above its ceiling.  An agent's rule
 * starts as a copy of its tenant's; what it sets replaces the tenant's
 * value, and may not exceed the tenant's ceilings.  An agent's
 * "approvals" replaces the
 * tenant's whole approvals rule; an agent's "quotas" sets that agent's
 * own limits (the tenant totals still apply).  An agent's "network"
 * replaces each of allow, ask and default it sets, within its tenant's;
 * so does its "credentials" of allow and ask.
 * Unknown keys anywhere are errors.  Approvals, quotas or askable hosts
 * need Redis (veto_sandbox_redis).  The actions "approvals" names are
 * the rows of the op table the caller gives (ops, _ops.c's) that have an
 * approval kind (_policy_approvals.c).
 */

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_network.h"


static ngx_int_t ngx_http_veto_sandbox_policy_rule_load(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *obj,
    ngx_http_veto_sandbox_rule_t *rule, ngx_http_veto_sandbox_rule_t *parent,
    ngx_http_veto_sandbox_op_t *ops);
static ngx_int_t ngx_http_veto_sandbox_policy_ask(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, ngx_http_veto_sandbox_rule_t *rule,
    ngx_http_veto_sandbox_rule_t *parent, ngx_uint_t i);
static ngx_int_t ngx_http_veto_sandbox_policy_limits(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, const char *what, json_t *obj,
    uint64_t *out);
static ngx_int_t ngx_http_veto_sandbox_policy_name(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, const char *name, ngx_str_t *out);
static void ngx_http_veto_sandbox_policy_cleanup(void *data);
static ngx_uint_t ngx_http_veto_sandbox_policy_redis(
    ngx_http_veto_sandbox_rule_t *rule);
static ngx_int_t ngx_http_veto_sandbox_policy_env(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *obj,
    ngx_http_veto_sandbox_rule_t *rule);


/* the limits a policy knows, by NGX_HTTP_VSB_L_* */
const char  *ngx_http_veto_sandbox_limit_names[NGX_HTTP_VSB_NLIMITS] = {
    VSB_LIMIT_MEMORY_MB,
    VSB_LIMIT_PIDS,
    VSB_LIMIT_CPU_PERCENT,
    VSB_LIMIT_DISK_MB,
    VSB_LIMIT_TIMEOUT_S,
    VSB_LIMIT_OUTPUT_BYTES,
    VSB_LIMIT_TTL_S,
    VSB_LIMIT_FILE_BYTES,
    VSB_LIMIT_ARCHIVE_BYTES,
    VSB_LIMIT_IDLE_S,
    VSB_LIMIT_SNAPSHOT_TTL_S,
    VSB_LIMIT_SNAPSHOTS,
    VSB_LIMIT_SNAPSHOT_BYTES
};


ngx_http_veto_sandbox_policy_t *
ngx_http_veto_sandbox_policy_load(ngx_conf_t *cf, ngx_str_t *file,
    ngx_http_veto_sandbox_op_t *ops)
{
    char                             where[512];
    u_char                          *p;
    json_t                          *doc, *tenants, *tobj, *agents, *aobj, *v;
    const char                      *key, *tname, *aname;
    json_error_t                     err;
    ngx_pool_cleanup_t              *cln;
    ngx_http_veto_sandbox_agent_t   *agent;
    ngx_http_veto_sandbox_tenant_t  *tenant;
    ngx_http_veto_sandbox_policy_t  *policy;

    doc = json_load_file((char *) file->data, JSON_REJECT_DUPLICATES, &err);
    if (doc == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\" line %d: %s",
                           file, err.line, err.text);
        return NULL;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        json_decref(doc);
        return NULL;
    }

    cln->handler = ngx_http_veto_sandbox_policy_cleanup;
    cln->data = doc;

    policy = ngx_pcalloc(cf->pool, sizeof(ngx_http_veto_sandbox_policy_t));
    if (policy == NULL) {
        return NULL;
    }

    policy->file = *file;
    policy->doc = doc;

    if (!json_is_object(doc)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": the top level "
                           "must be an object", file);
        return NULL;
    }

    json_object_foreach(doc, key, v) {
        if (ngx_strcmp(key, "version") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) != 1) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": "
                                   "\"version\" must be 1", file);
                return NULL;
            }
            continue;
        }

        if (ngx_strcmp(key, "tenants") == 0) {
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": unknown field "
                           "\"%s\"", file, key);
        return NULL;
    }

    tenants = json_object_get(doc, "tenants");
    if (!json_is_object(tenants)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": \"tenants\" "
                           "must be an object", file);
        return NULL;
    }

    policy->tenants = ngx_array_create(cf->pool,
                                       ngx_max(json_object_size(tenants), 1),
                                       sizeof(ngx_http_veto_sandbox_tenant_t));
    if (policy->tenants == NULL) {
        return NULL;
    }

    json_object_foreach(tenants, tname, tobj) {

        /* a long name is cut: "%Z" would not fit, so terminate here */
        p = ngx_snprintf((u_char *) where, sizeof(where) - 1, "tenants.%s",
                         tname);
        *p = '\0';

        tenant = ngx_array_push(policy->tenants);
        if (tenant == NULL) {
            return NULL;
        }

        ngx_memzero(tenant, sizeof(ngx_http_veto_sandbox_tenant_t));

        if (ngx_http_veto_sandbox_policy_name(cf, file, "tenants", tname,
                                              &tenant->name)
            != NGX_OK
            || ngx_http_veto_sandbox_policy_rule_load(cf, file, where, tobj,
                                                      &tenant->rule, NULL, ops)
               != NGX_OK)
        {
            return NULL;
        }

        /* before the agents: a tenant without any still needs Redis for
         * its own approvals (else the gate would be open) */
        if (ngx_http_veto_sandbox_policy_redis(&tenant->rule)) {
            policy->needs_redis = 1;
        }

        agents = json_object_get(tobj, "agents");
        if (agents == NULL) {
            continue;
        }

        tenant->agents = ngx_array_create(cf->pool,
                                     ngx_max(json_object_size(agents), 1),
                                     sizeof(ngx_http_veto_sandbox_agent_t));
        if (tenant->agents == NULL) {
            return NULL;
        }

        json_object_foreach(agents, aname, aobj) {

            p = ngx_snprintf((u_char *) where, sizeof(where) - 1,
                             "tenants.%s.agents.%s", tname, aname);
            *p = '\0';

            agent = ngx_array_push(tenant->agents);
            if (agent == NULL) {
                return NULL;
            }

            ngx_memzero(agent, sizeof(ngx_http_veto_sandbox_agent_t));

            if (ngx_http_veto_sandbox_policy_name(cf, file, where, aname,
                                                  &agent->name)
                != NGX_OK
                || ngx_http_veto_sandbox_policy_rule_load(cf, file, where,
                                                          aobj, &agent->rule,
                                                          &tenant->rule, ops)
                   != NGX_OK)
            {
                return NULL;
            }

            if (ngx_http_veto_sandbox_policy_redis(&agent->rule)) {
                policy->needs_redis = 1;
            }
        }
    }

    return policy;
}


static void
ngx_http_veto_sandbox_policy_cleanup(void *data)
{
    json_decref((json_t *) data);
}


static ngx_int_t
ngx_http_veto_sandbox_policy_name(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, const char *name, ngx_str_t *out)
{
    size_t  len, i;

    len = ngx_strlen(name);

    for (i = 0; i < len; i++) {
        if ((u_char) name[i] < 0x21 || (u_char) name[i] > 0x7e) {
            break;
        }
    }

    if (len == 0 || len > VSB_MAX_ID_LEN || i < len) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: name \"%s\" "
                           "must be 1..%d printable ASCII characters",
                           file, where, name, VSB_MAX_ID_LEN);
        return NGX_ERROR;
    }

    out->len = len;
    out->data = (u_char *) name;    /* lives as long as policy->doc */

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_policy_rule_load(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, json_t *obj, ngx_http_veto_sandbox_rule_t *rule,
    ngx_http_veto_sandbox_rule_t *parent, ngx_http_veto_sandbox_op_t *ops)
{
    json_t      *v, *e;
    ngx_str_t   *s;
    ngx_uint_t   i;
    const char  *key;

    if (!json_is_object(obj)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s must be an "
                           "object", file, where);
        return NGX_ERROR;
    }

    if (parent) {
        *rule = *parent;
    }

    json_object_foreach(obj, key, v) {

        if (ngx_strcmp(key, "profiles") == 0) {
            if (!json_is_array(v)) {
                goto bad_type;
            }

            rule->profiles = ngx_array_create(cf->pool,
                                              ngx_max(json_array_size(v), 1),
                                              sizeof(ngx_str_t));
            if (rule->profiles == NULL) {
                return NGX_ERROR;
            }

            json_array_foreach(v, i, e) {
                if (!json_is_string(e) || json_string_length(e) == 0) {
                    goto bad_type;
                }

                s = ngx_array_push(rule->profiles);
                if (s == NULL) {
                    return NGX_ERROR;
                }

                s->data = (u_char *) json_string_value(e);
                s->len = json_string_length(e);
            }

        } else if (ngx_strcmp(key, "default_profile") == 0) {
            if (!json_is_string(v) || json_string_length(v) == 0) {
                goto bad_type;
            }

            rule->default_profile.data = (u_char *) json_string_value(v);
            rule->default_profile.len = json_string_length(v);

        } else if (ngx_strcmp(key, "ceilings") == 0) {
            if (ngx_http_veto_sandbox_policy_limits(cf, file, where,
                                                    "ceilings", v,
                                                    rule->ceiling)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "ask_ceilings") == 0) {
            ngx_memzero(rule->ask, sizeof(rule->ask));

            if (ngx_http_veto_sandbox_policy_limits(cf, file, where,
                                                    "ask_ceilings", v,
                                                    rule->ask)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "defaults") == 0) {
            if (ngx_http_veto_sandbox_policy_limits(cf, file, where,
                                                    "defaults", v, rule->def)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "credentials") == 0) {
            if (!json_is_object(v)) {
                goto bad_type;
            }

            if (ngx_http_veto_sandbox_credentials_policy(cf, file, where, v,
                                                         &rule->cred)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "approvals") == 0
                   || ngx_strcmp(key, "network") == 0
                   || ngx_strcmp(key, "quotas") == 0)
        {
            if (!json_is_object(v)) {
                goto bad_type;
            }

            if (key[0] == 'a') {
                rule->approvals = v;

                if (ngx_http_veto_sandbox_policy_approvals(cf, file, where, v,
                                                           &rule->apr, ops)
                    != NGX_OK)
                {
                    return NGX_ERROR;
                }

            } else if (key[0] == 'n') {
                if (ngx_http_veto_sandbox_network_policy(cf, file, where, v,
                                                         &rule->net)
                    != NGX_OK)
                {
                    return NGX_ERROR;
                }

            } else {
                rule->quotas = v;

                if (ngx_http_veto_sandbox_policy_quotas(cf, file, where, v,
                                                        &rule->quota,
                                                        parent != NULL)
                    != NGX_OK)
                {
                    return NGX_ERROR;
                }
            }

        } else if (ngx_strcmp(key, "env") == 0) {
            if (ngx_http_veto_sandbox_policy_env(cf, file, where, v, rule)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "agents") == 0 && parent == NULL) {
            if (!json_is_object(v)) {
                goto bad_type;
            }

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "unknown field \"%s\"", file, where, key);
            return NGX_ERROR;
        }
    }

    for (i = 0; i < NGX_HTTP_VSB_NLIMITS; i++) {

        if (parent && parent->ceiling[i]
            && (rule->ceiling[i] == 0 || rule->ceiling[i] > parent->ceiling[i]))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "ceilings.%s exceeds the tenant's %uL",
                               file, where,
                               ngx_http_veto_sandbox_limit_names[i],
                               parent->ceiling[i]);
            return NGX_ERROR;
        }

        if (ngx_http_veto_sandbox_policy_ask(cf, file, where, rule, parent,
                                             i)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (rule->ceiling[i] && rule->def[i] > rule->ceiling[i]) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "defaults.%s %uL is above ceilings.%s %uL",
                               file, where,
                               ngx_http_veto_sandbox_limit_names[i],
                               rule->def[i],
                               ngx_http_veto_sandbox_limit_names[i],
                               rule->ceiling[i]);
            return NGX_ERROR;
        }
    }

    if (ngx_http_veto_sandbox_network_check(cf, file, where, &rule->net,
                                            parent ? &parent->net : NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_veto_sandbox_credentials_check(cf, file, where, &rule->cred,
                                                parent ? &parent->cred : NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (rule->default_profile.len
        && ngx_http_veto_sandbox_policy_profile(rule,
                                   (char *) rule->default_profile.data)
           != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: "
                           "default_profile \"%V\" is not in profiles",
                           file, where, &rule->default_profile);
        return NGX_ERROR;
    }

    return NGX_OK;

bad_type:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"veto_sandbox_policy\": \"%V\": %s: field \"%s\" "
                       "has the wrong type", file, where, key);

    return NGX_ERROR;
}


/*
 * An askable ceiling (ask_ceilings): only for the lifetime (ttl_s,
 * idle_s), above a ceiling that is set, and for an agent within what its
 * tenant may grant (its askable ceiling, else its ceiling).
 */
static ngx_int_t
ngx_http_veto_sandbox_policy_ask(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, ngx_http_veto_sandbox_rule_t *rule,
    ngx_http_veto_sandbox_rule_t *parent, ngx_uint_t i)
{
    uint64_t     bound;
    const char  *name;

    if (rule->ask[i] == 0) {
        return NGX_OK;
    }

    name = ngx_http_veto_sandbox_limit_names[i];

    if (i != NGX_HTTP_VSB_L_TTL_S && i != NGX_HTTP_VSB_L_IDLE_S) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: "
                           "ask_ceilings.%s: only ttl_s and idle_s can be "
                           "asked for", file, where, name);
        return NGX_ERROR;
    }

    if (rule->ask[i] <= rule->ceiling[i] || rule->ceiling[i] == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: "
                           "ask_ceilings.%s %uL must be above ceilings.%s "
                           "(%uL; 0: not set), what is granted without a "
                           "human", file, where, name, rule->ask[i], name,
                           rule->ceiling[i]);
        return NGX_ERROR;
    }

    bound = 0;

    if (parent) {
        bound = parent->ask[i] ? parent->ask[i] : parent->ceiling[i];
    }

    if (bound && rule->ask[i] > bound) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: "
                           "ask_ceilings.%s exceeds the tenant's %uL",
                           file, where, name, bound);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_policy_limits(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, const char *what, json_t *obj, uint64_t *out)
{
    json_t      *v;
    json_int_t   n;
    ngx_uint_t   i;
    const char  *key;

    if (!json_is_object(obj)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: \"%s\" "
                           "must be an object", file, where, what);
        return NGX_ERROR;
    }

    json_object_foreach(obj, key, v) {

        for (i = 0; i < NGX_HTTP_VSB_NLIMITS; i++) {
            if (ngx_strcmp(key, ngx_http_veto_sandbox_limit_names[i]) == 0) {
                break;
            }
        }

        if (i == NGX_HTTP_VSB_NLIMITS) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "%s: unknown limit \"%s\"",
                               file, where, what, key);
            return NGX_ERROR;
        }

        n = json_is_integer(v) ? json_integer_value(v) : 0;

        if (n <= 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "%s.%s must be a positive integer",
                               file, where, what, key);
            return NGX_ERROR;
        }

        out[i] = (uint64_t) n;
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_veto_sandbox_policy_redis(ngx_http_veto_sandbox_rule_t *rule)
{
    ngx_http_veto_sandbox_apr_rule_t    *a;
    ngx_http_veto_sandbox_quota_rule_t  *q;

    a = &rule->apr;
    q = &rule->quota;

    /* an askable host or lifetime waits for a human, like any approval */
    return a->always || a->argv || a->profiles || a->network || a->export
           || q->tenant_sandboxes || q->tenant_execs || q->agent_sandboxes
           || q->agent_execs || rule->env_mode == NGX_HTTP_VSB_ENV_APPROVE
           || (rule->net.ask != NULL && rule->net.ask->nelts > 0)
           || json_array_size(rule->cred.ask) > 0
           || rule->ask[NGX_HTTP_VSB_L_TTL_S]
           || rule->ask[NGX_HTTP_VSB_L_IDLE_S];
}


/*
 * "env": {"inert": ["LANG", "LC_*", ...], "also_inert": [...],
 * "dangerous": [...], "on_dangerous": "allow" | "approve" | "refuse"}:
 * an allowlist.  The inert names (fnmatch patterns; "inert" replaces the
 * default list in ngx_http_veto_sandbox_policy_match.c, "also_inert" adds
 * to it) cannot change what a command does; every other name can, and
 * on_dangerous says what a create or an exec setting one gets.
 * "dangerous" names are never inert, whatever the lists say.  An agent's
 * "env" replaces its tenant's as a whole.
 */
static ngx_int_t
ngx_http_veto_sandbox_policy_env(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, json_t *obj, ngx_http_veto_sandbox_rule_t *rule)
{
    json_t       *v;
    const char   *key, *mode;
    ngx_array_t  *list;

    if (!json_is_object(obj)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: \"env\" "
                           "must be an object", file, where);
        return NGX_ERROR;
    }

    rule->env_dangerous = NULL;
    rule->env_inert = NULL;
    rule->env_also_inert = NULL;
    rule->env_mode = NGX_HTTP_VSB_ENV_ALLOW;

    json_object_foreach(obj, key, v) {

        if (ngx_strcmp(key, "dangerous") == 0
            || ngx_strcmp(key, "inert") == 0
            || ngx_strcmp(key, "also_inert") == 0)
        {
            list = ngx_http_veto_sandbox_policy_strings(cf, v);
            if (list == NULL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": %s: "
                                   "env.%s must be an array of "
                                   "non-empty strings", file, where, key);
                return NGX_ERROR;
            }

            if (key[0] == 'd') {
                rule->env_dangerous = list;

            } else if (key[0] == 'i') {
                rule->env_inert = list;

            } else {
                rule->env_also_inert = list;
            }

        } else if (ngx_strcmp(key, "on_dangerous") == 0) {
            mode = json_string_value(v);

            if (mode && ngx_strcmp(mode, "allow") == 0) {
                rule->env_mode = NGX_HTTP_VSB_ENV_ALLOW;

            } else if (mode && ngx_strcmp(mode, "approve") == 0) {
                rule->env_mode = NGX_HTTP_VSB_ENV_APPROVE;

            } else if (mode && ngx_strcmp(mode, "refuse") == 0) {
                rule->env_mode = NGX_HTTP_VSB_ENV_REFUSE;

            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": %s: "
                                   "env.on_dangerous must be \"allow\", "
                                   "\"approve\" or \"refuse\"", file, where);
                return NGX_ERROR;
            }

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: env: "
                               "unknown field \"%s\"", file, where, key);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}
