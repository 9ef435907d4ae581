/*
 * The policy file's "approvals" and "quotas" objects (the rule as
 * _policy.c documents it), read at configuration time: which actions,
 * argv patterns, profiles and egress a human must approve, how many
 * reviewers and for how long, and the concurrent-sandbox and
 * exec-rate quotas of a tenant and of each of its agents.
 */

#include "ngx_http_veto_sandbox_module.h"


static const struct {
    const char  *name;
    ngx_uint_t   bit;
} ngx_http_veto_sandbox_actions[] = {
    { "sandbox.create",      NGX_HTTP_VSB_ACT_CREATE },
    { "sandbox.exec",        NGX_HTTP_VSB_ACT_EXEC },
    { "sandbox.files.write", NGX_HTTP_VSB_ACT_WRITE },
    { "sandbox.files.read",  NGX_HTTP_VSB_ACT_READ },
    /* an archive is files written or read: the same kinds */
    { "sandbox.archive.write", NGX_HTTP_VSB_ACT_WRITE },
    { "sandbox.archive.read",  NGX_HTTP_VSB_ACT_READ },
    { "sandbox.delete",      NGX_HTTP_VSB_ACT_DELETE },
    { "sandbox.update",      NGX_HTTP_VSB_ACT_UPDATE },
    { NULL, 0 }
};


ngx_uint_t
ngx_http_veto_sandbox_policy_action(ngx_str_t *name)
{
    ngx_uint_t  k;

    for (k = 0; ngx_http_veto_sandbox_actions[k].name; k++) {
        if (ngx_strlen(ngx_http_veto_sandbox_actions[k].name) == name->len
            && ngx_strncmp(ngx_http_veto_sandbox_actions[k].name, name->data,
                           name->len) == 0)
        {
            return ngx_http_veto_sandbox_actions[k].bit;
        }
    }

    return 0;
}


/*
 * approvals.<field>, an array of action names, OR-ed into *mask: NGX_OK;
 * NGX_DECLINED if it is not an array (the caller's "wrong type"); an
 * unknown action is logged with the known ones, NGX_ERROR.
 */
static ngx_int_t
ngx_http_veto_sandbox_policy_actions(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, const char *field, const char *known, json_t *v,
    ngx_uint_t *mask)
{
    json_t      *e;
    size_t       i;
    ngx_uint_t   k;

    if (!json_is_array(v)) {
        return NGX_DECLINED;
    }

    json_array_foreach(v, i, e) {
        for (k = 0; ngx_http_veto_sandbox_actions[k].name; k++) {
            if (json_is_string(e)
                && ngx_strcmp(json_string_value(e),
                              ngx_http_veto_sandbox_actions[k].name)
                   == 0)
            {
                break;
            }
        }

        if (ngx_http_veto_sandbox_actions[k].name == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "approvals.%s: unknown action (known: %s)",
                               file, where, field, known);
            return NGX_ERROR;
        }

        *mask |= ngx_http_veto_sandbox_actions[k].bit;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_policy_approvals(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, json_t *obj, ngx_http_veto_sandbox_apr_rule_t *apr)
{
    json_t      *v;
    ngx_int_t    rc;
    const char  *key;

    /* an agent's approvals replace the tenant's as a whole */
    ngx_memzero(apr, sizeof(ngx_http_veto_sandbox_apr_rule_t));

    json_object_foreach(obj, key, v) {

        if (ngx_strcmp(key, "always") == 0) {
            rc = ngx_http_veto_sandbox_policy_actions(cf, file, where, key,
                               "sandbox.create, sandbox.exec, "
                               "sandbox.files.write, sandbox.files.read, "
                               "sandbox.delete, sandbox.update",
                               v, &apr->always);
            if (rc == NGX_DECLINED) {
                goto bad;
            }

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "network") == 0
                   || ngx_strcmp(key, "export") == 0)
        {
            if (!json_is_boolean(v)) {
                goto bad;
            }

            if (key[0] == 'n') {
                apr->network = json_is_true(v);
            } else {
                apr->export = json_is_true(v);
            }

        } else if (ngx_strcmp(key, "exec_argv") == 0) {
            apr->argv = ngx_http_veto_sandbox_policy_strings(cf, v);
            if (apr->argv == NULL) {
                goto bad;
            }

        } else if (ngx_strcmp(key, "irreversible_argv") == 0) {
            apr->irreversible_argv = ngx_http_veto_sandbox_policy_strings(cf,
                                                                          v);
            if (apr->irreversible_argv == NULL) {
                goto bad;
            }

        } else if (ngx_strcmp(key, "irreversible_actions") == 0) {
            rc = ngx_http_veto_sandbox_policy_actions(cf, file, where, key,
                               "sandbox.create, sandbox.exec, "
                               "sandbox.files.write, sandbox.files.read, "
                               "sandbox.delete",
                               v, &apr->irreversible);
            if (rc == NGX_DECLINED) {
                goto bad;
            }

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }

        } else if (ngx_strcmp(key, "profiles") == 0) {
            apr->profiles = ngx_http_veto_sandbox_policy_strings(cf, v);
            if (apr->profiles == NULL) {
                goto bad;
            }

        } else if (ngx_strcmp(key, "threshold") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1
                || json_integer_value(v) > 100)
            {
                goto bad;
            }

            apr->threshold = (ngx_uint_t) json_integer_value(v);

        } else if (ngx_strcmp(key, "ttl_s") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1
                || json_integer_value(v) > 30 * 86400)
            {
                goto bad;
            }

            apr->ttl = (ngx_msec_t) json_integer_value(v) * 1000;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "approvals: unknown field \"%s\"",
                               file, where, key);
            return NGX_ERROR;
        }
    }

    return NGX_OK;

