/*
 * Veto Sandbox: the notifications module.  A second module of the same
 * shared object: its directives (the webhooks, their retries, timeout
 * and buffer), the gate's hook that turns a new approval into one
 * delivery per webhook, and the counters (shared memory) with their
 * $veto_webhook_* variables.  The deliveries are _notify_send.c's.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_notify.h"
#include "ngx_http_veto_sandbox_event.h"


static ngx_int_t ngx_http_veto_sandbox_notify_add_variables(ngx_conf_t *cf);
static void *ngx_http_veto_sandbox_notify_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_veto_sandbox_notify_init_main_conf(ngx_conf_t *cf,
    void *conf);
static void *ngx_http_veto_sandbox_notify_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_veto_sandbox_notify_merge_srv_conf(ngx_conf_t *cf,
    void *parent, void *child);
static char *ngx_http_veto_sandbox_webhook(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_veto_sandbox_webhook_secret(ngx_conf_t *cf,
    ngx_str_t *file, ngx_str_t *secret);
static char *ngx_http_veto_sandbox_webhook_page(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_http_veto_sandbox_notify_zone_init(
    ngx_shm_zone_t *shm_zone, void *data);
static ngx_int_t ngx_http_veto_sandbox_notify_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_veto_sandbox_notify_init_process(
    ngx_cycle_t *cycle);
static void ngx_http_veto_sandbox_notify_exit_process(ngx_cycle_t *cycle);


static ngx_command_t  ngx_http_veto_sandbox_notify_commands[] = {

    { ngx_string("veto_sandbox_webhook"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE123,
      ngx_http_veto_sandbox_webhook,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_webhook_retries"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_notify_srv_conf_t, retries),
      NULL },

    { ngx_string("veto_sandbox_webhook_backoff"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_notify_srv_conf_t, backoff),
      NULL },

    { ngx_string("veto_sandbox_webhook_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_notify_srv_conf_t, timeout),
      NULL },

    { ngx_string("veto_sandbox_webhook_page"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_veto_sandbox_webhook_page,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("veto_sandbox_webhook_buffer"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_veto_sandbox_notify_main_conf_t, buffer),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_veto_sandbox_notify_module_ctx = {
    ngx_http_veto_sandbox_notify_add_variables, /* preconfiguration */
    NULL,                                  /* postconfiguration */

    ngx_http_veto_sandbox_notify_create_main_conf,
    ngx_http_veto_sandbox_notify_init_main_conf,

    ngx_http_veto_sandbox_notify_create_srv_conf,
    ngx_http_veto_sandbox_notify_merge_srv_conf,

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_veto_sandbox_notify_module = {
    NGX_MODULE_V1,
    &ngx_http_veto_sandbox_notify_module_ctx, /* module context */
    ngx_http_veto_sandbox_notify_commands, /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_veto_sandbox_notify_init_process, /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_veto_sandbox_notify_exit_process, /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_variable_t  ngx_http_veto_sandbox_notify_vars[] = {

    { ngx_string("veto_webhook_queued"), NULL,
      ngx_http_veto_sandbox_notify_variable,
      offsetof(ngx_http_veto_sandbox_notify_counters_t, queued),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("veto_webhook_delivered"), NULL,
      ngx_http_veto_sandbox_notify_variable,
      offsetof(ngx_http_veto_sandbox_notify_counters_t, delivered),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("veto_webhook_retries"), NULL,
      ngx_http_veto_sandbox_notify_variable,
      offsetof(ngx_http_veto_sandbox_notify_counters_t, retries),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("veto_webhook_failed"), NULL,
      ngx_http_veto_sandbox_notify_variable,
      offsetof(ngx_http_veto_sandbox_notify_counters_t, failed),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("veto_webhook_dropped"), NULL,
      ngx_http_veto_sandbox_notify_variable,
      offsetof(ngx_http_veto_sandbox_notify_counters_t, dropped),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_str_t  ngx_http_veto_sandbox_notify_zone_name =
    ngx_string("veto_sandbox_webhooks");


void
ngx_http_veto_sandbox_notify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t expires)
{
    ngx_str_t                                 body[2];
    ngx_int_t                                 rc;
    ngx_uint_t                                i;
    ngx_http_core_srv_conf_t                 *cscf;
    ngx_http_veto_sandbox_event_t             ev;
    ngx_http_veto_sandbox_webhook_t          *hook;
    ngx_http_veto_sandbox_delivery_t         *d;
    ngx_http_veto_sandbox_notify_srv_conf_t  *nscf;
    ngx_http_veto_sandbox_notify_main_conf_t *nmcf;

    nscf = ngx_http_get_module_srv_conf(r, ngx_http_veto_sandbox_notify_module);

    if (nscf == NULL || nscf->hooks == NULL) {
        return;
    }

    nmcf = ngx_http_get_module_main_conf(r,
                                         ngx_http_veto_sandbox_notify_module);
    cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);

    ev.id = ctx->approval;
    ev.tenant = ctx->tenant;
    ev.agent = ctx->agent;
    ev.action = ctx->action;
    ev.sandbox = ctx->sandbox;
    ev.summary = ctx->summary;
    ev.hash.data = ctx->hash;
    ev.hash.len = NGX_HTTP_VSB_HASH_HEX_LEN;
    ev.page = nscf->page;
    ev.threshold = ctx->threshold;
    ev.created = ngx_time();
    ev.expires = expires > 0 ? expires
                             : ev.created + (time_t) (ctx->ttl / 1000);

    ngx_str_null(&body[NGX_HTTP_VSB_WEBHOOK_JSON]);
    ngx_str_null(&body[NGX_HTTP_VSB_WEBHOOK_SLACK]);

    hook = nscf->hooks->elts;

    for (i = 0; i < nscf->hooks->nelts; i++) {

        /* each format made once, whatever the number of its webhooks */
        if (body[hook[i].format].data == NULL) {
            rc = hook[i].format == NGX_HTTP_VSB_WEBHOOK_SLACK
                 ? ngx_http_veto_sandbox_event_slack(r->pool, &ev,
                                  &body[NGX_HTTP_VSB_WEBHOOK_SLACK])
                 : ngx_http_veto_sandbox_event_json(r->pool, &ev,
                                  &body[NGX_HTTP_VSB_WEBHOOK_JSON]);

            if (rc != NGX_OK) {
                ngx_str_null(&body[hook[i].format]);
                ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                              "veto_sandbox: webhook \"%V\": cannot make "
                              "the event of approval %V, dropped",
                              &hook[i].uri, &ctx->approval);
                ngx_http_veto_sandbox_delivery_dropped();
                continue;
            }
        }

        d = ngx_http_veto_sandbox_delivery_create(ngx_cycle->log);
        if (d == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "veto_sandbox: webhook \"%V\": no memory for the "
                          "event of approval %V, dropped",
                          &hook[i].uri, &ctx->approval);
            ngx_http_veto_sandbox_delivery_dropped();
            continue;
        }

        d->hook = &hook[i];
        d->conf_ctx = cscf->ctx;
        d->listening = r->connection->listening;
        d->retries = nscf->retries;
        d->backoff = nscf->backoff;
        d->timeout = nscf->timeout;

        d->approval.data = ngx_pstrdup(d->pool, &ctx->approval);
        d->approval.len = ctx->approval.len;
        d->body.data = ngx_pstrdup(d->pool, &body[hook[i].format]);
        d->body.len = body[hook[i].format].len;

        if (d->approval.data == NULL || d->body.data == NULL) {
            ngx_destroy_pool(d->pool);
            ngx_http_veto_sandbox_delivery_dropped();
            continue;
        }

        (void) ngx_http_veto_sandbox_delivery_queue(d, nmcf->buffer);
    }
}


