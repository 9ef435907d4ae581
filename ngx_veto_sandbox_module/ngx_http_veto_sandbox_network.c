/*
 * The policy's "network" section, per tenant and agent:
 *
 *   "network": {
 *     "allow":   ["registry.example.test", "*.example.test:8443"],
 *     "ask":     ["git.example.test"],
 *     "default": "none" | ["registry.example.test"]
 *   }
 *
 * "allow" is the ceiling: what an agent may give its sandboxes on its
 * own.  "ask" lists what it may ask for, a human deciding.  "default" is
 * what a create without "network" gets (absent: "none").  An entry is
 * "host[:port]", "*.suffix[:port]" (any name strictly below suffix) or
 * an IP literal; no port means 80 and 443.  A requested entry is within
 * a list when every host and port it names is: "*.a.test" is within
 * "*.test" but not within "a.test", "x.a.test:443" is within "*.a.test"
 * (80 and 443), "x.a.test" (80 and 443) is not within "*.a.test:443".
 *
 * Entries are parsed by the egress proxy's parser (egress-proxy/allow.c),
 * so the module, the helper and the proxy read one entry one way.
 */

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_network.h"

#include "eg_allow.h"


enum {
    NGX_HTTP_VSB_NET_ALLOWED = 0,
    NGX_HTTP_VSB_NET_ASKABLE,
    NGX_HTTP_VSB_NET_FORBIDDEN
};


static void
ngx_http_veto_sandbox_network_json_cleanup(void *data)
{
    json_decref((json_t *) data);
}


/* host strictly below suffix: "x.a.test" below "a.test", not "xa.test" */
/* v appended to *ask, the list made on the first (freed with pool): what
 * a request asks for, hosts or credentials; NGX_ERROR: no memory */
static ngx_int_t
ngx_http_veto_sandbox_network_ask_add(ngx_pool_t *pool, json_t **ask,
    json_t *v)
{
    ngx_pool_cleanup_t  *cln;

    if (*ask == NULL) {
        cln = ngx_pool_cleanup_add(pool, 0);
        if (cln == NULL) {
            return NGX_ERROR;
        }

        *ask = json_array();
        if (*ask == NULL) {
            return NGX_ERROR;
        }

        cln->handler = ngx_http_veto_sandbox_network_json_cleanup;
        cln->data = *ask;
    }

    return json_array_append(*ask, v) == 0 ? NGX_OK : NGX_ERROR;
}


static ngx_uint_t
ngx_http_veto_sandbox_network_below(const char *host, const char *suffix)
{
    size_t  hl, sl;

    hl = ngx_strlen(host);
    sl = ngx_strlen(suffix);

    return hl > sl + 1 && host[hl - sl - 1] == '.'
           && ngx_memcmp(host + hl - sl, suffix, sl) == 0;
}


/* Does an entry of list cover every host e names, at port? */
static ngx_uint_t
ngx_http_veto_sandbox_network_covers(ngx_array_t *list, eg_allow_entry_t *e,
    uint16_t port)
{
    ngx_uint_t         i;
    eg_allow_entry_t  *c;

    if (list == NULL) {
        return 0;
    }

    c = list->elts;

    for (i = 0; i < list->nelts; i++) {

        if (c[i].port == 0 ? (port != 80 && port != 443)
                           : c[i].port != port)
        {
            continue;
        }

        if (!c[i].wildcard) {
            /* an exact entry covers itself only, never a wildcard */
            if (!e->wildcard && ngx_strcmp(c[i].host, e->host) == 0) {
                return 1;
            }

            continue;
        }

        if ((e->wildcard && ngx_strcmp(c[i].host, e->host) == 0)
            || ngx_http_veto_sandbox_network_below(e->host, c[i].host))
        {
            return 1;
        }
    }

    return 0;
}


/* allowed: every port within allow; askable: some only within ask */
static ngx_uint_t
ngx_http_veto_sandbox_network_decide(ngx_array_t *allow, ngx_array_t *ask,
    eg_allow_entry_t *e)
{
    uint16_t    ports[2];
    ngx_uint_t  i, n, askable;

    if (e->port) {
        ports[0] = e->port;
        n = 1;

    } else {
        ports[0] = 80;
        ports[1] = 443;
        n = 2;
    }

    askable = 0;

    for (i = 0; i < n; i++) {
        if (ngx_http_veto_sandbox_network_covers(allow, e, ports[i])) {
            continue;
        }

        if (ngx_http_veto_sandbox_network_covers(ask, e, ports[i])) {
            askable = 1;
            continue;
        }

        return NGX_HTTP_VSB_NET_FORBIDDEN;
    }

    return askable ? NGX_HTTP_VSB_NET_ASKABLE : NGX_HTTP_VSB_NET_ALLOWED;
}


