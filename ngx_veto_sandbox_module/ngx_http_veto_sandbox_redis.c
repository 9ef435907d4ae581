/*
 * Veto Sandbox: the worker's Redis connection, a hiredis async context
 * driven by nginx's event loop (a link, ngx_http_veto_sandbox_redis_link.c):
 * connect, handshake, reconnect with backoff.  With Sentinel the master's
 * address comes from ngx_http_veto_sandbox_sentinel.c, which tells it
 * through the handlers given at create, and the handshake checks ROLE.
 * The commands sent on it: ngx_http_veto_sandbox_redis_call.c.  See
 * ngx_http_veto_sandbox_redis.h for the contract.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#include <ngx_http.h>
#include <openssl/sha.h>

#include "ngx_http_veto_sandbox_transport.h"
#include "ngx_http_veto_sandbox_redis.h"
#include "ngx_http_veto_sandbox_metrics.h"


static void ngx_http_veto_sandbox_redis_connect(
    ngx_http_veto_sandbox_redis_t *rds);
static void ngx_http_veto_sandbox_redis_open(
    ngx_http_veto_sandbox_redis_t *rds, const char *host, in_port_t port,
    const char *unix_path);
static void ngx_http_veto_sandbox_redis_gone(
    ngx_http_veto_sandbox_redis_link_t *link);
static void ngx_http_veto_sandbox_redis_schedule(
    ngx_http_veto_sandbox_redis_t *rds);
static void ngx_http_veto_sandbox_redis_discovered(
    ngx_http_veto_sandbox_redis_t *rds, u_char *host, in_port_t port);
static void ngx_http_veto_sandbox_redis_fence(
    ngx_http_veto_sandbox_redis_t *rds, u_char *host, in_port_t port);
static ngx_uint_t ngx_http_veto_sandbox_redis_fenced(
    ngx_http_veto_sandbox_redis_t *rds, u_char *host, in_port_t port);
static void ngx_http_veto_sandbox_redis_switched(
    ngx_http_veto_sandbox_redis_t *rds, u_char *host, in_port_t port);
static void ngx_http_veto_sandbox_redis_reconnect_handler(ngx_event_t *ev);
static void ngx_http_veto_sandbox_redis_handshake_timeout(ngx_event_t *ev);
static void ngx_http_veto_sandbox_redis_handshake_reply(
    redisAsyncContext *ac, void *r, void *privdata);


/* this worker's Redis connection; NULL when no veto_sandbox_redis */
ngx_http_veto_sandbox_redis_t  *ngx_http_veto_sandbox_rds;


/* what the sentinels tell the connection (_sentinel.c) */
static const ngx_http_veto_sandbox_sentinel_handlers_t
    ngx_http_veto_sandbox_redis_sentinel_handlers =
{
    ngx_http_veto_sandbox_redis_discovered,
    ngx_http_veto_sandbox_redis_fence,
    ngx_http_veto_sandbox_redis_switched
};


/* handshake steps, passed as hiredis privdata */
static char  ngx_http_veto_sandbox_redis_step_auth[] = "AUTH";
static char  ngx_http_veto_sandbox_redis_step_select[] = "SELECT";
static char  ngx_http_veto_sandbox_redis_step_ping[] = "PING";
static char  ngx_http_veto_sandbox_redis_step_role[] = "ROLE";
static char  ngx_http_veto_sandbox_redis_step_script[] = "SCRIPT LOAD";


/* configuration time */

void
ngx_http_veto_sandbox_redis_conf_init(ngx_http_veto_sandbox_redis_conf_t *rcf)
{
    ngx_memzero(rcf, sizeof(ngx_http_veto_sandbox_redis_conf_t));

    rcf->port = NGX_HTTP_VSB_REDIS_DEFAULT_PORT;
    rcf->connect_timeout = NGX_HTTP_VSB_REDIS_DEFAULT_TIMEOUT;
    rcf->backoff_min = NGX_HTTP_VSB_REDIS_BACKOFF_MIN;
    rcf->backoff_max = NGX_HTTP_VSB_REDIS_BACKOFF_MAX;
    rcf->max_timeouts = NGX_HTTP_VSB_REDIS_MAX_TIMEOUTS;
}


/*
 * "unix:/path", "ip:port", "[ipv6]:port", "host:port" or "host".  A host
 * name is resolved here, once, so the worker never resolves.
 */