ngx_http_veto_sandbox_notify_counters_t *
ngx_http_veto_sandbox_notify_counters(void)
{
    return ngx_http_veto_sandbox_delivery_counters;
}


/* veto_sandbox_webhook uri [format=json|slack] [secret=file] */
static char *
ngx_http_veto_sandbox_webhook(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_veto_sandbox_notify_srv_conf_t *nscf = conf;

    u_char                                    *p;
    ngx_str_t                                 *value, file;
    ngx_uint_t                                 i, format_set;
    ngx_http_veto_sandbox_webhook_t           *hook;
    ngx_http_veto_sandbox_notify_main_conf_t  *nmcf;

    value = cf->args->elts;

    if (nscf->hooks == NGX_CONF_UNSET_PTR) {
        nscf->hooks = ngx_array_create(cf->pool, 2,
                                     sizeof(ngx_http_veto_sandbox_webhook_t));
        if (nscf->hooks == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (nscf->hooks->nelts == NGX_HTTP_VSB_WEBHOOKS_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "more than %d \"veto_sandbox_webhook\" at one "
                           "level", NGX_HTTP_VSB_WEBHOOKS_MAX);
        return NGX_CONF_ERROR;
    }

    if (value[1].len == 0 || value[1].data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook\" takes the URI of an "
                           "internal location that proxy_passes to the "
                           "receiver, not \"%V\": write "
                           "\"location = /_veto/webhook { internal; "
                           "proxy_pass <receiver url>; }\" and give "
                           "\"/_veto/webhook\" here", &value[1]);
        return NGX_CONF_ERROR;
    }

    for (p = value[1].data; p < value[1].data + value[1].len; p++) {
        if (*p <= 0x20 || *p == 0x7f || *p == '?' || *p == '#') {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_webhook\": \"%V\" is not a "
                               "location's URI (no query, fragment, space "
                               "or control character)", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    hook = ngx_array_push(nscf->hooks);
    if (hook == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(hook, sizeof(ngx_http_veto_sandbox_webhook_t));
    hook->uri = value[1];
    hook->format = NGX_HTTP_VSB_WEBHOOK_JSON;
    format_set = 0;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "format=", 7) == 0 && !format_set) {
            format_set = 1;

            if (ngx_strcmp(value[i].data + 7, "json") == 0) {
                hook->format = NGX_HTTP_VSB_WEBHOOK_JSON;
                continue;
            }

            if (ngx_strcmp(value[i].data + 7, "slack") == 0) {
                hook->format = NGX_HTTP_VSB_WEBHOOK_SLACK;
                continue;
            }

            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_webhook\": unknown format "
                               "\"%s\" (json or slack)", value[i].data + 7);
            return NGX_CONF_ERROR;
        }

        if (ngx_strncmp(value[i].data, "secret=", 7) == 0
            && hook->secret.data == NULL)
        {
            file.data = value[i].data + 7;
            file.len = value[i].len - 7;

            if (ngx_http_veto_sandbox_webhook_secret(cf, &file, &hook->secret)
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook\": unknown or repeated "
                           "parameter \"%V\" (format=json|slack, "
                           "secret=<file>)", &value[i]);
        return NGX_CONF_ERROR;
    }

    /* the counters: one small zone for every worker */
    nmcf = ngx_http_conf_get_module_main_conf(cf,
                                       ngx_http_veto_sandbox_notify_module);

    if (nmcf->zone == NULL) {
        nmcf->zone = ngx_shared_memory_add(cf,
                                      &ngx_http_veto_sandbox_notify_zone_name,
                                      8 * ngx_pagesize,
                                      &ngx_http_veto_sandbox_notify_module);
        if (nmcf->zone == NULL) {
            return NGX_CONF_ERROR;
        }

        nmcf->zone->init = ngx_http_veto_sandbox_notify_zone_init;
    }

    return NGX_CONF_OK;
}


