/*
 * ngx_veto_sandbox_module: agent identity (JWT), policy and the sandbox
 * HTTP API in front of sandbox-helper.  Types shared by the module's
 * files; each file owns one concern:
 *
 *   _module.c     directives, conf create/merge, phases, variables
 *   _jwt.c        token verification, alg pinned by key
 *   _keys.c       key loading: PEM, HMAC secret, JWKS (RSA, EC P-256)
 *   _jwt_cache.c  shared memory cache of verified tokens
 *   _policy.c     the policy file and its evaluation
 *   _helper.c     non-blocking client to the helper (frames)
 *   _api.c        routing and the HTTP handlers
 *   _problem.c    problem+json responses and the error filter
 *   _decide.c     the Redis gate: revocation, approvals, quotas, audit
 *   _review.c     the approvals and audit APIs
 *   _redis.c, _approval.c, _quota.c, _revoke.c, _audit.c: the Redis layer
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


/* Statuses nginx 1.22 has no names for (or names differently). */
#define NGX_HTTP_VSB_UNPROCESSABLE          422
#define NGX_HTTP_VSB_TOO_MANY_REQUESTS      429
#define NGX_HTTP_VSB_INSUFFICIENT_STORAGE   507

#define NGX_HTTP_VSB_SCOPE_CREATE   0x01
#define NGX_HTTP_VSB_SCOPE_EXEC     0x02
#define NGX_HTTP_VSB_SCOPE_FILES    0x04
#define NGX_HTTP_VSB_SCOPE_REVIEW   0x08
#define NGX_HTTP_VSB_SCOPE_AUDIT    0x10
#define NGX_HTTP_VSB_NSCOPES        5

/* Actions an approval rule can name ("always"); bits of apr.always. */
#define NGX_HTTP_VSB_ACT_CREATE     0x01
#define NGX_HTTP_VSB_ACT_EXEC       0x02
#define NGX_HTTP_VSB_ACT_WRITE      0x04
#define NGX_HTTP_VSB_ACT_READ       0x08
#define NGX_HTTP_VSB_ACT_DELETE     0x10

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
    NGX_HTTP_VSB_NLIMITS
};

/* The first NGX_HTTP_VSB_NHELPER_LIMITS go to the helper's LIMITS. */
#define NGX_HTTP_VSB_NHELPER_LIMITS  6

extern const char  *ngx_http_veto_sandbox_limit_names[NGX_HTTP_VSB_NLIMITS];


typedef struct {
    ngx_str_t                    kid;       /* empty: only key, no kid */
    ngx_int_t                    alg;       /* jwt_alg_t */
    u_char                      *key;       /* PEM or secret, NUL ended */
    size_t                       key_len;
    ngx_str_t                    source;    /* file, for messages */
} ngx_http_veto_sandbox_key_t;


/* When a human must approve (policy "approvals"). */
typedef struct {
    ngx_uint_t                   always;          /* NGX_HTTP_VSB_ACT_* */
    ngx_array_t                 *argv;            /* ngx_str_t, fnmatch */
    ngx_array_t                 *profiles;        /* ngx_str_t */
    ngx_uint_t                   threshold;       /* 0: the directive's */
    ngx_msec_t                   ttl;             /* 0: the directive's */
    unsigned                     network:1;
    unsigned                     export:1;
} ngx_http_veto_sandbox_apr_rule_t;


/* Quotas (policy "quotas"); 0 means no limit. */
typedef struct {
    ngx_uint_t                   tenant_sandboxes;
    ngx_uint_t                   tenant_execs;    /* per minute */
    ngx_uint_t                   agent_sandboxes;
    ngx_uint_t                   agent_execs;     /* per minute */
} ngx_http_veto_sandbox_quota_rule_t;


/* One tenant's or agent's rule; unset fields are inherited from the
 * tenant by its agents. */
typedef struct {
    ngx_array_t                 *profiles;        /* ngx_str_t, NULL: any */
    ngx_str_t                    default_profile;
    uint64_t                     ceiling[NGX_HTTP_VSB_NLIMITS]; /* 0 unset */
    uint64_t                     def[NGX_HTTP_VSB_NLIMITS];     /* 0 unset */
    json_t                      *approvals;       /* borrowed */
    json_t                      *network;         /* reserved, borrowed */
    json_t                      *quotas;          /* borrowed */
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
    unsigned                     needs_redis:1; /* approvals or quotas */
} ngx_http_veto_sandbox_policy_t;


