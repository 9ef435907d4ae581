/*
 * Veto Sandbox: a link, one hiredis async context on nginx's event loop:
 * its socket wrapped in an ngx_connection_t, nginx's events handed to
 * hiredis, and hiredis' addRead/delRead/addWrite/delWrite/cleanup hooks
 * mapped onto level-triggered nginx events.  The worker's connection to
 * the master (ngx_http_veto_sandbox_redis.c) is a link, and so are the
 * sentinels' (ngx_http_veto_sandbox_sentinel.c): what a link is for, and
 * what follows once it is gone, is its owner's (link->gone).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_transport.h"
#include "ngx_http_veto_sandbox_redis.h"


static void ngx_http_veto_sandbox_redis_on_connect(
    const redisAsyncContext *ac, int status);
static void ngx_http_veto_sandbox_redis_on_disconnect(
    const redisAsyncContext *ac, int status);
static void ngx_http_veto_sandbox_redis_read_handler(ngx_event_t *rev);
static void ngx_http_veto_sandbox_redis_write_handler(ngx_event_t *wev);
static void ngx_http_veto_sandbox_redis_add_read(void *privdata);
static void ngx_http_veto_sandbox_redis_del_read(void *privdata);
static void ngx_http_veto_sandbox_redis_add_write(void *privdata);
static void ngx_http_veto_sandbox_redis_del_write(void *privdata);
static void ngx_http_veto_sandbox_redis_cleanup(void *privdata);


ngx_int_t
ngx_http_veto_sandbox_redis_link_open(ngx_http_veto_sandbox_redis_link_t *link,
    const char *host, in_port_t port, const char *unix_path)
{
    ngx_connection_t   *c;
    redisAsyncContext  *ac;

    if (unix_path) {
        ac = redisAsyncConnectUnix(unix_path);

    } else {
        ac = redisAsyncConnect(host, port);
    }

    if (ac == NULL) {
        ngx_log_error(NGX_LOG_ERR, link->log, 0,
                      "veto_sandbox: redis \"%V\": connect: out of memory",
                      link->name);
        return NGX_ERROR;
    }

    if (ac->err) {
        ngx_log_error(NGX_LOG_ERR, link->log, 0,
                      "veto_sandbox: redis \"%V\": connect: %s",
                      link->name, ac->errstr);
        redisAsyncFree(ac);
        return NGX_ERROR;
    }

    c = ngx_get_connection(ac->c.fd, link->log);
    if (c == NULL) {
        ngx_log_error(NGX_LOG_ERR, link->log, 0,
                      "veto_sandbox: redis \"%V\": no free connection "
                      "(worker_connections)", link->name);
        redisAsyncFree(ac);
        return NGX_ERROR;
    }

    c->data = link;
    c->read->handler = ngx_http_veto_sandbox_redis_read_handler;
    c->write->handler = ngx_http_veto_sandbox_redis_write_handler;
    c->read->log = link->log;
    c->write->log = link->log;

    link->ac = ac;
    link->conn = c;

    ac->data = link;
    ac->ev.data = link;
    ac->ev.addRead = ngx_http_veto_sandbox_redis_add_read;
    ac->ev.delRead = ngx_http_veto_sandbox_redis_del_read;
    ac->ev.addWrite = ngx_http_veto_sandbox_redis_add_write;
    ac->ev.delWrite = ngx_http_veto_sandbox_redis_del_write;
    ac->ev.cleanup = ngx_http_veto_sandbox_redis_cleanup;

    (void) redisAsyncSetConnectCallback(ac,
                                        ngx_http_veto_sandbox_redis_on_connect);
    (void) redisAsyncSetDisconnectCallback(ac,
                                     ngx_http_veto_sandbox_redis_on_disconnect);

    if (unix_path == NULL) {
        /* a dead peer behind a silent network is found, eventually */
        (void) redisEnableKeepAlive(&ac->c);
    }

    return NGX_OK;
}


void
ngx_http_veto_sandbox_redis_link_close(ngx_http_veto_sandbox_redis_link_t *link)
{
    if (link->ac == NULL || (link->ac->c.flags & REDIS_FREEING)) {
        return;
    }

    redisAsyncFree(link->ac);
}


static void
ngx_http_veto_sandbox_redis_on_connect(const redisAsyncContext *ac,
    int status)
{
    ngx_http_veto_sandbox_redis_link_t  *link = ac->data;

    if (status != REDIS_OK) {
        ngx_log_error(NGX_LOG_ERR, link->log, 0,
                      "veto_sandbox: redis \"%V\": connect: %s",
                      link->name, ac->errstr ? ac->errstr : "failed");
    }
}