char *
ngx_http_veto_sandbox_redis_parse_addr(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_veto_sandbox_redis_conf_t *rcf)
{
    u_char                              *p;
    size_t                               len;
    ngx_http_veto_sandbox_redis_node_t   node;

    rcf->addr = *value;

    if (value->len > 5 && ngx_strncasecmp(value->data, (u_char *) "unix:", 5)
        == 0)
    {
        len = value->len - 5;

        if (len >= 108 || value->data[5] != '/') {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_redis\": \"%V\": a unix socket "
                               "needs an absolute path shorter than 108 bytes",
                               value);
            return NGX_CONF_ERROR;
        }

        p = ngx_pnalloc(cf->pool, len + 1);
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(p, value->data + 5, len);
        p[len] = '\0';

        rcf->unix_path.data = p;
        rcf->unix_path.len = len;
        ngx_str_null(&rcf->host);

        return NGX_CONF_OK;
    }

    if (ngx_http_veto_sandbox_redis_parse_node(cf, value, &node)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    rcf->host = node.host;
    rcf->port = node.port;
    ngx_str_null(&rcf->unix_path);

    return NGX_CONF_OK;
}


char *
ngx_http_veto_sandbox_redis_parse_node(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_veto_sandbox_redis_node_t *node)
{
    u_char     *p;
    size_t      len;
    ngx_url_t   u;

    node->addr = *value;

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = *value;
    u.default_port = NGX_HTTP_VSB_REDIS_DEFAULT_PORT;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_redis\": \"%V\": %s", value,
                           u.err ? u.err : "invalid address");
        return NGX_CONF_ERROR;
    }

    if (u.naddrs == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_redis\": \"%V\": no address",
                           value);
        return NGX_CONF_ERROR;
    }

    if (u.naddrs > 1) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "\"veto_sandbox_redis\": \"%V\" resolves to %ui "
                           "addresses, using %V", value, u.naddrs,
                           &u.addrs[0].name);
    }

    p = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
    if (p == NULL) {
        return NGX_CONF_ERROR;
    }

    /* port 0: the address alone, IPv6 without brackets, as hiredis wants */
    len = ngx_sock_ntop(u.addrs[0].sockaddr, u.addrs[0].socklen, p,
                        NGX_SOCKADDR_STRLEN, 0);
    p[len] = '\0';

    node->host.data = p;
    node->host.len = len;
    node->port = ngx_inet_get_port(u.addrs[0].sockaddr);

    return NGX_CONF_OK;
}



/* worker: connection life cycle */