/* An entry back as text, canonical ("*.a.test:443"), for messages. */
static u_char *
ngx_http_veto_sandbox_network_text(eg_allow_entry_t *e, u_char *buf,
    size_t len)
{
    u_char  *p;

    p = ngx_snprintf(buf, len - 1, "%s%s", e->wildcard ? "*." : "", e->host);

    if (e->port) {
        p = ngx_snprintf(p, buf + len - 1 - p, ":%d", (int) e->port);
    }

    *p = '\0';

    return buf;
}


/* One entry as the proxy reads it; NGX_ERROR with why. */
static ngx_int_t
ngx_http_veto_sandbox_network_entry(json_t *v, eg_allow_entry_t *e,
    char *why, size_t whylen)
{
    size_t       len;
    const char  *s;

    s = json_string_value(v);

    if (s == NULL) {
        ngx_snprintf((u_char *) why, whylen - 1, "must be a string%Z");
        return NGX_ERROR;
    }

    len = json_string_length(v);

    if (len == 0 || len > VSB_MAX_NETWORK_ENTRY || ngx_strlen(s) != len) {
        ngx_snprintf((u_char *) why, whylen - 1,
                     "an entry is 1 to %d bytes, no NUL%Z",
                     VSB_MAX_NETWORK_ENTRY);
        return NGX_ERROR;
    }

    if (eg_allow_parse(s, e, why, whylen) != 0) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* "allow", "ask" or "default": an array of entries; NULL on an error,
 * logged naming the entry. */
static ngx_array_t *
ngx_http_veto_sandbox_network_list(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, const char *name, json_t *v)
{
    char               why[512];
    size_t             i, bytes;
    json_t            *s;
    ngx_array_t       *a;
    eg_allow_entry_t  *e;

    if (!json_is_array(v)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: network.%s "
                           "must be an array of \"host[:port]\" entries",
                           file, where, name);
        return NULL;
    }

    if (json_array_size(v) > EG_ALLOW_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: network.%s "
                           "has %uz entries, at most %d", file, where, name,
                           json_array_size(v), EG_ALLOW_MAX);
        return NULL;
    }

    a = ngx_array_create(cf->pool, ngx_max(json_array_size(v), 1),
                         sizeof(eg_allow_entry_t));
    if (a == NULL) {
        return NULL;
    }

    bytes = 0;

    json_array_foreach(v, i, s) {
        e = ngx_array_push(a);
        if (e == NULL) {
            return NULL;
        }

        if (ngx_http_veto_sandbox_network_entry(s, e, why, sizeof(why))
            != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "network.%s[%uz]: %s", file, where, name, i,
                               why);
            return NULL;
        }

        bytes += json_string_length(s);
    }

    /* ask and default go to the helper, whose ceiling this is */
    if (bytes > VSB_MAX_NETWORK_BYTES) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: network.%s "
                           "takes %uz bytes, at most %d", file, where, name,
                           bytes, VSB_MAX_NETWORK_BYTES);
        return NULL;
    }

    return a;
}


