/*
 * Veto Sandbox: the Redis master, as Redis Sentinel names it.
 *
 * Redis' Sentinel client algorithm, on nginx's event loop, per worker:
 *
 *   1. ask the sentinels in order, each with the command timeout; the
 *      first that answers goes to the head of the list, so the next
 *      discovery asks it first;
 *   2. SENTINEL get-master-addr-by-name <name>: an address, or nil (that
 *      sentinel does not know the master: ask the next one);
 *   3. connect to it and check ROLE (ngx_http_veto_sandbox_redis.c, told
 *      through its handlers->discovered): a replica, an error, a timeout
 *      or a READONLY reply later means starting over at 1, after the
 *      connection's backoff.
 *
 * And one connection to every sentinel, SUBSCRIBEd to the failover's
 * events (only the sentinel leading a failover publishes its steps):
 *
 *   +failover-state-send-slaveof-noone: a replica is being promoted.  The
 *      old master still accepts writes, and still has replicas to confirm
 *      them, until Sentinel turns it into a replica; what it takes then
 *      is lost.  So the connection to it goes at once and the old master
 *      is fenced off (handlers->fence, _redis.c's): the worker connects
 *      only to another master until the fence expires.
 *   +switch-master: the master moved; the connection to the old one goes
 *      at once and the next is made without waiting out the backoff.
 *
 * A listener is made again (to its sentinel) when it breaks.  The
 * sentinels' connections are links (ngx_http_veto_sandbox_redis_link.c);
 * the directive's arguments are read by ngx_http_veto_sandbox_redis_conf.c.
 *
 * Sentinels answer numeric addresses here: a name would have to be
 * resolved, which a worker never does (refused and logged).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_transport.h"
#include "ngx_http_veto_sandbox_redis.h"
#include "ngx_http_veto_sandbox_sentinel.h"


#define NGX_HTTP_VSB_SENTINEL_RESUB_MS   1000


/* a listener: one sentinel's failover events */
typedef struct {
    ngx_http_veto_sandbox_sentinel_t    *st;
    ngx_http_veto_sandbox_redis_node_t  *node;
    ngx_http_veto_sandbox_redis_link_t   link;
    ngx_event_t                          timer;     /* subscribe (again) */
} ngx_http_veto_sandbox_sentinel_sub_t;


struct ngx_http_veto_sandbox_sentinel_s {
    ngx_http_veto_sandbox_redis_t       *rds;
    const ngx_http_veto_sandbox_sentinel_handlers_t  *handlers;
    ngx_http_veto_sandbox_redis_node_t  *nodes;     /* the configuration's */
    ngx_uint_t                           n;
    ngx_uint_t                          *order;     /* head: last to answer */
    ngx_uint_t                           next;      /* this round's try */