/*
 * The HMAC key: the file's bytes, a trailing newline (and blanks) taken
 * off, 16..1024 bytes.  Never logged, never in an error message.
 */
static char *
ngx_http_veto_sandbox_webhook_secret(ngx_conf_t *cf, ngx_str_t *file,
    ngx_str_t *secret)
{
    char             *rv;
    u_char            buf[NGX_HTTP_VSB_EVENT_SECRET_MAX + 2];
    size_t            len;
    ssize_t           n;
    ngx_fd_t          fd;
    ngx_file_info_t   fi;

    if (file->len == 0) {
        return "has an empty \"secret=\"";
    }

    if (ngx_conf_full_name(cf->cycle, file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    fd = ngx_open_file(file->data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "\"veto_sandbox_webhook\": cannot open the "
                           "secret file \"%s\"", file->data);
        return NGX_CONF_ERROR;
    }

    rv = NGX_CONF_ERROR;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "\"veto_sandbox_webhook\": cannot stat the "
                           "secret file \"%s\"", file->data);
        goto done;
    }

    if (!ngx_is_file(&fi)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook\": the secret file "
                           "\"%s\" is not a regular file", file->data);
        goto done;
    }

    if (fi.st_mode & S_IROTH) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "\"veto_sandbox_webhook\": the secret file "
                           "\"%s\" is readable by every user", file->data);
    }

    n = ngx_read_fd(fd, buf, sizeof(buf));
    if (n == -1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "\"veto_sandbox_webhook\": cannot read the "
                           "secret file \"%s\"", file->data);
        goto done;
    }

    len = n;

    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'
                   || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
    {
        len--;
    }

    if (len < NGX_HTTP_VSB_EVENT_SECRET_MIN
        || len > NGX_HTTP_VSB_EVENT_SECRET_MAX)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook\": the secret in \"%s\" "
                           "must be %d to %d bytes (a trailing newline "
                           "aside)", file->data,
                           NGX_HTTP_VSB_EVENT_SECRET_MIN,
                           NGX_HTTP_VSB_EVENT_SECRET_MAX);
        goto done;
    }

    secret->data = ngx_pnalloc(cf->pool, len);
    if (secret->data == NULL) {
        goto done;
    }

    ngx_memcpy(secret->data, buf, len);
    secret->len = len;

    rv = NGX_CONF_OK;

