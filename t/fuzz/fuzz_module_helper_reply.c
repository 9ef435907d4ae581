/*
 * libFuzzer target for what a hostile or broken helper can send a
 * worker: the bytes of its side of the connection, read by the module's
 * own read handler (_helper.c: frame header, bounds, the JSON reply and
 * its payload) and answered by the op's reply mapper (_reply.c: errors
 * mapped to problems, a created sandbox's id, an exec's output lengths;
 * _files.c: a file's bytes; _request_profile.c: the image digest in the detail of
 * a profile gone from the store).
 *
 * The first byte shapes the connection and picks the op: bits 0-2 the
 * most bytes one recv() returns (1 << n), bit 3 whether every other
 * recv() has nothing yet (NGX_AGAIN, then the event fires again), bits
 * 4-7 the op whose reply it is.  The rest is the stream; when it runs
 * out, the helper has closed the connection.
 *
 * Whatever the bytes, the op's reply handler runs exactly once, the
 * request is finalized exactly once, the connection is closed, and the
 * client gets either a problem (4xx/5xx, a code) or a success whose JSON
 * body serializes, a created sandbox's Location naming a valid id, a
 * file's bytes exactly the payload.  Anything else aborts.
 *
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_helper.c:ngx_http_veto_sandbox_helper_(read_handler|done)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_reply.c:ngx_http_veto_sandbox_(reply.*|output)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_files.c:ngx_http_veto_sandbox_reply_file
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_health.c:ngx_http_veto_sandbox_reply_health
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_sandboxes.c:ngx_http_veto_sandbox_reply_(sb|sandbox|created|list)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_request_profile.c:ngx_http_veto_sandbox_(profile_unavailable|find_digest)
 */

#include "ngx_http_veto_sandbox_heard.c"
#include "ngx_http_veto_sandbox_helper.c"
#include "ngx_http_veto_sandbox_reply.c"
#include "ngx_http_veto_sandbox_request_profile.c"
/* the health row's reply, the sandboxes group's and the files group's
 * mappers (their files' code, without their MCP tools) */
#define NGX_HTTP_VSB_OPS_CODE
#include "ngx_http_veto_sandbox_health.c"
#include "ngx_http_veto_sandbox_sandboxes.c"
#include "ngx_http_veto_sandbox_files.c"

#include "ngx_core_stub.h"
#include "fuzz_module_request.h"
#include "fuzz_module_unreached.h"
#include "fuzz_module_sandboxes_unreached.h"


ngx_int_t
ngx_http_veto_sandbox_stream_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();                    /* no stream is asked for */
}


/* the archive rows' (the files group's file): no export is streamed */
ngx_int_t
ngx_http_veto_sandbox_stream_export(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *type, const char *encoding)
{
    abort();
}


