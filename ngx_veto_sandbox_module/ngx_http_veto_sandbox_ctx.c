/*
 * The request's module context, made on first use by whichever of the
 * phase handler, the content handler or the error filter comes first;
 * the $veto_* variables that show it to the access log; which URIs
 * are this server's API (the locations carrying "veto_sandbox_api");
 * the request an op sees (ctx->in) when it is r's own; the ids a
 * request has: its own (request_id) and what makes a sandbox's valid.
 */

#include "ngx_http_veto_sandbox_base.h"


static ngx_int_t ngx_http_veto_sandbox_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


/* $veto_peer_credential is routing's own (_peer.c) */
static ngx_http_variable_t  ngx_http_veto_sandbox_vars[] = {

    { ngx_string("veto_agent"), NULL, ngx_http_veto_sandbox_variable,
      offsetof(ngx_http_veto_sandbox_ctx_t, agent), NGX_HTTP_VAR_NOCACHEABLE,
      0 },

    { ngx_string("veto_tenant"), NULL, ngx_http_veto_sandbox_variable,
      offsetof(ngx_http_veto_sandbox_ctx_t, tenant), NGX_HTTP_VAR_NOCACHEABLE,
      0 },

    { ngx_string("veto_decision"), NULL, ngx_http_veto_sandbox_variable,
      offsetof(ngx_http_veto_sandbox_ctx_t, decision),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("veto_sandbox"), NULL, ngx_http_veto_sandbox_variable,
      offsetof(ngx_http_veto_sandbox_ctx_t, sandbox),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_http_veto_sandbox_ctx_t *
ngx_http_veto_sandbox_get_ctx(ngx_http_request_t *r)
{
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);
    if (ctx != NULL) {
        return ctx;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_veto_sandbox_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_veto_sandbox_module);

    return ctx;
}


/* unique across workers and gateways sharing one Redis */
ngx_int_t
ngx_http_veto_sandbox_request_id(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char  *p;

    if (ctx->request_id.len) {
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN * 4 + 4);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ctx->request_id.data = p;
    ctx->request_id.len = ngx_sprintf(p, "%P-%M-%uA-%ui", ngx_pid,
                                      ngx_current_msec,
                                      r->connection->number,
                                      r->connection->requests)
                          - p;

    return NGX_OK;
}


/* "sb-" and 24 lowercase hex digits (vsb_protocol.h): anything else
 * names no sandbox, whether a client or the helper sent it (it goes into
 * a Location header and Redis keys) */
ngx_uint_t
ngx_http_veto_sandbox_id_valid(u_char *id, size_t len)
{
    return len == VSB_SANDBOX_ID_LEN && ngx_strncmp(id, "sb-", 3) == 0
           && ngx_http_veto_sandbox_hex_lower(id + 3, len - 3);
}


/* Is r->uri under one of this server's API locations?  "/v1/" also
 * covers "/v1" itself. */
ngx_int_t
ngx_http_veto_sandbox_protected(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf)
{
    ngx_str_t   *p;
    ngx_uint_t   i;

    if (vscf->prefixes == NULL) {
        return 0;
    }

    p = vscf->prefixes->elts;

    for (i = 0; i < vscf->prefixes->nelts; i++) {

        if (r->uri.len >= p[i].len
            && ngx_strncmp(r->uri.data, p[i].data, p[i].len) == 0)
        {
            return 1;
        }

        if (p[i].len > 1 && p[i].data[p[i].len - 1] == '/'
            && r->uri.len == p[i].len - 1
            && ngx_strncmp(r->uri.data, p[i].data, p[i].len - 1) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* The REST API: an op sees r itself, its body once read. */
void
ngx_http_veto_sandbox_input_rest(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_table_elt_t                *h;
    ngx_http_veto_sandbox_input_t  *in;

    in = &ctx->in;

    ngx_memzero(in, sizeof(ngx_http_veto_sandbox_input_t));

    in->method_name = r->method_name;
    in->uri = r->uri;
    in->args = r->args;
    in->body = r->request_body ? r->request_body->bufs : NULL;

    if (r->headers_in.content_type) {
        in->content_type = &r->headers_in.content_type->value;
    }

    h = ngx_http_veto_sandbox_header_in(r, "Veto-Approval");

    if (h != NULL) {
        in->approval = h->value;
        in->has_approval = 1;
    }

    in->set = 1;
}


static ngx_int_t
ngx_http_veto_sandbox_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t                    *s;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_veto_sandbox_module);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    s = (ngx_str_t *) ((char *) ctx + data);

    if (s->len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = s->len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = s->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_add_variables(ngx_conf_t *cf)
{
    return ngx_http_veto_sandbox_variables_add(cf, ngx_http_veto_sandbox_vars);
}


/* a table of variables, ended by an empty name: each one added */
ngx_int_t
ngx_http_veto_sandbox_variables_add(ngx_conf_t *cf, ngx_http_variable_t *vars)
{
    ngx_http_variable_t  *var, *v;

    for (v = vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}
