/*
 * ngx_veto_sandbox_module: agent identity (JWT), policy and the sandbox
 * HTTP API in front of sandbox-helper.  The types its files share.
 *
 * The files stand on five floors, bottom up, each with its header, which
 * says what the floor is, lists its files with their concerns and
 * declares what they offer the floors above:
 *
 *   ngx_http_veto_sandbox_base.h       util and the request's context
 *   ngx_http_veto_sandbox_transport.h  the helper client, Redis, webhooks
 *   ngx_http_veto_sandbox_stores.h     what is kept, and the pure policy
 *   ngx_http_veto_sandbox_pipeline.h   a request's way: identity, gate,
 *                                      helper call, record, reply
 *   ngx_http_veto_sandbox_faces.h      REST op groups, MCP, review,
 *                                      admin, metrics, registration
 *
 * A file includes its floor's header (which includes the one below, and
 * this one at the bottom) and uses nothing of a higher floor; where a
 * lower floor must tell a higher one, the higher one sets a hook at
 * configuration.  scripts/check-floors checks both, in CI.
 *
 * The webhooks (_notify.c, _notify_send.c, _event.c) are a second module
 * of the same object, called by the gate only.
 *
 * docs/adding-an-endpoint.md walks through adding an operation.
 */

#ifndef _NGX_HTTP_VSB_MODULE_H_INCLUDED_
#define _NGX_HTTP_VSB_MODULE_H_INCLUDED_

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "vsb_protocol.h"
#include "ngx_http_veto_sandbox_redis.h"
#include "ngx_http_veto_sandbox_hash.h"


#define NGX_HTTP_VSB_MAX_JSON_BODY  (1024 * 1024)

/* the longest an exec is waited for beyond the read timeout: the
 * helper's absolute timeout ceiling, for a helper that does not say */
#define NGX_HTTP_VSB_MAX_WAIT_S     (24 * 3600)

/* Statuses nginx 1.22 has no names for (or names differently). */
#define NGX_HTTP_VSB_NOT_ACCEPTABLE         406
#define NGX_HTTP_VSB_GONE                   410
#define NGX_HTTP_VSB_UNPROCESSABLE          422
#define NGX_HTTP_VSB_TOO_MANY_REQUESTS      429
#define NGX_HTTP_VSB_INSUFFICIENT_STORAGE   507

#define NGX_HTTP_VSB_SCOPE_CREATE   0x01
#define NGX_HTTP_VSB_SCOPE_EXEC     0x02
#define NGX_HTTP_VSB_SCOPE_FILES    0x04
#define NGX_HTTP_VSB_SCOPE_REVIEW   0x08
#define NGX_HTTP_VSB_SCOPE_AUDIT    0x10
#define NGX_HTTP_VSB_SCOPE_NETWORK  0x20
#define NGX_HTTP_VSB_SCOPE_ADMIN    0x40
#define NGX_HTTP_VSB_NSCOPES        7
/* an op no token is asked for (the liveness probe) */
#define NGX_HTTP_VSB_PUBLIC         0x8000

/* Approval kinds: an op table row's (its name is the action a policy's
 * "always" names); bits of apr.always.  What a kind means beyond
 * "always" (argv, profiles, export) is _policy_match.c's. */
#define NGX_HTTP_VSB_ACT_CREATE     0x01
#define NGX_HTTP_VSB_ACT_EXEC       0x02
#define NGX_HTTP_VSB_ACT_WRITE      0x04
#define NGX_HTTP_VSB_ACT_READ       0x08
#define NGX_HTTP_VSB_ACT_DELETE     0x10
#define NGX_HTTP_VSB_ACT_UPDATE     0x20

/* What an op's request body is (its op table row). */
#define NGX_HTTP_VSB_BODY_NONE      0     /* discarded */
#define NGX_HTTP_VSB_BODY_JSON      1     /* a JSON object, at most 1 MiB */
#define NGX_HTTP_VSB_BODY_FILE      2     /* raw bytes, the file ceiling */
#define NGX_HTTP_VSB_BODY_ARCHIVE   3     /* raw bytes, the archive ceiling */