off_t
ngx_http_veto_sandbox_stream_sent(ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


#define must(cond)  do { if (!(cond)) abort(); } while (0)


ngx_module_t                    ngx_http_veto_sandbox_module;
ngx_http_veto_sandbox_redis_t  *ngx_http_veto_sandbox_rds;

sig_atomic_t  ngx_terminate;
ngx_uint_t    ngx_exiting;


/* what the worker did, for the checks */

static struct {
    ngx_uint_t   replied;       /* the op's handler ran */
    ngx_uint_t   finalized;
    ngx_uint_t   after;
    ngx_uint_t   metered;
    ngx_uint_t   closed;
    ngx_uint_t   status;        /* sent, or the problem's */
    ngx_uint_t   problem;
    ngx_uint_t   located;
    size_t       sent_len;
} out;

static const u_char  *stream;
static size_t         stream_len, stream_at, chunk;
static ngx_uint_t     again, toggle;


static ssize_t
fuzz_recv(ngx_connection_t *c, u_char *buf, size_t size)
{
    size_t  n;

    must(size > 0);

    if (again && (toggle ^= 1)) {
        return NGX_AGAIN;
    }

    n = ngx_min(ngx_min(size, chunk), stream_len - stream_at);

    ngx_memcpy(buf, stream + stream_at, n);
    stream_at += n;

    return n;                   /* 0: the helper closed the connection */
}


/* nginx's event and connection calls, as the read handler makes them */

ngx_int_t
ngx_handle_read_event(ngx_event_t *rev, ngx_uint_t flags)
{
    return NGX_OK;
}


void
ngx_close_connection(ngx_connection_t *c)
{
    out.closed++;
}


void
ngx_http_finalize_request(ngx_http_request_t *r, ngx_int_t rc)
{
    out.finalized++;
}


void
ngx_http_run_posted_requests(ngx_connection_t *c)
{
}


/* sending, connecting and timers: not reached once the request is out
 * (the read handler sets no timer on an event that has none) */

volatile ngx_msec_t  ngx_current_msec;
ngx_rbtree_t         ngx_event_timer_rbtree;


ngx_int_t
ngx_event_connect_peer(ngx_peer_connection_t *pc)
{
    abort();
}


ngx_int_t
ngx_event_get_peer(ngx_peer_connection_t *pc, void *data)
{
    abort();
}


ngx_int_t
ngx_handle_write_event(ngx_event_t *wev, size_t lowat)
{
    abort();
}


void
ngx_http_test_reading(ngx_http_request_t *r)
{
    abort();
}


ngx_buf_t *
ngx_create_temp_buf(ngx_pool_t *pool, size_t size)
{
    abort();
}


void
ngx_rbtree_insert(ngx_rbtree_t *tree, ngx_rbtree_node_t *node)
{
    abort();
}


void
ngx_rbtree_delete(ngx_rbtree_t *tree, ngx_rbtree_node_t *node)
{
    abort();
}


/* the metrics of helper exchanges (_metrics.c, shared memory): counted
 * here, as each reply must be, once */

void
ngx_http_veto_sandbox_metrics_helper_start(
    struct ngx_http_veto_sandbox_ctx_s *ctx, void *req)
{
    abort();                    /* sending: not fuzzed */
}


void
ngx_http_veto_sandbox_metrics_helper(ngx_http_request_t *r,
    struct ngx_http_veto_sandbox_ctx_s *ctx)
{
    out.metered++;
}


/* the epoch fence (_fence.c, Redis) is not linked: the helper client's
 * hooks (ngx_http_veto_sandbox_helper_hooks) stay NULL, so no epoch is
 * sent and every reply is the op's */


/* an ended sandbox answered from its routing record (_where.c, Redis):
 * the fuzzed requests have none, so forward() always asks the helper */
json_t *
ngx_http_veto_sandbox_where_ended(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();
}


/* _lifetime.c's view of a sandbox (it drops the helper's internal "seq";
 * linking it would bring the ENDED poller and Redis) */
void
ngx_http_veto_sandbox_ended_view(json_t *sb)
{
    if (json_is_object(sb)) {
        json_object_del(sb, "seq");
    }
}


ngx_int_t
ngx_http_veto_sandbox_deny(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    abort();                    /* a refusal before the helper: not here */
}


/* what _request_profile.c's other paths (a create's refusal) link: not
 * reached from a reply */

void
ngx_http_veto_sandbox_audit_denied(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *code, ngx_uint_t status)
{
    abort();
}


json_t *
ngx_http_veto_sandbox_json_ngx_str(ngx_str_t *s)
{
    abort();
}


/* the rest of the module, as the reply mappers see it */

void
ngx_http_veto_sandbox_after(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    out.after++;
}


ngx_uint_t
ngx_http_veto_sandbox_redis_ready(ngx_http_veto_sandbox_redis_t *rds)
{
    abort();                    /* no Redis is configured */
}


/* record.c's check (linking it would bring Redis): "sb-" and 24 hex */
ngx_int_t
ngx_http_veto_sandbox_created(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    size_t       i;
    json_t      *v;
    const char  *s;

    v = json_object_get(json_object_get(ctx->helper.json, "sandbox"), "id");

    if (!json_is_string(v) || json_string_length(v) != VSB_SANDBOX_ID_LEN)
    {
        return NGX_DECLINED;
    }

    s = json_string_value(v);

    if (ngx_strncmp(s, "sb-", 3) != 0) {
        return NGX_DECLINED;
    }

    for (i = 3; i < VSB_SANDBOX_ID_LEN; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return NGX_DECLINED;
        }
    }

    ctx->sandbox.data = (u_char *) s;
    ctx->sandbox.len = VSB_SANDBOX_ID_LEN;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_problem(ngx_http_request_t *r, ngx_uint_t status,
    const char *code, const char *detail, json_t *extra)
{
    must(status >= 400 && status <= 599 && code != NULL && code[0]);
    must(extra == NULL || json_is_object(extra));

    json_decref(extra);
    out.problem++;
    out.status = status;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_header(ngx_http_request_t *r, const char *name,
    const char *value)
{
    must(name != NULL && value != NULL);

    if (ngx_strcmp(name, "Location") == 0) {
        must(ngx_strlen(value) == sizeof("/v1/sandboxes/") - 1
                                  + VSB_SANDBOX_ID_LEN);
        out.located++;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_send_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *body)
{
    char  *text;

    must(status == NGX_HTTP_OK || status == NGX_HTTP_CREATED);
    must(json_is_object(body));

    text = json_dumps(body, JSON_COMPACT);
    must(text != NULL);

    out.sent_len = strlen(text);
    out.status = status;

    free(text);
    json_decref(body);

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_send_chain(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, ngx_chain_t *chain, off_t len)
{
    off_t         n;
    ngx_chain_t  *cl;

    must(status == NGX_HTTP_OK && type != NULL && chain != NULL);

    n = 0;
    for (cl = chain; cl; cl = cl->next) {
        n += ngx_buf_size(cl->buf);
    }

    must(n == len);

    out.sent_len = (size_t) len;
    out.status = status;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_send(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, u_char *data, size_t len)
{
    must(status == NGX_HTTP_OK && type != NULL);
    must(len == 0 || data != NULL);

    out.sent_len = len;
    out.status = status;

    return NGX_OK;
}


void
ngx_http_veto_sandbox_json_cleanup(void *data)
{
    json_decref((json_t *) data);
}


/* the ops whose replies the helper answers (their reply mappers) */

static struct {
    const char                       *name;
    ngx_int_t                       (*map)(ngx_http_request_t *r,
                                          ngx_http_veto_sandbox_ctx_t *ctx);
} ops[] = {
    { "health", ngx_http_veto_sandbox_reply_health },
    { "sandbox.list", ngx_http_veto_sandbox_reply_json },
    { "sandbox.create", ngx_http_veto_sandbox_reply_created },
    { "sandbox.get", ngx_http_veto_sandbox_reply_sandbox },
    { "sandbox.files.read", ngx_http_veto_sandbox_reply_file },
    { "sandbox.exec", ngx_http_veto_sandbox_reply_exec },
};

#define NOPS  (sizeof(ops) / sizeof(ops[0]))


static ngx_uint_t  which;


/* the module's ngx_http_veto_sandbox_reply(), counted */
static void
fuzz_reply(ngx_http_request_t *r, ngx_http_veto_sandbox_ctx_t *ctx)
{
    out.replied++;

    ngx_http_veto_sandbox_reply(r, ctx);
}


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ngx_stub_init();

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void                         *ctxs[1];
    void                         *srv[1];
    u_char                       *copy;
    ngx_str_t                     peer_name = ngx_string("unix:/fuzz");
    ngx_pool_t                   *pool;
    ngx_event_t                   rev, wev;
    ngx_connection_t              c, hc;
    ngx_http_request_t            r;
    ngx_http_veto_sandbox_op_t    op;
    ngx_http_veto_sandbox_ctx_t  *ctx;
    ngx_http_veto_sandbox_srv_conf_t  vscf;
    ngx_uint_t                    rounds;

    if (size == 0) {
        return 0;
    }

    pool = ngx_create_pool(1024, ngx_cycle->log);
    ctx = pool ? ngx_pcalloc(pool, sizeof(ngx_http_veto_sandbox_ctx_t))
               : NULL;
    copy = pool ? ngx_pnalloc(pool, size) : NULL;
    must(ctx != NULL && copy != NULL);

    /* its own allocation, so ASan sees a read past the stream */
    ngx_memcpy(copy, data + 1, size - 1);

    stream = copy;
    stream_len = size - 1;
    stream_at = 0;
    chunk = (size_t) 1 << (data[0] & 7);
    again = (data[0] >> 3) & 1;
    toggle = 0;
    which = (data[0] >> 4) % NOPS;

    ngx_memzero(&out, sizeof(out));
    ngx_memzero(&hc, sizeof(ngx_connection_t));
    ngx_memzero(&rev, sizeof(ngx_event_t));
    ngx_memzero(&wev, sizeof(ngx_event_t));
    ngx_memzero(&vscf, sizeof(vscf));
    ngx_memzero(&op, sizeof(op));

    /* vscf all zero: no keep-alive peer, every reply closes */
    fuzz_request_init(&r, &c, ctxs, srv, pool, ctx, &vscf);

    ngx_str_set(&op.name, "fuzz");
    op.reply = ops[which].map;
    ctx->op = &op;

    /* the helper's connection, as helper_send() leaves it to be read */
    hc.fd = -1;
    hc.data = &r;
    hc.read = &rev;
    hc.write = &wev;
    hc.log = ngx_cycle->log;
    hc.recv = fuzz_recv;
    rev.data = &hc;
    rev.log = ngx_cycle->log;
    wev.data = &hc;
    wev.write = 1;

    ctx->helper.peer.connection = &hc;
    ctx->helper.peer.name = &peer_name;
    ctx->helper.handler = fuzz_reply;

    /* each round is the read event firing again */
    for (rounds = 0; out.replied == 0; rounds++) {
        must(rounds <= 2 * stream_len + 4);
        ngx_http_veto_sandbox_helper_read_handler(&rev);
    }

    must(out.replied == 1 && out.finalized == 1 && out.after == 1
         && out.metered == 1);
    must(out.closed == 1 && ctx->helper.peer.connection == NULL);

    if (ctx->helper.status != NGX_OK) {
        must(out.problem == 1 && ctx->helper.error != NULL);
        /* a bad reply is 502; a helper gone before it answered, 503 */
        must(ctx->helper.status == NGX_HTTP_BAD_GATEWAY
             || ctx->helper.status == NGX_HTTP_SERVICE_UNAVAILABLE);

    } else {
        must(json_is_object(ctx->helper.json));
        must(ctx->helper.payload_len <= VSB_MAX_PAYLOAD);
        must(out.problem == 1 || out.status == NGX_HTTP_OK
             || out.status == NGX_HTTP_CREATED);
        must(out.status != NGX_HTTP_CREATED || out.located == 1);

        if (out.problem == 0 && ops[which].map
                                == ngx_http_veto_sandbox_reply_file)
        {
            must(out.sent_len == ctx->helper.payload_len);
        }
    }

    ngx_destroy_pool(pool);

    return 0;
}
