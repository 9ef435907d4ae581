/*
 * The server configuration the identity targets (fuzz_module_jwt,
 * fuzz_module_jwt_diff) verify tokens with, beside their own keys and
 * policy: issuer https://issuer.test, audience veto-sandbox, the tenant
 * and scope claims, 30 s of leeway, tokens of 8 KiB at most, the module's
 * default scope names, and the header table a worker keeps
 * (ngx_http_veto_sandbox_jwt_init_conf(): on, as in nginx).  Aborts if
 * the module refuses it.
 */

#ifndef _FUZZ_MODULE_JWT_CONF_H_INCLUDED_
#define _FUZZ_MODULE_JWT_CONF_H_INCLUDED_


static void
fuzz_jwt_conf(ngx_conf_t *cf, ngx_http_veto_sandbox_srv_conf_t *vscf)
{
    ngx_uint_t  i;
    /* the module's default names (a scope added there fails the build
     * here until it is named) */
    static ngx_str_t  scopes[NGX_HTTP_VSB_NSCOPES] = {
        ngx_string("sandbox:create"), ngx_string("sandbox:exec"),
        ngx_string("sandbox:files"), ngx_string("approvals:review"),
        ngx_string("audit:read"), ngx_string("sandbox:network"),
        ngx_string("admin:revoke")
    };

    _Static_assert(sizeof(scopes) / sizeof(scopes[0]) == 7,
                   "name every scope of NGX_HTTP_VSB_NSCOPES here");

    ngx_str_set(&vscf->issuer, "https://issuer.test");
    ngx_str_set(&vscf->audience, "veto-sandbox");
    ngx_str_set(&vscf->tenant_claim, "tenant");
    ngx_str_set(&vscf->scope_claim, "scope");
    vscf->leeway = 30;
    vscf->max_token_size = 8192;

    if (ngx_http_veto_sandbox_jwt_init_conf(cf, vscf) != NGX_OK
        || vscf->jwt_hdrs == NULL)
    {
        abort();
    }

    for (i = 0; i < NGX_HTTP_VSB_NSCOPES; i++) {
        vscf->scope[i] = scopes[i];
    }
}


#endif /* _FUZZ_MODULE_JWT_CONF_H_INCLUDED_ */