/* Which quota an op counts against (its op table row). */
#define NGX_HTTP_VSB_QUOTA_NONE     0
#define NGX_HTTP_VSB_QUOTA_SANDBOXES 1    /* concurrent sandboxes */
#define NGX_HTTP_VSB_QUOTA_EXECS    2     /* execs per minute */

/* What the pipeline must know of an op beyond its pieces (its op table
 * row's flags), so that no file outside the op's group tells one op from
 * another by its name. */
#define NGX_HTTP_VSB_ROW_STATE      0x01  /* answers with a sandbox's state:
                                             an ended sandbox is its answer
                                             (_fence.c, _where.c), not 410 */
#define NGX_HTTP_VSB_ROW_MAKES      0x02  /* makes a sandbox: its body's
                                             from_snapshot routes it
                                             (_where.c); the helper's
                                             profile and credentials errors
                                             name top-level fields
                                             (_reply.c) */
#define NGX_HTTP_VSB_ROW_SNAPSHOT   0x04  /* names a snapshot (its request's
                                             "snapshot"): routed to the host
                                             holding it (_where.c) */

/* Limits the policy knows; indexes into the arrays below. */
enum {
    NGX_HTTP_VSB_L_MEMORY_MB = 0,
    NGX_HTTP_VSB_L_PIDS,
    NGX_HTTP_VSB_L_CPU_PERCENT,
    NGX_HTTP_VSB_L_DISK_MB,
    NGX_HTTP_VSB_L_TIMEOUT_S,
    NGX_HTTP_VSB_L_OUTPUT_BYTES,
    NGX_HTTP_VSB_L_TTL_S,           /* not in "limits": the create's ttl_s */
    NGX_HTTP_VSB_L_FILE_BYTES,      /* not in "limits": per written file */
    NGX_HTTP_VSB_L_ARCHIVE_BYTES,   /* not in "limits": per uploaded archive */
    NGX_HTTP_VSB_L_IDLE_S,          /* not in "limits": the create's idle_s */
    NGX_HTTP_VSB_L_SNAPSHOT_TTL_S,  /* a snapshot's ttl_s (_snapshots.c) */
    NGX_HTTP_VSB_L_SNAPSHOTS,       /* a tenant's snapshots, their count */
    NGX_HTTP_VSB_L_SNAPSHOT_BYTES,  /* and their bytes */
    NGX_HTTP_VSB_NLIMITS
};

/* The first NGX_HTTP_VSB_NHELPER_LIMITS go to the helper's LIMITS. */
#define NGX_HTTP_VSB_NHELPER_LIMITS  6

/* an archive upload's bound when the policy sets no archive_bytes: the
 * helper's default max_archive_bytes */
#define NGX_HTTP_VSB_ARCHIVE_BYTES  (256 * 1024 * 1024)


/* JWS algorithms a key may be pinned to (RFC 7518); 0 is none. */
enum {
    NGX_HTTP_VSB_ALG_INVAL = 0,
    NGX_HTTP_VSB_ALG_HS256,
    NGX_HTTP_VSB_ALG_HS384,
    NGX_HTTP_VSB_ALG_HS512,
    NGX_HTTP_VSB_ALG_RS256,
    NGX_HTTP_VSB_ALG_RS384,
    NGX_HTTP_VSB_ALG_RS512,
    NGX_HTTP_VSB_ALG_ES256,
    NGX_HTTP_VSB_ALG_ES384,
    NGX_HTTP_VSB_ALG_ES512
};

/* the longest JWS signature: RSA 16384 bits; ES512 is 132 bytes */
#define NGX_HTTP_VSB_MAX_SIG_LEN  2048

/* A verification key, decoded once at configuration time (_keys.c). */
typedef struct {
    ngx_str_t                    kid;       /* empty: only key, no kid */
    ngx_int_t                    alg;       /* NGX_HTTP_VSB_ALG_* */
    struct evp_md_st            *md;        /* the alg's digest, fetched */
    struct evp_pkey_st          *pkey;      /* RS*, ES*; NULL for HS* */
    struct evp_pkey_ctx_st      *pctx;      /* pkey's, verify_init done */
    u_char                      *secret;    /* HS* */
    size_t                       secret_len;
    unsigned                     ec:1;      /* ES*: R || S signatures */
    ngx_str_t                    source;    /* file, for messages */
} ngx_http_veto_sandbox_key_t;


