/*
 * Veto Sandbox: the Redis directives of the http block (the connection,
 * Sentinel, WAIT, credentials) and the name of this gateway host in
 * what it records there.
 */

#include "ngx_http_veto_sandbox_transport.h"


/* a sentinel given without a port: Sentinel's, not Redis' */
#define NGX_HTTP_VSB_SENTINEL_PORT  26379


static char *ngx_http_veto_sandbox_sentinel_conf(ngx_conf_t *cf,
    ngx_str_t *args, ngx_uint_t nargs,
    ngx_http_veto_sandbox_redis_conf_t *rcf);


char *
ngx_http_veto_sandbox_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_veto_sandbox_main_conf_t *vmcf = conf;

    ngx_str_t  *value;

    if (vmcf->enabled) {
        return vmcf->redis.sentinels ? "conflicts with "
                                       "\"veto_sandbox_redis_sentinel\""
                                     : "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_veto_sandbox_redis_parse_addr(cf, &value[1], &vmcf->redis)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    vmcf->enabled = 1;

    return NGX_CONF_OK;
}


/* "veto_sandbox_redis_sentinel <master name> <sentinel> ...": the master
 * is the one these sentinels name (_sentinel.c, in the worker) */
char *
ngx_http_veto_sandbox_redis_sentinel(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_main_conf_t *vmcf = conf;

    ngx_str_t  *value;

    if (vmcf->enabled) {
        return vmcf->redis.sentinels ? "is duplicate"
                                     : "conflicts with \"veto_sandbox_redis\"";
    }

    value = cf->args->elts;

    if (ngx_http_veto_sandbox_sentinel_conf(cf, &value[1], cf->args->nelts - 1,
                                            &vmcf->redis)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    vmcf->enabled = 1;

    return NGX_CONF_OK;
}


/* "veto_sandbox_redis_sentinel <master> <addr> ...": the master's name
 * and the sentinels, into the connection's configuration */
static char *
ngx_http_veto_sandbox_sentinel_conf(ngx_conf_t *cf, ngx_str_t *args,
    ngx_uint_t nargs, ngx_http_veto_sandbox_redis_conf_t *rcf)
{
    u_char                              *p;
    ngx_str_t                            v;
    ngx_uint_t                           i;
    ngx_http_veto_sandbox_redis_node_t  *node;

    /* the master's name travels in commands and log lines: keep it a
     * plain token, as Sentinel's own configuration does */
    for (p = args[0].data; p < args[0].data + args[0].len; p++) {
        if (*p <= 0x20 || *p >= 0x7f) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_redis_sentinel\": the master's "
                               "name \"%V\" must be printable ASCII without "
                               "spaces", &args[0]);
            return NGX_CONF_ERROR;
        }
    }

    if (args[0].len == 0 || args[0].len > 128) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_redis_sentinel\": the master's "
                           "name must be 1..128 bytes");
        return NGX_CONF_ERROR;
    }

    rcf->master_name.data = ngx_pnalloc(cf->pool, args[0].len + 1);
    if (rcf->master_name.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_cpystrn(rcf->master_name.data, args[0].data, args[0].len + 1);
    rcf->master_name.len = args[0].len;

    rcf->sentinels = ngx_array_create(cf->pool, nargs - 1,
                                  sizeof(ngx_http_veto_sandbox_redis_node_t));
    if (rcf->sentinels == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 1; i < nargs; i++) {
        v = args[i];

        if (v.len > 5 && ngx_strncasecmp(v.data, (u_char *) "unix:", 5) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_redis_sentinel\": \"%V\": "
                               "sentinels are reached over TCP (ip:port)",
                               &v);
            return NGX_CONF_ERROR;
        }

        node = ngx_array_push(rcf->sentinels);
        if (node == NULL) {
            return NGX_CONF_ERROR;
        }

        if (ngx_http_veto_sandbox_redis_parse_node(cf, &v, node)
            != NGX_CONF_OK)
        {
            return NGX_CONF_ERROR;
        }

        /* no port: Sentinel's, not Redis' */
        if (ngx_strlchr(v.data, v.data + v.len, ':') == NULL
            || (v.data[0] == '[' && v.data[v.len - 1] == ']'))
        {
            node->port = NGX_HTTP_VSB_SENTINEL_PORT;
        }
    }

    /* the logs name the service, the master's address once known */
    rcf->addr.len = sizeof("sentinel:") - 1 + args[0].len;
    rcf->addr.data = ngx_pnalloc(cf->pool, rcf->addr.len);
    if (rcf->addr.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_sprintf(rcf->addr.data, "sentinel:%V", &args[0]);

    ngx_str_null(&rcf->unix_path);
    ngx_str_null(&rcf->host);

    return NGX_CONF_OK;
}


