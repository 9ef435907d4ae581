/*
 * ngx_veto_sandbox_module: directives, configuration (create, merge,
 * the checks "nginx -t" makes), the registration of the module's phase
 * handler, content handler, filters and variables, and what a worker
 * sets up and ends (its Redis connection: _redis.c).
 */

#include "ngx_http_veto_sandbox_faces.h"

#include "ngx_http_veto_sandbox_mcp.h"
#include "ngx_http_veto_sandbox_approval.h"
#include "ngx_http_veto_sandbox_quota.h"
#include "ngx_http_veto_sandbox_audit.h"
#include "ngx_http_veto_sandbox_revoke.h"


static ngx_int_t ngx_http_veto_sandbox_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_veto_sandbox_init(ngx_conf_t *cf);
static void *ngx_http_veto_sandbox_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_veto_sandbox_merge_srv_conf(ngx_conf_t *cf,
    void *parent, void *child);
static void ngx_http_veto_sandbox_check_body_size(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *conf);
static void *ngx_http_veto_sandbox_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_veto_sandbox_init_main_conf(ngx_conf_t *cf,
    void *conf);
static ngx_int_t ngx_http_veto_sandbox_init_process(ngx_cycle_t *cycle);
static void ngx_http_veto_sandbox_exit_process(ngx_cycle_t *cycle);