/* When a human must approve (policy "approvals"). */
typedef struct {
    ngx_uint_t                   always;          /* NGX_HTTP_VSB_ACT_* */
    ngx_array_t                 *argv;            /* ngx_str_t, fnmatch */
    ngx_array_t                 *profiles;        /* ngx_str_t */
    ngx_uint_t                   threshold;       /* 0: the directive's */
    ngx_msec_t                   ttl;             /* 0: the directive's */
    ngx_uint_t                   max_open;        /* an agent's pending;
                                                     0: a quarter of
                                                     approval_max */
    ngx_uint_t                   irreversible;    /* NGX_HTTP_VSB_ACT_* */
    ngx_array_t                 *irreversible_argv; /* ngx_str_t, fnmatch */
    unsigned                     network:1;
    unsigned                     export:1;
} ngx_http_veto_sandbox_apr_rule_t;


/* What a create or an exec setting an env name that is not inert gets
 * (policy "env": "on_dangerous"; the inert names: "inert", "also_inert"). */
#define NGX_HTTP_VSB_ENV_ALLOW      0     /* shown to reviewers, that is all */
#define NGX_HTTP_VSB_ENV_APPROVE    1     /* a human must approve */
#define NGX_HTTP_VSB_ENV_REFUSE     2     /* 403 env_not_allowed */


/* Quotas (policy "quotas"); 0 means no limit. */
typedef struct {
    ngx_uint_t                   tenant_sandboxes;
    ngx_uint_t                   tenant_execs;    /* per minute */
    ngx_uint_t                   agent_sandboxes;
    ngx_uint_t                   agent_execs;     /* per minute */
} ngx_http_veto_sandbox_quota_rule_t;


/* The policy's "network" section (_network.c); an agent inherits each
 * field its own section does not set. */
typedef struct {
    ngx_array_t                 *allow;     /* eg_allow_entry_t: the ceiling;
                                               NULL: nothing */
    ngx_array_t                 *ask;       /* eg_allow_entry_t: what a human
                                               may grant; NULL: nothing */
    json_t                      *ask_json;  /* ask as written, to the helper;
                                               borrowed */
    json_t                      *def;       /* what a create without
                                               "network" gets: NULL "none",
                                               else entries; borrowed */
} ngx_http_veto_sandbox_net_rule_t;


/* The policy's "credentials" section (_network.c): the operator's
 * credentials (by name; the helper's bindings set their hosts) an agent
 * may attach on its own (allow) and those a human must approve (ask);
 * an agent inherits each field its own section does not set.  Borrowed
 * arrays of names, NULL: none. */
typedef struct {
    json_t                      *allow;
    json_t                      *ask;
    ngx_array_t                 *agent_hosts; /* eg_allow_entry_t: hosts an
                                               agent may bind a secret of
                                               its own to; NULL: none */
} ngx_http_veto_sandbox_cred_rule_t;


/* One tenant's or agent's rule; unset fields are inherited from the
 * tenant by its agents. */
typedef struct {
    ngx_array_t                 *profiles;        /* ngx_str_t, NULL: any */
    ngx_str_t                    default_profile;
    uint64_t                     ceiling[NGX_HTTP_VSB_NLIMITS]; /* 0 unset */
    uint64_t                     def[NGX_HTTP_VSB_NLIMITS];     /* 0 unset */
    uint64_t                     ask[NGX_HTTP_VSB_NLIMITS];     /* above the
                                                   ceiling up to this, a
                                                   human decides; 0 unset */
    json_t                      *approvals;       /* borrowed */
    ngx_http_veto_sandbox_net_rule_t    net;
    ngx_http_veto_sandbox_cred_rule_t   cred;
    json_t                      *quotas;          /* borrowed */
    ngx_array_t                 *env_dangerous;   /* ngx_str_t, fnmatch:
                                                     never inert */
    ngx_array_t                 *env_inert;       /* ngx_str_t, fnmatch;
                                                     NULL: the default */
    ngx_array_t                 *env_also_inert;  /* ngx_str_t, fnmatch */
    ngx_uint_t                   env_mode;        /* NGX_HTTP_VSB_ENV_* */
    ngx_http_veto_sandbox_apr_rule_t    apr;
    ngx_http_veto_sandbox_quota_rule_t  quota;
} ngx_http_veto_sandbox_rule_t;


