/*
 * A list of strings in the policy file (an env's names, approvals'
 * argv patterns and profiles): a JSON array of non-empty strings, read
 * at configuration time by _policy.c and _policy_approvals.c alike.
 */

#include "ngx_http_veto_sandbox_stores.h"


ngx_array_t *
ngx_http_veto_sandbox_policy_strings(ngx_conf_t *cf, json_t *v)
{
    json_t       *e;
    size_t        i;
    ngx_str_t    *s;
    ngx_array_t  *a;

    if (!json_is_array(v)) {
        return NULL;
    }

    a = ngx_array_create(cf->pool, ngx_max(json_array_size(v), 1),
                         sizeof(ngx_str_t));
    if (a == NULL) {
        return NULL;
    }

    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || json_string_length(e) == 0) {
            return NULL;
        }

        s = ngx_array_push(a);
        if (s == NULL) {
            return NULL;
        }

        /* jansson strings are NUL terminated, as fnmatch() needs */
        s->data = (u_char *) json_string_value(e);
        s->len = json_string_length(e);
    }

    return a;
}