static ngx_command_t  ngx_http_veto_sandbox_commands[] = {

    { ngx_string("veto_sandbox_api"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_veto_sandbox_api,
      0,
      0,
      NULL },

    { ngx_string("veto_sandbox_helper"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_helper,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_helper_connect_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, connect_timeout),
      NULL },

    { ngx_string("veto_sandbox_helper_send_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, send_timeout),
      NULL },

    { ngx_string("veto_sandbox_helper_read_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, read_timeout),
      NULL },

    { ngx_string("veto_sandbox_jwt_jwks"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_jwt_keys,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_jwt_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE3,
      ngx_http_veto_sandbox_jwt_keys,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_jwt_issuer"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, issuer),
      NULL },

    { ngx_string("veto_sandbox_jwt_audience"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, audience),
      NULL },

    { ngx_string("veto_sandbox_jwt_leeway"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, leeway),
      NULL },

    { ngx_string("veto_sandbox_jwt_tenant_claim"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, tenant_claim),
      NULL },

    { ngx_string("veto_sandbox_jwt_scope_claim"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, scope_claim),
      NULL },

    { ngx_string("veto_sandbox_jwt_cache"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_jwt_cache,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_jwt_thread_pool"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE12,
      ngx_http_veto_sandbox_jwt_thread_pool,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_max_token_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, max_token_size),
      NULL },

    { ngx_string("veto_sandbox_policy"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_policy,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_scope_create"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_scope,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_scope_exec"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_scope,
      NGX_HTTP_SRV_CONF_OFFSET,
      1,
      NULL },

    { ngx_string("veto_sandbox_scope_files"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_scope,
      NGX_HTTP_SRV_CONF_OFFSET,
      2,
      NULL },

    { ngx_string("veto_sandbox_scope_review"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_scope,
      NGX_HTTP_SRV_CONF_OFFSET,
      3,
      NULL },

    { ngx_string("veto_sandbox_scope_audit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_scope,
      NGX_HTTP_SRV_CONF_OFFSET,
      4,
      NULL },

    { ngx_string("veto_sandbox_scope_network"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_scope,
      NGX_HTTP_SRV_CONF_OFFSET,
      5,
      NULL },

    { ngx_string("veto_sandbox_scope_admin"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_scope,
      NGX_HTTP_SRV_CONF_OFFSET,
      6,
      NULL },

    { ngx_string("veto_sandbox_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_veto_sandbox_metrics_conf,
      0,
      0,
      NULL },

    { ngx_string("veto_sandbox_metrics_helper_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, metrics_timeout),
      NULL },

    { ngx_string("veto_sandbox_redis"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_redis_sentinel"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_veto_sandbox_redis_sentinel,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_redis_wait"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE12,
      ngx_http_veto_sandbox_redis_wait,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_host"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE12,
      ngx_http_veto_sandbox_host,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_redis_user"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_redis_str,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, redis.user),
      NULL },

    { ngx_string("veto_sandbox_redis_password"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_redis_str,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, redis.password),
      NULL },

    { ngx_string("veto_sandbox_redis_db"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, redis.db),
      NULL },

    { ngx_string("veto_sandbox_redis_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, timeout),
      NULL },

    { ngx_string("veto_sandbox_audit_maxlen"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, audit_maxlen),
      NULL },

    { ngx_string("veto_sandbox_audit_bytes"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, audit_bytes),
      NULL },

    { ngx_string("veto_sandbox_approval_max"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, approval_max),
      NULL },

    { ngx_string("veto_sandbox_approval_retention"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, retention),
      NULL },

    { ngx_string("veto_sandbox_peer_key"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_peer_key,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_peer_pass"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_peer_pass,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_peers"),
      NGX_HTTP_UPS_CONF|NGX_CONF_NOARGS,
      ngx_http_veto_sandbox_peers,
      0,
      0,
      NULL },

    { ngx_string("veto_sandbox_host_lease"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, host_lease),
      NULL },

    { ngx_string("veto_sandbox_host_grace"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, host_grace),
      NULL },

    { ngx_string("veto_sandbox_ended_poll"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, ended_poll),
      NULL },

    { ngx_string("veto_sandbox_audit_max_age"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_main_conf_t, audit_max_age),
      NULL },

    { ngx_string("veto_sandbox_approval_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, approval_ttl),
      NULL },

    { ngx_string("veto_sandbox_approval_threshold"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, approval_threshold),
      NULL },

    { ngx_string("veto_sandbox_approval_inline_credentials"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, approval_credentials),
      NULL },

    { ngx_string("veto_sandbox_mcp"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, mcp.enable),
      NULL },

    { ngx_string("veto_sandbox_mcp_sessions"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_1MORE,
      ngx_http_veto_sandbox_mcp_sessions,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_mcp_resource"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_mcp_resource,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_mcp_max_body"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, mcp.max_body),
      NULL },

    { ngx_string("veto_sandbox_mcp_reply_bytes"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, mcp.reply_bytes),
      NULL },

    { ngx_string("veto_sandbox_mcp_allow_origin"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_array_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_srv_conf_t, mcp.origins),
      NULL },

    { ngx_string("veto_sandbox_mcp_metadata"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_veto_sandbox_mcp_metadata,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_veto_sandbox_module_ctx = {
    ngx_http_veto_sandbox_preconfiguration, /* preconfiguration */
    ngx_http_veto_sandbox_init,            /* postconfiguration */

    ngx_http_veto_sandbox_create_main_conf, /* create main configuration */
    ngx_http_veto_sandbox_init_main_conf,  /* init main configuration */

    ngx_http_veto_sandbox_create_srv_conf, /* create server configuration */
    ngx_http_veto_sandbox_merge_srv_conf,  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_veto_sandbox_module = {
    NGX_MODULE_V1,
    &ngx_http_veto_sandbox_module_ctx,     /* module context */
    ngx_http_veto_sandbox_commands,        /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_veto_sandbox_init_process,    /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_veto_sandbox_exit_process,    /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_str_t  ngx_http_veto_sandbox_default_scopes[] = {
    ngx_string("sandbox:create"),
    ngx_string("sandbox:exec"),
    ngx_string("sandbox:files"),
    ngx_string("approvals:review"),
    ngx_string("audit:read"),
    ngx_string("sandbox:network"),
    ngx_string("admin:revoke")
};


/* the $veto_* variables: the request's (_ctx.c), routing's (_peer.c) */
static ngx_int_t
ngx_http_veto_sandbox_preconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_veto_sandbox_add_variables(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_peer_preconfiguration(cf);
}


/* the identity phase handler, the error filter, and the op table's check */
static ngx_int_t
ngx_http_veto_sandbox_init(ngx_conf_t *cf)
{
    if (ngx_http_veto_sandbox_ops_init(cf) != NGX_OK
        || ngx_http_veto_sandbox_mcp_tools_init(cf) != NGX_OK
        || ngx_http_veto_sandbox_identity_init(cf) != NGX_OK
        || ngx_http_veto_sandbox_metrics_init(cf) != NGX_OK
        || ngx_http_veto_sandbox_fence_init(cf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_veto_sandbox_filter_init(cf);
}


static void *
ngx_http_veto_sandbox_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_veto_sandbox_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_veto_sandbox_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->keys = NULL;
     *     conf->issuer = { 0, NULL };
     *     conf->audience = { 0, NULL };
     *     conf->tenant_claim = { 0, NULL };
     *     conf->scope_claim = { 0, NULL };
     *     conf->scope[] = { 0, NULL };
     *     conf->cache_zone = NULL;
     *     conf->policy = NULL;
     *     conf->helper = NULL;
     *     conf->prefixes = NULL;
     *     conf->metrics = NULL;
     */

    conf->leeway = NGX_CONF_UNSET;
    conf->max_token_size = NGX_CONF_UNSET_SIZE;
    conf->connect_timeout = NGX_CONF_UNSET_MSEC;
    conf->send_timeout = NGX_CONF_UNSET_MSEC;
    conf->read_timeout = NGX_CONF_UNSET_MSEC;
    conf->cache_zone = NGX_CONF_UNSET_PTR;
#if (NGX_THREADS)
    conf->jwt_pool = NGX_CONF_UNSET_PTR;
#endif
    conf->approval_ttl = NGX_CONF_UNSET_MSEC;
    conf->approval_threshold = NGX_CONF_UNSET_UINT;
    conf->approval_credentials = NGX_CONF_UNSET;
    conf->metrics_timeout = NGX_CONF_UNSET_MSEC;

    conf->mcp.enable = NGX_CONF_UNSET;
    conf->mcp.sessions = NGX_CONF_UNSET_PTR;
    conf->mcp.max_body = NGX_CONF_UNSET_SIZE;
    conf->mcp.reply_bytes = NGX_CONF_UNSET_SIZE;
    conf->mcp.origins = NGX_CONF_UNSET_PTR;

    return conf;
}


static char *
ngx_http_veto_sandbox_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_veto_sandbox_srv_conf_t *prev = parent;
    ngx_http_veto_sandbox_srv_conf_t *conf = child;

    ngx_uint_t                          i;
    const char                         *missing;
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    if (conf->keys == NULL) {
        conf->keys = prev->keys;
    }

    ngx_conf_merge_str_value(conf->issuer, prev->issuer, "");
    ngx_conf_merge_str_value(conf->audience, prev->audience, "");
    ngx_conf_merge_value(conf->leeway, prev->leeway, 30);
    ngx_conf_merge_str_value(conf->tenant_claim, prev->tenant_claim,
                             "tenant");
    ngx_conf_merge_str_value(conf->scope_claim, prev->scope_claim, "scope");
    ngx_conf_merge_size_value(conf->max_token_size, prev->max_token_size,
                              8192);

    for (i = 0; i < NGX_HTTP_VSB_NSCOPES; i++) {
        if (conf->scope[i].data == NULL) {
            conf->scope[i] = prev->scope[i].data
                             ? prev->scope[i]
                             : ngx_http_veto_sandbox_default_scopes[i];
        }
    }

    ngx_conf_merge_ptr_value(conf->cache_zone, prev->cache_zone, NULL);
#if (NGX_THREADS)
    if (conf->jwt_pool == NGX_CONF_UNSET_PTR) {
        conf->jwt_pool = prev->jwt_pool == NGX_CONF_UNSET_PTR
                         ? NULL : prev->jwt_pool;
        conf->jwt_nice = prev->jwt_nice;
    }
#endif

    if (ngx_http_veto_sandbox_jwt_init_conf(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->policy == NULL) {
        conf->policy = prev->policy;
    }

    if (conf->helper == NULL) {
        conf->helper = prev->helper;
    }

    ngx_conf_merge_msec_value(conf->connect_timeout, prev->connect_timeout,
                              1000);
    ngx_conf_merge_msec_value(conf->send_timeout, prev->send_timeout, 30000);
    ngx_conf_merge_msec_value(conf->read_timeout, prev->read_timeout,
                              120000);

    if (ngx_http_veto_sandbox_metrics_merge(cf, prev, conf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_msec_value(conf->approval_ttl, prev->approval_ttl,
                              NGX_HTTP_VSB_APPROVAL_TTL);
    ngx_conf_merge_uint_value(conf->approval_threshold,
                              prev->approval_threshold, 1);
    ngx_conf_merge_value(conf->approval_credentials,
                         prev->approval_credentials, 0);

    if (conf->approval_ttl == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_approval_ttl\" must be positive");
        return NGX_CONF_ERROR;
    }

    if (conf->approval_threshold < 1 || conf->approval_threshold > 100) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_approval_threshold\" must be "
                           "1..100");
        return NGX_CONF_ERROR;
    }

    /* a new random epoch per load invalidates cached verifications made
     * under the previous keys, issuer or audience */
    conf->epoch = (uint32_t) ngx_random();

    if (ngx_http_veto_sandbox_mcp_merge(cf, prev, conf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->prefixes == NULL) {
        return NGX_CONF_OK;
    }

    /* a server serving the API must be able to verify and to decide */

    if (conf->keys == NULL || conf->keys->nelts == 0) {
        missing = "\"veto_sandbox_jwt_jwks\" or \"veto_sandbox_jwt_key\"";

    } else if (conf->issuer.len == 0) {
        missing = "\"veto_sandbox_jwt_issuer\"";

    } else if (conf->audience.len == 0) {
        missing = "\"veto_sandbox_jwt_audience\"";

    } else if (conf->policy == NULL) {
        missing = "\"veto_sandbox_policy\"";

    } else if (conf->helper == NULL) {
        missing = "\"veto_sandbox_helper\"";

    } else {
        missing = NULL;
    }

    if (missing != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_api\" requires %s in its server",
                           missing);
        return NGX_CONF_ERROR;
    }

    /* approvals and quotas live in Redis: without it they could not be
     * enforced, and silently allowing is not an option */
    vmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_veto_sandbox_module);

    if (conf->policy->needs_redis && !vmcf->enabled) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_policy\" \"%V\" has approvals, "
                           "quotas, askable credentials (credentials.ask) "
                           "or askable hosts (network.ask), which need "
                           "\"veto_sandbox_redis\"",
                           &conf->policy->file);
        return NGX_CONF_ERROR;
    }

    ngx_http_veto_sandbox_check_body_size(cf, conf);

    return NGX_CONF_OK;
}


/*
 * nginx refuses a body over client_max_body_size before the module sees
 * the request: below the policy's file_bytes, uploads the policy allows
 * are refused in nginx's name.  The core's location configurations are
 * merged before ours, so the value here is the one that applies.
 */
static void
ngx_http_veto_sandbox_check_body_size(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *conf)
{
    uint64_t                    max;
    ngx_uint_t                  i;
    ngx_http_core_loc_conf_t  **loc;

    max = ngx_http_veto_sandbox_policy_max_ceiling(conf->policy,
                                                   NGX_HTTP_VSB_L_FILE_BYTES);
    loc = conf->api_locs->elts;

    for (i = 0; max && i < conf->api_locs->nelts; i++) {
        if (loc[i]->client_max_body_size
            && (uint64_t) loc[i]->client_max_body_size < max)
        {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "\"client_max_body_size\" %O of "
                               "\"location %V\" is below the file_bytes "
                               "ceiling %uL of \"veto_sandbox_policy\" "
                               "\"%V\": larger uploads are refused by it",
                               loc[i]->client_max_body_size, &loc[i]->name,
                               max, &conf->policy->file);
        }
    }
}


static void *
ngx_http_veto_sandbox_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    vmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_veto_sandbox_main_conf_t));
    if (vmcf == NULL) {
        return NULL;
    }

    ngx_http_veto_sandbox_redis_conf_init(&vmcf->redis);

    vmcf->redis.db = NGX_CONF_UNSET;
    vmcf->redis.wait_replicas = NGX_CONF_UNSET_UINT;
    vmcf->timeout = NGX_CONF_UNSET_MSEC;
    vmcf->audit_maxlen = NGX_CONF_UNSET_UINT;
    vmcf->audit_bytes = NGX_CONF_UNSET_SIZE;
    vmcf->retention = NGX_CONF_UNSET_MSEC;
    vmcf->approval_max = NGX_CONF_UNSET_UINT;
    vmcf->ended_poll = NGX_CONF_UNSET_MSEC;
    vmcf->host_lease = NGX_CONF_UNSET_MSEC;
    vmcf->host_grace = NGX_CONF_UNSET_MSEC;
    vmcf->audit_max_age = NGX_CONF_UNSET_MSEC;

    return vmcf;
}


static char *
ngx_http_veto_sandbox_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_veto_sandbox_main_conf_t *vmcf = conf;

    ngx_conf_init_value(vmcf->redis.db, 0);
    ngx_conf_init_uint_value(vmcf->redis.wait_replicas, 0);
    ngx_conf_init_msec_value(vmcf->timeout,
                             NGX_HTTP_VSB_REDIS_DEFAULT_TIMEOUT);
    ngx_conf_init_uint_value(vmcf->audit_maxlen,
                             NGX_HTTP_VSB_AUDIT_MAXLEN);
    ngx_conf_init_size_value(vmcf->audit_bytes, NGX_HTTP_VSB_AUDIT_BYTES);
    ngx_conf_init_msec_value(vmcf->retention,
                             NGX_HTTP_VSB_APPROVAL_RETENTION);
    ngx_conf_init_uint_value(vmcf->approval_max, NGX_HTTP_VSB_APPROVAL_MAX);
    ngx_conf_init_msec_value(vmcf->ended_poll, 5000);
    ngx_conf_init_msec_value(vmcf->audit_max_age, 0);
    ngx_conf_init_msec_value(vmcf->host_lease, 10000);
    ngx_conf_init_msec_value(vmcf->host_grace, 60000);

    if (vmcf->host_lease < 1000) {
        return "\"veto_sandbox_host_lease\" must be at least 1s";
    }

    if ((vmcf->peer_key.len || vmcf->peer_pass.len)
        && (!vmcf->peer_key.len || !vmcf->peer_pass.len
            || !vmcf->host_addr.len))
    {
        return "routing between hosts needs \"veto_sandbox_peer_key\", "
               "\"veto_sandbox_peer_pass\" and \"veto_sandbox_host\" with "
               "an address";
    }

    if (vmcf->host_addr.len && !vmcf->enabled) {
        return "\"veto_sandbox_host\" with an address needs "
               "\"veto_sandbox_redis\" (the hosts' leases live there)";
    }

    if (vmcf->audit_max_age && vmcf->audit_max_age < 2000) {
        return "\"veto_sandbox_audit_max_age\" must be 0 (off) or at least "
               "2s";
    }

    if (!vmcf->enabled && vmcf->audit_max_age) {
        return "\"veto_sandbox_audit_max_age\" needs \"veto_sandbox_redis\"";
    }

    if (vmcf->redis.db < 0) {
        return "\"veto_sandbox_redis_db\" must not be negative";
    }

    if (vmcf->timeout == 0) {
        return "\"veto_sandbox_redis_timeout\" must be positive";
    }

    if (vmcf->audit_maxlen == 0) {
        return "\"veto_sandbox_audit_maxlen\" must be positive";
    }

    /* room for a few of the largest entries, so a bound is a bound */
    if (vmcf->audit_bytes < 16 * NGX_HTTP_VSB_AUDIT_ENTRY_MAX) {
        return "\"veto_sandbox_audit_bytes\" must be at least 320k";
    }

    if (vmcf->retention == 0) {
        return "\"veto_sandbox_approval_retention\" must be positive";
    }

    if (vmcf->approval_max == 0 || vmcf->approval_max > 1000000) {
        return "\"veto_sandbox_approval_max\" must be 1..1000000";
    }

    if (!vmcf->enabled
        && (vmcf->redis.user.len || vmcf->redis.password.len))
    {
        return "\"veto_sandbox_redis_user\" and \"veto_sandbox_redis_password\""
               " need \"veto_sandbox_redis\"";
    }

    if (vmcf->redis.user.len && vmcf->redis.password.len == 0) {
        return "\"veto_sandbox_redis_user\" needs "
               "\"veto_sandbox_redis_password\"";
    }

    if (vmcf->redis.wait_replicas && !vmcf->enabled) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"veto_sandbox_redis_wait\" needs "
                      "\"veto_sandbox_redis\" or "
                      "\"veto_sandbox_redis_sentinel\"");
        return NGX_CONF_ERROR;
    }

    if (vmcf->redis.wait_timeout == 0) {
        vmcf->redis.wait_timeout = vmcf->timeout;
    }

    /* connect + AUTH/SELECT/PING gets the same budget as a command */
    vmcf->redis.connect_timeout = vmcf->timeout;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_init_process(ngx_cycle_t *cycle)
{
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    vmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_veto_sandbox_module);

    if (vmcf == NULL || !vmcf->enabled) {
        return NGX_OK;
    }

    if (vmcf->host.len == 0) {
        vmcf->host = cycle->hostname;
    }

    if (ngx_http_veto_sandbox_approval_init() != NGX_OK
        || ngx_http_veto_sandbox_quota_init() != NGX_OK
        || ngx_http_veto_sandbox_revoke_init() != NGX_OK
        || ngx_http_veto_sandbox_lifetime_init() != NGX_OK)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "veto_sandbox: cannot prepare the Redis scripts");
        return NGX_ERROR;
    }

    /* connects in the background; requests that need Redis before it is
     * ready are refused (503), never let through */
    if (ngx_http_veto_sandbox_redis_init_worker(cycle, &vmcf->redis)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* where a sandbox is, where a create goes (every worker); this
     * host's lease, a lost host's reaping (worker 0) */
    if (ngx_http_veto_sandbox_where_init_process(cycle) != NGX_OK
        || ngx_http_veto_sandbox_hosts_init_process(cycle) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* ends the gateway did not ask for, the audit's age (worker 0) */
    return ngx_http_veto_sandbox_ended_init_process(cycle);
}


static void
ngx_http_veto_sandbox_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_veto_sandbox_ended_exit_process(cycle);
    ngx_http_veto_sandbox_hosts_exit_process(cycle);

    ngx_http_veto_sandbox_redis_exit_worker();
}
