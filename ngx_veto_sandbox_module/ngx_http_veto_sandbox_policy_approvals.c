/*
 * The policy file's "approvals" and "quotas" objects (the rule as
 * _policy.c documents it), read at configuration time: which actions,
 * argv patterns, profiles and egress a human must approve, how many
 * reviewers and for how long, and the concurrent-sandbox and
 * exec-rate quotas of a tenant and of each of its agents.
 */

#include "ngx_http_veto_sandbox_stores.h"


/*
 * The actions a policy can name are the op table's rows with an approval
 * kind (_ops.c, given to ngx_http_veto_sandbox_policy_load() as ops by
 * the directive that reads the file): the row's name is the action, its
 * kind the bit.  Rows sharing a kind (an archive is files written or
 * read) are named apart and mean the same.
 */
ngx_uint_t
ngx_http_veto_sandbox_policy_action(ngx_http_veto_sandbox_op_t *ops,
    ngx_str_t *name)
{
    ngx_http_veto_sandbox_op_t  *op;

    for (op = ops; op->name.len; op++) {
        if (op->approval
            && op->name.len == name->len
            && ngx_strncmp(op->name.data, name->data, name->len) == 0)
        {
            return op->approval;
        }
    }

    return 0;
}


/* "sandbox.create, sandbox.update, ...": the names policy_action() knows,
 * each once, for the error that names an unknown one */
static u_char *
ngx_http_veto_sandbox_policy_known(ngx_conf_t *cf,
    ngx_http_veto_sandbox_op_t *ops)
{
    size_t                       len;
    u_char                      *known, *p;
    ngx_http_veto_sandbox_op_t  *op, *o;

    len = 1;

    for (op = ops; op->name.len; op++) {
        len += op->name.len + sizeof(", ") - 1;
    }

    known = ngx_pnalloc(cf->pool, len);
    if (known == NULL) {
        return (u_char *) "";
    }

    p = known;

    for (op = ops; op->name.len; op++) {
        if (op->approval == 0) {
            continue;
        }

        for (o = ops; o < op; o++) {
            if (o->approval && o->name.len == op->name.len
                && ngx_strncmp(o->name.data, op->name.data, op->name.len)
                   == 0)
            {
                break;
            }
        }

        if (o < op) {
            continue;
        }

        if (p != known) {
            p = ngx_cpymem(p, ", ", 2);
        }

        p = ngx_cpymem(p, op->name.data, op->name.len);
    }

    *p = '\0';

    return known;
}


/*
 * approvals.<field>, an array of action names, OR-ed into *mask: NGX_OK;
 * NGX_DECLINED if it is not an array (the caller's "wrong type"); an
 * unknown action is logged with the known ones, NGX_ERROR.
 */
static ngx_int_t
ngx_http_veto_sandbox_policy_actions(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, const char *field, json_t *v, ngx_uint_t *mask,
    ngx_http_veto_sandbox_op_t *ops)
{
    json_t      *e;
    size_t       i;
    ngx_str_t    name;
    ngx_uint_t   bit;

    if (!json_is_array(v)) {
        return NGX_DECLINED;
    }

    json_array_foreach(v, i, e) {
        bit = 0;

        if (json_is_string(e)) {
            name.data = (u_char *) json_string_value(e);
            name.len = json_string_length(e);
            bit = ngx_http_veto_sandbox_policy_action(ops, &name);
        }

        if (bit == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_policy\": \"%V\": %s: "
                               "approvals.%s: unknown action (known: %s)",
                               file, where, field,
                               ngx_http_veto_sandbox_policy_known(cf, ops));
            return NGX_ERROR;
        }

        *mask |= bit;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_policy_approvals(ngx_conf_t *cf, ngx_str_t *file,
    const char *where, json_t *obj, ngx_http_veto_sandbox_apr_rule_t *apr,
    ngx_http_veto_sandbox_op_t *ops)
{
    json_t      *v;
    ngx_int_t    rc;
    const char  *key;

    /* an agent's approvals replace the tenant's as a whole */
    ngx_memzero(apr, sizeof(ngx_http_veto_sandbox_apr_rule_t));

    json_object_foreach(obj, key, v) {

        if (ngx_strcmp(key, "always") == 0) {
            rc = ngx_http_veto_sandbox_policy_actions(cf, file, where, key,
                               v, &apr->always, ops);
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
                               v, &apr->irreversible, ops);
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

        } else if (ngx_strcmp(key, "max_open_per_agent") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1
                || json_integer_value(v) > 1000000)
            {
                goto bad;
            }

            apr->max_open = (ngx_uint_t) json_integer_value(v);

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
