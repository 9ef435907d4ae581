/*
 * Veto Sandbox: the Redis call layer: commands and Lua scripts sent on
 * the worker's connection (ngx_http_veto_sandbox_redis.c), each with its
 * own timer, and the key names every store shares.
 * See ngx_http_veto_sandbox_redis.h for the contract.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#include <ngx_http.h>

#include <openssl/sha.h>

#include "ngx_http_veto_sandbox_transport.h"
#include "ngx_http_veto_sandbox_redis.h"
#include "ngx_http_veto_sandbox_metrics.h"


struct ngx_http_veto_sandbox_redis_cmd_s {
    ngx_http_veto_sandbox_redis_t          *rds;
    ngx_http_veto_sandbox_redis_handler_pt  handler;
    void                                   *data;
    ngx_event_t                             timer;

    /* EVALSHA only: a private copy of the command, to retry as EVAL */
    ngx_http_veto_sandbox_redis_script_t   *script;
    int                                     argc;
    const char                            **argv;
    size_t                                 *argvlen;

    /* a durable call: the reply, kept while WAIT is asked */
    redisReply                             *saved;
    ngx_msec_t                              timeout;

    unsigned                                in_hiredis:1; /* owns privdata */
    unsigned                                done:1;       /* handler gone */
    unsigned                                retried:1;
    unsigned                                durable:1;
    unsigned                                waiting:1;    /* WAIT sent */
};


static void ngx_http_veto_sandbox_redis_cmd_reply(redisAsyncContext *ac,
    void *r, void *privdata);
static void ngx_http_veto_sandbox_redis_cmd_timeout(ngx_event_t *ev);
static ngx_int_t ngx_http_veto_sandbox_redis_cmd_wait(redisAsyncContext *ac,
    ngx_http_veto_sandbox_redis_cmd_t *cmd, redisReply *reply);
static void ngx_http_veto_sandbox_redis_cmd_waited(
    ngx_http_veto_sandbox_redis_cmd_t *cmd, redisReply *reply);
static redisReply *ngx_http_veto_sandbox_redis_reply_copy(redisReply *r,
    ngx_uint_t depth);
static void ngx_http_veto_sandbox_redis_cmd_finish(
    ngx_http_veto_sandbox_redis_cmd_t *cmd, ngx_int_t rc, redisReply *reply);
static ngx_int_t ngx_http_veto_sandbox_redis_send(
    ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_cmd_t *cmd, int argc, const char **argv,
    const size_t *argvlen);