static void
ngx_http_veto_sandbox_redis_on_disconnect(const redisAsyncContext *ac,
    int status)
{
    ngx_http_veto_sandbox_redis_link_t  *link = ac->data;

    if (status != REDIS_OK) {
        ngx_log_error(NGX_LOG_ERR, link->log, 0,
                      "veto_sandbox: redis \"%V\": connection lost: %s",
                      link->name, ac->errstr ? ac->errstr : "error");
    }
}


/* nginx events -> hiredis */

static void
ngx_http_veto_sandbox_redis_read_handler(ngx_event_t *rev)
{
    ngx_connection_t                    *c = rev->data;
    ngx_http_veto_sandbox_redis_link_t  *link = c->data;

    if (link->ac) {
        /* may free the context; nothing after this touches it */
        redisAsyncHandleRead(link->ac);
    }
}


static void
ngx_http_veto_sandbox_redis_write_handler(ngx_event_t *wev)
{
    ngx_connection_t                    *c = wev->data;
    ngx_http_veto_sandbox_redis_link_t  *link = c->data;

    if (link->ac) {
        redisAsyncHandleWrite(link->ac);
    }
}


/*
 * hiredis hooks -> nginx events.  Level-triggered: hiredis reads at most
 * one buffer per call and adds and removes its write interest itself, so
 * edge-triggered events could leave data unread in the socket.
 */

/* add (or delete) the interest unless it is already there (gone) */
static void
ngx_http_veto_sandbox_redis_event(ngx_http_veto_sandbox_redis_link_t *link,
    ngx_event_t *ev, ngx_int_t event, ngx_uint_t add)
{
    ngx_int_t  rc;

    if ((ev->active != 0) == (add != 0)) {
        return;
    }

    rc = add ? ngx_add_event(ev, event, NGX_LEVEL_EVENT)
             : ngx_del_event(ev, event, NGX_LEVEL_EVENT);

    if (rc != NGX_OK) {
        /* the command and handshake timers turn this into a reconnect */
        ngx_log_error(NGX_LOG_ERR, link->log, ngx_socket_errno,
                      "veto_sandbox: redis \"%V\": %s %s event failed",
                      link->name, add ? "add" : "delete",
                      event == NGX_READ_EVENT ? "read" : "write");
    }
}


static void
ngx_http_veto_sandbox_redis_add_read(void *privdata)
{
    ngx_http_veto_sandbox_redis_link_t  *link = privdata;

    ngx_http_veto_sandbox_redis_event(link, link->conn->read, NGX_READ_EVENT,
                                      1);
}


static void
ngx_http_veto_sandbox_redis_del_read(void *privdata)
{
    ngx_http_veto_sandbox_redis_link_t  *link = privdata;

    ngx_http_veto_sandbox_redis_event(link, link->conn->read, NGX_READ_EVENT,
                                      0);
}


static void
ngx_http_veto_sandbox_redis_add_write(void *privdata)
{
    ngx_http_veto_sandbox_redis_link_t  *link = privdata;

    ngx_http_veto_sandbox_redis_event(link, link->conn->write,
                                      NGX_WRITE_EVENT, 1);
}


static void
ngx_http_veto_sandbox_redis_del_write(void *privdata)
{
    ngx_http_veto_sandbox_redis_link_t  *link = privdata;

    ngx_http_veto_sandbox_redis_event(link, link->conn->write,
                                      NGX_WRITE_EVENT, 0);
}


/*
 * hiredis frees the context: every pending callback has had its NULL
 * reply, and hiredis closes the socket right after this hook.  Release
 * the nginx connection without closing the fd, like ngx_close_connection()
 * minus close().
 */
static void
ngx_http_veto_sandbox_redis_cleanup(void *privdata)
{
    ngx_http_veto_sandbox_redis_link_t  *link = privdata;
    ngx_connection_t                    *c;

    c = link->conn;

    if (c) {
        if (c->read->timer_set) {
            ngx_del_timer(c->read);
        }

        if (c->write->timer_set) {
            ngx_del_timer(c->write);
        }

        if (ngx_del_conn) {
            ngx_del_conn(c, NGX_CLOSE_EVENT);

        } else {
            if (c->read->active || c->read->disabled) {
                ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
            }

            if (c->write->active || c->write->disabled) {
                ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
            }
        }

        if (c->read->posted) {
            ngx_delete_posted_event(c->read);
        }

        if (c->write->posted) {
            ngx_delete_posted_event(c->write);
        }

        c->read->closed = 1;
        c->write->closed = 1;

        ngx_free_connection(c);
        c->fd = (ngx_socket_t) -1;
    }

    link->conn = NULL;
    link->ac = NULL;

    if (link->gone) {
        link->gone(link);
    }
}
