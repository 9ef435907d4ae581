/*
 * The MCP endpoint as an OAuth protected resource (RFC 9728, as the MCP
 * authorization specification asks): its resource identifier, the URL of
 * its metadata document, the "resource_metadata" parameter of the
 * challenges its 401s carry (_problem.c), and the document itself
 * ("veto_sandbox_mcp_metadata" in a location), which names the
 * configured token issuer as the authorization server.
 *
 * The identifier is veto_sandbox_mcp_resource when set (what a client
 * behind TLS termination or a proxy really uses); otherwise it is made
 * from the request's scheme and Host, which is only used when the Host
 * is a plain host[:port], so that nothing a client sends can bend the
 * challenge's syntax.
 */

#include "ngx_http_veto_sandbox_faces.h"


#define NGX_HTTP_VSB_MCP_PATH       "/v1/mcp"
#define NGX_HTTP_VSB_PRM_PATH       "/.well-known/oauth-protected-resource"


static ngx_int_t ngx_http_veto_sandbox_mcp_metadata_handler(
    ngx_http_request_t *r);


/* Where the path of an http(s) URL starts (its end when it has none);
 * NULL when it has no "://". */
static u_char *
ngx_http_veto_sandbox_url_path(ngx_str_t *url)
{
    u_char  *p, *last;

    last = url->data + url->len;

    for (p = url->data; p + 3 <= last; p++) {
        if (p[0] == ':' && p[1] == '/' && p[2] == '/') {
            p = ngx_strlchr(p + 3, last, '/');
            return p ? p : last;
        }
    }

    return NULL;
}


/* A byte a URL in a quoted challenge parameter may carry as it is. */
static ngx_uint_t
ngx_http_veto_sandbox_url_char(u_char c)
{
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '#'
           && c != '?';
}


/* host[:port], or an [IPv6]:port: nothing else goes into a URL here */
static ngx_uint_t
ngx_http_veto_sandbox_plain_host(ngx_str_t *host)
{
    u_char  *p, c;

    if (host->len == 0) {
        return 0;
    }

    for (p = host->data; p < host->data + host->len; p++) {
        c = *p;

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':'
              || c == '[' || c == ']'))
        {
            return 0;
        }
    }

    return 1;
}


/*
 * The resource identifier and the metadata URL of r's server's MCP
 * endpoint.  NGX_DECLINED: none can be named (no safe Host); NGX_ERROR:
 * no memory.
 */