ngx_int_t
ngx_http_veto_sandbox_network_policy(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, json_t *obj, ngx_http_veto_sandbox_net_rule_t *net)
{
    json_t      *v;
    const char  *key;

    json_object_foreach(obj, key, v) {

        if (ngx_strcmp(key, "allow") == 0) {
            net->allow = ngx_http_veto_sandbox_network_list(cf, file, where,
                                                            key, v);
            if (net->allow == NULL) {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "ask") == 0) {
            net->ask = ngx_http_veto_sandbox_network_list(cf, file, where,
                                                          key, v);
            if (net->ask == NULL) {
                return NGX_ERROR;
            }

            net->ask_json = v;

        } else if (ngx_strcmp(key, "default") == 0) {

            if (json_is_string(v)
                && ngx_strcmp(json_string_value(v), "none") == 0)
            {
                net->def = NULL;
                continue;
            }

            if (json_is_string(v)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": %s: "
                                   "network.default is \"none\" or an array "
                                   "of entries", file, where);
                return NGX_ERROR;
            }

            /* read now for the errors; checked against allow later */
            if (ngx_http_veto_sandbox_network_list(cf, file, where, key, v)
                == NULL)
            {
                return NGX_ERROR;
            }

            net->def = v;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "network: unknown field \"%s\" (known: allow, "
                               "ask, default)", file, where, key);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_network_check(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, ngx_http_veto_sandbox_net_rule_t *net,
    ngx_http_veto_sandbox_net_rule_t *parent)
{
    char               why[512];
    u_char             text[EG_HOST_MAX + 16];
    size_t             k;
    json_t            *s;
    ngx_uint_t         i;
    eg_allow_entry_t  *e, d;

    if (parent != NULL && net->allow != NULL) {
        e = net->allow->elts;

        for (i = 0; i < net->allow->nelts; i++) {
            if (ngx_http_veto_sandbox_network_decide(parent->allow, NULL,
                                                     &e[i])
                != NGX_HTTP_VSB_NET_ALLOWED)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": %s: "
                                   "network.allow[%ui] \"%s\" is outside "
                                   "the tenant's network.allow", file, where,
                                   i, ngx_http_veto_sandbox_network_text(
                                          &e[i], text, sizeof(text)));
                return NGX_ERROR;
            }
        }
    }

    if (parent != NULL && net->ask != NULL) {
        e = net->ask->elts;

        for (i = 0; i < net->ask->nelts; i++) {
            if (ngx_http_veto_sandbox_network_decide(parent->allow,
                                                     parent->ask, &e[i])
                == NGX_HTTP_VSB_NET_FORBIDDEN)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": %s: "
                                   "network.ask[%ui] \"%s\" is outside the "
                                   "tenant's network.allow and network.ask",
                                   file, where, i,
                                   ngx_http_veto_sandbox_network_text(
                                       &e[i], text, sizeof(text)));
                return NGX_ERROR;
            }
        }
    }

    /* a default needs no human: within the rule's own allow */
    json_array_foreach(net->def, k, s) {
        if (ngx_http_veto_sandbox_network_entry(s, &d, why, sizeof(why))
            != NGX_OK
            || ngx_http_veto_sandbox_network_decide(net->allow, NULL, &d)
               != NGX_HTTP_VSB_NET_ALLOWED)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "network.default[%uz] \"%s\" is outside "
                               "network.allow", file, where, k,
                               json_string_value(s) ? json_string_value(s)
                                                    : "");
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_network_classify(ngx_pool_t *pool,
    ngx_http_veto_sandbox_net_rule_t *net, json_t *entries, json_t **ask,
    size_t *bad, char *why, size_t whylen)
{
    size_t               i;
    json_t              *v, *a;
    eg_allow_entry_t     e;

    *ask = NULL;
    *bad = 0;
    a = NULL;

    json_array_foreach(entries, i, v) {

        *bad = i;

        if (ngx_http_veto_sandbox_network_entry(v, &e, why, whylen)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        switch (ngx_http_veto_sandbox_network_decide(net->allow, net->ask,
                                                     &e))
        {
        case NGX_HTTP_VSB_NET_FORBIDDEN:
            return NGX_DECLINED;

        case NGX_HTTP_VSB_NET_ASKABLE:

            if (ngx_http_veto_sandbox_network_ask_add(pool, &a, v)
                != NGX_OK)
            {
                return NGX_ABORT;
            }

            break;

        default: /* NGX_HTTP_VSB_NET_ALLOWED */
            break;
        }
    }

    *ask = a;

    return NGX_OK;
}


/* A credential's name as the helper's bindings spell it. */
ngx_uint_t
ngx_http_veto_sandbox_credentials_name_ok(json_t *v)
{
    size_t       i, len;
    const char  *s;

    s = json_string_value(v);
    if (s == NULL) {
        return 0;
    }

    len = json_string_length(v);

    if (len == 0 || len > NGX_HTTP_VSB_CRED_NAME_MAX
        || ngx_strlen(s) != len)
    {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')
              || s[i] == '.' || s[i] == '_' || s[i] == '-'))
        {
            return 0;
        }
    }

    return 1;
}


