/*
 * Veto Sandbox: a non-blocking Redis client for nginx workers.
 *
 * One hiredis (0.14) async context per worker, driven by nginx's event
 * loop: the hiredis socket is wrapped in an ngx_connection_t and hiredis'
 * addRead/delRead/addWrite/delWrite/cleanup hooks map onto level-triggered
 * nginx events (a link: ngx_http_veto_sandbox_redis_link.c).  The
 * connection (ngx_http_veto_sandbox_rds) is made in init_process,
 * authenticated (AUTH password, or AUTH user password for an ACL user),
 * switched to its database (SELECT) and checked with PING before it
 * counts as ready.  A lost or stalled connection is dropped and made
 * again with exponential backoff driven by an nginx timer; nothing here
 * ever blocks the worker.
 *
 * hiredis 0.14 has no command timeouts, so every command carries its own
 * nginx timer.  The handler of a command is called exactly once, unless
 * the caller cancels it first:
 *
 *     rc == NGX_OK                         a reply arrived; it may be an
 *                                          error reply (REDIS_REPLY_ERROR),
 *                                          which a caller that decides
 *                                          access must treat as a failure
 *     rc == NGX_HTTP_SERVICE_UNAVAILABLE   connection lost before a reply
 *     rc == NGX_HTTP_GATEWAY_TIME_OUT      the command's timer fired
 *
 * In the two failure cases reply is NULL.  A reply that arrives after its
 * command timed out or was cancelled is dropped by the adapter.  The reply
 * belongs to hiredis and is valid only while the handler runs.
 *
 * The command handle (ngx_http_veto_sandbox_redis_cmd_t) stays valid until
 * the handler is called or the command is cancelled, whichever comes
 * first; after that the caller must forget it.  A request that issued a
 * command and is finalized before the reply must cancel it (typically from
 * a request pool cleanup handler), so that the handler never touches a
 * freed request.
 *
 * Fail closed: a caller that needs Redis for an access decision treats any
 * rc other than NGX_OK, and any error reply, as "refuse with 503".
 *
 * With Sentinel (veto_sandbox_redis_sentinel) the master's address is
 * not configured but discovered (ngx_http_veto_sandbox_sentinel.c): the
 * sentinels are asked in order, the master found is checked with ROLE,
 * and the connection is made again, and the master asked for again,
 * after an error, a timeout, a READONLY reply or a +switch-master event.
 * A durable call (call->durable) is followed by WAIT: its handler sees
 * the reply only when enough replicas confirmed the write, else 503.
 */

#ifndef _NGX_HTTP_VSB_REDIS_H_INCLUDED_
#define _NGX_HTTP_VSB_REDIS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>


#define NGX_HTTP_VSB_REDIS_DEFAULT_PORT     6379
#define NGX_HTTP_VSB_REDIS_DEFAULT_TIMEOUT  1000    /* ms */
#define NGX_HTTP_VSB_REDIS_BACKOFF_MIN      100     /* ms */
#define NGX_HTTP_VSB_REDIS_BACKOFF_MAX      5000    /* ms */
/* a master a failover is leaving is not connected to for this long,
 * unless the sentinels name it again after that (the failover failed) */
#define NGX_HTTP_VSB_REDIS_FENCE_MS         10000
#define NGX_HTTP_VSB_REDIS_MAX_TIMEOUTS     3


/* A TCP server: a sentinel, or the master a sentinel named. */
typedef struct {
    ngx_str_t                       addr;           /* as configured, logs */
    ngx_str_t                       host;           /* numeric, NUL ended */
    in_port_t                       port;
} ngx_http_veto_sandbox_redis_node_t;


/*
 * Configuration, filled at configuration time (directives) and copied by
 * ngx_http_veto_sandbox_redis_create().  Strings are NUL-terminated.
 * host is always a numeric address: names are resolved at configuration
 * time by ngx_http_veto_sandbox_redis_parse_addr(), because hiredis would
 * resolve them with a blocking getaddrinfo() in the worker.
 */
