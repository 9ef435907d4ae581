/*
 * The handlers of the module's own directives: veto_sandbox_api,
 * veto_sandbox_helper, the JWT keys and their cache, the policy file and
 * the scope names.  The command table that names them, conf create/merge
 * and the checks "nginx -t" makes stay in _module.c.
 */

#include "ngx_http_veto_sandbox_faces.h"


char *
ngx_http_veto_sandbox_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_str_t                         *p;
    ngx_http_core_loc_conf_t          *clcf, **loc;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->handler == ngx_http_veto_sandbox_api_handler) {
        return "is duplicate";
    }

    if (clcf->handler != NULL) {
        return "conflicts with another content handler in this location";
    }

    /* the protected prefix is the location's literal name, so it must
     * be one */
    if (clcf->named || clcf->noname
#if (NGX_PCRE)
        || clcf->regex
#endif
        || clcf->name.len == 0 || clcf->name.data[0] != '/')
    {
        return "must be in a prefix location such as \"location /v1/\"";
    }

    vscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_veto_sandbox_module);

    if (vscf->prefixes == NULL) {
        vscf->prefixes = ngx_array_create(cf->pool, 2, sizeof(ngx_str_t));
        if (vscf->prefixes == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    p = ngx_array_push(vscf->prefixes);
    if (p == NULL) {
        return NGX_CONF_ERROR;
    }

    *p = clcf->name;

    if (vscf->api_locs == NULL) {
        vscf->api_locs = ngx_array_create(cf->pool, 2, sizeof(void *));
        if (vscf->api_locs == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    loc = ngx_array_push(vscf->api_locs);
    if (loc == NULL) {
        return NGX_CONF_ERROR;
    }

    *loc = clcf;

    clcf->handler = ngx_http_veto_sandbox_api_handler;

    return NGX_CONF_OK;
}


char *
ngx_http_veto_sandbox_helper(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    ngx_str_t  *value;
    ngx_url_t   u;

    if (vscf->helper != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strncmp(value[1].data, "unix:", 5) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_helper\" must be a unix socket "
                           "\"unix:/path\", not \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = value[1];
    u.no_resolve = 1;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_helper\": %s in \"%V\"",
                           u.err ? u.err : "invalid address", &u.url);
        return NGX_CONF_ERROR;
    }

    vscf->helper = u.addrs;

    return NGX_CONF_OK;
}


/* veto_sandbox_jwt_jwks file | veto_sandbox_jwt_key kid alg file */
char *
ngx_http_veto_sandbox_jwt_keys(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    ngx_str_t  *value, *file;

    if (vscf->keys == NULL) {
        vscf->keys = ngx_array_create(cf->pool, 4,
                                      sizeof(ngx_http_veto_sandbox_key_t));
        if (vscf->keys == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    value = cf->args->elts;
    file = &value[cf->args->nelts - 1];

    if (ngx_conf_full_name(cf->cycle, file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (cf->args->nelts == 2) {
        return ngx_http_veto_sandbox_keys_jwks(cf, vscf->keys, file);
    }

    return ngx_http_veto_sandbox_keys_pem(cf, vscf->keys, &value[1],
                                          &value[2], file);
}


char *
ngx_http_veto_sandbox_jwt_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    ngx_str_t  *value;

    if (vscf->cache_zone != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        vscf->cache_zone = NULL;
        return NGX_CONF_OK;
    }

    return ngx_http_veto_sandbox_cache_zone(cf, vscf, &value[1]);
}


char *
ngx_http_veto_sandbox_policy(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    ngx_str_t                   *value;
    ngx_http_veto_sandbox_op_t  *ops;

    if (vscf->policy != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_conf_full_name(cf->cycle, &value[1], 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* the actions it names are the op table's rows */
    ops = ngx_http_veto_sandbox_ops_table();
    if (ops == NULL) {
        return "cannot assemble the op table: more rows than "
               "NGX_HTTP_VSB_MAX_OPS";
    }

    vscf->policy = ngx_http_veto_sandbox_policy_load(cf, &value[1], ops);
    if (vscf->policy == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


char *
ngx_http_veto_sandbox_scope(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    u_char     *p;
    ngx_str_t  *value, *scope;

    scope = &vscf->scope[cmd->offset];

    if (scope->data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "must not be empty";
    }

    /* a scope is one token of a space separated list */
    for (p = value[1].data; p < value[1].data + value[1].len; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == '"' || *p == '\\') {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\": invalid character in scope \"%V\"",
                               &cmd->name, &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    *scope = value[1];

    return NGX_CONF_OK;
}