/* init_process: this worker's connection (ngx_http_veto_sandbox_rds) */
ngx_int_t
ngx_http_veto_sandbox_redis_init_worker(ngx_cycle_t *cycle,
    ngx_http_veto_sandbox_redis_conf_t *rcf)
{
    ngx_http_veto_sandbox_rds = ngx_http_veto_sandbox_redis_create(cycle,
                                                                   rcf);
    if (ngx_http_veto_sandbox_rds == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "veto_sandbox: cannot set up the Redis client for "
                      "\"%V\"", &rcf->addr);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* exit_process: the connection goes (pending commands get 503) */
void
ngx_http_veto_sandbox_redis_exit_worker(void)
{
    if (ngx_http_veto_sandbox_rds) {
        ngx_http_veto_sandbox_redis_destroy(ngx_http_veto_sandbox_rds);
        ngx_http_veto_sandbox_rds = NULL;
    }
}


ngx_http_veto_sandbox_redis_t *
ngx_http_veto_sandbox_redis_create(ngx_cycle_t *cycle,
    ngx_http_veto_sandbox_redis_conf_t *rcf)
{
    ngx_http_veto_sandbox_redis_t  *rds;

    rds = ngx_pcalloc(cycle->pool, sizeof(ngx_http_veto_sandbox_redis_t));
    if (rds == NULL) {
        return NULL;
    }

    rds->conf = *rcf;
    rds->log = cycle->log;
    rds->state = NGX_HTTP_VSB_REDIS_IDLE;
    rds->backoff = rcf->backoff_min;
    rds->where = rcf->addr;

    rds->link.log = rds->log;
    rds->link.name = &rds->where;
    rds->link.gone = ngx_http_veto_sandbox_redis_gone;
    rds->link.data = rds;

    /* cancelable: these timers must not hold a gracefully exiting worker */

    rds->reconnect.handler = ngx_http_veto_sandbox_redis_reconnect_handler;
    rds->reconnect.data = rds;
    rds->reconnect.log = rds->log;
    rds->reconnect.cancelable = 1;

    rds->handshake.handler = ngx_http_veto_sandbox_redis_handshake_timeout;
    rds->handshake.data = rds;
    rds->handshake.log = rds->log;
    rds->handshake.cancelable = 1;

    if (rcf->sentinels) {
        rds->sentinel = ngx_http_veto_sandbox_sentinel_create(rds,
                          cycle->pool,
                          &ngx_http_veto_sandbox_redis_sentinel_handlers);
        if (rds->sentinel == NULL) {
            return NULL;
        }
    }

    ngx_http_veto_sandbox_redis_connect(rds);

    return rds;
}


void
ngx_http_veto_sandbox_redis_destroy(ngx_http_veto_sandbox_redis_t *rds)
{
    if (rds == NULL || rds->state == NGX_HTTP_VSB_REDIS_CLOSED) {
        return;
    }

    rds->state = NGX_HTTP_VSB_REDIS_CLOSED;

    if (rds->reconnect.timer_set) {
        ngx_del_timer(&rds->reconnect);
    }

    if (rds->handshake.timer_set) {
        ngx_del_timer(&rds->handshake);
    }

    if (rds->sentinel) {
        ngx_http_veto_sandbox_sentinel_destroy(rds->sentinel);
    }

    /* pending handlers get 503, then the cleanup hook runs */
    ngx_http_veto_sandbox_redis_link_close(&rds->link);
}


ngx_uint_t
ngx_http_veto_sandbox_redis_ready(ngx_http_veto_sandbox_redis_t *rds)
{
    return rds != NULL && rds->state == NGX_HTTP_VSB_REDIS_READY;
}


/* A new connection: to the configured server, or to the master the
 * sentinels name (ngx_http_veto_sandbox_redis_discovered() goes on). */
static void
ngx_http_veto_sandbox_redis_connect(ngx_http_veto_sandbox_redis_t *rds)
{
    rds->generation++;

    if (rds->sentinel) {
        rds->state = NGX_HTTP_VSB_REDIS_DISCOVERING;
        ngx_http_veto_sandbox_sentinel_discover(rds->sentinel);
        return;
    }

    ngx_http_veto_sandbox_redis_open(rds, (const char *) rds->conf.host.data,
                                     rds->conf.port,
                                     rds->conf.unix_path.len
                                     ? (const char *) rds->conf.unix_path.data
                                     : NULL);
}


static void
ngx_http_veto_sandbox_redis_discovered(ngx_http_veto_sandbox_redis_t *rds,
    u_char *host, in_port_t port)
{
    if (rds->state != NGX_HTTP_VSB_REDIS_DISCOVERING) {
        return;
    }

    if (host == NULL) {
        ngx_http_veto_sandbox_redis_schedule(rds);
        return;
    }

    if (ngx_http_veto_sandbox_redis_fenced(rds, host, port)) {
        ngx_log_error(NGX_LOG_WARN, rds->log, 0,
                      "veto_sandbox: redis: the sentinels still name %s:%d, "
                      "which a failover under way is leaving: not "
                      "connecting, asking again", host, (int) port);
        ngx_http_veto_sandbox_redis_schedule(rds);
        return;
    }

    rds->where.data = rds->where_buf;
    rds->where.len = ngx_snprintf(rds->where_buf, NGX_SOCKADDR_STRLEN,
                                  "%s:%d", host, (int) port)
                     - rds->where_buf;

    ngx_http_veto_sandbox_redis_open(rds, (const char *) host, port, NULL);
}


/*
 * A sentinel is promoting a replica of host:port.  Until Sentinel turns
 * it into a replica, that server still takes writes and its replicas
 * still confirm them (WAIT), and all of it is lost then: the connection
 * to it goes now, and it is not connected to again until the fence
 * expires (a failover that failed leaves it the master).
 */
static void
ngx_http_veto_sandbox_redis_fence(ngx_http_veto_sandbox_redis_t *rds,
    u_char *host, in_port_t port)
{
    if (rds->state == NGX_HTTP_VSB_REDIS_CLOSED) {
        return;
    }

    rds->fence.data = rds->fence_buf;
    rds->fence.len = ngx_snprintf(rds->fence_buf, NGX_SOCKADDR_STRLEN,
                                  "%s:%d", host, (int) port)
                     - rds->fence_buf;
    rds->fence_until = ngx_current_msec + NGX_HTTP_VSB_REDIS_FENCE_MS;

    if (rds->link.ac && rds->where.len == rds->fence.len
        && ngx_strncmp(rds->where.data, rds->fence.data, rds->fence.len) == 0)
    {
        ngx_http_veto_sandbox_redis_drop(rds, "a failover is promoting a "
                                              "replica: the master it leaves "
                                              "is fenced off");
    }
}


static ngx_uint_t
ngx_http_veto_sandbox_redis_fenced(ngx_http_veto_sandbox_redis_t *rds,
    u_char *host, in_port_t port)
{
    u_char  buf[NGX_SOCKADDR_STRLEN];
    size_t  len;

    if (rds->fence.len == 0
        || (ngx_msec_int_t) (rds->fence_until - ngx_current_msec) <= 0)
    {
        return 0;
    }

    len = ngx_snprintf(buf, sizeof(buf), "%s:%d", host, (int) port) - buf;

    return len == rds->fence.len
           && ngx_strncmp(buf, rds->fence.data, len) == 0;
}


/*
 * A sentinel says the master moved: a connection to another server goes
 * at once, and the next one is made without waiting out the backoff.
 */
static void
ngx_http_veto_sandbox_redis_switched(ngx_http_veto_sandbox_redis_t *rds,
    u_char *host, in_port_t port)
{
    u_char  buf[NGX_SOCKADDR_STRLEN];
    size_t  len;

    if (rds->state == NGX_HTTP_VSB_REDIS_CLOSED) {
        return;
    }

    len = ngx_snprintf(buf, sizeof(buf), "%s:%d", host, (int) port) - buf;

    if (rds->link.ac && rds->where.len == len
        && ngx_strncmp(rds->where.data, buf, len) == 0)
    {
        return;     /* connected there already */
    }

    rds->backoff = rds->conf.backoff_min;

    if (rds->link.ac) {
        ngx_http_veto_sandbox_redis_drop(rds, "+switch-master: the master "
                                              "moved");
        return;
    }

    if (rds->state == NGX_HTTP_VSB_REDIS_IDLE && rds->reconnect.timer_set) {
        /* waiting out a backoff: go now */
        ngx_del_timer(&rds->reconnect);
        ngx_add_timer(&rds->reconnect, 1);
    }
}


/* every script made known (script_init()), for a new connection to load
 * before any EVALSHA it carries (ngx_http_veto_sandbox_redis_scripts(), below) */
#define NGX_HTTP_VSB_REDIS_SCRIPTS_MAX  64

static ngx_http_veto_sandbox_redis_script_t
    *ngx_http_veto_sandbox_redis_known[NGX_HTTP_VSB_REDIS_SCRIPTS_MAX + 1];


ngx_int_t
ngx_http_veto_sandbox_redis_script_init(
    ngx_http_veto_sandbox_redis_script_t *script)
{
    u_char       md[SHA_DIGEST_LENGTH];
    ngx_uint_t   i;

    if (SHA1((const u_char *) script->text, ngx_strlen(script->text), md)
        == NULL)
    {
        return NGX_ERROR;
    }

    ngx_hex_dump(script->sha1, md, SHA_DIGEST_LENGTH);
    script->sha1[40] = '\0';

    for (i = 0; ngx_http_veto_sandbox_redis_known[i]; i++) {
        if (ngx_http_veto_sandbox_redis_known[i] == script) {
            return NGX_OK;
        }
    }

    if (i == NGX_HTTP_VSB_REDIS_SCRIPTS_MAX) {
        return NGX_ERROR;
    }

    ngx_http_veto_sandbox_redis_known[i] = script;

    return NGX_OK;
}


ngx_http_veto_sandbox_redis_script_t **
ngx_http_veto_sandbox_redis_scripts(void)
{
    return ngx_http_veto_sandbox_redis_known;
}


/* Opens the link and pipelines the handshake: AUTH, SELECT, then PING
 * (or ROLE, to a master a sentinel named), then SCRIPT LOAD of every
 * script. */
static void
ngx_http_veto_sandbox_redis_open(ngx_http_veto_sandbox_redis_t *rds,
    const char *host, in_port_t port, const char *unix_path)
{
    int                                     argc;
    char                                   *last;
    const char                             *argv[3];
    redisAsyncContext                      *ac;
    ngx_http_veto_sandbox_redis_script_t  **script;

    if (ngx_http_veto_sandbox_redis_link_open(&rds->link, host, port,
                                              unix_path)
        != NGX_OK)
    {
        ngx_http_veto_sandbox_redis_schedule(rds);
        return;
    }

    ac = rds->link.ac;
    rds->state = NGX_HTTP_VSB_REDIS_CONNECTING;

    /*
     * The connection counts as ready only when PING (ROLE) answers, so a
     * server that accepts but does not answer (SIGSTOPped) is caught by
     * the handshake timer.
     */

    if (rds->conf.password.len) {
        argc = 0;
        argv[argc++] = "AUTH";

        if (rds->conf.user.len) {
            argv[argc++] = (const char *) rds->conf.user.data;
        }

        argv[argc++] = (const char *) rds->conf.password.data;

        if (redisAsyncCommandArgv(ac, ngx_http_veto_sandbox_redis_handshake_reply,
                                  ngx_http_veto_sandbox_redis_step_auth,
                                  argc, argv, NULL)
            != REDIS_OK)
        {
            goto failed;
        }
    }

    if (rds->conf.db > 0) {
        if (redisAsyncCommand(ac, ngx_http_veto_sandbox_redis_handshake_reply,
                              ngx_http_veto_sandbox_redis_step_select,
                              "SELECT %d", (int) rds->conf.db)
            != REDIS_OK)
        {
            goto failed;
        }
    }

    last = rds->sentinel ? ngx_http_veto_sandbox_redis_step_role
                         : ngx_http_veto_sandbox_redis_step_ping;

    if (redisAsyncCommand(ac, ngx_http_veto_sandbox_redis_handshake_reply,
                          last, last)
        != REDIS_OK)
    {
        goto failed;
    }

    /*
     * Every script, loaded before any command this connection carries
     * once it is ready: an EVALSHA of a script Redis does not have yet
     * is sent again as EVAL only when its NOSCRIPT comes back, after the
     * request that sent it may have answered, and a write meant to be in
     * Redis before the client has its answer (a create's ownership record
     * and env, read by the next request on another worker) would not be.
     */
    for (script = ngx_http_veto_sandbox_redis_scripts(); *script; script++) {
        if (redisAsyncCommand(ac, ngx_http_veto_sandbox_redis_handshake_reply,
                              ngx_http_veto_sandbox_redis_step_script,
                              "SCRIPT LOAD %s", (*script)->text)
            != REDIS_OK)
        {
            goto failed;
        }
    }

    ngx_add_timer(&rds->handshake, rds->conf.connect_timeout);

    ngx_log_debug2(NGX_LOG_DEBUG_EVENT, rds->log, 0,
                   "veto_sandbox: redis \"%V\": connecting, fd:%d",
                   &rds->where, rds->link.conn->fd);
    return;

failed:

    ngx_log_error(NGX_LOG_ERR, rds->log, 0,
                  "veto_sandbox: redis \"%V\": handshake: %s",
                  &rds->where, ac->errstr ? ac->errstr : "failed");

    ngx_http_veto_sandbox_redis_drop(rds, NULL);
}


/* A reconnect is always deferred to a timer, never made from a hook. */

static void
ngx_http_veto_sandbox_redis_schedule(ngx_http_veto_sandbox_redis_t *rds)
{
    ngx_msec_t  delay;

    if (rds->state == NGX_HTTP_VSB_REDIS_CLOSED
        || ngx_exiting || ngx_quit || ngx_terminate)
    {
        return;
    }

    rds->state = NGX_HTTP_VSB_REDIS_IDLE;

    if (rds->reconnect.timer_set) {
        return;
    }

    /* jitter, so that the workers of many gateways do not reconnect
     * in lock step */
    delay = rds->backoff + (ngx_msec_t) ngx_random() % (rds->backoff / 4 + 1);

    rds->backoff *= 2;
    if (rds->backoff > rds->conf.backoff_max) {
        rds->backoff = rds->conf.backoff_max;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_EVENT, rds->log, 0,
                   "veto_sandbox: redis \"%V\": reconnect in %M ms",
                   &rds->conf.addr, delay);

    ngx_add_timer(&rds->reconnect, delay);
}


static void
ngx_http_veto_sandbox_redis_reconnect_handler(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_redis_t  *rds = ev->data;

    if (rds->state != NGX_HTTP_VSB_REDIS_IDLE || rds->link.ac) {
        return;
    }

    rds->n_reconnects++;
    ngx_http_veto_sandbox_metrics_redis_error("reconnect");
    ngx_http_veto_sandbox_redis_connect(rds);
}


/*
 * Drop the connection from outside hiredis callbacks (timers) or from a
 * hiredis callback (redisAsyncFree() defers itself then).  Pending
 * commands get 503; the cleanup hook schedules the reconnect.
 */
void
ngx_http_veto_sandbox_redis_drop(ngx_http_veto_sandbox_redis_t *rds,
    const char *why)
{
    if (why) {
        ngx_log_error(NGX_LOG_ERR, rds->log, 0,
                      "veto_sandbox: redis \"%V\": %s, reconnecting",
                      &rds->where, why);
    }

    if (rds->link.ac == NULL || (rds->link.ac->c.flags & REDIS_FREEING)) {
        return;
    }

    if (rds->state != NGX_HTTP_VSB_REDIS_CLOSED) {
        rds->state = NGX_HTTP_VSB_REDIS_IDLE;
    }

    ngx_http_veto_sandbox_redis_link_close(&rds->link);
}


static void
ngx_http_veto_sandbox_redis_handshake_timeout(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_redis_t  *rds = ev->data;

    ngx_http_veto_sandbox_redis_drop(rds, "no answer to connect, AUTH, "
                                          "SELECT or PING (ROLE) in time");
}


/* ROLE's first element is "master" (a replica says "slave") */
static ngx_uint_t
ngx_http_veto_sandbox_redis_is_master(redisReply *reply)
{
    redisReply  *role;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1) {
        return 0;
    }

    role = reply->element[0];

    return (role->type == REDIS_REPLY_STRING
            || role->type == REDIS_REPLY_STATUS)
           && role->len == 6 && ngx_strncmp(role->str, "master", 6) == 0;
}