static ngx_uint_t
ngx_http_veto_sandbox_credentials_in(json_t *list, const char *name)
{
    size_t   i;
    json_t  *v;

    json_array_foreach(list, i, v) {
        if (ngx_strcmp(json_string_value(v), name) == 0) {
            return 1;
        }
    }

    return 0;
}


ngx_int_t
ngx_http_veto_sandbox_credentials_policy(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, json_t *obj, ngx_http_veto_sandbox_cred_rule_t *cred)
{
    size_t       i;
    json_t      *v, *n;
    const char  *key;

    json_object_foreach(obj, key, v) {

        if (ngx_strcmp(key, "agent_hosts") == 0) {
            if (ngx_http_veto_sandbox_credentials_agent_hosts(cf, file, where,
                                                              v, cred)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            continue;
        }

        if (ngx_strcmp(key, "allow") != 0 && ngx_strcmp(key, "ask") != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "credentials: unknown field \"%s\" (known: "
                               "allow, ask, agent_hosts)", file, where, key);
            return NGX_ERROR;
        }

        if (!json_is_array(v)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "credentials.%s must be an array of "
                               "credential names", file, where, key);
            return NGX_ERROR;
        }

        json_array_foreach(v, i, n) {
            if (!ngx_http_veto_sandbox_credentials_name_ok(n)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": %s: "
                                   "credentials.%s[%uz]: a credential name "
                                   "is 1 .. %d bytes of [a-z0-9._-]", file,
                                   where, key, i,
                                   NGX_HTTP_VSB_CRED_NAME_MAX);
                return NGX_ERROR;
            }
        }

        if (key[1] == 'l') {
            cred->allow = v;

        } else {
            cred->ask = v;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_credentials_check(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, ngx_http_veto_sandbox_cred_rule_t *cred,
    ngx_http_veto_sandbox_cred_rule_t *parent)
{
    size_t       i;
    json_t      *v;
    const char  *n;

    ngx_uint_t         k;
    eg_allow_entry_t  *e;

    if (parent == NULL) {
        return NGX_OK;
    }

    if (cred->agent_hosts != NULL && cred->agent_hosts != parent->agent_hosts)
    {
        e = cred->agent_hosts->elts;

        for (k = 0; k < cred->agent_hosts->nelts; k++) {
            if (!ngx_http_veto_sandbox_network_covers(parent->agent_hosts,
                                                      &e[k], 443))
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_policy\": \"%V\": %s: "
                                   "credentials.agent_hosts[%ui] \"%s%s\" is "
                                   "outside the tenant's "
                                   "credentials.agent_hosts", file, where, k,
                                   e[k].wildcard ? "*." : "", e[k].host);
                return NGX_ERROR;
            }
        }
    }

    json_array_foreach(cred->allow, i, v) {
        n = json_string_value(v);

        if (!ngx_http_veto_sandbox_credentials_in(parent->allow, n)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "credentials.allow[%uz] \"%s\" is outside the "
                               "tenant's credentials.allow", file, where, i,
                               n);
            return NGX_ERROR;
        }
    }

    json_array_foreach(cred->ask, i, v) {
        n = json_string_value(v);

        if (!ngx_http_veto_sandbox_credentials_in(parent->allow, n)
            && !ngx_http_veto_sandbox_credentials_in(parent->ask, n))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "credentials.ask[%uz] \"%s\" is outside the "
                               "tenant's credentials.allow and "
                               "credentials.ask", file, where, i, n);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_credentials_classify(ngx_pool_t *pool,
    ngx_http_veto_sandbox_cred_rule_t *cred, json_t *names, json_t **ask,
    size_t *bad, char *why, size_t whylen)
{
    size_t               i, j;
    json_t              *v, *a;
    const char          *n;

    *ask = NULL;
    *bad = 0;
    a = NULL;

    json_array_foreach(names, i, v) {

        *bad = i;

        if (!ngx_http_veto_sandbox_credentials_name_ok(v)) {
            ngx_snprintf((u_char *) why, whylen - 1,
                         "a credential name is 1 .. %d bytes of "
                         "[a-z0-9._-]%Z", NGX_HTTP_VSB_CRED_NAME_MAX);
            return NGX_ERROR;
        }

        n = json_string_value(v);

        for (j = 0; j < i; j++) {
            if (ngx_strcmp(json_string_value(json_array_get(names, j)), n)
                == 0)
            {
                ngx_snprintf((u_char *) why, whylen - 1,
                             "credential \"%s\" is named twice%Z", n);
                return NGX_ERROR;
            }
        }

        if (ngx_http_veto_sandbox_credentials_in(cred->allow, n)) {
            continue;
        }

        if (!ngx_http_veto_sandbox_credentials_in(cred->ask, n)) {
            return NGX_DECLINED;
        }

        if (ngx_http_veto_sandbox_network_ask_add(pool, &a, v) != NGX_OK) {
            return NGX_ABORT;
        }
    }

    *ask = a;

    return NGX_OK;
}


