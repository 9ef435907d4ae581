/*
 * libFuzzer target for the module's parsers of hostile input: the policy
 * file (read by "nginx -t", so a bad one must be refused, never crash the
 * master), and what an agent sends: the JSON bodies of create, exec and
 * PATCH (network entries), the ?path= query of the files ops, the
 * queries of the archive ops and of a background exec's output, through
 * the real builders of ngx_http_veto_sandbox_request.c, _sandboxes.c,
 * _execs.c and _files.c; and, with a first byte of 0xff, what Redis Sentinel sends
 * a worker (an address must be numeric, +switch-master must name this
 * master); with 0xfe, the Veto-Peer-Credential header another gateway
 * host sends (strict fields, and no signature but the key's own holds).
 *
 * The first byte picks the parser, the rest is its input.  What the
 * builders answer goes to a stand-in for the module's responses (a
 * refusal is recorded, not sent); what they build is checked against
 * the policy: a request that would reach the helper names its op, the
 * caller from the token, a limit within its ceiling (a lifetime past it
 * only up to the askable ceiling, with a human asked), a path in the
 * workspace; and what a reviewer would see of it (its summary) is within
 * its byte bound, listing the hosts it grants as they are, a cut list
 * counted.
 * Anything else aborts, and libFuzzer reports it.  nginx's core calls
 * come from t/unit/ngx_core_stub.c.
 *
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_policy.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_policy_approvals.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_policy_match.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_request.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_files.c:ngx_http_veto_sandbox_(path|path_check|req_path|build_read|build_write)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_request_fields.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_request_network.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_sandboxes.c:ngx_http_veto_sandbox_build_(list|create|update)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_env.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_summary.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_peer_cred.c
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_network.h"
#include "ngx_http_veto_sandbox_summary.h"
#include "ngx_http_veto_sandbox_hash.h"
#include "ngx_http_veto_sandbox_sentinel.h"

#include <arpa/inet.h>

#include <sys/mman.h>

#include "ngx_core_stub.h"
#include "fuzz_module_file.h"

/* the sandboxes, exec and files groups' builders (their files' code, without
 * their MCP tools) */
#define NGX_HTTP_VSB_OPS_CODE
#include "ngx_http_veto_sandbox_sandboxes.c"
#include "ngx_http_veto_sandbox_execs.c"
#include "ngx_http_veto_sandbox_files.c"


enum {
    FUZZ_POLICY = 0,
    FUZZ_CREATE,
    FUZZ_EXEC,
    FUZZ_READ,
    FUZZ_WRITE,
    FUZZ_UPDATE,
    FUZZ_EXEC_OUTPUT,
    FUZZ_ARCHIVE_IN,
    FUZZ_ARCHIVE_OUT,
    FUZZ_NMODES
};

/* outside the modes (and their ndjson variants, mode + FUZZ_NMODES) */
#define FUZZ_SENTINEL  0xff
#define FUZZ_PEER      0xfe


/* the module's responses, as the builders see them */

ngx_module_t  ngx_http_veto_sandbox_module;

/* an approval store is configured (never used by the builders): askable
 * hosts are built, not refused for the want of one */
static int                      rds_stand_in;
ngx_http_veto_sandbox_redis_t  *ngx_http_veto_sandbox_rds =
    (ngx_http_veto_sandbox_redis_t *) &rds_stand_in;

static ngx_uint_t  refused;
static const char *tenant = "acme";


ngx_int_t
ngx_http_veto_sandbox_problem(ngx_http_request_t *r, ngx_uint_t status,
    const char *code, const char *detail, json_t *extra)
{
    if (status < 400 || status > 599 || code == NULL) {
        abort();
    }

    json_decref(extra);
    refused = status;

    return NGX_OK;
}


void
ngx_http_veto_sandbox_audit_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status)
{
    if (ctx->decision.len == 0 || code == NULL) {
        abort();
    }
}


/* a create's profile the policy does not allow: the module asks the
 * helper whether the host has it (403 or 404); no helper here, so the
 * policy's answer */
ngx_int_t
ngx_http_veto_sandbox_profile_refused(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *name)
{
    return ngx_http_veto_sandbox_policy_refuse(r, ctx, "deny:policy",
                                               NGX_HTTP_FORBIDDEN,
                                               "profile_not_allowed",
                                               "not allowed", NULL);
}


/* a scope refused (the fuzzer's token has them all: never) */
ngx_int_t
ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


json_t *
ngx_http_veto_sandbox_json_ngx_str(ngx_str_t *s)
{
    return json_stringn((const char *) s->data, s->len);
}


void
ngx_http_veto_sandbox_json_cleanup(void *data)
{
    json_decref((json_t *) data);
}


/* what the exec and archive builders call beyond the builders: the
 * streamed reply is chosen (Accept) by the input's second byte */

static ngx_uint_t  ndjson;

ngx_int_t
ngx_http_veto_sandbox_stream_ndjson(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return ndjson;
}


static ngx_int_t
fuzz_stream(ngx_http_veto_sandbox_ctx_t *ctx)
{
    static int  st;

    if (ctx->stream != NULL) {
        abort();                /* one stream per request */
    }

    ctx->stream = (ngx_http_veto_sandbox_stream_t *) &st;
    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_stream_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return fuzz_stream(ctx);
}