typedef struct {
    ngx_str_t                       addr;           /* as configured, logs */
    ngx_str_t                       host;           /* numeric, or empty */
    in_port_t                       port;
    ngx_str_t                       unix_path;      /* or empty */
    ngx_str_t                       user;           /* ACL user or empty */
    ngx_str_t                       password;       /* empty: no AUTH */
    ngx_int_t                       db;             /* SELECT if > 0 */
    ngx_msec_t                      connect_timeout; /* connect+handshake */
    ngx_msec_t                      backoff_min;
    ngx_msec_t                      backoff_max;
    ngx_uint_t                      max_timeouts;   /* then reconnect */

    /* Sentinel: the master's name and the sentinels, in order */
    ngx_str_t                       master_name;    /* NUL ended, or empty */
    ngx_array_t                    *sentinels;      /* ..._redis_node_t */

    /* WAIT after a durable write: replicas that must confirm it */
    ngx_uint_t                      wait_replicas;  /* 0: no WAIT */
    ngx_msec_t                      wait_timeout;
} ngx_http_veto_sandbox_redis_conf_t;


typedef enum {
    NGX_HTTP_VSB_REDIS_IDLE = 0,    /* waiting for reconnect */
    NGX_HTTP_VSB_REDIS_DISCOVERING, /* asking the sentinels */
    NGX_HTTP_VSB_REDIS_CONNECTING,  /* connect + AUTH/SELECT/PING|ROLE */
    NGX_HTTP_VSB_REDIS_READY,
    NGX_HTTP_VSB_REDIS_CLOSED       /* destroyed, worker exiting */
} ngx_http_veto_sandbox_redis_state_e;


typedef struct ngx_http_veto_sandbox_redis_s  ngx_http_veto_sandbox_redis_t;
typedef struct ngx_http_veto_sandbox_redis_cmd_s
    ngx_http_veto_sandbox_redis_cmd_t;
typedef struct ngx_http_veto_sandbox_sentinel_s
    ngx_http_veto_sandbox_sentinel_t;
typedef struct ngx_http_veto_sandbox_redis_link_s
    ngx_http_veto_sandbox_redis_link_t;


/*
 * One hiredis async context on nginx's event loop: its socket wrapped in
 * an ngx_connection_t, hiredis' event hooks mapped onto nginx events.
 * gone() runs once hiredis freed the context (every pending callback
 * had its NULL reply); it must not open a new context itself (post an
 * event or set a timer for that).
 */
struct ngx_http_veto_sandbox_redis_link_s {
    redisAsyncContext                  *ac;
    ngx_connection_t                   *conn;
    ngx_log_t                          *log;
    ngx_str_t                          *name;       /* address, for logs */
    void                              (*gone)(
                                     ngx_http_veto_sandbox_redis_link_t *link);
    void                               *data;
};

typedef void (*ngx_http_veto_sandbox_redis_handler_pt)(ngx_int_t rc,
    redisReply *reply, void *data);


/*
 * A Lua script known by its SHA-1: EVALSHA first, EVAL on NOSCRIPT.
 * Define scripts as static objects with name and text set; the sha1
 * field is filled by ngx_http_veto_sandbox_redis_script_init().
 */
typedef struct {
    const char                     *name;
    const char                     *text;
    u_char                          sha1[41];
} ngx_http_veto_sandbox_redis_script_t;


/*
 * The module's scripts are files, ngx_veto_sandbox_module/lua/<name>.lua,
 * each compiled in after the one shared prelude (lua/prelude.lua: the
 * helpers several scripts use) as one NUL-ended text, so the SHA-1 and
 * an EVAL are of both.  At file scope, NGX_HTTP_VSB_LUA(name); defines
 * the text (.incbin of the two files, the directory from "config",
 * which lists the files in ngx_module_deps so an edit rebuilds), and
 * NGX_HTTP_VSB_SCRIPT(name) is its row of a script table.
 */
