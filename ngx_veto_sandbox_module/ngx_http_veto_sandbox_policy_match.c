/*
 * What the policy says of a request: the caller's rule, whether a profile
 * is allowed, the largest ceiling of a limit, and whether a human must
 * approve (approvals.always, network, profiles, export, exec_argv).  The
 * policy file itself is read by ngx_http_veto_sandbox_policy.c.
 */

#include <fnmatch.h>

#include "ngx_http_veto_sandbox_stores.h"


static ngx_uint_t ngx_http_veto_sandbox_policy_argv(ngx_array_t *patterns,
    json_t *argv);


ngx_http_veto_sandbox_rule_t *
ngx_http_veto_sandbox_policy_rule(ngx_http_veto_sandbox_policy_t *policy,
    ngx_str_t *tenant, ngx_str_t *agent)
{
    ngx_uint_t                       i;
    ngx_http_veto_sandbox_agent_t   *a;
    ngx_http_veto_sandbox_tenant_t  *t;

    t = policy->tenants->elts;

    for (i = 0; i < policy->tenants->nelts; i++) {
        if (t[i].name.len == tenant->len
            && ngx_strncmp(t[i].name.data, tenant->data, tenant->len) == 0)
        {
            break;
        }
    }

    if (i == policy->tenants->nelts) {
        return NULL;
    }

    t = &t[i];

    if (t->agents == NULL) {
        return &t->rule;
    }

    a = t->agents->elts;

    for (i = 0; i < t->agents->nelts; i++) {
        if (a[i].name.len == agent->len
            && ngx_strncmp(a[i].name.data, agent->data, agent->len) == 0)
        {
            return &a[i].rule;
        }
    }

    return &t->rule;
}


/* The largest ceiling any tenant sets for limit (an agent's is within
 * its tenant's); 0 when none sets one. */
uint64_t
ngx_http_veto_sandbox_policy_max_ceiling(
    ngx_http_veto_sandbox_policy_t *policy, ngx_uint_t limit)
{
    uint64_t                         max;
    ngx_uint_t                       i;
    ngx_http_veto_sandbox_tenant_t  *t;

    max = 0;
    t = policy->tenants->elts;

    for (i = 0; i < policy->tenants->nelts; i++) {
        max = ngx_max(max, t[i].rule.ceiling[limit]);
    }

    return max;
}