ngx_int_t
ngx_http_veto_sandbox_stream_follow(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    return fuzz_stream(ctx);
}


ngx_int_t
ngx_http_veto_sandbox_stream_export(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *type, const char *encoding)
{
    if (type == NULL) {
        abort();
    }

    return fuzz_stream(ctx);
}


void
ngx_http_veto_sandbox_op_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    ngx_str_set(&ctx->exec, "ex-0123456789abcdef");
}


/* the mappers and records of those files are not driven here */

#include "fuzz_module_records_unreached.h"


ngx_int_t
ngx_http_veto_sandbox_send_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *body)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_header(ngx_http_request_t *r, const char *name,
    const char *value)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_reply_exec(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


off_t
ngx_http_veto_sandbox_stream_sent(ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


#include "fuzz_module_sandboxes_unreached.h"


/* the rest of the sandboxes group's records and replies: no helper
 * answers here */

void
ngx_http_veto_sandbox_ended_view(json_t *sb)
{
    abort();
}


ngx_int_t
ngx_http_veto_sandbox_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


/* what the builders are given */

static ngx_http_veto_sandbox_op_t  ops[] = {
    [FUZZ_CREATE] = { ngx_string("sandbox.create"), NGX_HTTP_POST,
                      "/v1/sandboxes", NGX_HTTP_VSB_SCOPE_CREATE,
                      NGX_HTTP_VSB_ACT_CREATE, NGX_HTTP_VSB_QUOTA_SANDBOXES,
                      NGX_HTTP_VSB_BODY_JSON, NGX_HTTP_VSB_ROW_MAKES,
                      VSB_OP_CREATE,
                      ngx_http_veto_sandbox_build_create, NULL, NULL, NULL },
    [FUZZ_EXEC] = { ngx_string("sandbox.exec"), NGX_HTTP_POST,
                    "/v1/sandboxes/{id}/exec", NGX_HTTP_VSB_SCOPE_EXEC,
                    NGX_HTTP_VSB_ACT_EXEC, NGX_HTTP_VSB_QUOTA_EXECS,
                    NGX_HTTP_VSB_BODY_JSON, 0, VSB_OP_EXEC,
                    ngx_http_veto_sandbox_build_exec, NULL, NULL, NULL },
    [FUZZ_READ] = { ngx_string("sandbox.files.read"), NGX_HTTP_GET,
                    "/v1/sandboxes/{id}/files", NGX_HTTP_VSB_SCOPE_FILES,
                    NGX_HTTP_VSB_ACT_READ, NGX_HTTP_VSB_QUOTA_NONE,
                    NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_READ_FILE,
                    ngx_http_veto_sandbox_build_read, NULL, NULL, NULL },
    [FUZZ_WRITE] = { ngx_string("sandbox.files.write"), NGX_HTTP_PUT,
                     "/v1/sandboxes/{id}/files", NGX_HTTP_VSB_SCOPE_FILES,
                     NGX_HTTP_VSB_ACT_WRITE, NGX_HTTP_VSB_QUOTA_NONE,
                     NGX_HTTP_VSB_BODY_FILE, 0, VSB_OP_WRITE_FILE,
                     ngx_http_veto_sandbox_build_write, NULL, NULL, NULL },
    [FUZZ_UPDATE] = { ngx_string("sandbox.update"), NGX_HTTP_PATCH,
                      "/v1/sandboxes/{id}",
                      NGX_HTTP_VSB_SCOPE_NETWORK|NGX_HTTP_VSB_SCOPE_CREATE,
                      NGX_HTTP_VSB_ACT_UPDATE, NGX_HTTP_VSB_QUOTA_NONE,
                      NGX_HTTP_VSB_BODY_JSON, 0, VSB_OP_UPDATE_NETWORK,
                      ngx_http_veto_sandbox_build_update, NULL, NULL, NULL },
    [FUZZ_EXEC_OUTPUT] = { ngx_string("sandbox.exec.output"), NGX_HTTP_GET,
                      "/v1/sandboxes/{id}/execs/{exec}/output",
                      NGX_HTTP_VSB_SCOPE_EXEC, 0, NGX_HTTP_VSB_QUOTA_NONE,
                      NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_EXEC_OUTPUT,
                      ngx_http_veto_sandbox_build_exec_output, NULL, NULL,
                      NULL },
    [FUZZ_ARCHIVE_IN] = { ngx_string("sandbox.archive.write"), NGX_HTTP_PUT,
                      "/v1/sandboxes/{id}/archive", NGX_HTTP_VSB_SCOPE_FILES,
                      NGX_HTTP_VSB_ACT_WRITE, NGX_HTTP_VSB_QUOTA_NONE,
                      NGX_HTTP_VSB_BODY_ARCHIVE, 0, VSB_OP_EXTRACT_ARCHIVE,
                      ngx_http_veto_sandbox_build_archive_in, NULL, NULL,
                      NULL },
    [FUZZ_ARCHIVE_OUT] = { ngx_string("sandbox.archive.read"), NGX_HTTP_GET,
                      "/v1/sandboxes/{id}/archive", NGX_HTTP_VSB_SCOPE_FILES,
                      NGX_HTTP_VSB_ACT_READ, NGX_HTTP_VSB_QUOTA_NONE,
                      NGX_HTTP_VSB_BODY_NONE, 0, VSB_OP_EXPORT_ARCHIVE,
                      ngx_http_veto_sandbox_build_archive_out, NULL, NULL,
                      NULL },
};

static const char  policy_text[] =
    "{\"version\": 1, \"tenants\": {\"acme\": {"
    " \"profiles\": [\"default\", \"python\"],"
    " \"ceilings\": {\"memory_mb\": 512, \"pids\": 64, \"timeout_s\": 30,"
    "               \"ttl_s\": 3600, \"file_bytes\": 65536,"
    "               \"output_bytes\": 1048576, \"archive_bytes\": 4096,"
    "               \"idle_s\": 600},"
    " \"ask_ceilings\": {\"ttl_s\": 7200},"
    " \"defaults\": {\"memory_mb\": 128, \"timeout_s\": 10},"
    " \"approvals\": {\"exec_argv\": [\"git push*\", \"curl *\"]},"
    " \"env\": {\"dangerous\": [\"PATH\", \"LD_*\"],"
    "         \"on_dangerous\": \"refuse\"},"
    " \"network\": {\"allow\": [\"registry.example.test\", \"*.a.test\"],"
    "             \"ask\": [\"askme.test\", \"*.b.test:443\"]},"
    " \"credentials\": {\"allow\": [\"git-deploy\"], \"ask\": [\"prod-api\"]}},"
    " \"beta\": {\"ceilings\": {\"memory_mb\": 256, \"file_bytes\": 4096},"
    " \"approvals\": {\"always\": [\"sandbox.exec\"],"
    "                \"irreversible_argv\": [\"rm *\"]},"
    " \"env\": {\"on_dangerous\": \"approve\"},"
    " \"network\": {\"allow\": [\"*.a.test\"]}}}}";

static int                              policy_fd = -1;
static ngx_str_t                        policy_path;
static ngx_http_veto_sandbox_policy_t  *policy;
static ngx_pool_t                      *policy_pool;


static ngx_http_veto_sandbox_policy_t *
load(ngx_pool_t *pool, const uint8_t *data, size_t size)
{
    ngx_conf_t  cf;

    fuzz_file_put(policy_fd, data, size);
    ngx_stub_conf(&cf, pool);

    return ngx_http_veto_sandbox_policy_load(&cf, &policy_path,
                                             ngx_http_veto_sandbox_ops_table());
}


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ngx_stub_init();

    policy_fd = fuzz_file_open("veto-fuzz-policy", &policy_path);

    policy_pool = ngx_create_pool(1024, ngx_cycle->log);
    policy = load(policy_pool, (const uint8_t *) policy_text,
                  sizeof(policy_text) - 1);
    if (policy == NULL) {
        abort();
    }

    return 0;
}


/* a policy: refused, or every rule answers the questions a request asks */
static void
fuzz_policy(const uint8_t *data, size_t size)
{
    json_t                          *argv, *env;
    ngx_uint_t                       i, j, act;
    const char                      *name;
    ngx_pool_t                      *pool;
    ngx_http_veto_sandbox_rule_t    *rule;
    ngx_http_veto_sandbox_agent_t   *a;
    ngx_http_veto_sandbox_tenant_t  *t;
    ngx_http_veto_sandbox_policy_t  *p;

    pool = ngx_create_pool(1024, ngx_cycle->log);
    if (pool == NULL) {
        abort();
    }

    p = load(pool, data, size);

    argv = json_pack("[s, s, s]", "sh", "-c", "cd /tmp && curl x | sh");
    env = json_pack("{s:s, s:s, s:s}", "HOME", "/h", "PATH", "/x",
                    "LD_PRELOAD", "y");

    for (i = 0; p && i < p->tenants->nelts; i++) {
        t = (ngx_http_veto_sandbox_tenant_t *) p->tenants->elts + i;
        a = t->agents ? t->agents->elts : NULL;

        for (j = 0; j <= (t->agents ? t->agents->nelts : 0); j++) {
            rule = (j == 0) ? &t->rule : &a[j - 1].rule;

            if (ngx_http_veto_sandbox_policy_rule(p, &t->name,
                                                  j ? &a[j - 1].name
                                                    : &t->name)
                == NULL)
            {
                abort();
            }

            for (act = 1; act <= NGX_HTTP_VSB_ACT_DELETE; act <<= 1) {
                (void) ngx_http_veto_sandbox_policy_approval(rule, act, argv,
                                                             "default",
                                                             "allow", NULL);
                (void) ngx_http_veto_sandbox_policy_approval(rule, act, argv,
                                                             "privileged",
                                                             NULL, env);
                (void) ngx_http_veto_sandbox_policy_irreversible(rule, act,
                                                                 argv, NULL);
            }

            /* a dangerous name is one the rule (or the default list)
             * names */
            name = ngx_http_veto_sandbox_policy_env_first(rule, env);
            if (name != NULL
                && !ngx_http_veto_sandbox_policy_env_dangerous(rule, name))
            {
                abort();
            }

            (void) ngx_http_veto_sandbox_policy_profile(rule, "default");
        }
    }

    json_decref(argv);
    json_decref(env);
    ngx_destroy_pool(pool);
}


/* a prefix of list, element for element */
static ngx_uint_t
prefix_of(json_t *kept, json_t *list)
{
    size_t   i;
    json_t  *e;

    if (!json_is_array(kept) || json_array_size(kept) > json_array_size(list))
    {
        return 0;
    }

    json_array_foreach(kept, i, e) {
        if (!json_equal(e, json_array_get(list, i))) {
            return 0;
        }
    }

    return 1;
}


static void
check_review(ngx_http_veto_sandbox_ctx_t *ctx,
    ngx_http_veto_sandbox_summary_in_t *rec, json_t *base, ngx_pool_t *pool)
{
    u_char                               where[300];
    json_t                              *j, *env, *flagged, *v;
    ngx_int_t                            rc;
    ngx_str_t                            out;
    const char                          *key;
    ngx_http_veto_sandbox_summary_in_t   sum;

#define must(cond)  do { if (!(cond)) abort(); } while (0)

    sum = *rec;

    /* a base with a withheld value (null) is refused before this */
    env = NULL;
    flagged = NULL;

    if (json_object_get(ctx->req, "env") != NULL) {
        env = ngx_http_veto_sandbox_env_review_of(ctx, NULL,
                                      json_object_get(ctx->req, "env"),
                                      &flagged);
        must(env != NULL && flagged != NULL);

        json_object_foreach(json_object_get(ctx->req, "env"), key, v) {
            must(json_equal(json_object_get(env, key), v));
        }
    }

    (void) base;

    sum.env = env;
    sum.env_dropped = 0;
    sum.env_flagged = flagged;
    sum.review = 1;

    rc = ngx_http_veto_sandbox_summary_credential(pool, &sum, where,
                                                  sizeof(where));
    must(rc == NGX_OK || rc == NGX_DECLINED);

    rc = ngx_http_veto_sandbox_summary(pool, &sum, &out);
    must(rc == NGX_OK || rc == NGX_DECLINED);

    if (rc == NGX_DECLINED) {
        must(out.len > NGX_HTTP_VSB_SUMMARY_MAX);

    } else {
        must(out.len <= NGX_HTTP_VSB_SUMMARY_MAX);

        j = json_loadb((char *) out.data, out.len, 0, NULL);
        must(json_is_object(j));
        must(json_object_get(j, "argv_truncated") == NULL);

        v = json_object_get(ctx->req, "argv");
        must(v == NULL || json_equal(json_object_get(j, "argv"), v));

        json_decref(j);
    }

    json_decref(env);
    json_decref(flagged);

#undef must
}


/* The summaries the gate builds.  The audit trail's: within
 * NGX_HTTP_VSB_SUMMARY_RECORD_MAX; the hosts granted listed as they are,
 * whole entries, those a human grants first, a cut list counted; egress
 * marked irreversible.  The reviewer's: the request exactly (the argv
 * and every env value as sent) within NGX_HTTP_VSB_SUMMARY_MAX, or not
 * made at all (NGX_DECLINED); the credential check answers. */
static void
check_summary(ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t mode,
    ngx_pool_t *pool)
{
    u_char                               digest[NGX_HTTP_VSB_HASH_HEX_LEN
                                                + 1];
    json_t                              *j, *net, *v, *base;
    ngx_str_t                            in, out;
    const char                          *key;
    ngx_uint_t                           dropped;
    ngx_http_veto_sandbox_summary_in_t   sum;

#define must(cond)  do { if (!(cond)) abort(); } while (0)

    ngx_memzero(&sum, sizeof(sum));
    sum.action = ops[mode].name;
    sum.req = ctx->req;
    sum.size = -1;
    sum.sandbox = &ctx->sandbox;
    sum.path = &ctx->path;

    if (ctx->payload) {
        in.data = ctx->payload->buf->pos;
        in.len = ctx->payload->buf->last - ctx->payload->buf->pos;
        sum.in = &in;
    }

    /* an exec runs with its sandbox's env under its own */
    base = (mode == FUZZ_EXEC)
           ? json_pack("{s:n, s:n, s:s}", "HOME", "LANG",
                       "LD_LIBRARY_PATH", "/opt/lib:$ORIGIN/../lib")
           : NULL;

    dropped = 0;
    sum.env = ngx_http_veto_sandbox_env_view_of(pool, ctx, base,
                                       json_object_get(ctx->req, "env"),
                                       &dropped);
    must(sum.env != NULL);

    /* a value a reviewer sees is one that changes what runs; every
     * other stays in the request */
    json_object_foreach(json_object_get(ctx->req, "env"), key, v) {
        must(ngx_http_veto_sandbox_policy_env_dangerous(ctx->rule, key)
             || json_object_get(sum.env, key) == NULL
             || json_is_null(json_object_get(sum.env, key)));
    }

    if (json_object_get(ctx->req, "env") != NULL) {
        must(ngx_http_veto_sandbox_env_digest(
                 json_object_get(ctx->req, "env"), digest) == NGX_OK);
        must(ngx_strlen(digest) == NGX_HTTP_VSB_HASH_HEX_LEN);
    }

    sum.env_dropped = dropped;
    sum.hosts = ctx->net_hosts;
    sum.hosts_ask = ctx->net_ask;
    sum.irreversible = ngx_http_veto_sandbox_policy_irreversible(ctx->rule,
                           ops[mode].approval,
                           json_object_get(ctx->req, "argv"),
                           ctx->net_hosts ? "allowlist" : NULL);

    must(ngx_http_veto_sandbox_summary(pool, &sum, &out) == NGX_OK);
    must(out.len <= NGX_HTTP_VSB_SUMMARY_RECORD_MAX);

    check_review(ctx, &sum, base, pool);

    j = json_loadb((char *) out.data, out.len, 0, NULL);
    must(json_is_object(j));

    if (ctx->net_hosts != NULL) {
        net = json_object_get(j, "network");
        must(json_is_true(json_object_get(j, "irreversible")));
        must(prefix_of(json_object_get(net, "hosts"), ctx->net_hosts));
        must(prefix_of(json_object_get(net, "needs_approval"),
                       ctx->net_ask));

        v = json_object_get(net, "hosts_count");
        must(json_array_size(json_object_get(net, "hosts"))
             == json_array_size(ctx->net_hosts)
             ? v == NULL
             : json_integer_value(v)
               == (json_int_t) json_array_size(ctx->net_hosts));
    }

    json_decref(j);
    json_decref(sum.env);
    json_decref(base);

#undef must
}


static void
check_built(ngx_http_veto_sandbox_ctx_t *ctx, ngx_uint_t mode,
    ngx_pool_t *pool)
{
    json_t                        *req, *v, *e;
    size_t                         i;
    const char                    *key;
    ngx_http_veto_sandbox_rule_t  *rule;

    req = ctx->req;
    rule = ctx->rule;

#define must(cond)  do { if (!(cond)) abort(); } while (0)

    must(json_is_object(req));
    must(ngx_strcmp(json_string_value(json_object_get(req, "op")),
                    (ctx->lifetime ? VSB_OP_UPDATE_LIFETIME
                                   : ops[mode].helper)) == 0);
    must(!ctx->lifetime || mode == FUZZ_UPDATE);

    /* the lifetime: within the ceiling, or past it up to the askable
     * ceiling with a human asked (and only then) */
    {
        uint64_t    t, cap, ask;
        ngx_uint_t  k, over = 0, lim[2] = { NGX_HTTP_VSB_L_TTL_S,
                                            NGX_HTTP_VSB_L_IDLE_S };

        for (k = 0; k < 2; k++) {
            v = json_object_get(req, ngx_http_veto_sandbox_limit_names[lim[k]]);
            if (v == NULL) {
                continue;
            }

            must(json_is_integer(v) && json_integer_value(v) > 0);
            t = (uint64_t) json_integer_value(v);
            cap = rule->ceiling[lim[k]];
            ask = rule->ask[lim[k]];

            must(cap == 0 || t <= (ask ? ask : cap));
            over |= (cap && t > cap);
        }

        must(ctx->limit_ask == over);
    }
    must(ngx_strcmp(json_string_value(json_object_get(req, "tenant")),
                    tenant) == 0);
    must(ngx_strcmp(json_string_value(json_object_get(req, "agent")),
                    "fuzz") == 0);

    /* credentials: names only, each the policy's (allow, or ask and then
     * a human asked), at most the helper's ceiling, in the helper's
     * field: network.credentials of a create, credentials of a PATCH */
    if (ctx->cred_names != NULL) {
        size_t   j;
        json_t  *n;

        must(mode == FUZZ_CREATE || mode == FUZZ_UPDATE);
        must(json_array_size(ctx->cred_names) > 0
             && json_array_size(ctx->cred_names)
                <= NGX_HTTP_VSB_CRED_PER_SANDBOX);
        must(json_equal(mode == FUZZ_CREATE
                        ? json_object_get(json_object_get(req, "network"),
                                          "credentials")
                        : json_object_get(req, "credentials"),
                        ctx->cred_names));

        json_array_foreach(ctx->cred_names, i, e) {
            ngx_uint_t  allowed = 0, askable = 0, asked = 0;

            must(json_is_string(e));

            json_array_foreach(rule->cred.allow, j, n) {
                allowed |= json_equal(n, e);
            }
            json_array_foreach(rule->cred.ask, j, n) {
                askable |= json_equal(n, e);
            }
            json_array_foreach(ctx->cred_ask, j, n) {
                asked |= json_equal(n, e);
            }

            must(allowed || askable);
            must(asked == (!allowed && askable));
        }

    } else {
        must(json_object_get(req, "credentials") == NULL
             && json_object_get(json_object_get(req, "network"),
                                "credentials") == NULL);
    }

    switch (mode) {

    case FUZZ_CREATE:
        v = json_object_get(req, "profile");
        must(v == NULL
             || ngx_http_veto_sandbox_policy_profile(rule,
                                         json_string_value(v)) == NGX_OK);

        json_object_foreach(json_object_get(req, "limits"), key, e) {
            for (i = 0; i < NGX_HTTP_VSB_NHELPER_LIMITS; i++) {
                if (ngx_strcmp(key, ngx_http_veto_sandbox_limit_names[i])
                    == 0)
                {
                    break;
                }
            }

            must(i < NGX_HTTP_VSB_NHELPER_LIMITS && json_is_integer(e)
                 && json_integer_value(e) > 0);
            must(rule->ceiling[i] == 0
                 || (uint64_t) json_integer_value(e) <= rule->ceiling[i]);
        }

        break;

    case FUZZ_EXEC:
        v = json_object_get(req, "argv");
        must(json_is_array(v) && json_array_size(v) > 0
             && json_array_size(v) <= VSB_MAX_ARGV);

        json_array_foreach(v, i, e) {
            must(json_is_string(e));
        }

        /* within the policy's ceiling; a tenant without one leaves the
         * helper's own ceiling to apply */
        v = json_object_get(req, "timeout_s");
        must(v == NULL
             || rule->ceiling[NGX_HTTP_VSB_L_TIMEOUT_S] == 0
             || (uint64_t) json_integer_value(v)
                <= rule->ceiling[NGX_HTTP_VSB_L_TIMEOUT_S]);
        must(ctx->helper.extra_read_ms <= 86400000);
        must((ctx->payload == NULL) == (ctx->payload_len == 0));

        v = json_object_get(req, "output_bytes");
        must(v == NULL
             || (json_integer_value(v) > 0
                 && (rule->ceiling[NGX_HTTP_VSB_L_OUTPUT_BYTES] == 0
                     || (uint64_t) json_integer_value(v)
                        <= rule->ceiling[NGX_HTTP_VSB_L_OUTPUT_BYTES])));

        /* background or streamed, not both; streamed when asked */
        v = json_object_get(req, "background");
        must(v == NULL || json_is_true(v));
        must(!(v && json_object_get(req, "stream")));
        must((json_object_get(req, "stream") != NULL)
             == (ctx->stream != NULL));
        must(v == NULL || ctx->helper.extra_read_ms == 0);
        break;

    case FUZZ_EXEC_OUTPUT:
        v = json_object_get(req, "stream");
        must(json_is_string(v)
             && (ngx_strcmp(json_string_value(v), "stdout") == 0
                 || ngx_strcmp(json_string_value(v), "stderr") == 0));
        must(ngx_strcmp(json_string_value(json_object_get(req, "exec")),
                        "ex-0123456789abcdef") == 0);
        v = json_object_get(req, "offset");
        must(v == NULL || (json_is_integer(v) && json_integer_value(v) >= 0));
        v = json_object_get(req, "max_bytes");
        must(v == NULL || (json_is_integer(v) && json_integer_value(v) > 0));
        must((json_object_get(req, "follow") != NULL) == ndjson);
        must(!(ndjson && v));
        must((ctx->stream != NULL) == ndjson);
        break;

    case FUZZ_ARCHIVE_IN:
    case FUZZ_ARCHIVE_OUT:
        v = json_object_get(req, "path");
        must(v == NULL
             || (json_is_string(v)
                 && json_string_length(v) <= VSB_MAX_PATH
                 && strlen(json_string_value(v)) == json_string_length(v)
                 && (json_string_value(v)[0] != '/'
                     || ngx_strncmp(json_string_value(v), "/workspace",
                                    10) == 0)));
        v = json_object_get(req, "format");
        must(v == NULL || json_is_string(v));

        if (mode == FUZZ_ARCHIVE_IN) {
            must(ctx->payload_len > 0 && ctx->payload_len <= 4096
                 && ctx->helper.stream_payload);

        } else {
            must(ctx->stream != NULL);
        }
        break;

    case FUZZ_UPDATE:
        if (ctx->lifetime) {
            /* one kind of change per request: no hosts with it */
            must(ctx->net_hosts == NULL && json_object_get(req, "add") == NULL
                 && (json_object_get(req, "ttl_s") != NULL
                     || json_object_get(req, "idle_s") != NULL));
            break;
        }

        if (ctx->cred_names != NULL) {
            /* one kind of change per request: no hosts with them */
            must(ctx->net_hosts == NULL
                 && json_object_get(req, "add") == NULL);
            break;
        }

        must(ctx->net_hosts != NULL
             && json_equal(json_object_get(req, "add"), ctx->net_hosts)
             && json_array_size(ctx->net_hosts) > 0);
        break;

    default: /* FUZZ_READ, FUZZ_WRITE */
        v = json_object_get(req, "path");
        must(json_is_string(v) && json_string_length(v) > 0
             && json_string_length(v) <= VSB_MAX_PATH
             && (json_string_value(v)[0] != '/'
                 || ngx_strncmp(json_string_value(v), "/workspace/", 11)
                    == 0)
             && strlen(json_string_value(v)) == json_string_length(v));

        /* ?mode= of a write: permission bits only, never setuid, setgid
         * or sticky; a read takes none */
        v = json_object_get(req, "mode");
        must(v == NULL
             || (mode == FUZZ_WRITE && json_is_integer(v)
                 && json_integer_value(v) >= 0
                 && json_integer_value(v) <= 0777));
        break;
    }

    check_summary(ctx, mode, pool);

    /* hosts granted: within the policy's allowlist, or flagged for a
     * human (the gate asks one when net_ask is set) */
    v = json_object_get(req, "network");
    must(v == NULL || json_is_string(v) || ctx->net_hosts != NULL);

    if (ctx->net_hosts != NULL) {
        char     why[256];
        size_t   bad;
        json_t  *ask;

        must(ngx_http_veto_sandbox_network_classify(pool,
                 &rule->net, ctx->net_hosts, &ask, &bad, why, sizeof(why))
             == NGX_OK);
        must((ask == NULL) == (ctx->net_ask == NULL));
    }

#undef must
}


/* a request body (create, exec) or query (read, write) through its
 * builder: refused with a problem, or built within the policy */
static void
fuzz_request(const uint8_t *data, size_t size, ngx_uint_t mode)
{
    u_char                        *copy;
    void                          *ctxs[1];
    ngx_int_t                      rc;
    ngx_buf_t                     *b;
    ngx_pool_t                    *pool;
    ngx_chain_t                   *cl;
    ngx_connection_t               c;
    ngx_http_request_t             r;
    ngx_http_request_body_t        rb;
    ngx_http_veto_sandbox_ctx_t   *ctx;

    pool = ngx_create_pool(1024, ngx_cycle->log);
    copy = ngx_pnalloc(pool, size + 1);
    ctx = ngx_pcalloc(pool, sizeof(ngx_http_veto_sandbox_ctx_t));
    b = ngx_pcalloc(pool, sizeof(ngx_buf_t));
    cl = ngx_pcalloc(pool, sizeof(ngx_chain_t));

    if (pool == NULL || copy == NULL || ctx == NULL || b == NULL
        || cl == NULL)
    {
        abort();
    }

    /* its own allocation, so ASan sees a read past the input */
    ngx_memcpy(copy, data, size);

    ngx_memzero(&r, sizeof(ngx_http_request_t));
    ngx_memzero(&c, sizeof(ngx_connection_t));
    ngx_memzero(&rb, sizeof(ngx_http_request_body_t));

    r.pool = pool;
    r.connection = &c;
    r.ctx = ctxs;
    ctxs[0] = ctx;
    r.headers_in.content_length_n = -1;

    ctx->tenant.data = (u_char *) tenant;
    ctx->tenant.len = ngx_strlen(tenant);
    ngx_str_set(&ctx->agent, "fuzz");
    ngx_str_set(&ctx->sandbox, "sb-000000000000000000000000");
    ctx->scopes = NGX_HTTP_VSB_SCOPE_CREATE|NGX_HTTP_VSB_SCOPE_EXEC
                  |NGX_HTTP_VSB_SCOPE_FILES|NGX_HTTP_VSB_SCOPE_NETWORK;
    ctx->op = &ops[mode];
    ctx->rule = ngx_http_veto_sandbox_policy_rule(policy, &ctx->tenant,
                                                  &ctx->agent);

    if (mode == FUZZ_CREATE || mode == FUZZ_EXEC || mode == FUZZ_UPDATE) {
        b->pos = copy;
        b->last = copy + size;
        b->memory = 1;
        cl->buf = b;
        rb.bufs = size ? cl : NULL;
        r.request_body = &rb;

    } else {
        r.args.data = copy;
        r.args.len = size;
    }

    /* an upload of the query's own bytes: over the policy's 4096 too */
    if (mode == FUZZ_ARCHIVE_IN) {
        b->pos = copy;
        b->last = copy + size;
        b->memory = 1;
        cl->buf = b;
        rb.bufs = size ? cl : NULL;
        r.request_body = &rb;
    }

    /* the request the op sees, as the REST handler fills it */
    ctx->in.args = r.args;
    ctx->in.body = r.request_body ? r.request_body->bufs : NULL;
    ctx->in.set = 1;

    refused = 0;

    rc = ctx->op->build(&r, ctx);

    if (rc == NGX_DECLINED) {
        if (refused) {
            abort();            /* answered, and said to go on */
        }

        check_built(ctx, mode, pool);

    } else if (!refused && rc != NGX_HTTP_INTERNAL_SERVER_ERROR) {
        abort();                /* neither built nor answered */
    }

    ngx_destroy_pool(pool);
}


/* An address taken from a sentinel must be one to connect to as it is:
 * NUL terminated, numeric, a real port. */
static void
check_sentinel_addr(u_char *host, in_port_t port)
{
    size_t           len;
    struct in_addr   a4;
    struct in6_addr  a6;

    len = strnlen((char *) host, NGX_HTTP_VSB_SENTINEL_HOST_LEN);

    if (len == 0 || len == NGX_HTTP_VSB_SENTINEL_HOST_LEN || port == 0) {
        abort();
    }

    if (inet_pton(AF_INET, (char *) host, &a4) != 1
        && inet_pton(AF_INET6, (char *) host, &a6) != 1)
    {
        abort();
    }
}


/*
 * The inter-gateway credential: what parses has exactly its fields'
 * shapes, and its signature holds only when it is the one the key makes
 * (checked against a signature made here, both ways); the epoch is
 * signed (changed, it does not hold).
 */
static void
fuzz_peer(const uint8_t *data, size_t size)
{
    u_char                             *buf, *c, sig[65];
    ngx_str_t                           key = ngx_string(
                                     "0123456789abcdef0123456789abcdef");
    ngx_str_t                           m = ngx_string("POST");
    ngx_str_t                           uri = ngx_string("/v1/sandboxes/x/exec");
    ngx_str_t                           t = ngx_string("acme");
    ngx_str_t                           a = ngx_string("agent-1");
    ngx_str_t                           j = ngx_string("");
    ngx_int_t                           rc;
    ngx_pool_t                         *pool;
    ngx_http_veto_sandbox_peer_cred_t   cred;

    buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return;
    }

    ngx_memcpy(buf, data, size);

    rc = ngx_http_veto_sandbox_peer_cred_parse(buf, size, &cred);

    if (rc == NGX_DECLINED) {
        free(buf);
        return;
    }

    if (rc != NGX_OK || size > NGX_HTTP_VSB_PEER_CRED_MAX
        || cred.host.len < 1 || cred.host.len > 64
        || cred.nonce.len != 32 || cred.body.len != 64 || cred.sig.len != 64
        || cred.time.len < 1 || cred.time.len > 15 || cred.ms < 0
        || cred.host.data < buf || cred.sig.data + 64 != buf + size)
    {
        abort();
    }

    for (c = cred.host.data; c < cred.host.data + cred.host.len; c++) {
        if (*c == ';' || *c == '=' || *c <= ' ' || *c >= 0x7f) {
            abort();
        }
    }

    /* the owner's helper epoch, when there is one: exactly its shape */
    if (cred.epoch.data != NULL) {
        if (cred.epoch.len != VSB_EPOCH_LEN) {
            abort();
        }

        for (c = cred.epoch.data; c < cred.epoch.data + cred.epoch.len; c++) {
            if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) {
                abort();
            }
        }
    }

    pool = ngx_create_pool(4096, NULL);
    if (pool == NULL) {
        free(buf);
        return;
    }

    if (ngx_http_veto_sandbox_peer_cred_sign(pool, &key, &cred, &m, &uri, &t,
                                             &a, &j, sig) != NGX_OK)
    {
        abort();
    }

    rc = ngx_http_veto_sandbox_peer_cred_check(pool, &key, &cred, &m, &uri,
                                               &t, &a, &j);

    if ((rc == NGX_OK) != (ngx_memcmp(sig, cred.sig.data, 64) == 0)
        || (rc != NGX_OK && rc != NGX_DECLINED))
    {
        abort();
    }

    /* the signature made here holds */
    ngx_memcpy(cred.sig.data, sig, 64);

    if (ngx_http_veto_sandbox_peer_cred_check(pool, &key, &cred, &m, &uri,
                                              &t, &a, &j) != NGX_OK)
    {
        abort();
    }

    /* the epoch is signed: another one does not hold */
    if (cred.epoch.len) {
        cred.epoch.data[0] = cred.epoch.data[0] == '0' ? '1' : '0';

        if (ngx_http_veto_sandbox_peer_cred_check(pool, &key, &cred, &m,
                                                  &uri, &t, &a, &j)
            != NGX_DECLINED)
        {
            abort();
        }
    }

    ngx_destroy_pool(pool);
    free(buf);
}