/* "veto_sandbox_redis_wait <replicas> [<timeout>]": approval transitions
 * and consumes count only once that many replicas have them */
char *
ngx_http_veto_sandbox_redis_wait(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_main_conf_t *vmcf = conf;

    ngx_int_t   n;
    ngx_str_t  *value;

    if (vmcf->redis.wait_replicas != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    n = ngx_atoi(value[1].data, value[1].len);
    if (n == NGX_ERROR || n > 16) {
        return "needs a number of replicas, 0..16 (0: a single Redis)";
    }

    vmcf->redis.wait_replicas = (ngx_uint_t) n;

    if (cf->args->nelts == 3) {
        vmcf->redis.wait_timeout = ngx_parse_time(&value[2], 0);
        if (vmcf->redis.wait_timeout == (ngx_msec_t) NGX_ERROR
            || vmcf->redis.wait_timeout == 0)
        {
            return "needs a positive timeout, such as 500ms";
        }
    }

    return NGX_CONF_OK;
}


/*
 * "veto_sandbox_host <name>": the name ownership records give this host,
 * so that gateway hosts sharing one Redis tell their sandboxes apart
 * (a restarted helper's cleanup, a helper's "not_found", touch only
 * this host's).  Default: the machine's hostname.  With an address
 * ("veto_sandbox_host <name> <host>:<port>", what the other gateways
 * reach this one at) the host keeps a lease in Redis and the gateways
 * act as one service (_hosts.c).
 */
char *
ngx_http_veto_sandbox_host(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_veto_sandbox_main_conf_t *vmcf = conf;

    u_char     *p;
    ngx_url_t   u;
    ngx_str_t  *value;

    if (vmcf->host.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].len > 64) {
        return "needs a name of 1..64 bytes";
    }

    for (p = value[1].data; p < value[1].data + value[1].len; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'
              || *p == '_'))
        {
            return "needs a name of letters, digits, \".\", \"-\" and "
                   "\"_\"";
        }
    }

    vmcf->host = value[1];

    if (cf->args->nelts == 3) {
        ngx_memzero(&u, sizeof(ngx_url_t));
        u.url = value[2];
        u.no_resolve = 1;

        if (value[2].len == 0 || value[2].len > 255
            || ngx_parse_url(cf->pool, &u) != NGX_OK || u.no_port
            || u.uri.len || u.host.len == 0)
        {
            return "needs an address of host:port other gateways reach "
                   "this one at";
        }

        vmcf->host_addr = value[2];
    }

    return NGX_CONF_OK;
}


/* user and password: NUL terminated copies, for hiredis */
char *
ngx_http_veto_sandbox_redis_str(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_str_t  *field, *value;

    field = (ngx_str_t *) ((char *) conf + cmd->offset);

    if (field->data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "must not be empty";
    }

    field->data = ngx_pnalloc(cf->pool, value[1].len + 1);
    if (field->data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_cpystrn(field->data, value[1].data, value[1].len + 1);
    field->len = value[1].len;

    return NGX_CONF_OK;
}