json_t *
ngx_http_veto_sandbox_network_record(json_t *network, size_t cap)
{
    size_t       i, used, len;
    json_t      *attempts, *kept, *v, *out;
    json_int_t   dropped;

    if (json_is_string(network)) {
        return json_incref(network);
    }

    if (!json_is_object(network)) {
        return NULL;
    }

    attempts = json_object_get(network, "attempts");
    v = json_object_get(network, "dropped");
    dropped = json_is_integer(v) && json_integer_value(v) > 0
              ? json_integer_value(v) : 0;

    kept = json_array();
    if (kept == NULL) {
        return NULL;
    }

    used = 0;

    json_array_foreach(attempts, i, v) {
        len = json_dumpb(v, NULL, 0, JSON_COMPACT) + 1;

        if (used + len > cap) {
            /* the rest does not fit: counted, not kept */
            dropped += (json_int_t) (json_array_size(attempts) - i);
            break;
        }

        if (json_array_append(kept, v) != 0) {
            json_decref(kept);
            return NULL;
        }

        used += len;
    }

    out = json_pack("{s:o, s:I, s:b}", "attempts", kept,
                    "dropped", dropped,
                    "complete",
                    json_is_true(json_object_get(network, "complete")));

    return out;
}


ngx_int_t
ngx_http_veto_sandbox_credentials_agent_hosts(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *v,
    ngx_http_veto_sandbox_cred_rule_t *cred)
{
    char               why[512];
    size_t             i;
    json_t            *s;
    ngx_array_t       *a;
    eg_allow_entry_t  *e;

    if (!json_is_array(v) || json_array_size(v) > EG_ALLOW_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\": \"%V\": %s: "
                           "credentials.agent_hosts must be an array of at "
                           "most %d hosts (\"api.example.com\" or "
                           "\"*.example.com\")", file, where, EG_ALLOW_MAX);
        return NGX_ERROR;
    }

    a = ngx_array_create(cf->pool, ngx_max(json_array_size(v), 1),
                         sizeof(eg_allow_entry_t));
    if (a == NULL) {
        return NGX_ERROR;
    }

    json_array_foreach(v, i, s) {
        e = ngx_array_push(a);
        if (e == NULL) {
            return NGX_ERROR;
        }

        if (ngx_http_veto_sandbox_network_entry(s, e, why, sizeof(why))
            != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "credentials.agent_hosts[%uz]: %s", file,
                               where, i, why);
            return NGX_ERROR;
        }

        if (e->port != 0 && e->port != 443) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "credentials.agent_hosts[%uz]: a secret is "
                               "added on port 443 only: name a host without "
                               "a port", file, where, i);
            return NGX_ERROR;
        }

        e->port = 443;
    }

    cred->agent_hosts = a;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_credentials_agent_host(
    ngx_http_veto_sandbox_cred_rule_t *cred, json_t *host, char *why,
    size_t whylen)
{
    const char        *s;
    eg_allow_entry_t   e;

    s = json_string_value(host);

    if (s == NULL || json_string_length(host) == 0
        || json_string_length(host) > EG_HOST_MAX + 2
        || ngx_strlen(s) != json_string_length(host)
        || ngx_strchr(s, ':') != NULL || ngx_strchr(s, '[') != NULL)
    {
        ngx_snprintf((u_char *) why, whylen - 1, "a DNS name or "
                     "\"*.suffix\", without a port%Z");
        return -1;
    }

    if (ngx_http_veto_sandbox_network_entry(host, &e, why, whylen)
        != NGX_OK)
    {
        return -1;
    }

    return ngx_http_veto_sandbox_network_covers(cred->agent_hosts, &e, 443)
           ? 1 : 0;
}
