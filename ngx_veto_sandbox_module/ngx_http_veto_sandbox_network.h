/*
 * Veto Sandbox: the policy's "network" section and what it says of the
 * hosts a request asks for.  Pure functions of their input (pools and
 * JSON, no request), so they are unit tested without nginx.  Entries are
 * read by the egress proxy's own parser (egress-proxy/allow.c), the very
 * code that applies them in the end.
 */

#ifndef _NGX_HTTP_VSB_NETWORK_H_INCLUDED_
#define _NGX_HTTP_VSB_NETWORK_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <jansson.h>

#include "ngx_http_veto_sandbox_module.h"


/* Entries one request may name: the helper's hard ceiling (its
 * egress_max_entries may be lower; it answers over_ceiling then). */
#define NGX_HTTP_VSB_NETWORK_MAX_ENTRIES   256

/* What an exec's audit record keeps of its attempts, at most (less when
 * the rest of the record leaves less), and what the "network" object
 * takes around them. */
#define NGX_HTTP_VSB_NETWORK_RECORD_BYTES  4096
#define NGX_HTTP_VSB_NETWORK_RECORD_FRAME  96


/*
 * Config time.  network_policy() reads one "network" section (tenant or
 * agent) into net, over what net inherited: "allow", "ask" and "default"
 * each replace the inherited field when set.  network_check() runs once
 * the rule is whole: an agent's allow within its tenant's allow, its ask
 * within the tenant's allow and ask, and the default within the rule's
 * own allow.  Errors name the file, where and the entry; NGX_ERROR.
 */
ngx_int_t ngx_http_veto_sandbox_network_policy(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *obj,
    ngx_http_veto_sandbox_net_rule_t *net);
ngx_int_t ngx_http_veto_sandbox_network_check(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, ngx_http_veto_sandbox_net_rule_t *net,
    ngx_http_veto_sandbox_net_rule_t *parent);


/*
 * Request time: entries (a JSON array of strings, the caller checked its
 * shape and size) against the rule.
 *   NGX_OK        every entry is within allow or ask; *ask is a new array
 *                 (freed with pool) of those beyond allow, or NULL if none
 *   NGX_DECLINED  entry *bad is within neither: refused
 *   NGX_ERROR     entry *bad is malformed; why says how
 *   NGX_ABORT     out of memory
 * An entry without a port is both 80 and 443: each must be covered.
 */
ngx_int_t ngx_http_veto_sandbox_network_classify(ngx_pool_t *pool,
    ngx_http_veto_sandbox_net_rule_t *net, json_t *entries, json_t **ask,
    size_t *bad, char *why, size_t whylen);

/*
 * The policy's "credentials" section: {"allow": [NAME...], "ask":
 * [NAME...]}, names of the operator's credentials (the helper's
 * egress_credentials bindings: a name is 1 .. 64 bytes of [a-z0-9._-]).
 * credentials_policy() reads one section over what cred inherited (each
 * field set replaces the inherited one); credentials_check() holds an
 * agent's allow within its tenant's allow, its ask within the tenant's
 * allow and ask.  Errors name the file, where and the name; NGX_ERROR.
 */
#define NGX_HTTP_VSB_CRED_NAME_MAX     64
#define NGX_HTTP_VSB_CRED_PER_SANDBOX  16   /* the helper's ceiling */
#define NGX_HTTP_VSB_SECRET_MAX        4096 /* an agent's secret's value */

ngx_int_t ngx_http_veto_sandbox_credentials_policy(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *obj,
    ngx_http_veto_sandbox_cred_rule_t *cred);
ngx_int_t ngx_http_veto_sandbox_credentials_check(ngx_conf_t *cf,
    ngx_str_t *file, const char *where,
    ngx_http_veto_sandbox_cred_rule_t *cred,
    ngx_http_veto_sandbox_cred_rule_t *parent);

/*
 * Request time: names (a JSON array, shape unchecked) against the rule.
 *   NGX_OK        every name is within allow or ask; *ask is a new array
 *                 (freed with pool) of those only within ask, or NULL
 *   NGX_DECLINED  name *bad is within neither: refused
 *   NGX_ERROR     name *bad is malformed or named twice; why says how
 *   NGX_ABORT     out of memory
 */
ngx_int_t ngx_http_veto_sandbox_credentials_classify(ngx_pool_t *pool,
    ngx_http_veto_sandbox_cred_rule_t *cred, json_t *names, json_t **ask,
    size_t *bad, char *why, size_t whylen);

/*
 * The policy's credentials.agent_hosts: hosts (exact or "*.suffix", port
 * 443) an agent may bind a secret of its own to; an agent's within its
 * tenant's.  agent_host() at request time: does the rule cover host (an
 * exact name or "*.suffix", as the helper takes it)?  1 yes; 0 no; -1
 * malformed (why says how).
 */
ngx_int_t ngx_http_veto_sandbox_credentials_agent_hosts(ngx_conf_t *cf,
    ngx_str_t *file, const char *where, json_t *v,
    ngx_http_veto_sandbox_cred_rule_t *cred);
ngx_int_t ngx_http_veto_sandbox_credentials_agent_host(
    ngx_http_veto_sandbox_cred_rule_t *cred, json_t *host, char *why,
    size_t whylen);

/* Is v a credential's name (a string of 1 .. 64 bytes of [a-z0-9._-],
 * starting with a letter or digit)? */
ngx_uint_t ngx_http_veto_sandbox_credentials_name_ok(json_t *v);


/*
 * What an exec's audit record keeps of its result's "network": "none" as
 * it is; attempts in order (the helper puts refusals first) while their
 * JSON fits in cap bytes, "dropped" counting the helper's drops and the
 * rest, "complete" as the helper said.  A new reference, or NULL.
 */
json_t *ngx_http_veto_sandbox_network_record(json_t *network, size_t cap);


#endif /* _NGX_HTTP_VSB_NETWORK_H_INCLUDED_ */