typedef struct {
    ngx_str_t                    name;
    ngx_http_veto_sandbox_rule_t rule;
    ngx_array_t                 *agents;   /* ngx_http_veto_sandbox_agent_t */
} ngx_http_veto_sandbox_tenant_t;


typedef struct {
    ngx_str_t                    name;
    ngx_http_veto_sandbox_rule_t rule;     /* merged over the tenant's */
} ngx_http_veto_sandbox_agent_t;


typedef struct {
    ngx_str_t                    file;
    json_t                      *doc;      /* owns the reserved sections */
    ngx_array_t                 *tenants;  /* ngx_http_veto_sandbox_tenant_t */
    unsigned                     needs_redis:1; /* approvals, quotas or
                                                   askable hosts */
} ngx_http_veto_sandbox_policy_t;


/* http level: the Redis connection and what lives in Redis. */
typedef struct {
    ngx_http_veto_sandbox_redis_conf_t  redis;
    ngx_flag_t                   enabled;       /* veto_sandbox_redis set */
    ngx_msec_t                   timeout;       /* per command */
    ngx_uint_t                   audit_maxlen;
    size_t                       audit_bytes;   /* per tenant */
    ngx_msec_t                   audit_max_age; /* 0: no age bound */
    ngx_msec_t                   retention;     /* decided approvals */
    ngx_uint_t                   approval_max;  /* records per tenant */
    ngx_shm_zone_t              *metrics_zone;  /* NULL: no metrics */
    ngx_msec_t                   ended_poll;    /* 0: the gateway does not
                                                   ask for ENDED records */
    ngx_str_t                    host;          /* this gateway host's name
                                                   in ownership records;
                                                   default: the hostname */
    ngx_str_t                    host_addr;     /* host:port other gateways
                                                   reach; empty: one host,
                                                   no lease */
    ngx_msec_t                   host_lease;
    ngx_msec_t                   host_grace;    /* after a lease expired */
    ngx_str_t                    peer_key;      /* shared by the hosts */
    ngx_str_t                    peer_pass;     /* @location: to a peer */
    ngx_array_t                 *jwt_pools;     /* the thread pools JWT
                                                   checks use and their
                                                   nice= (_jwt.c) */
} ngx_http_veto_sandbox_main_conf_t;


/* The MCP endpoint of a server (veto_sandbox_mcp*, _mcp*.c). */
typedef struct {
    ngx_flag_t                   enable;
    ngx_shm_zone_t              *sessions;  /* veto_sandbox_mcp_sessions */
    ngx_str_t                    resource;  /* its canonical URI; empty:
                                               scheme://Host/v1/mcp */
    size_t                       max_body;
    size_t                       reply_bytes;
    ngx_array_t                 *origins;   /* ngx_str_t, allowed Origin */
} ngx_http_veto_sandbox_mcp_conf_t;


typedef struct {
    ngx_array_t                 *keys;     /* ngx_http_veto_sandbox_key_t */
    ngx_str_t                    issuer;
    ngx_str_t                    audience;
    time_t                       leeway;
    ngx_str_t                    tenant_claim;
    ngx_str_t                    scope_claim;
    size_t                       max_token_size;
    ngx_str_t                    scope[NGX_HTTP_VSB_NSCOPES];

    ngx_shm_zone_t              *cache_zone;
    uint32_t                     epoch;    /* per configuration load */
#if (NGX_THREADS)
    ngx_thread_pool_t           *jwt_pool; /* veto_sandbox_jwt_thread_pool;
                                              NULL: verify inline */
#endif
    ngx_int_t                    jwt_nice; /* its nice=, 0..19 */
    void                        *jwt_hdrs; /* this worker's known headers
                                              (_jwt.c) */

    ngx_http_veto_sandbox_policy_t *policy;

    ngx_addr_t                  *helper;
    ngx_msec_t                   connect_timeout;
    ngx_msec_t                   send_timeout;
    ngx_msec_t                   read_timeout;

    ngx_array_t                 *prefixes; /* ngx_str_t, this server only */
    ngx_array_t                 *metrics;  /* ngx_str_t: its metrics
                                              locations, this server only */
    ngx_msec_t                   metrics_timeout; /* a scrape's helper wait */
    ngx_array_t                 *api_locs; /* ngx_http_core_loc_conf_t *
                                              of those prefixes */

    ngx_msec_t                   approval_ttl;
    ngx_uint_t                   approval_threshold;
    ngx_flag_t                   approval_credentials; /* 1: an inline
                                              credential-looking value may
                                              be shown to reviewers; 0:
                                              422 credential_inline */

    ngx_http_veto_sandbox_mcp_conf_t  mcp;
} ngx_http_veto_sandbox_srv_conf_t;