static void
ngx_http_veto_sandbox_redis_handshake_reply(redisAsyncContext *ac, void *r,
    void *privdata)
{
    const char                     *step = privdata;
    redisReply                     *reply = r;
    ngx_http_veto_sandbox_redis_t  *rds;

    if (reply == NULL) {
        /* the context is being freed; the cleanup hook takes over */
        return;
    }

    rds = ((ngx_http_veto_sandbox_redis_link_t *) ac->data)->data;

    if (reply->type == REDIS_REPLY_ERROR) {
        /* never log the AUTH arguments, only Redis' answer */
        ngx_log_error(NGX_LOG_ERR, rds->log, 0,
                      "veto_sandbox: redis \"%V\": %s refused: %*s",
                      &rds->where, step, (size_t) reply->len, reply->str);
        ngx_http_veto_sandbox_redis_drop(rds, NULL);
        return;
    }

    if (step == ngx_http_veto_sandbox_redis_step_role
        && !ngx_http_veto_sandbox_redis_is_master(reply))
    {
        /* a failover under way, or a demoted master the sentinels still
         * name: ask them again, after the backoff */
        ngx_http_veto_sandbox_redis_drop(rds, "the server a sentinel named "
                                              "is not a master (ROLE)");
        return;
    }

    if (step != ngx_http_veto_sandbox_redis_step_ping
        && step != ngx_http_veto_sandbox_redis_step_role)
    {
        return;
    }

    if (rds->handshake.timer_set) {
        ngx_del_timer(&rds->handshake);
    }

    rds->state = NGX_HTTP_VSB_REDIS_READY;
    rds->backoff = rds->conf.backoff_min;
    rds->timeouts = 0;

    ngx_log_error(NGX_LOG_NOTICE, rds->log, 0,
                  "veto_sandbox: redis \"%V\": connected%s", &rds->where,
                  rds->sentinel ? " (the master, as the sentinels say)" : "");
}


/* the master's link went: every command had its 503 */
static void
ngx_http_veto_sandbox_redis_gone(ngx_http_veto_sandbox_redis_link_t *link)
{
    ngx_http_veto_sandbox_redis_t  *rds = link->data;

    if (rds->handshake.timer_set) {
        ngx_del_timer(&rds->handshake);
    }

    ngx_http_veto_sandbox_redis_schedule(rds);
}