/* http level: the Redis connection and what lives in Redis. */
typedef struct {
    ngx_http_veto_sandbox_redis_conf_t  redis;
    ngx_flag_t                   enabled;       /* veto_sandbox_redis set */
    ngx_msec_t                   timeout;       /* per command */
    ngx_uint_t                   audit_maxlen;
    ngx_msec_t                   retention;     /* decided approvals */
} ngx_http_veto_sandbox_main_conf_t;


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

    ngx_http_veto_sandbox_policy_t *policy;

    ngx_addr_t                  *helper;
    ngx_msec_t                   connect_timeout;
    ngx_msec_t                   send_timeout;
    ngx_msec_t                   read_timeout;

    ngx_array_t                 *prefixes; /* ngx_str_t, this server only */

    ngx_msec_t                   approval_ttl;
    ngx_uint_t                   approval_threshold;
} ngx_http_veto_sandbox_srv_conf_t;


typedef struct ngx_http_veto_sandbox_ctx_s  ngx_http_veto_sandbox_ctx_t;

/* What runs once the Redis gate let a request through: NGX_DONE when it
 * will finish the request itself, else a response code to finalize. */
typedef ngx_int_t (*ngx_http_veto_sandbox_gate_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* Called once with the helper's reply (or an error); must finalize. */
typedef void (*ngx_http_veto_sandbox_reply_pt)(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

typedef struct {
    ngx_peer_connection_t        peer;
    ngx_chain_t                 *out;       /* still to send */
    u_char                       head[VSB_FRAME_HEADER_LEN];
    size_t                       head_got;
    u_char                      *in;        /* reply json + payload */
    size_t                       in_size;
    size_t                       in_got;

    /* the reply, once complete */
    json_t                      *json;      /* decref'd by a pool cleanup */
    u_char                      *payload;
    size_t                       payload_len;
    ngx_msec_t                   extra_read_ms; /* an exec's own timeout */
    ngx_int_t                    status;    /* NGX_OK or 503 / 502 */
    const char                  *error;     /* transport failure, if any */

    ngx_http_veto_sandbox_reply_pt handler;
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

    ngx_http_veto_sandbox_rule_t *rule;     /* effective, after identity */

    /* per-API-request state */
    ngx_uint_t                   op;
    ngx_str_t                    path;      /* files?path= */
    json_t                      *req;       /* helper request being built */
    ngx_http_veto_sandbox_helper_t helper;

    /* the error filter's replacement body */
    ngx_buf_t                   *problem;

    /* the Redis gate (_decide.c) */
    ngx_http_veto_sandbox_redis_cmd_t *rcmd;    /* in flight, or NULL */
    ngx_uint_t                   step;
    ngx_http_veto_sandbox_gate_pt next;         /* after the gate */
    ngx_chain_t                 *payload;       /* for the helper */
    size_t                       payload_len;
    ngx_str_t                    action;        /* sandbox.exec, ... */
    ngx_str_t                    request_id;    /* unique, audit */
    ngx_str_t                    approval;      /* Veto-Approval or new */
    ngx_str_t                    summary;       /* JSON text */
    ngx_str_t                    slot;          /* provisional quota id */
    ngx_uint_t                   threshold;
    ngx_msec_t                   ttl;
    json_t                      *body;          /* approve/deny body */
    ngx_str_t                    apr_id;        /* /v1/approvals/{id} */
    u_char                       hash[NGX_HTTP_VSB_HASH_HEX_LEN + 1];

    unsigned                     identified:1;
    unsigned                     needs_approval:1;
    unsigned                     slot_held:1;
    unsigned                     own_response:1;
    unsigned                     filter_error:1;
    unsigned                     audited:1;     /* a "denied" record */
};


extern ngx_module_t  ngx_http_veto_sandbox_module;

/* this worker's Redis connection; NULL when no veto_sandbox_redis */
extern ngx_http_veto_sandbox_redis_t  *ngx_http_veto_sandbox_rds;


/* _module.c */
ngx_http_veto_sandbox_ctx_t *ngx_http_veto_sandbox_get_ctx(
    ngx_http_request_t *r);
ngx_int_t ngx_http_veto_sandbox_protected(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf);
ngx_int_t ngx_http_veto_sandbox_identify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _jwt.c: NGX_OK with ctx identity set, or NGX_DECLINED with *reason. */
ngx_int_t ngx_http_veto_sandbox_jwt_verify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *token,
    ngx_http_veto_sandbox_ctx_t *ctx, const char **reason);
ngx_int_t ngx_http_veto_sandbox_jwt_alg(ngx_str_t *name);

/* _keys.c: config time only. */
char *ngx_http_veto_sandbox_keys_pem(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *kid, ngx_str_t *alg, ngx_str_t *file);
char *ngx_http_veto_sandbox_keys_jwks(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *file);

/* _jwt_cache.c */
char *ngx_http_veto_sandbox_cache_zone(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *value);
ngx_int_t ngx_http_veto_sandbox_cache_get(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx);
void ngx_http_veto_sandbox_cache_put(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *hash,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t until);

/* _policy.c */
ngx_http_veto_sandbox_policy_t *ngx_http_veto_sandbox_policy_load(
    ngx_conf_t *cf, ngx_str_t *file);
ngx_http_veto_sandbox_rule_t *ngx_http_veto_sandbox_policy_rule(
    ngx_http_veto_sandbox_policy_t *policy, ngx_str_t *tenant,
    ngx_str_t *agent);
ngx_int_t ngx_http_veto_sandbox_policy_profile(
    ngx_http_veto_sandbox_rule_t *rule, const char *profile);
ngx_uint_t ngx_http_veto_sandbox_policy_approval(
    ngx_http_veto_sandbox_rule_t *rule, ngx_uint_t action, json_t *argv,
    const char *profile, const char *network);

/* _helper.c */
ngx_int_t ngx_http_veto_sandbox_helper_send(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, json_t *req, ngx_chain_t *payload,
    size_t payload_len, ngx_http_veto_sandbox_reply_pt handler);

/* _api.c */
ngx_int_t ngx_http_veto_sandbox_api_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_veto_sandbox_forward(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
json_t *ngx_http_veto_sandbox_read_json(ngx_http_request_t *r,
    ngx_int_t *rc);
ngx_uint_t ngx_http_veto_sandbox_id_valid(u_char *id, size_t len);
ngx_int_t ngx_http_veto_sandbox_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* API ops, ctx->op */
enum {
    NGX_HTTP_VSB_OP_HEALTH = 1,
    NGX_HTTP_VSB_OP_LIST,
    NGX_HTTP_VSB_OP_CREATE,
    NGX_HTTP_VSB_OP_GET,
    NGX_HTTP_VSB_OP_DELETE,
    NGX_HTTP_VSB_OP_WRITE,
    NGX_HTTP_VSB_OP_READ,
    NGX_HTTP_VSB_OP_EXEC,
    NGX_HTTP_VSB_OP_APR_LIST,
    NGX_HTTP_VSB_OP_APR_GET,
    NGX_HTTP_VSB_OP_APR_APPROVE,
    NGX_HTTP_VSB_OP_APR_DENY,
    NGX_HTTP_VSB_OP_AUDIT
};

/* _decide.c */
ngx_int_t ngx_http_veto_sandbox_gate(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next);
void ngx_http_veto_sandbox_after(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_redis_problem(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_int_t rc);
void ngx_http_veto_sandbox_audit(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *outcome,
    const char *reason, ngx_str_t *reviewer, ngx_str_t *detail,
    ngx_uint_t status);
void ngx_http_veto_sandbox_audit_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status);
ngx_int_t ngx_http_veto_sandbox_redis_replied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply, ngx_int_t *rc);
void ngx_http_veto_sandbox_resume(ngx_http_request_t *r, ngx_int_t rc);
void ngx_http_veto_sandbox_waiting_call(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_redis_handler_pt handler);
ngx_int_t ngx_http_veto_sandbox_wait(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _review.c */
ngx_int_t ngx_http_veto_sandbox_review(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);

/* _problem.c */
/* type is "urn:veto-sandbox:problem:<code>"; extra (stolen) adds fields */
ngx_int_t ngx_http_veto_sandbox_problem(ngx_http_request_t *r,
    ngx_uint_t status, const char *code, const char *detail,
    json_t *extra);
ngx_int_t ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);
ngx_int_t ngx_http_veto_sandbox_header(ngx_http_request_t *r,
    const char *name, const char *value);
/* body is stolen */
ngx_int_t ngx_http_veto_sandbox_send_json(ngx_http_request_t *r,
    ngx_uint_t status, json_t *body);
ngx_int_t ngx_http_veto_sandbox_send(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, u_char *data, size_t len);
ngx_int_t ngx_http_veto_sandbox_filter_init(ngx_conf_t *cf);
json_t *ngx_http_veto_sandbox_json_ngx_str(ngx_str_t *s);

#endif /* _NGX_HTTP_VSB_MODULE_H_INCLUDED_ */
