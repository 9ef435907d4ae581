/*
 * Discovery: what a caller can get from this host.  _profiles.c serves
 * GET /v1/profiles (the helper's profiles the caller's policy allows)
 * and the MCP tool list_profiles; _about.c serves GET /v1/about (the isolation
 * layers in force, from the helper's ping) and the MCP tool
 * describe_isolation.
 */

#ifndef _NGX_HTTP_VSB_DISCOVERY_H_INCLUDED_
#define _NGX_HTTP_VSB_DISCOVERY_H_INCLUDED_


#include "ngx_http_veto_sandbox_module.h"
#include "ngx_http_veto_sandbox_mcp.h"


/* _profiles.c */

/* builder of the helper ops that describe the host (ping, profiles):
 * they name no caller */
ngx_int_t ngx_http_veto_sandbox_build_host(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* the helper's profile entries (each an object with "name") that ctx's
 * rule allows, each with "default" (what a create without "profile"
 * gets this caller) and "needs_approval"; a new array, NULL: no memory */
json_t *ngx_http_veto_sandbox_profiles_allowed(
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *list);

/* the name of the profile a create without "profile" gets this caller;
 * NULL: the caller must name one */
const char *ngx_http_veto_sandbox_profile_default(
    ngx_http_veto_sandbox_rule_t *rule);

ngx_int_t ngx_http_veto_sandbox_reply_profiles(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


/* _about.c */

ngx_int_t ngx_http_veto_sandbox_reply_about(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


#endif /* _NGX_HTTP_VSB_DISCOVERY_H_INCLUDED_ */