    /* asking: one connection at a time */
    ngx_http_veto_sandbox_redis_link_t   ask;
    ngx_event_t                          ask_timer;
    ngx_event_t                          step;      /* posted: go on */
    u_char                               host[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t                            port;

    /* listening: one per sentinel */
    ngx_http_veto_sandbox_sentinel_sub_t  *subs;

    unsigned                             asking:1;
    unsigned                             answered:1;
    unsigned                             closed:1;
};


static void ngx_http_veto_sandbox_sentinel_ask(
    ngx_http_veto_sandbox_sentinel_t *st);
static void ngx_http_veto_sandbox_sentinel_ask_reply(redisAsyncContext *ac,
    void *r, void *privdata);
static void ngx_http_veto_sandbox_sentinel_ask_timeout(ngx_event_t *ev);
static void ngx_http_veto_sandbox_sentinel_ask_gone(
    ngx_http_veto_sandbox_redis_link_t *link);
static void ngx_http_veto_sandbox_sentinel_step(ngx_event_t *ev);
static void ngx_http_veto_sandbox_sentinel_subscribe(ngx_event_t *ev);
static void ngx_http_veto_sandbox_sentinel_message(redisAsyncContext *ac,
    void *r, void *privdata);
static void ngx_http_veto_sandbox_sentinel_sub_gone(
    ngx_http_veto_sandbox_redis_link_t *link);


/* worker */

/* its links and timers are set up as _redis.c's are, field by field:
 * each with its own handler and owner */
ngx_http_veto_sandbox_sentinel_t *
ngx_http_veto_sandbox_sentinel_create(ngx_http_veto_sandbox_redis_t *rds,
    ngx_pool_t *pool,
    const ngx_http_veto_sandbox_sentinel_handlers_t *handlers)
{
    ngx_uint_t                             i;
    ngx_http_veto_sandbox_sentinel_t      *st;
    ngx_http_veto_sandbox_sentinel_sub_t  *sub;

    st = ngx_pcalloc(pool, sizeof(ngx_http_veto_sandbox_sentinel_t));
    if (st == NULL) {
        return NULL;
    }

    st->rds = rds;
    st->handlers = handlers;
    st->nodes = rds->conf.sentinels->elts;
    st->n = rds->conf.sentinels->nelts;

    st->order = ngx_palloc(pool, st->n * sizeof(ngx_uint_t));
    if (st->order == NULL) {
        return NULL;
    }

    for (i = 0; i < st->n; i++) {
        st->order[i] = i;
    }

    st->ask.log = rds->log;
    st->ask.gone = ngx_http_veto_sandbox_sentinel_ask_gone;
    st->ask.data = st;

    st->subs = ngx_pcalloc(pool,
                           st->n * sizeof(ngx_http_veto_sandbox_sentinel_sub_t));
    if (st->subs == NULL) {
        return NULL;
    }

    for (i = 0; i < st->n; i++) {
        sub = &st->subs[i];

        sub->st = st;
        sub->node = &st->nodes[i];

        sub->link.log = rds->log;
        sub->link.name = &sub->node->addr;
        sub->link.gone = ngx_http_veto_sandbox_sentinel_sub_gone;
        sub->link.data = sub;

        sub->timer.handler = ngx_http_veto_sandbox_sentinel_subscribe;
        sub->timer.data = sub;
        sub->timer.log = rds->log;
        sub->timer.cancelable = 1;
    }

    st->ask_timer.handler = ngx_http_veto_sandbox_sentinel_ask_timeout;
    st->ask_timer.data = st;
    st->ask_timer.log = rds->log;
    st->ask_timer.cancelable = 1;

    st->step.handler = ngx_http_veto_sandbox_sentinel_step;
    st->step.data = st;
    st->step.log = rds->log;

    return st;
}


void
ngx_http_veto_sandbox_sentinel_destroy(ngx_http_veto_sandbox_sentinel_t *st)
{
    ngx_uint_t  i;

    st->closed = 1;

    if (st->ask_timer.timer_set) {
        ngx_del_timer(&st->ask_timer);
    }

    if (st->step.posted) {
        ngx_delete_posted_event(&st->step);
    }

    ngx_http_veto_sandbox_redis_link_close(&st->ask);

    for (i = 0; i < st->n; i++) {
        if (st->subs[i].timer.timer_set) {
            ngx_del_timer(&st->subs[i].timer);
        }

        ngx_http_veto_sandbox_redis_link_close(&st->subs[i].link);
    }
}


/* A discovery round: every sentinel once, in order. */
void
ngx_http_veto_sandbox_sentinel_discover(ngx_http_veto_sandbox_sentinel_t *st)
{
    if (st->asking || st->closed) {
        return;
    }

    st->asking = 1;
    st->answered = 0;
    st->next = 0;

    ngx_http_veto_sandbox_sentinel_ask(st);
}


static void
ngx_http_veto_sandbox_sentinel_ask(ngx_http_veto_sandbox_sentinel_t *st)
{
    ngx_http_veto_sandbox_redis_node_t  *node;

    for ( ;; ) {

        if (st->next >= st->n) {
            ngx_log_error(NGX_LOG_ERR, st->rds->log, 0,
                          "veto_sandbox: redis sentinel: none of %ui "
                          "sentinels named a master \"%V\"", st->n,
                          &st->rds->conf.master_name);
            st->asking = 0;
            st->handlers->discovered(st->rds, NULL, 0);
            return;
        }

        node = &st->nodes[st->order[st->next]];
        st->ask.name = &node->addr;

        if (ngx_http_veto_sandbox_redis_link_open(&st->ask,
                                                (const char *) node->host.data,
                                                node->port, NULL)
            == NGX_OK)
        {
            break;
        }

        st->next++;
    }

    if (redisAsyncCommand(st->ask.ac, ngx_http_veto_sandbox_sentinel_ask_reply,
                          st, "SENTINEL get-master-addr-by-name %s",
                          st->rds->conf.master_name.data)
        != REDIS_OK)
    {
        /* the link goes; its gone() moves on */
        ngx_http_veto_sandbox_redis_link_close(&st->ask);
        return;
    }

    ngx_add_timer(&st->ask_timer, st->rds->conf.connect_timeout);
}


static void
ngx_http_veto_sandbox_sentinel_ask_reply(redisAsyncContext *ac, void *r,
    void *privdata)
{
    ngx_int_t                          rc;
    redisReply                        *reply = r;
    ngx_uint_t                         i, head;
    ngx_http_veto_sandbox_sentinel_t  *st = privdata;

    if (reply == NULL) {
        return;         /* being freed: gone() moves on */
    }

    rc = NGX_ERROR;

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2
        && reply->element[0]->type == REDIS_REPLY_STRING
        && reply->element[1]->type == REDIS_REPLY_STRING)
    {
        rc = ngx_http_veto_sandbox_sentinel_addr(
                                (u_char *) reply->element[0]->str,
                                reply->element[0]->len,
                                (u_char *) reply->element[1]->str,
                                reply->element[1]->len, st->host, &st->port);
    }