done:

    ngx_explicit_memzero(buf, sizeof(buf));

    if (ngx_close_file(fd) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_ALERT, cf, ngx_errno,
                           ngx_close_file_n " \"%s\" failed", file->data);
    }

    return rv;
}


/* veto_sandbox_webhook_page https://gateway.example/review/ */
static char *
ngx_http_veto_sandbox_webhook_page(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_notify_srv_conf_t *nscf = conf;

    u_char     *p;
    ngx_str_t  *value;

    if (nscf->page.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if ((ngx_strncmp(value[1].data, "https://", 8) != 0
         && ngx_strncmp(value[1].data, "http://", 7) != 0)
        || value[1].len > 2048)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook_page\" must be the "
                           "approval page's http:// or https:// URL (at "
                           "most 2048 bytes), not \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    /* it goes into JSON, and between <…|…> in Slack's text */
    for (p = value[1].data; p < value[1].data + value[1].len; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == '"' || *p == '\\'
            || *p == '<' || *p == '>' || *p == '|' || *p == '#'
            || *p == '`')
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_webhook_page\": invalid "
                               "character in \"%V\" (the link adds its own "
                               "\"#/approval/<id>\")", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    nscf->page = value[1];

    return NGX_CONF_OK;
}


static void *
ngx_http_veto_sandbox_notify_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_veto_sandbox_notify_main_conf_t  *nmcf;

    nmcf = ngx_pcalloc(cf->pool,
                       sizeof(ngx_http_veto_sandbox_notify_main_conf_t));
    if (nmcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     nmcf->zone = NULL;
     */

    nmcf->buffer = NGX_CONF_UNSET_SIZE;

    return nmcf;
}


static char *
ngx_http_veto_sandbox_notify_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_veto_sandbox_notify_main_conf_t *nmcf = conf;

    ngx_conf_init_size_value(nmcf->buffer, 1024 * 1024);

    if (nmcf->buffer
        < NGX_HTTP_VSB_EVENT_MAX + NGX_HTTP_VSB_DELIVERY_OVERHEAD)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook_buffer\" must hold one "
                           "event at least: %uz bytes",
                           (size_t) (NGX_HTTP_VSB_EVENT_MAX
                                     + NGX_HTTP_VSB_DELIVERY_OVERHEAD));
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_veto_sandbox_notify_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_veto_sandbox_notify_srv_conf_t  *nscf;

    nscf = ngx_pcalloc(cf->pool,
                       sizeof(ngx_http_veto_sandbox_notify_srv_conf_t));
    if (nscf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     nscf->page = { 0, NULL };
     */

    nscf->hooks = NGX_CONF_UNSET_PTR;
    nscf->retries = NGX_CONF_UNSET_UINT;
    nscf->backoff = NGX_CONF_UNSET_MSEC;
    nscf->timeout = NGX_CONF_UNSET_MSEC;

    return nscf;
}