static ngx_int_t
ngx_http_veto_sandbox_mcp_urls(ngx_http_request_t *r, ngx_str_t *resource,
    ngx_str_t *metadata)
{
    u_char                            *p, *path;
    ngx_str_t                         *host, scheme;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (vscf->mcp.resource.len) {
        *resource = vscf->mcp.resource;

    } else {
        host = r->headers_in.host ? &r->headers_in.host->value : NULL;

        if (host == NULL || !ngx_http_veto_sandbox_plain_host(host)) {
            return NGX_DECLINED;
        }

#if (NGX_HTTP_SSL)
        if (r->connection->ssl) {
            ngx_str_set(&scheme, "https");
        } else
#endif
        {
            ngx_str_set(&scheme, "http");
        }

        resource->len = scheme.len + sizeof("://") - 1 + host->len
                        + sizeof(NGX_HTTP_VSB_MCP_PATH) - 1;
        resource->data = ngx_pnalloc(r->pool, resource->len);
        if (resource->data == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(resource->data, "%V://%V" NGX_HTTP_VSB_MCP_PATH, &scheme,
                    host);
    }

    /* RFC 9728 3.1: the well-known path goes between the authority and
     * the resource's path */
    path = ngx_http_veto_sandbox_url_path(resource);
    if (path == NULL) {
        return NGX_DECLINED;
    }

    metadata->len = resource->len + sizeof(NGX_HTTP_VSB_PRM_PATH) - 1;
    metadata->data = ngx_pnalloc(r->pool, metadata->len);
    if (metadata->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(metadata->data, resource->data, path - resource->data);
    p = ngx_cpymem(p, NGX_HTTP_VSB_PRM_PATH,
                   sizeof(NGX_HTTP_VSB_PRM_PATH) - 1);
    ngx_memcpy(p, path, resource->data + resource->len - path);

    return NGX_OK;
}


u_char *
ngx_http_veto_sandbox_mcp_challenge(ngx_http_request_t *r)
{
    u_char                            *p;
    ngx_int_t                          rc;
    ngx_str_t                          resource, metadata;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (!vscf->mcp.enable
        || r->uri.len != sizeof(NGX_HTTP_VSB_MCP_PATH) - 1
        || ngx_strncmp(r->uri.data, NGX_HTTP_VSB_MCP_PATH, r->uri.len) != 0)
    {
        return (u_char *) "";
    }

    rc = ngx_http_veto_sandbox_mcp_urls(r, &resource, &metadata);

    if (rc == NGX_DECLINED) {
        return (u_char *) "";
    }

    if (rc != NGX_OK) {
        return NULL;
    }

    p = ngx_pnalloc(r->pool,
                    sizeof(", resource_metadata=\"\"") + metadata.len);
    if (p == NULL) {
        return NULL;
    }

    ngx_sprintf(p, ", resource_metadata=\"%V\"%Z", &metadata);

    return p;
}


/*
 * A browser sends Origin; the MCP endpoint answers only the endpoint's
 * own origin (its resource identifier's scheme://authority) and those of
 * veto_sandbox_mcp_allow_origin: a page elsewhere that resolved a name
 * to this gateway (DNS rebinding) gets 403.
 */
ngx_uint_t
ngx_http_veto_sandbox_mcp_origin_allowed(ngx_http_request_t *r,
    ngx_str_t *origin)
{
    u_char                            *end;
    ngx_str_t                          resource, metadata, *o;
    ngx_uint_t                         i;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (vscf->mcp.origins) {
        o = vscf->mcp.origins->elts;

        for (i = 0; i < vscf->mcp.origins->nelts; i++) {
            if (o[i].len == origin->len
                && ngx_strncasecmp(o[i].data, origin->data, origin->len) == 0)
            {
                return 1;
            }
        }
    }

    if (ngx_http_veto_sandbox_mcp_urls(r, &resource, &metadata) != NGX_OK) {
        return 0;
    }

    end = ngx_http_veto_sandbox_url_path(&resource);
    if (end == NULL) {
        return 0;
    }

    return (size_t) (end - resource.data) == origin->len
           && ngx_strncasecmp(resource.data, origin->data, origin->len) == 0;
}


/* veto_sandbox_mcp_resource https://gateway.example.com/v1/mcp */
char *
ngx_http_veto_sandbox_mcp_resource(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_srv_conf_t *vscf = conf;

    u_char     *p, *last, *authority;
    ngx_str_t  *value;

    if (vscf->mcp.resource.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    p = value[1].data;
    last = p + value[1].len;

    if (value[1].len > 7 && ngx_strncmp(p, "http://", 7) == 0) {
        authority = p + 7;

    } else if (value[1].len > 8 && ngx_strncmp(p, "https://", 8) == 0) {
        authority = p + 8;

    } else {
        return "must be an http:// or https:// URL";
    }

    for ( /* void */ ; p < last; p++) {
        if (!ngx_http_veto_sandbox_url_char(*p)) {
            return "must be a URL without query, fragment, quotes or spaces";
        }
    }

    if (*authority == '/') {
        return "must name a host";
    }

    vscf->mcp.resource = value[1];

    return NGX_CONF_OK;
}


/* veto_sandbox_mcp_metadata: this location serves the document */
char *
ngx_http_veto_sandbox_mcp_metadata(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->handler == ngx_http_veto_sandbox_mcp_metadata_handler) {
        return "is duplicate";
    }

    if (clcf->handler != NULL) {
        return "conflicts with another content handler in this location";
    }

    clcf->handler = ngx_http_veto_sandbox_mcp_metadata_handler;

    return NGX_CONF_OK;
}


/* Is uri the document's: the root one, or the one inserted before the
 * resource's path (and before /v1/mcp, should a proxy have moved it)? */
static ngx_uint_t
ngx_http_veto_sandbox_mcp_metadata_uri(ngx_str_t *uri, ngx_str_t *resource)
{
    u_char     *p;
    ngx_str_t   tail;

    if (uri->len < sizeof(NGX_HTTP_VSB_PRM_PATH) - 1
        || ngx_strncmp(uri->data, NGX_HTTP_VSB_PRM_PATH,
                       sizeof(NGX_HTTP_VSB_PRM_PATH) - 1) != 0)
    {
        return 0;
    }

    tail.data = uri->data + sizeof(NGX_HTTP_VSB_PRM_PATH) - 1;
    tail.len = uri->len - (sizeof(NGX_HTTP_VSB_PRM_PATH) - 1);

    if (tail.len == 0
        || (tail.len == sizeof(NGX_HTTP_VSB_MCP_PATH) - 1
            && ngx_strncmp(tail.data, NGX_HTTP_VSB_MCP_PATH, tail.len) == 0))
    {
        return 1;
    }

    p = ngx_http_veto_sandbox_url_path(resource);

    return p != NULL
           && (size_t) (resource->data + resource->len - p) == tail.len
           && ngx_strncmp(p, tail.data, tail.len) == 0;
}


/* GET /.well-known/oauth-protected-resource[/v1/mcp] */
static ngx_int_t
ngx_http_veto_sandbox_mcp_metadata_handler(ngx_http_request_t *r)
{
    u_char                            *p;
    size_t                             len;
    json_t                            *doc, *scopes;
    ngx_int_t                          rc;
    ngx_buf_t                         *b;
    ngx_str_t                          resource, metadata;
    ngx_uint_t                         i;
    ngx_chain_t                        out;
    ngx_table_elt_t                   *h;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    vscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_module);

    if (!vscf->mcp.enable) {
        return NGX_HTTP_NOT_FOUND;
    }

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_veto_sandbox_mcp_urls(r, &resource, &metadata);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_DECLINED) {
        /* no resource this gateway can name for this Host */
        return NGX_HTTP_BAD_REQUEST;
    }

    if (!ngx_http_veto_sandbox_mcp_metadata_uri(&r->uri, &resource)) {
        return NGX_HTTP_NOT_FOUND;
    }

    /* the scopes the tools take (a reviewer's or an auditor's are not) */
    scopes = json_array();
    if (scopes == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < NGX_HTTP_VSB_NSCOPES; i++) {
        if (i == 3 || i == 4) {
            continue;           /* approvals:review, audit:read */
        }

        json_array_append_new(scopes,
                      ngx_http_veto_sandbox_json_ngx_str(&vscf->scope[i]));
    }

    doc = json_pack("{s:s%, s:[s%], s:o, s:[s], s:s}",
                    "resource", resource.data, resource.len,
                    "authorization_servers", vscf->issuer.data,
                    vscf->issuer.len,
                    "scopes_supported", scopes,
                    "bearer_methods_supported", "header",
                    "resource_name", "Veto Sandbox");
    if (doc == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = json_dumpb(doc, NULL, 0, JSON_COMPACT);

    p = ngx_pnalloc(r->pool, len + 1);
    if (p == NULL) {
        json_decref(doc);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = json_dumpb(doc, (char *) p, len, JSON_COMPACT);
    p[len++] = '\n';

    json_decref(doc);

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Cache-Control");
    ngx_str_set(&h->value, "no-store");
    h->lowcase_key = NULL;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = len;
    ngx_str_set(&r->headers_out.content_type, "application/json");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = p;
    b->last = p + len;
    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