/*
 * The request an op is asked as: what its builder, the approval's
 * canonical hash and the record of a refusal read, never r itself.  For
 * the REST API it is r's own (ngx_http_veto_sandbox_input_rest()); a
 * tools/call of the MCP endpoint sets its REST twin here (_mcp_tools.c),
 * so that both run the same op table row the same way.
 */
typedef struct {
    ngx_str_t                    method_name;   /* "POST" */
    ngx_str_t                    uri;           /* decoded, as r->uri */
    ngx_str_t                    args;          /* raw, as r->args */
    ngx_chain_t                 *body;          /* NULL: none */
    ngx_str_t                   *content_type;  /* NULL: none */
    ngx_str_t                    approval;      /* Veto-Approval */
    unsigned                     has_approval:1;
    unsigned                     set:1;
} ngx_http_veto_sandbox_input_t;


/* ctx->step: where a request is in the Redis gate (_gate.c), and that
 * its outcome went on record (_record.c) */
enum {
    NGX_HTTP_VSB_STEP_REVOKE = 1,
    NGX_HTTP_VSB_STEP_APPROVAL,
    NGX_HTTP_VSB_STEP_APR_CREATE,
    NGX_HTTP_VSB_STEP_APR_CONSUME,
    NGX_HTTP_VSB_STEP_QUOTA,
    NGX_HTTP_VSB_STEP_WHERE,         /* the sandbox's owner (hosts) */
    NGX_HTTP_VSB_STEP_LEASE,         /* its owner's lease (hosts) */
    NGX_HTTP_VSB_STEP_PEER,          /* a forwarded request's nonce */
    NGX_HTTP_VSB_STEP_PLACE,         /* a create: here, or a host with room */
    NGX_HTTP_VSB_STEP_SNAP,          /* the host holding a snapshot (hosts) */
    NGX_HTTP_VSB_STEP_EPOCH,         /* asking the helper its epoch */
    NGX_HTTP_VSB_STEP_SANDBOX,       /* reading an exec's sandbox env */
    NGX_HTTP_VSB_STEP_NEXT,
    NGX_HTTP_VSB_STEP_AFTER          /* after() ran */
};


typedef struct ngx_http_veto_sandbox_ctx_s  ngx_http_veto_sandbox_ctx_t;

/* a tools/call in progress (_mcp.h) */
typedef struct ngx_http_veto_sandbox_mcp_call_s
    ngx_http_veto_sandbox_mcp_call_t;

/* Where an op's response goes instead of the client (ctx->sink): what
 * ngx_http_veto_sandbox_send() would have sent, with the headers pushed
 * for it still in r->headers_out.  Returns what send() returns. */
typedef ngx_int_t (*ngx_http_veto_sandbox_sink_pt)(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, ngx_chain_t *body, size_t len);

/* What runs once the Redis gate let a request through: NGX_DONE when it
 * will finish the request itself, else a response code to finalize. */