    if (rc == NGX_OK) {
        st->answered = 1;

        /* this sentinel is asked first next time */
        head = st->order[st->next];

        for (i = st->next; i > 0; i--) {
            st->order[i] = st->order[i - 1];
        }

        st->order[0] = head;

    } else if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, st->rds->log, 0,
                      "veto_sandbox: redis sentinel \"%V\" names the master "
                      "\"%*s\", not a numeric address (a worker does not "
                      "resolve names: set \"sentinel resolve-hostnames "
                      "no\")", st->ask.name,
                      (size_t) ngx_min(reply->element[0]->len,
                                       NGX_SOCKADDR_STRLEN),
                      reply->element[0]->str);

    } else if (reply->type == REDIS_REPLY_NIL) {
        ngx_log_error(NGX_LOG_WARN, st->rds->log, 0,
                      "veto_sandbox: redis sentinel \"%V\" does not know a "
                      "master \"%V\"", st->ask.name,
                      &st->rds->conf.master_name);

    } else {
        ngx_log_error(NGX_LOG_WARN, st->rds->log, 0,
                      "veto_sandbox: redis sentinel \"%V\": unexpected "
                      "answer to get-master-addr-by-name%s%*s",
                      st->ask.name,
                      reply->type == REDIS_REPLY_ERROR ? ": " : "",
                      (size_t) (reply->type == REDIS_REPLY_ERROR
                                ? reply->len : 0),
                      reply->type == REDIS_REPLY_ERROR ? reply->str : "");
    }

    /* one question per connection; the rest happens once it is gone */
    ngx_http_veto_sandbox_redis_link_close(&st->ask);
}


static void
ngx_http_veto_sandbox_sentinel_ask_timeout(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_sentinel_t  *st = ev->data;

    ngx_log_error(NGX_LOG_WARN, st->rds->log, 0,
                  "veto_sandbox: redis sentinel \"%V\": no answer in time",
                  st->ask.name);

    ngx_http_veto_sandbox_redis_link_close(&st->ask);
}


/* The asking connection is gone (answered, refused, failed, timed out):
 * go on from the event loop, not from inside hiredis. */
static void
ngx_http_veto_sandbox_sentinel_ask_gone(
    ngx_http_veto_sandbox_redis_link_t *link)
{
    ngx_http_veto_sandbox_sentinel_t  *st = link->data;

    if (st->ask_timer.timer_set) {
        ngx_del_timer(&st->ask_timer);
    }

    if (st->closed) {
        return;
    }

    ngx_post_event(&st->step, &ngx_posted_events);
}


static void
ngx_http_veto_sandbox_sentinel_step(ngx_event_t *ev)
{
    ngx_uint_t                         i;
    ngx_http_veto_sandbox_sentinel_t  *st = ev->data;

    if (st->closed || !st->asking) {
        return;
    }

    if (!st->answered) {
        st->next++;
        ngx_http_veto_sandbox_sentinel_ask(st);
        return;
    }

    st->asking = 0;

    /* listen for the master's moves, from now on */
    for (i = 0; i < st->n; i++) {
        if (st->subs[i].link.ac == NULL && !st->subs[i].timer.timer_set) {
            ngx_http_veto_sandbox_sentinel_subscribe(&st->subs[i].timer);
        }
    }

    st->handlers->discovered(st->rds, st->host, st->port);
}