/* NGX_OK if the rule allows profile (NUL terminated). */
ngx_int_t
ngx_http_veto_sandbox_policy_profile(ngx_http_veto_sandbox_rule_t *rule,
    const char *profile)
{
    size_t       len;
    ngx_str_t   *p;
    ngx_uint_t   i;

    if (rule->profiles == NULL) {
        return NGX_OK;
    }

    len = ngx_strlen(profile);
    p = rule->profiles->elts;

    for (i = 0; i < rule->profiles->nelts; i++) {
        if (p[i].len == len && ngx_strncmp(p[i].data, profile, len) == 0) {
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


/* Does this request need a human?  argv: the exec's argv (or NULL),
 * profile: the create's (or NULL), network: what a create or a PATCH
 * asks ("none", "allowlist", or NULL), env: the create's or the exec's
 * (or NULL). */
ngx_uint_t
ngx_http_veto_sandbox_policy_approval(ngx_http_veto_sandbox_rule_t *rule,
    ngx_uint_t action, json_t *argv, const char *profile,
    const char *network, json_t *env)
{
    ngx_str_t                         *s;
    ngx_uint_t                         k;
    ngx_http_veto_sandbox_apr_rule_t  *apr;

    apr = &rule->apr;

    if (apr->always & action) {
        return 1;
    }

    if (action == NGX_HTTP_VSB_ACT_READ && apr->export) {
        return 1;
    }

    if ((action == NGX_HTTP_VSB_ACT_CREATE || action == NGX_HTTP_VSB_ACT_EXEC)
        && rule->env_mode == NGX_HTTP_VSB_ENV_APPROVE
        && ngx_http_veto_sandbox_policy_env_first(rule, env) != NULL)
    {
        return 1;
    }

    if ((action == NGX_HTTP_VSB_ACT_CREATE
         || action == NGX_HTTP_VSB_ACT_UPDATE)
        && apr->network && network && ngx_strcmp(network, "none") != 0)
    {
        return 1;
    }

    if (action == NGX_HTTP_VSB_ACT_CREATE) {
        if (apr->profiles && profile) {
            s = apr->profiles->elts;
            for (k = 0; k < apr->profiles->nelts; k++) {
                if (ngx_strcmp(s[k].data, profile) == 0) {
                    return 1;
                }
            }
        }
    }

    if (action != NGX_HTTP_VSB_ACT_EXEC || apr->argv == NULL
        || !json_is_array(argv))
    {
        return 0;
    }

    return ngx_http_veto_sandbox_policy_argv(apr->argv, argv);
}


/*
 * The env names known to be inert: a value of theirs changes how output
 * looks (language, time zone, terminal, colours, sizes) or says who and
 * where, never which program runs, what it loads or reads as its
 * configuration.  Every other name can change what an approved command
 * does (PATH, LD_PRELOAD, OPENSSL_CONF, GOFLAGS, HOME with a planted
 * ~/.curlrc, ...): a list of those could never be complete.  A policy's
 * "env.inert" replaces this list, "env.also_inert" adds to it, and
 * "env.dangerous" names are never inert.  docs/approvals.md has it too.
 */
static const char  *ngx_http_veto_sandbox_env_inert[] = {
    "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "COLORTERM", "USER",
    "LOGNAME", "CI", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR",
    "CLICOLOR", "CLICOLOR_FORCE", "SOURCE_DATE_EPOCH", NULL
};


static ngx_uint_t
ngx_http_veto_sandbox_policy_env_match(ngx_array_t *list, const char *name)
{
    ngx_str_t   *s;
    ngx_uint_t   k;

    if (list == NULL) {
        return 0;
    }

    s = list->elts;

    for (k = 0; k < list->nelts; k++) {
        if (fnmatch((char *) s[k].data, name, 0) == 0) {
            return 1;
        }
    }

    return 0;
}


/* not inert: the policy's "dangerous", or on no inert list */
ngx_uint_t
ngx_http_veto_sandbox_policy_env_dangerous(ngx_http_veto_sandbox_rule_t *rule,
    const char *name)
{
    ngx_uint_t  k;

    if (ngx_http_veto_sandbox_policy_env_match(rule->env_dangerous, name)) {
        return 1;
    }

    if (ngx_http_veto_sandbox_policy_env_match(rule->env_also_inert, name)) {
        return 0;
    }

    if (rule->env_inert != NULL) {
        return !ngx_http_veto_sandbox_policy_env_match(rule->env_inert, name);
    }

    for (k = 0; ngx_http_veto_sandbox_env_inert[k]; k++) {
        if (fnmatch(ngx_http_veto_sandbox_env_inert[k], name, 0) == 0) {
            return 0;
        }
    }

    return 1;
}


const char *
ngx_http_veto_sandbox_policy_env_first(ngx_http_veto_sandbox_rule_t *rule,
    json_t *env)
{
    json_t      *v;
    const char  *name;

    if (!json_is_object(env)) {
        return NULL;
    }

    json_object_foreach(env, name, v) {
        if (ngx_http_veto_sandbox_policy_env_dangerous(rule, name)) {
            return name;
        }
    }

    return NULL;
}


const char *
ngx_http_veto_sandbox_policy_irreversible(ngx_http_veto_sandbox_rule_t *rule,
    ngx_uint_t action, json_t *argv, const char *network)
{
    ngx_http_veto_sandbox_apr_rule_t  *apr;

    apr = &rule->apr;

    /* a create with an allowlist, a PATCH adding hosts */
    if ((action == NGX_HTTP_VSB_ACT_CREATE
         || action == NGX_HTTP_VSB_ACT_UPDATE)
        && network && ngx_strcmp(network, "none") != 0)
    {
        return "network egress: what the sandbox sends out cannot be "
               "recalled";
    }

    if (action == NGX_HTTP_VSB_ACT_READ) {
        return "file export: the file leaves the sandbox and cannot be "
               "taken back";
    }

    if (apr->irreversible & action) {
        return "the policy marks this action irreversible "
               "(approvals.irreversible_actions)";
    }

    if (action == NGX_HTTP_VSB_ACT_EXEC && apr->irreversible_argv
        && json_is_array(argv)
        && ngx_http_veto_sandbox_policy_argv(apr->irreversible_argv, argv))
    {
        return "the policy marks this command irreversible "
               "(approvals.irreversible_argv)";
    }

    return NULL;
}


/*
 * Characters after which a command word may start, inside one argv
 * element as a shell would read it ("sh -c 'cd x && curl y'") or in a
 * path ("/usr/bin/curl").
 */
#define ngx_http_vsb_word_sep(c)                                              \
    ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r' || (c) == '/'     \
     || (c) == ';' || (c) == '&' || (c) == '|' || (c) == '(' || (c) == ')'    \
     || (c) == '`' || (c) == '$' || (c) == '<' || (c) == '>' || (c) == '{'    \
     || (c) == '}' || (c) == '\'' || (c) == '"' || (c) == '=' || (c) == '!')

/* past this, an argv is not searched: it needs a human */
#define NGX_HTTP_VSB_ARGV_SCAN_MAX  (64 * 1024)


/*
 * exec_argv: a pattern needs a human when it matches, from any word start
 * (the start of an element, or after a separator above), the rest of the
 * argv joined by single spaces, or the rest of that element alone.  So
 * "curl *" catches ["curl", "x"], ["/usr/bin/curl", "x"],
 * ["env", "A=1", "curl", "x"], ["sh", "-c", "cd /tmp && curl x"] and
 * ["timeout", "5", "curl", "x"].  It errs on asking: ["grep", "curl x"]
 * asks too.  A speed bump, not a boundary: a shell or an interpreter can
 * build any command at run time ("sh -c 'c\url x'"); list "sh -c *",
 * "python* -c *" and the like, or "sandbox.exec" in "always", to be sure.
 */
static ngx_uint_t
ngx_http_veto_sandbox_policy_argv(ngx_array_t *patterns, json_t *argv)
{
    u_char      *buf, *elt, *q, *end;
    size_t       i, len, elen, off;
    json_t      *e;
    ngx_str_t   *s;
    ngx_uint_t   k, hit;

    len = 1;
    json_array_foreach(argv, i, e) {
        len += json_string_length(e) + 1;
    }

    if (len > NGX_HTTP_VSB_ARGV_SCAN_MAX) {
        return 1;       /* too long to search in the event loop: ask */
    }

    /* buf: the argv joined, NUL terminated; elt: room for one element */
    buf = ngx_alloc(2 * len, ngx_cycle->log);
    if (buf == NULL) {
        return 1;       /* fail closed: ask a human */
    }

    elt = buf + len;
    q = buf;

    json_array_foreach(argv, i, e) {
        if (i) {
            *q++ = ' ';
        }
        q = ngx_cpymem(q, json_string_value(e), json_string_length(e));
    }
    *q = '\0';

    hit = 0;
    s = patterns->elts;

    /* an argv with a NUL byte could hide from the patterns: ask */
    if (ngx_strlen(buf) != (size_t) (q - buf)) {
        hit = 1;
        goto done;
    }

    off = 0;

    json_array_foreach(argv, i, e) {
        elen = json_string_length(e);
        end = ngx_cpymem(elt, json_string_value(e), elen);
        *end = '\0';

        for (q = elt; q == elt || q < end; q++) {

            if (q != elt && !ngx_http_vsb_word_sep(q[-1])) {
                continue;
            }

            for (k = 0; k < patterns->nelts; k++) {

                /* "*..." matching a tail matches the whole string too:
                 * try it once per element, not at every word */
                if (s[k].data[0] == '*' && q != elt) {
                    continue;
                }

                /* the rest of this element; the rest of the argv */
                if (fnmatch((char *) s[k].data, (char *) q, 0) == 0
                    || fnmatch((char *) s[k].data,
                               (char *) buf + off + (q - elt), 0) == 0)
                {
                    hit = 1;
                    goto done;
                }
            }
        }

        off += elen + 1;
    }

done:

    ngx_free(buf);

    return hit;
}