/*
 * What a sentinel sends: the input is a +switch-master and a
 * +failover-state-send-slaveof-noone message for the master "veto", and,
 * split at its first space, the host and port of a
 * get-master-addr-by-name answer.
 */
static void
fuzz_sentinel(const uint8_t *data, size_t size)
{
    u_char     *buf, *sp, host[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    ngx_str_t   name = ngx_string("veto");
    ngx_int_t   rc;
    in_port_t   port;

    /* a copy of its own size: ASan sees a read past the input */
    buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return;
    }

    ngx_memcpy(buf, data, size);

    port = 0;
    rc = ngx_http_veto_sandbox_sentinel_switch(buf, size, &name, host, &port);

    if (rc == NGX_OK) {
        if (size < 5 || ngx_strncmp(buf, "veto ", 5) != 0) {
            abort();                /* another master's move taken */
        }

        check_sentinel_addr(host, port);

    } else if (rc != NGX_DECLINED && rc != NGX_ERROR) {
        abort();
    }

    port = 0;
    rc = ngx_http_veto_sandbox_sentinel_promoting(buf, size, &name, host,
                                                  &port);

    if (rc == NGX_OK) {
        if (size < 6 || ngx_strncmp(buf, "slave ", 6) != 0) {
            abort();
        }

        check_sentinel_addr(host, port);

    } else if (rc != NGX_DECLINED && rc != NGX_ERROR) {
        abort();
    }

    sp = memchr(buf, ' ', size);

    if (sp != NULL) {
        port = 0;
        rc = ngx_http_veto_sandbox_sentinel_addr(buf, sp - buf, sp + 1,
                                                 buf + size - sp - 1, host,
                                                 &port);
        if (rc == NGX_OK) {
            check_sentinel_addr(host, port);

        } else if (rc != NGX_DECLINED && rc != NGX_ERROR) {
            abort();
        }
    }

    free(buf);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ngx_uint_t  mode;

    if (size == 0) {
        return 0;
    }

    if (data[0] == FUZZ_SENTINEL) {
        fuzz_sentinel(data + 1, size - 1);
        return 0;
    }

    if (data[0] == FUZZ_PEER) {
        fuzz_peer(data + 1, size - 1);
        return 0;
    }

    mode = data[0] % FUZZ_NMODES;

    /* Accept: application/x-ndjson, for the modes that stream */
    ndjson = (data[0] / FUZZ_NMODES) & 1;

    /* the tenant whose rule a request meets: one refusing dangerous env
     * names, or (with the next bit of the first byte) one asking a human */
    tenant = ((data[0] / FUZZ_NMODES) >> 1) & 1 ? "beta" : "acme";

    if (mode == FUZZ_POLICY) {
        fuzz_policy(data + 1, size - 1);

    } else {
        fuzz_request(data + 1, size - 1, mode);
    }

    return 0;
}