bad:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"veto_sandbox_policy\": \"%V\": %s: approvals.%s "
                       "has the wrong type or value", file, where, key);

    return NGX_ERROR;
}


static ngx_int_t
ngx_http_veto_sandbox_policy_quota_pair(json_t *obj, ngx_uint_t *sandboxes,
    ngx_uint_t *execs, const char **bad)
{
    json_t      *v;
    const char  *key;

    json_object_foreach(obj, key, v) {
        if (ngx_strcmp(key, "concurrent_sandboxes") != 0
            && ngx_strcmp(key, "execs_per_minute") != 0)
        {
            *bad = key;
            return NGX_DECLINED;
        }

        if (!json_is_integer(v) || json_integer_value(v) < 0
            || json_integer_value(v) > 1000000)
        {
            *bad = key;
            return NGX_ERROR;
        }

        if (key[0] == 'c') {
            *sandboxes = (ngx_uint_t) json_integer_value(v);
        } else {
            *execs = (ngx_uint_t) json_integer_value(v);
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_policy_quotas(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, json_t *obj, ngx_http_veto_sandbox_quota_rule_t *q,
    ngx_uint_t agent)
{
    json_t      *per, *copy;
    ngx_int_t    rc;
    const char  *bad;

    bad = "";

    if (agent) {
        rc = ngx_http_veto_sandbox_policy_quota_pair(obj, &q->agent_sandboxes,
                                                     &q->agent_execs, &bad);
        if (rc != NGX_OK) {
            goto failed;
        }

        return NGX_OK;
    }

    per = json_object_get(obj, "per_agent");

    if (per != NULL) {
        if (!json_is_object(per)) {
            bad = "per_agent";
            rc = NGX_ERROR;
            goto failed;
        }

        rc = ngx_http_veto_sandbox_policy_quota_pair(per, &q->agent_sandboxes,
                                                     &q->agent_execs, &bad);
        if (rc != NGX_OK) {
            goto failed;
        }
    }

    copy = json_copy(obj);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    json_object_del(copy, "per_agent");

    rc = ngx_http_veto_sandbox_policy_quota_pair(copy, &q->tenant_sandboxes,
                                                 &q->tenant_execs, &bad);
    json_decref(copy);

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    /* bad pointed into the copy */
    bad = "concurrent_sandboxes or execs_per_minute";

failed:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"veto_sandbox_policy\": \"%V\": %s: quotas: %s "
                       "field \"%s\"", file, where,
                       rc == NGX_DECLINED ? "unknown" : "bad value in", bad);

    return NGX_ERROR;
}