static char *
ngx_http_veto_sandbox_notify_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_veto_sandbox_notify_srv_conf_t *prev = parent;
    ngx_http_veto_sandbox_notify_srv_conf_t *conf = child;

    ngx_str_t                         *prefix;
    ngx_uint_t                         i, j;
    ngx_http_veto_sandbox_webhook_t   *hook;
    ngx_http_veto_sandbox_srv_conf_t  *vscf;

    ngx_conf_merge_ptr_value(conf->hooks, prev->hooks, NULL);
    ngx_conf_merge_uint_value(conf->retries, prev->retries, 3);
    ngx_conf_merge_msec_value(conf->backoff, prev->backoff, 1000);
    ngx_conf_merge_msec_value(conf->timeout, prev->timeout, 10000);
    ngx_conf_merge_str_value(conf->page, prev->page, "");

    if (conf->retries > NGX_HTTP_VSB_WEBHOOK_RETRIES_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook_retries\" must be 0..%d",
                           NGX_HTTP_VSB_WEBHOOK_RETRIES_MAX);
        return NGX_CONF_ERROR;
    }

    if (conf->backoff == 0
        || conf->backoff > NGX_HTTP_VSB_WEBHOOK_WAIT_MAX)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook_backoff\" must be "
                           "positive and at most %ds",
                           NGX_HTTP_VSB_WEBHOOK_WAIT_MAX / 1000);
        return NGX_CONF_ERROR;
    }

    if (conf->timeout == 0 || conf->timeout > 300000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_webhook_timeout\" must be "
                           "positive and at most 300s");
        return NGX_CONF_ERROR;
    }

    if (conf->hooks == NULL) {
        return NGX_CONF_OK;
    }

    /* a subrequest to the API's own location would be answered by the
     * API, never proxied */
    vscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_veto_sandbox_module);

    if (vscf == NULL || vscf->prefixes == NULL) {
        return NGX_CONF_OK;
    }

    hook = conf->hooks->elts;
    prefix = vscf->prefixes->elts;

    for (i = 0; i < conf->hooks->nelts; i++) {
        for (j = 0; j < vscf->prefixes->nelts; j++) {
            if (hook[i].uri.len >= prefix[j].len
                && ngx_strncmp(hook[i].uri.data, prefix[j].data,
                               prefix[j].len) == 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_webhook\" \"%V\" is "
                                   "under the API's location \"%V\": "
                                   "give the webhook a location of its "
                                   "own", &hook[i].uri, &prefix[j]);
                return NGX_CONF_ERROR;
            }
        }
    }

    return NGX_CONF_OK;
}


/* The counters survive a reload: the zone keeps its data. */
static ngx_int_t
ngx_http_veto_sandbox_notify_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_uint_t  fresh;

    if (data) {
        shm_zone->data = data;
        return NGX_OK;
    }

    /* zeroed when new */
    shm_zone->data = ngx_http_veto_sandbox_shm_data(shm_zone,
                           sizeof(ngx_http_veto_sandbox_notify_counters_t),
                           "veto_sandbox_webhook", &fresh);

    return shm_zone->data ? NGX_OK : NGX_ERROR;
}


static ngx_int_t
ngx_http_veto_sandbox_notify_add_variables(ngx_conf_t *cf)
{
    return ngx_http_veto_sandbox_variables_add(cf,
                                          ngx_http_veto_sandbox_notify_vars);
}


/* $veto_webhook_*: the gateway-wide count (0 without webhooks) */
static ngx_int_t
ngx_http_veto_sandbox_notify_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char             *p;
    ngx_atomic_uint_t   n;

    p = ngx_pnalloc(r->pool, NGX_ATOMIC_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    if (ngx_http_veto_sandbox_delivery_counters) {
        n = *(ngx_atomic_t *) ((u_char *) ngx_http_veto_sandbox_delivery_counters
                               + data);
    }

    v->len = ngx_sprintf(p, "%uA", n) - p;
    v->data = p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_notify_init_process(ngx_cycle_t *cycle)
{
    ngx_http_veto_sandbox_notify_main_conf_t  *nmcf;

    ngx_http_veto_sandbox_delivery_init();

    /* set here, not inherited: a reload without webhooks leaves the
     * master's pointer to a zone that is gone */
    ngx_http_veto_sandbox_delivery_counters = NULL;

    nmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                       ngx_http_veto_sandbox_notify_module);

    if (nmcf && nmcf->zone) {
        ngx_http_veto_sandbox_delivery_counters = nmcf->zone->data;
    }

    return NGX_OK;
}


static void
ngx_http_veto_sandbox_notify_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_veto_sandbox_delivery_exit(cycle);
}