/* A listener: SUBSCRIBE to its sentinel's failover events. */
static void
ngx_http_veto_sandbox_sentinel_subscribe(ngx_event_t *ev)
{
    ngx_http_veto_sandbox_sentinel_sub_t  *sub = ev->data;

    if (sub->st->closed || sub->link.ac) {
        return;
    }

    if (ngx_http_veto_sandbox_redis_link_open(&sub->link,
                                         (const char *) sub->node->host.data,
                                         sub->node->port, NULL)
        != NGX_OK)
    {
        ngx_add_timer(&sub->timer, NGX_HTTP_VSB_SENTINEL_RESUB_MS);
        return;
    }

    if (redisAsyncCommand(sub->link.ac, ngx_http_veto_sandbox_sentinel_message,
                          sub, "SUBSCRIBE +switch-master "
                               "+failover-state-send-slaveof-noone")
        != REDIS_OK)
    {
        ngx_http_veto_sandbox_redis_link_close(&sub->link);
    }
}


/* "message", "<channel>", "<event>" */
static void
ngx_http_veto_sandbox_sentinel_message(redisAsyncContext *ac, void *r,
    void *privdata)
{
    u_char                                host[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    ngx_int_t                             rc;
    in_port_t                             port;
    ngx_uint_t                            promoting;
    redisReply                           *reply = r, *kind, *chan, *msg;
    ngx_http_veto_sandbox_sentinel_t     *st;
    ngx_http_veto_sandbox_sentinel_sub_t *sub = privdata;

    st = sub->st;

    if (reply == NULL || st->closed) {
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        return;
    }

    kind = reply->element[0];
    chan = reply->element[1];
    msg = reply->element[2];

    if (kind->type != REDIS_REPLY_STRING || kind->len != 7
        || ngx_strncmp(kind->str, "message", 7) != 0
        || chan->type != REDIS_REPLY_STRING
        || msg->type != REDIS_REPLY_STRING)
    {
        return;         /* the subscriptions' confirmations */
    }

    promoting = (chan->len != sizeof("+switch-master") - 1
                 || ngx_strncmp(chan->str, "+switch-master", chan->len) != 0);

    rc = promoting
         ? ngx_http_veto_sandbox_sentinel_promoting((u_char *) msg->str,
                                                    msg->len,
                                                    &st->rds->conf.master_name,
                                                    host, &port)
         : ngx_http_veto_sandbox_sentinel_switch((u_char *) msg->str,
                                                 msg->len,
                                                 &st->rds->conf.master_name,
                                                 host, &port);

    if (rc == NGX_DECLINED) {
        return;         /* another master of these sentinels */
    }

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, st->rds->log, 0,
                      "veto_sandbox: redis sentinel \"%V\": %*s not "
                      "understood (its fields, a numeric address): \"%*s\"",
                      sub->link.name, (size_t) ngx_min(chan->len, 64),
                      chan->str, (size_t) ngx_min(msg->len, 256), msg->str);
        return;
    }

    if (promoting) {
        ngx_log_error(NGX_LOG_NOTICE, st->rds->log, 0,
                      "veto_sandbox: redis sentinel \"%V\": a replica of "
                      "\"%V\" is being promoted: %s:%d fenced off",
                      sub->link.name, &st->rds->conf.master_name, host,
                      (int) port);

        st->handlers->fence(st->rds, host, port);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, st->rds->log, 0,
                  "veto_sandbox: redis sentinel \"%V\": +switch-master "
                  "\"%V\" to %s:%d", sub->link.name,
                  &st->rds->conf.master_name, host, (int) port);

    st->handlers->switched(st->rds, host, port);
}


static void
ngx_http_veto_sandbox_sentinel_sub_gone(
    ngx_http_veto_sandbox_redis_link_t *link)
{
    ngx_http_veto_sandbox_sentinel_sub_t  *sub = link->data;

    if (sub->st->closed || ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    if (!sub->timer.timer_set) {
        ngx_add_timer(&sub->timer, NGX_HTTP_VSB_SENTINEL_RESUB_MS);
    }
}