#define NGX_HTTP_VSB_LUA(name)                                                \
    __asm__(                                                                  \
        "    .pushsection .rodata, \"a\"\n"                                   \
        "    .hidden ngx_http_vsb_lua_" #name "\n"                            \
        "    .globl ngx_http_vsb_lua_" #name "\n"                             \
        "ngx_http_vsb_lua_" #name ":\n"                                       \
        "    .incbin \"" NGX_HTTP_VSB_LUA_DIR "/prelude.lua\"\n"              \
        "    .incbin \"" NGX_HTTP_VSB_LUA_DIR "/" #name ".lua\"\n"            \
        "    .byte 0\n"                                                       \
        "    .popsection\n"                                                   \
    );                                                                        \
    extern const char  ngx_http_vsb_lua_##name[]

#define NGX_HTTP_VSB_SCRIPT(name)  { #name, ngx_http_vsb_lua_##name, "" }


struct ngx_http_veto_sandbox_redis_s {
    ngx_http_veto_sandbox_redis_conf_t  conf;
    ngx_log_t                          *log;
    ngx_http_veto_sandbox_redis_link_t  link;       /* to the master */
    ngx_http_veto_sandbox_redis_state_e state;
    ngx_http_veto_sandbox_sentinel_t   *sentinel;   /* NULL: configured */
    ngx_str_t                           where;      /* the master, logs */
    u_char                              where_buf[NGX_SOCKADDR_STRLEN];
    ngx_str_t                           fence;      /* a failover leaves */
    u_char                              fence_buf[NGX_SOCKADDR_STRLEN];
    ngx_msec_t                          fence_until;
    ngx_event_t                         reconnect;  /* backoff timer */
    ngx_event_t                         handshake;  /* connect deadline */
    ngx_msec_t                          backoff;
    ngx_uint_t                          timeouts;   /* consecutive */
    ngx_uint_t                          generation; /* connections made */

    /* counters for health and metrics */
    ngx_uint_t                          n_commands;
    ngx_uint_t                          n_timeouts;
    ngx_uint_t                          n_failures;
    ngx_uint_t                          n_reconnects;
    ngx_uint_t                          n_unconfirmed;  /* WAIT too few */
};


/*
 * One call: where it goes, how long it may take and who gets the reply.
 * Every command of every store (approval, quota, revoke, audit) takes
 * one, followed by only what that command is about.
 */
typedef struct {
    ngx_http_veto_sandbox_redis_t          *rds;
    ngx_pool_t                             *pool;     /* keys, arguments */
    ngx_msec_t                              timeout;  /* 0: connect's */
    ngx_http_veto_sandbox_redis_handler_pt  handler;
    void                                   *data;     /* for handler */
    ngx_http_veto_sandbox_redis_cmd_t     **cmdp;     /* in flight, or NULL */
    unsigned                                durable:1; /* WAIT for replicas */
} ngx_http_veto_sandbox_redis_call_t;


/*
 * Every key lives under veto:{<tenant>}: (the tenant as a Redis Cluster
 * hash tag): veto:{<tenant>}:<what>, or with part
 * veto:{<tenant>}:<what>:<part> (an empty part leaves the ':').  The
 * caller checks tenant and part with ..._redis_key_part_valid().
 */
#define NGX_HTTP_VSB_KEY_PREFIX  "veto:"


/*
 * _sentinel.c: what the sentinels say goes to the connection through the
 * handlers it gave at create (_redis.c's): the master was found (host
 * NULL: no sentinel named one, retry later); a failover promotes a
 * replica of host:port (no more writes there for a while); +switch-master
 * was heard.
 */
typedef void (*ngx_http_veto_sandbox_sentinel_pt)(
    ngx_http_veto_sandbox_redis_t *rds, u_char *host, in_port_t port);

typedef struct {
    ngx_http_veto_sandbox_sentinel_pt   discovered;
    ngx_http_veto_sandbox_sentinel_pt   fence;
    ngx_http_veto_sandbox_sentinel_pt   switched;
} ngx_http_veto_sandbox_sentinel_handlers_t;


#endif /* _NGX_HTTP_VSB_REDIS_H_INCLUDED_ */