ngx_int_t
ngx_http_veto_sandbox_redis_scripts_init(
    ngx_http_veto_sandbox_redis_script_t *scripts)
{
    ngx_http_veto_sandbox_redis_script_t  *s;

    for (s = scripts; s->name; s++) {
        if (ngx_http_veto_sandbox_redis_script_init(s) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


ngx_uint_t
ngx_http_veto_sandbox_redis_key_part_valid(u_char *p, size_t len)
{
    u_char  *end;

    if (len == 0 || len > 128) {
        return 0;
    }

    for (end = p + len; p < end; p++) {
        if (*p <= 0x20 || *p >= 0x7f) {
            return 0;
        }

        switch (*p) {
        case ':': case '{': case '}': case '*': case '?':
        case '[': case ']': case '\\':
            return 0;
        }
    }

    return 1;
}


ngx_int_t
ngx_http_veto_sandbox_tenant_key(ngx_pool_t *pool, ngx_str_t *key,
    const char *what, ngx_str_t *tenant, ngx_str_t *part)
{
    size_t  len;

    len = sizeof(NGX_HTTP_VSB_KEY_PREFIX "{}::") + tenant->len
          + ngx_strlen(what) + (part ? part->len : 0);

    key->data = ngx_pnalloc(pool, len);
    if (key->data == NULL) {
        return NGX_ERROR;
    }

    if (part) {
        key->len = ngx_sprintf(key->data,
                               NGX_HTTP_VSB_KEY_PREFIX "{%V}:%s:%V",
                               tenant, what, part)
                   - key->data;

    } else {
        key->len = ngx_sprintf(key->data,
                               NGX_HTTP_VSB_KEY_PREFIX "{%V}:%s",
                               tenant, what)
                   - key->data;
    }

    return NGX_OK;
}


/* the same for a tenant and a part that a request or a reply named:
 * NGX_DECLINED when one cannot be part of a key */
ngx_int_t
ngx_http_veto_sandbox_tenant_key_valid(ngx_pool_t *pool, ngx_str_t *key,
    const char *what, ngx_str_t *tenant, ngx_str_t *part)
{
    if (!ngx_http_veto_sandbox_redis_key_part_valid(tenant->data, tenant->len)
        || !ngx_http_veto_sandbox_redis_key_part_valid(part->data, part->len))
    {
        return NGX_DECLINED;
    }

    return ngx_http_veto_sandbox_tenant_key(pool, key, what, tenant, part);
}


/* commands */

/* A command can be queued: connected, or connecting (it waits). */
static ngx_uint_t
ngx_http_veto_sandbox_redis_usable(ngx_http_veto_sandbox_redis_t *rds)
{
    if (rds == NULL || rds->link.ac == NULL
        || rds->state == NGX_HTTP_VSB_REDIS_IDLE
        || rds->state == NGX_HTTP_VSB_REDIS_CLOSED)
    {
        if (rds) {
            rds->n_failures++;
        }

        ngx_http_veto_sandbox_metrics_redis_error("unavailable");

        return 0;
    }

    return 1;
}


ngx_int_t
ngx_http_veto_sandbox_redis_command(ngx_http_veto_sandbox_redis_call_t *call,
    int argc, const char **argv, const size_t *argvlen)
{
    ngx_int_t                           rc;
    ngx_http_veto_sandbox_redis_cmd_t  *cmd;

    if (!ngx_http_veto_sandbox_redis_usable(call->rds)) {
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    cmd = ngx_calloc(sizeof(ngx_http_veto_sandbox_redis_cmd_t),
                     call->rds->log);
    if (cmd == NULL) {
        return NGX_ERROR;
    }

    cmd->rds = call->rds;
    cmd->handler = call->handler;
    cmd->data = call->data;

    rc = ngx_http_veto_sandbox_redis_send(call, cmd, argc, argv, argvlen);
    if (rc != NGX_OK) {
        ngx_free(cmd);
    }

    return rc;
}


ngx_int_t
ngx_http_veto_sandbox_redis_hmget(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *key, const char *const *fields)
{
    int          n;
    size_t       argvlen[2 + NGX_HTTP_VSB_HMGET_MAX];
    const char  *argv[2 + NGX_HTTP_VSB_HMGET_MAX];

    argv[0] = "HMGET";
    argvlen[0] = sizeof("HMGET") - 1;
    argv[1] = (const char *) key->data;
    argvlen[1] = key->len;

    for (n = 2; *fields; fields++, n++) {
        if (n == 2 + NGX_HTTP_VSB_HMGET_MAX) {
            return NGX_ERROR;
        }

        argv[n] = *fields;
        argvlen[n] = ngx_strlen(*fields);
    }

    return ngx_http_veto_sandbox_redis_command(call, n, argv, argvlen);
}


ngx_int_t
ngx_http_veto_sandbox_redis_eval(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_script_t *script, int numkeys, int argc,
    const char **argv, const size_t *argvlen)
{
    int                                 i, n;
    u_char                             *p, *nk;
    size_t                              size, len;
    ngx_int_t                           rc;
    ngx_http_veto_sandbox_redis_cmd_t  *cmd;

    if (!ngx_http_veto_sandbox_redis_usable(call->rds)) {
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    if (argc < 0 || numkeys < 0 || numkeys > argc) {
        return NGX_ERROR;
    }

    /* one block: cmd, argv[n], argvlen[n], numkeys text, argument bytes */

    n = argc + 3;
    size = sizeof(ngx_http_veto_sandbox_redis_cmd_t)
           + n * (sizeof(char *) + sizeof(size_t)) + NGX_INT_T_LEN + 1;

    for (i = 0; i < argc; i++) {
        size += (argvlen ? argvlen[i] : ngx_strlen(argv[i])) + 1;
    }

    cmd = ngx_calloc(size, call->rds->log);
    if (cmd == NULL) {
        return NGX_ERROR;
    }

    cmd->rds = call->rds;
    cmd->handler = call->handler;
    cmd->data = call->data;
    cmd->script = script;
    cmd->argc = n;
    cmd->argv = (const char **) (cmd + 1);
    cmd->argvlen = (size_t *) (cmd->argv + n);

    nk = (u_char *) (cmd->argvlen + n);
    p = ngx_sprintf(nk, "%d", numkeys);
    *p++ = '\0';

    cmd->argv[0] = "EVALSHA";
    cmd->argvlen[0] = 7;
    cmd->argv[1] = (const char *) script->sha1;
    cmd->argvlen[1] = 40;
    cmd->argv[2] = (const char *) nk;
    cmd->argvlen[2] = ngx_strlen(nk);

    for (i = 0; i < argc; i++) {
        len = argvlen ? argvlen[i] : ngx_strlen(argv[i]);
        cmd->argv[i + 3] = (const char *) p;
        cmd->argvlen[i + 3] = len;
        /* an empty argument may come as NULL: memcpy(p, NULL, 0) is UB */
        if (len) {
            p = ngx_cpymem(p, argv[i], len);
        }
        *p++ = '\0';
    }

    rc = ngx_http_veto_sandbox_redis_send(call, cmd, cmd->argc, cmd->argv,
                                          cmd->argvlen);
    if (rc != NGX_OK) {
        ngx_free(cmd);
    }

    return rc;
}


u_char *
ngx_http_veto_sandbox_redis_arg(ngx_str_t *arg, u_char *p, const char *fmt,
    ...)
{
    va_list  args;

    va_start(args, fmt);
    arg->data = p;
    p = ngx_vslprintf(p, (void *) -1, fmt, args);
    arg->len = p - arg->data;
    va_end(args);

    return p;
}


ngx_int_t
ngx_http_veto_sandbox_redis_eval_str(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_script_t *script, int numkeys, int argc,
    ngx_str_t *args)
{
    int          i;
    size_t       argvlen[16];
    const char  *argv[16];

    if (argc > 16) {
        return NGX_ERROR;
    }

    for (i = 0; i < argc; i++) {
        argv[i] = (const char *) args[i].data;
        argvlen[i] = args[i].len;
    }

    return ngx_http_veto_sandbox_redis_eval(call, script, numkeys, argc, argv,
                                            argvlen);
}


static ngx_int_t
ngx_http_veto_sandbox_redis_send(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_cmd_t *cmd, int argc, const char **argv,
    const size_t *argvlen)
{
    ngx_http_veto_sandbox_redis_t  *rds;

    rds = call->rds;

    /* fails while the context is being freed (REDIS_FREEING/DISCONNECTING) */
    if (redisAsyncCommandArgv(rds->link.ac,
                              ngx_http_veto_sandbox_redis_cmd_reply,
                              cmd, argc, argv, argvlen)
        != REDIS_OK)
    {
        rds->n_failures++;
        ngx_http_veto_sandbox_metrics_redis_error("unavailable");
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    cmd->in_hiredis = 1;
    cmd->durable = call->durable && rds->conf.wait_replicas > 0;
    cmd->timeout = call->timeout ? call->timeout : rds->conf.connect_timeout;

    cmd->timer.handler = ngx_http_veto_sandbox_redis_cmd_timeout;
    cmd->timer.data = cmd;
    cmd->timer.log = rds->log;

    ngx_add_timer(&cmd->timer, cmd->timeout);

    rds->n_commands++;

    if (call->cmdp) {
        *call->cmdp = cmd;
    }

    return NGX_OK;
}


/*
 * A write whose effect the client's next request may read (through
 * another worker's connection) leaves before the answer that lets the
 * client send that request: hiredis would write it on the event loop's
 * next turn, after the response.
 */
void
ngx_http_veto_sandbox_redis_flush(ngx_http_veto_sandbox_redis_t *rds)
{
    if (ngx_http_veto_sandbox_redis_ready(rds) && rds->link.ac
        && !(rds->link.ac->c.flags & (REDIS_FREEING|REDIS_DISCONNECTING)))
    {
        redisAsyncHandleWrite(rds->link.ac);
    }
}


void
ngx_http_veto_sandbox_redis_cancel(ngx_http_veto_sandbox_redis_cmd_t *cmd)
{
    if (cmd == NULL || cmd->done) {
        return;
    }

    cmd->done = 1;
    cmd->handler = NULL;

    if (cmd->timer.timer_set) {
        ngx_del_timer(&cmd->timer);
    }

    if (cmd->saved) {
        freeReplyObject(cmd->saved);
        cmd->saved = NULL;
    }

    if (!cmd->in_hiredis) {
        ngx_free(cmd);
    }
}


static void
ngx_http_veto_sandbox_redis_cmd_reply(redisAsyncContext *ac, void *r,
    void *privdata)
{
    redisReply                         *reply = r;
    ngx_http_veto_sandbox_redis_t      *rds;
    ngx_http_veto_sandbox_redis_cmd_t  *cmd = privdata;

    rds = cmd->rds;
    cmd->in_hiredis = 0;

    if (reply) {
        /* any answer, even a late one, proves the server is alive */
        rds->timeouts = 0;
    }

    if (cmd->done) {
        /* timed out or cancelled earlier: drop the late reply */
        if (cmd->saved) {
            freeReplyObject(cmd->saved);
        }

        ngx_free(cmd);
        return;
    }

    if (reply == NULL) {
        ngx_http_veto_sandbox_redis_cmd_finish(cmd,
                                         NGX_HTTP_SERVICE_UNAVAILABLE, NULL);
        return;
    }

    if (cmd->waiting) {
        ngx_http_veto_sandbox_redis_cmd_waited(cmd, reply);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR && reply->len >= 8
        && ngx_strncmp(reply->str, "READONLY", 8) == 0)
    {
        /* a replica now (a failover demoted it): this command fails,
         * the connection goes, the master is looked for again */
        ngx_http_veto_sandbox_redis_cmd_finish(cmd, NGX_OK, reply);
        ngx_http_veto_sandbox_redis_drop(rds, "READONLY: the server is a "
                                              "replica now");
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR && cmd->script && !cmd->retried
        && reply->len >= 8 && ngx_strncmp(reply->str, "NOSCRIPT", 8) == 0)
    {
        /* script cache flushed or a fresh server: send the text once */
        cmd->retried = 1;
        cmd->argv[0] = "EVAL";
        cmd->argvlen[0] = 4;
        cmd->argv[1] = cmd->script->text;
        cmd->argvlen[1] = ngx_strlen(cmd->script->text);

        if (redisAsyncCommandArgv(ac, ngx_http_veto_sandbox_redis_cmd_reply,
                                  cmd, cmd->argc, cmd->argv, cmd->argvlen)
            == REDIS_OK)
        {
            cmd->in_hiredis = 1;
            return;
        }

        ngx_http_veto_sandbox_redis_cmd_finish(cmd,
                                         NGX_HTTP_SERVICE_UNAVAILABLE, NULL);
        return;
    }

    if (cmd->durable && reply->type != REDIS_REPLY_ERROR) {
        if (ngx_http_veto_sandbox_redis_cmd_wait(ac, cmd, reply) == NGX_OK) {
            return;
        }

        /* no WAIT, no confirmation: not done (fail closed) */
        ngx_http_veto_sandbox_redis_cmd_finish(cmd,
                                         NGX_HTTP_SERVICE_UNAVAILABLE, NULL);
        return;
    }

    ngx_http_veto_sandbox_redis_cmd_finish(cmd, NGX_OK, reply);
}


/*
 * A durable write answered: WAIT for the replicas before the handler
 * hears of it.  The reply is copied (hiredis frees its own when this
 * callback returns); the command's timer covers WAIT's own timeout.
 */
static ngx_int_t
ngx_http_veto_sandbox_redis_cmd_wait(redisAsyncContext *ac,
    ngx_http_veto_sandbox_redis_cmd_t *cmd, redisReply *reply)
{
    ngx_http_veto_sandbox_redis_t  *rds;

    rds = cmd->rds;

    cmd->saved = ngx_http_veto_sandbox_redis_reply_copy(reply, 0);
    if (cmd->saved == NULL) {
        ngx_log_error(NGX_LOG_ERR, rds->log, 0,
                      "veto_sandbox: redis \"%V\": a reply to keep for WAIT "
                      "could not be copied", &rds->where);
        return NGX_ERROR;
    }

    if (redisAsyncCommand(ac, ngx_http_veto_sandbox_redis_cmd_reply, cmd,
                          "WAIT %d %d", (int) rds->conf.wait_replicas,
                          (int) rds->conf.wait_timeout)
        != REDIS_OK)
    {
        freeReplyObject(cmd->saved);
        cmd->saved = NULL;
        return NGX_ERROR;
    }

    cmd->in_hiredis = 1;
    cmd->waiting = 1;

    if (cmd->timer.timer_set) {
        ngx_del_timer(&cmd->timer);
    }

    ngx_add_timer(&cmd->timer, cmd->timeout + rds->conf.wait_timeout);

    return NGX_OK;
}


/* WAIT answered: as many replicas as asked for have the write, or the
 * write is as good as not done. */
static void
ngx_http_veto_sandbox_redis_cmd_waited(ngx_http_veto_sandbox_redis_cmd_t *cmd,
    redisReply *reply)
{
    redisReply                     *saved;
    ngx_http_veto_sandbox_redis_t  *rds;

    rds = cmd->rds;
    saved = cmd->saved;
    cmd->saved = NULL;

    if (reply->type == REDIS_REPLY_INTEGER
        && reply->integer >= (long long) rds->conf.wait_replicas)
    {
        ngx_http_veto_sandbox_redis_cmd_finish(cmd, NGX_OK, saved);
        freeReplyObject(saved);
        return;
    }

    rds->n_unconfirmed++;

    if (reply->type == REDIS_REPLY_INTEGER) {
        ngx_log_error(NGX_LOG_WARN, rds->log, 0,
                      "veto_sandbox: redis \"%V\": WAIT: %L of %ui "
                      "replicas confirmed a write in %M ms: refused as not "
                      "done", &rds->where, reply->integer,
                      rds->conf.wait_replicas, rds->conf.wait_timeout);

    } else {
        ngx_log_error(NGX_LOG_WARN, rds->log, 0,
                      "veto_sandbox: redis \"%V\": WAIT failed: %*s",
                      &rds->where,
                      (size_t) (reply->type == REDIS_REPLY_ERROR
                                ? reply->len : 0),
                      reply->type == REDIS_REPLY_ERROR ? reply->str : "");
    }

    freeReplyObject(saved);

    ngx_http_veto_sandbox_redis_cmd_finish(cmd, NGX_HTTP_SERVICE_UNAVAILABLE,
                                           NULL);
}


/*
 * A deep copy in hiredis' own layout (malloc), so freeReplyObject()
 * frees it.  Replies kept this way are the stores' small ones; a deep
 * or huge reply is refused (NULL).
 */
static redisReply *
ngx_http_veto_sandbox_redis_reply_copy(redisReply *r, ngx_uint_t depth)
{
    size_t       i;
    redisReply  *c;

    if (depth > 4 || (r->type == REDIS_REPLY_ARRAY && r->elements > 1024)) {
        return NULL;
    }

    c = calloc(1, sizeof(redisReply));
    if (c == NULL) {
        return NULL;
    }

    c->type = r->type;
    c->integer = r->integer;

    switch (r->type) {

    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        c->str = malloc(r->len + 1);
        if (c->str == NULL) {
            free(c);
            return NULL;
        }

        if (r->len) {
            ngx_memcpy(c->str, r->str, r->len);
        }

        c->str[r->len] = '\0';
        c->len = r->len;
        break;

    case REDIS_REPLY_ARRAY:
        if (r->elements == 0) {
            break;
        }

        c->element = calloc(r->elements, sizeof(redisReply *));
        if (c->element == NULL) {
            free(c);
            return NULL;
        }

        c->elements = r->elements;

        for (i = 0; i < r->elements; i++) {
            c->element[i] = ngx_http_veto_sandbox_redis_reply_copy(
                                                  r->element[i], depth + 1);
            if (c->element[i] == NULL) {
                freeReplyObject(c);
                return NULL;
            }
        }

        break;

    default:
        break;
    }

    return c;
}


static void
ngx_http_veto_sandbox_redis_cmd_timeout(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_redis_t      *rds;
    ngx_http_veto_sandbox_redis_cmd_t  *cmd = ev->data;

    rds = cmd->rds;
    rds->n_timeouts++;
    rds->timeouts++;

    ngx_log_error(NGX_LOG_WARN, rds->log, 0,
                  "veto_sandbox: redis \"%V\": command timed out",
                  &rds->where);

    ngx_http_veto_sandbox_redis_cmd_finish(cmd, NGX_HTTP_GATEWAY_TIME_OUT,
                                           NULL);

    /* the reply may still come: hiredis keeps cmd until it does */

    if (rds->timeouts >= rds->conf.max_timeouts) {
        rds->timeouts = 0;
        ngx_http_veto_sandbox_redis_drop(rds, "too many command timeouts");
    }
}


static void
ngx_http_veto_sandbox_redis_cmd_finish(ngx_http_veto_sandbox_redis_cmd_t *cmd,
    ngx_int_t rc, redisReply *reply)
{
    ngx_http_veto_sandbox_redis_handler_pt  handler;

    handler = cmd->handler;

    cmd->done = 1;
    cmd->handler = NULL;

    /* a durable write's reply kept for WAIT, when WAIT never answered
     * (the connection went, the timer fired) */
    if (cmd->saved) {
        freeReplyObject(cmd->saved);
        cmd->saved = NULL;
    }

    if (cmd->timer.timer_set) {
        ngx_del_timer(&cmd->timer);
    }

    if (rc != NGX_OK) {
        cmd->rds->n_failures++;
    }

    ngx_http_veto_sandbox_metrics_redis(rc, reply);

    /* free first if hiredis let go: the handler may not come back here */
    if (!cmd->in_hiredis) {
        void  *data = cmd->data;

        ngx_free(cmd);
        handler(rc, reply, data);
        return;
    }

    handler(rc, reply, cmd->data);
}