typedef ngx_int_t (*ngx_http_veto_sandbox_gate_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* Called once with the helper's reply (or an error); must finalize. */
typedef void (*ngx_http_veto_sandbox_reply_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* Before the gate: validates the request and builds what run() needs
 * (ctx->req, ctx->payload).  NGX_DECLINED: built, go on; anything else
 * answered the request (a refusal) or failed: the code to finalize. */
typedef ngx_int_t (*ngx_http_veto_sandbox_build_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* The helper's successful reply (ctx->helper) as HTTP: the code to
 * finalize the request with. */
typedef ngx_int_t (*ngx_http_veto_sandbox_map_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* What is kept once the helper answered (ok) or failed (error names
 * how): audit records, quota bookkeeping. */
typedef void (*ngx_http_veto_sandbox_record_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t ok, const char *error);

/* A Redis reply the request waited for, as HTTP (ops answered from
 * Redis): the code to finalize the request with. */
typedef ngx_int_t (*ngx_http_veto_sandbox_answer_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply);


/*
 * One operation of the API: a row of the op table (_ops.c), made with
 * ngx_http_vsb_op() so that a row missing a piece does not compile, and
 * checked at configuration time (ngx_http_veto_sandbox_ops_init()) so
 * that a piece that cannot work fails "nginx -t".  The request goes
 * route -> identity and scope -> body -> build -> gate -> run -> (helper
 * ops) reply and record.
 */
typedef struct {
    ngx_str_t                    name;      /* the action: audit, approvals,
                                               policy "always" */
    ngx_uint_t                   methods;   /* NGX_HTTP_GET|NGX_HTTP_HEAD */
    const char                  *path;      /* "/v1/sandboxes/{id}/exec" */
    ngx_uint_t                   scopes;    /* any one; NGX_HTTP_VSB_PUBLIC:
                                               no token, no gate */
    ngx_uint_t                   approval;  /* NGX_HTTP_VSB_ACT_*: the policy
                                               may ask a human; 0: never */
    ngx_uint_t                   quota;     /* NGX_HTTP_VSB_QUOTA_* */
    ngx_uint_t                   body;      /* NGX_HTTP_VSB_BODY_* */
    ngx_uint_t                   flags;     /* NGX_HTTP_VSB_ROW_* */
    const char                  *helper;    /* VSB_OP_* run() forwards, or
                                               NULL: run() answers itself */
    ngx_http_veto_sandbox_build_pt   build; /* before the gate */
    ngx_http_veto_sandbox_gate_pt    run;   /* after the gate */
    ngx_http_veto_sandbox_map_pt     reply; /* helper ops: the reply */
    ngx_http_veto_sandbox_record_pt  record; /* helper ops: what is kept */
} ngx_http_veto_sandbox_op_t;

/* a WWW-Authenticate challenge's extra parameters for r, each with its
 * leading ", " and NUL terminated: "" for none; NULL: no memory */
typedef u_char *(*ngx_http_veto_sandbox_challenge_pt)(ngx_http_request_t *r);

/* the op of r's method and URI, as ngx_http_veto_sandbox_op_find() */
typedef ngx_http_veto_sandbox_op_t *(*ngx_http_veto_sandbox_op_find_pt)(
    ngx_http_request_t *r, ngx_uint_t *allow, ngx_str_t *sandbox,
    ngx_str_t *approval);

#ifndef NGX_HTTP_VSB_OPS_DATA_ONLY

#define ngx_http_vsb_op(name, methods, path, scopes, approval, quota, body,   \
                        flags, helper, build, run, reply, record)             \
    { ngx_string(name), methods, path, scopes, approval, quota, body, flags,  \
      helper, build, run, reply, record }

#else

/* the unit tests and fuzz targets: the rows' data (names, paths, kinds)
 * without the code they name, which those builds do not link */
#define ngx_http_vsb_op(name, methods, path, scopes, approval, quota, body,   \
                        flags, helper, build, run, reply, record)             \
    { ngx_string(name), methods, path, scopes, approval, quota, body, flags,  \
      helper, NULL, NULL, NULL, NULL }

#endif

/* the row that ends a group's table */
#define ngx_http_vsb_null_op                                                  \
    { ngx_null_string, 0, NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL }

typedef struct ngx_http_veto_sandbox_stream_s  ngx_http_veto_sandbox_stream_t;

/* An event frame of a streaming request (vsb_protocol.h, "Events"):
 * NGX_OK: go on reading; NGX_AGAIN: taken, but stop reading until
 * ngx_http_veto_sandbox_helper_resume(); NGX_ERROR: give up (the
 * connection is closed, the handler is called with h->status). */
typedef ngx_int_t (*ngx_http_veto_sandbox_event_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *event, u_char *data,
    size_t len);

typedef struct ngx_http_vsb_pipe_req_s  ngx_http_vsb_pipe_req_t;

typedef struct {
    ngx_peer_connection_t        peer;
    ngx_http_vsb_pipe_req_t     *pipe;      /* on the worker's pipe
                                               (_pipe.c), or NULL */
    ngx_chain_t                 *request;   /* the whole frame */
    ngx_chain_t                 *out;       /* still to send */
    off_t                        sent_before; /* c->sent before it */
    unsigned                     reused:1;  /* a kept connection */
    unsigned                     retried:1;
    unsigned                     send_failed:1;
    u_char                       head[VSB_FRAME_HEADER_LEN];
    size_t                       head_got;
    u_char                      *in;        /* reply json + payload */
    size_t                       in_size;
    size_t                       in_got;
    u_char                      *ev;        /* an event frame, reused */
    u_char                      *ahead;     /* read with a frame's header */
    size_t                       ahead_pos;
    size_t                       ahead_len;
    unsigned                     drained:1; /* the last recv() was short */

    /* the reply, once complete */
    json_t                      *json;      /* decref'd by a pool cleanup */
    u_char                      *payload;
    size_t                       payload_len;
    ngx_msec_t                   extra_read_ms; /* an exec's own timeout */
    uint64_t                     start_us;  /* sent (metrics) */
    const char                  *op;        /* its "op" (metrics) */
    unsigned                     ask_timeout:1; /* ... is the helper's: ask
                                                   its ceiling first (ping) */
    unsigned                     sent:1;    /* the helper has it all */
    ngx_int_t                    status;    /* NGX_OK or 503 / 502 */
    const char                  *error;     /* transport failure, if any */

    ngx_http_veto_sandbox_reply_pt handler;
    ngx_http_veto_sandbox_event_pt event;   /* NULL: events are bad frames */
    unsigned                     paused:1;  /* event handler said NGX_AGAIN */
    unsigned                     stream_payload:1; /* the payload may be up
                                                      to VSB_MAX_STREAM_PAYLOAD
                                                      (extract_archive) */
    /* what was sent, for the epoch fence's one retry (_fence.c) */
    json_t                      *sent_req;
    ngx_chain_t                 *sent_payload;
    size_t                       sent_payload_len;
} ngx_http_veto_sandbox_helper_t;


struct ngx_http_veto_sandbox_ctx_s {
    ngx_str_t                    agent;
    ngx_str_t                    tenant;
    ngx_str_t                    jti;
    time_t                       iat;       /* -1: no iat claim */
    ngx_uint_t                   scopes;
    ngx_str_t                    decision;  /* $veto_decision */
    ngx_str_t                    sandbox;   /* $veto_sandbox */
    const char                  *reason;    /* why a token was refused */
    const char                  *jwt_reason; /* a verification done in a
                                                thread: its refusal */
    ngx_int_t                    jwt_rc;    /* and its outcome */

    ngx_http_veto_sandbox_rule_t *rule;     /* effective, after identity */

    /* per-API-request state */
    ngx_http_veto_sandbox_op_t  *op;        /* NULL: not routed (yet) */
    ngx_http_veto_sandbox_input_t in;       /* the request the op sees */
    ngx_http_veto_sandbox_sink_pt sink;     /* NULL: respond to r */
    ngx_http_veto_sandbox_mcp_call_t *mcp;  /* a tools/call's state */
    ngx_str_t                    path;      /* files?path= */
    ngx_str_t                    exec;      /* execs/{exec} */
    ngx_http_veto_sandbox_stream_t *stream; /* a streamed reply (_stream.c),
                                               or NULL */
    json_t                      *req;       /* helper request being built */
    json_t                      *net_hosts; /* the entries this request
                                               grants (create, PATCH) */
    json_t                      *net_ask;   /* those of them beyond the
                                               policy's ceiling: a human must
                                               approve; NULL: none */
    json_t                      *cred_names; /* credentials this request
                                               attaches (create, PATCH) */
    json_t                      *cred_ask;  /* those of them a human must
                                               approve; NULL: none */
    json_t                      *cred_detach; /* credentials this request
                                               detaches (PATCH) */
    json_t                      *secret;    /* an agent's own secret this
                                               request attaches (PATCH), the
                                               body's: records take name,
                                               host and header, never the
                                               whole (it holds the value) */
    ngx_http_veto_sandbox_helper_t helper;

    /* the error filter's replacement body */
    ngx_buf_t                   *problem;

    void                        *scrape;    /* a metrics scrape (_metrics.c) */

    /* the Redis gate (_gate.c) */
    ngx_http_veto_sandbox_redis_cmd_t *rcmd;    /* in flight, or NULL */
    ngx_uint_t                   step;
    ngx_http_veto_sandbox_gate_pt next;         /* after the gate */
    ngx_http_veto_sandbox_answer_pt answer;     /* a review's reply */
    ngx_chain_t                 *payload;       /* for the helper */
    size_t                       payload_len;
    ngx_str_t                    action;        /* sandbox.exec, ... */
    ngx_str_t                    request_id;    /* unique, audit */
    ngx_str_t                    approval;      /* Veto-Approval or new */
    ngx_str_t                    summary;       /* JSON text: what a
                                                   reviewer sees, exact */
    ngx_str_t                    summary_record; /* JSON text: the
                                                   redacted one, for the
                                                   audit trail */
    ngx_str_t                    slot;          /* provisional quota id */
    ngx_uint_t                   threshold;
    ngx_msec_t                   ttl;
    json_t                      *body;          /* approve/deny body */
    ngx_str_t                    apr_id;        /* /v1/approvals/{id} */
    u_char                       hash[NGX_HTTP_VSB_HASH_HEX_LEN + 1];

    /* an exec's sandbox, from its ownership record (approvals) */
    json_t                      *sbx_env;       /* its env, whole */
    ngx_uint_t                   sbx_env_dropped;
    u_char                       sbx_env_sha256[NGX_HTTP_VSB_HASH_HEX_LEN
                                                + 1];
    /* this gateway's helper run, asked before a create counts */
    ngx_str_t                    epoch;
    ngx_http_veto_sandbox_gate_pt epoch_next;   /* once it is known */
    /* the sandbox's owner when another host holds it (_hosts.c) */
    ngx_str_t                    owner_host;
    ngx_addr_t                  *peer_addr;     /* routed there (_peer.c) */
    ngx_str_t                    peer_nonce;    /* a forwarded request's */
    ngx_str_t                    peer_slot;     /* its provisional slot */
    ngx_str_t                    peer_epoch;    /* the owner's helper run,
                                                   as its record names it:
                                                   signed along (the fence
                                                   on the owner) */
    /* the epoch fence (_fence.c): the helper run the ownership record
     * names, the one the helper says it is, the op's reply handler while
     * the fence asks the helper itself */
    ngx_str_t                    own_epoch;
    ngx_str_t                    helper_epoch;
    ngx_http_veto_sandbox_reply_pt fence_handler;
    /* an ended sandbox's routing record (_where.c): how it ended, when */
    ngx_str_t                    route_reason;
    time_t                       route_ended_at;

    unsigned                     identified:1;
    unsigned                     jwt_pending:1; /* a thread verifies */
    unsigned                     jwt_done:1;    /* jwt_rc, jwt_reason */
    unsigned                     needs_approval:1;
    unsigned                     limit_ask:1;   /* a lifetime past its
                                                   ceiling, askable */
    unsigned                     lifetime:1;    /* PATCH of the lifetime */
    unsigned                     slot_held:1;
    unsigned                     own_response:1;
    unsigned                     filter_error:1;
    unsigned                     audited:1;     /* a "denied" record */
    unsigned                     sbx_known:1;   /* sbx_env* are set */
    unsigned                     epoch_known:1; /* epoch is set */
    unsigned                     peer_route:1;  /* to the owner's host */
    unsigned                     fence_tried:1; /* one retry, no more */
    unsigned                     fence_probe:1; /* asked without epoch */
    unsigned                     route_local:1; /* ended: answered from
                                                   its routing record */
    unsigned                     snap_held:1;   /* owner_host holds the
                                                   request's snapshot */
    unsigned                     file_body:1;   /* the URI's op takes a
                                                   file (POST_READ) */
};


extern ngx_module_t  ngx_http_veto_sandbox_module;



#endif /* _NGX_HTTP_VSB_MODULE_H_INCLUDED_ */
