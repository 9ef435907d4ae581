/*
 * Routing between gateway hosts: a request for a sandbox another live
 * host holds, decided here (identity, policy, revocation, quotas,
 * approval: the gate ran), is handed to that host by nginx's own proxy
 * and upstream machinery, with a credential it checks
 * (_peer_cred.c) instead of deciding again.
 *
 * The operator's configuration (README, "Several gateway hosts"):
 *
 *     veto_sandbox_peer_key  /etc/veto/peer.key;    # shared by all hosts
 *     veto_sandbox_peer_pass @veto_peer;
 *     upstream veto_sandbox_peers { veto_sandbox_peers; keepalive 16; }
 *     location @veto_peer {
 *         proxy_pass http://veto_sandbox_peers;
 *         proxy_http_version 1.1;
 *         proxy_set_header Connection "";
 *         proxy_set_header Veto-Peer-Credential $veto_peer_credential;
 *         proxy_buffering off;
 *     }
 *
 * The sender: once the gate let the request through, it signs it and
 * redirects it to the named location; "veto_sandbox_peers" is a balancer
 * (before keepalive, which wraps it) that picks the owner's address this
 * request was routed to.  The receiver: a request carrying
 * Veto-Peer-Credential is checked (the key, the clock within
 * NGX_HTTP_VSB_PEER_VALIDITY, the body's digest, the signature over
 * method, URI and the identity of the forwarded bearer token, which it
 * verifies itself), its nonce is kept in Redis (a replay is refused),
 * and the op runs without the gate: the sender counted the quota,
 * consumed the approval and wrote the decision's audit record; the
 * receiver writes what its helper did, once.
 */

#include "ngx_http_veto_sandbox_pipeline.h"
#include "ngx_http_veto_sandbox_hash.h"

#include <openssl/rand.h>


#define NGX_HTTP_VSB_PEER_VALIDITY  10000       /* ms, either way */
#define NGX_HTTP_VSB_PEER_HEADER    "Veto-Peer-Credential"


typedef struct {
    ngx_str_t                    credential;
    ngx_str_t                    host;      /* the owner's name */
    ngx_addr_t                   addr;      /* the owner's */
} ngx_http_veto_sandbox_peer_route_t;


static ngx_int_t ngx_http_veto_sandbox_peers_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_veto_sandbox_peers_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_veto_sandbox_peers_get(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_veto_sandbox_peers_free(ngx_peer_connection_t *pc,
    void *data, ngx_uint_t state);
static ngx_int_t ngx_http_veto_sandbox_peer_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_veto_sandbox_peer_failed(ngx_http_request_t *r,
    ngx_str_t *host, ngx_uint_t *sent);


/* marks the route in r's pool: the balancer and the variable find it */
static void
ngx_http_veto_sandbox_peer_route_cleanup(void *data)
{
}


static ngx_http_veto_sandbox_peer_route_t *
ngx_http_veto_sandbox_peer_route(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t  *cln;

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_veto_sandbox_peer_route_cleanup) {
            return cln->data;
        }
    }

    return NULL;
}


/* ---- configuration ------------------------------------------------ */


/* $veto_peer_credential (the hop's proxy_set_header sends it), and the
 * error filter's question: is r routed, and whose error is this */
ngx_int_t
ngx_http_veto_sandbox_peer_preconfiguration(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;

    static ngx_str_t  name = ngx_string("veto_peer_credential");

    var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOCACHEABLE);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_veto_sandbox_peer_variable;
    var->data = 0;

    ngx_http_veto_sandbox_routed_failed = ngx_http_veto_sandbox_peer_failed;

    return NGX_OK;
}


/* veto_sandbox_peer_key <file>: at least 32 bytes, trailing white space
 * dropped */
char *
ngx_http_veto_sandbox_peer_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_main_conf_t *vmcf = conf;

    u_char     *data;
    size_t      len;
    ngx_str_t  *value, file;

    if (vmcf->peer_key.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    file = value[1];

    if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    data = ngx_http_veto_sandbox_read_file(cf, &file, &len);
    if (data == NULL) {
        return NGX_CONF_ERROR;
    }

    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'
                   || data[len - 1] == ' ' || data[len - 1] == '\t'))
    {
        len--;
    }

    if (len < 32) {
        return "needs a key file of at least 32 bytes (such as "
               "\"openssl rand -hex 32\"), the same on every host";
    }

    vmcf->peer_key.data = data;
    vmcf->peer_key.len = len;

    return NGX_CONF_OK;
}


/* veto_sandbox_peer_pass @name */
char *
ngx_http_veto_sandbox_peer_pass(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_veto_sandbox_main_conf_t *vmcf = conf;

    ngx_str_t  *value;

    if (vmcf->peer_pass.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len < 2 || value[1].data[0] != '@') {
        return "needs a named location, such as @veto_peer";
    }

    vmcf->peer_pass = value[1];

    return NGX_CONF_OK;
}


/* veto_sandbox_peers (in an upstream block, before keepalive) */
char *
ngx_http_veto_sandbox_peers(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_upstream_server_t    *us;
    ngx_http_upstream_srv_conf_t  *uscf;

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    /* the upstream block wants a server; the peer is picked per request,
     * so this one stands for "the owner's host" and is never used */
    if (uscf->servers == NULL || uscf->servers->nelts) {
        return "must be alone in its upstream block, before keepalive, "
               "with no server";
    }

    us = ngx_array_push(uscf->servers);
    if (us == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(us, sizeof(ngx_http_upstream_server_t));

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    uscf->peer.init_upstream = ngx_http_veto_sandbox_peers_init_upstream;
    uscf->flags = NGX_HTTP_UPSTREAM_CREATE;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_peers_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    us->peer.init = ngx_http_veto_sandbox_peers_init_peer;

    return NGX_OK;
}


/* ---- the balancer: the owner this request was routed to ----------- */


static ngx_int_t
ngx_http_veto_sandbox_peers_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_veto_sandbox_peer_route_t  *route;

    route = ngx_http_veto_sandbox_peer_route(r);

    if (route == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "veto_sandbox: the veto_sandbox_peers upstream serves "
                      "only requests the gateway routed to another host");
        return NGX_ERROR;
    }

    r->upstream->peer.data = route;
    r->upstream->peer.get = ngx_http_veto_sandbox_peers_get;
    r->upstream->peer.free = ngx_http_veto_sandbox_peers_free;
    r->upstream->peer.tries = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_peers_get(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_veto_sandbox_peer_route_t  *route = data;

    pc->sockaddr = route->addr.sockaddr;
    pc->socklen = route->addr.socklen;
    pc->name = &route->addr.name;

    return NGX_OK;
}


static void
ngx_http_veto_sandbox_peers_free(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    pc->tries = 0;
}


/* $veto_peer_credential: the routed request's credential, else empty */
static ngx_int_t
ngx_http_veto_sandbox_peer_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_veto_sandbox_peer_route_t  *route;

    route = ngx_http_veto_sandbox_peer_route(r);

    if (route == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = route->credential.data;
    v->len = route->credential.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * For the problem filter: is r a request routed to its owner's host,
 * and whose answer is this?  NGX_DECLINED: not routed.  NGX_OK: the
 * owner answered (its own problem+json, passed on as it is).  NGX_ABORT:
 * nginx's own error on the hop (the owner refused the connection, reset
 * it or did not answer in time: a host that died before its lease ran
 * out); *host names the owner, *sent says whether the request reached
 * it (then it may have run).  ngx_http_veto_sandbox_routed_failed.
 */
static ngx_int_t
ngx_http_veto_sandbox_peer_failed(ngx_http_request_t *r, ngx_str_t *host,
    ngx_uint_t *sent)
{
    ngx_http_veto_sandbox_peer_route_t  *route;

    if (r->upstream == NULL) {
        return NGX_DECLINED;
    }

    route = ngx_http_veto_sandbox_peer_route(r);
    if (route == NULL) {
        return NGX_DECLINED;
    }

    /* the special response handler sets err_status; a proxied answer
     * leaves it alone */
    if (r->err_status == 0) {
        return NGX_OK;
    }

    *host = route->host;
    *sent = r->upstream->request_sent;

    return NGX_ABORT;
}


/* ---- the sender ----------------------------------------------------- */


/* The owner's lease named addr: route there (NGX_OK), or say where the
 * sandbox is (NGX_DECLINED: routing is not configured, or not for this
 * request). */
ngx_int_t
ngx_http_veto_sandbox_peer_plan(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, u_char *addr, size_t len)
{
    ngx_http_veto_sandbox_main_conf_t  *mcf;

    mcf = ngx_http_veto_sandbox_gate_mcf(r);

    /* the REST API only: an MCP tools/call is one request of a session
     * this host holds */
    if (mcf->peer_pass.len == 0 || mcf->peer_key.len == 0
        || ctx->in.uri.data != r->uri.data || len == 0 || len > 255)
    {
        return NGX_DECLINED;
    }

    ctx->peer_addr = ngx_pcalloc(r->pool, sizeof(ngx_addr_t));
    if (ctx->peer_addr == NULL) {
        return NGX_ERROR;
    }

    if (ngx_parse_addr_port(r->pool, ctx->peer_addr, addr, len) != NGX_OK
        || ngx_inet_get_port(ctx->peer_addr->sockaddr) == 0)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "veto_sandbox: host \"%V\" has no address a request "
                      "can be routed to: \"%*s\"", &ctx->owner_host, len,
                      addr);
        return NGX_DECLINED;
    }

    ctx->peer_addr->name.data = ngx_pnalloc(r->pool, len);
    if (ctx->peer_addr->name.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ctx->peer_addr->name.data, addr, len);
    ctx->peer_addr->name.len = len;

    ctx->peer_route = 1;

    return NGX_OK;
}


/* The gate let the request through: sign it and hand it to its owner. */
ngx_int_t
ngx_http_veto_sandbox_peer_forward(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                               *p;
    off_t                                 blen;
    ngx_time_t                           *tp;
    ngx_pool_cleanup_t                   *cln;
    ngx_http_veto_sandbox_peer_cred_t     cred;
    ngx_http_veto_sandbox_main_conf_t    *mcf;
    ngx_http_veto_sandbox_peer_route_t   *route;
    u_char                                md[32], nonce[16], sig[65];

    mcf = ngx_http_veto_sandbox_gate_mcf(r);

    if (ngx_http_veto_sandbox_hash_body(r->request_body
                                        ? r->request_body->bufs : NULL,
                                        md, &blen, r->connection->log)
        != NGX_OK
        || RAND_bytes(nonce, sizeof(nonce)) != 1)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln = ngx_pool_cleanup_add(r->pool,
                               sizeof(ngx_http_veto_sandbox_peer_route_t));
    p = ngx_pnalloc(r->pool, NGX_INT64_LEN + 32 + 64);

    if (cln == NULL || p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    tp = ngx_timeofday();

    ngx_memzero(&cred, sizeof(cred));
    cred.host = mcf->host;
    cred.time.data = p;
    p = ngx_sprintf(p, "%T%03M", tp->sec, tp->msec);
    cred.time.len = p - cred.time.data;
    cred.nonce.data = p;
    p = ngx_hex_dump(p, nonce, sizeof(nonce));
    cred.nonce.len = p - cred.nonce.data;
    cred.body.data = p;
    p = ngx_hex_dump(p, md, 32);
    cred.body.len = p - cred.body.data;

    /* a create placed on another host: the quota slot held here becomes
     * the receiver's to swap for the sandbox (a create that never gets
     * there leaves it to expire with the lifetime, as a crashed
     * gateway's) */
    if (ctx->slot_held) {
        cred.slot = ctx->slot;
        ctx->slot_held = 0;
    }

    /* a request for a sandbox: the owner's helper run its record named */
    cred.epoch = ctx->peer_epoch;

    if (ngx_http_veto_sandbox_peer_cred_sign(r->pool, &mcf->peer_key, &cred,
                                             &r->method_name,
                                             &r->unparsed_uri, &ctx->tenant,
                                             &ctx->agent, &ctx->jti, sig)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    route = cln->data;
    route->addr = *ctx->peer_addr;
    route->host = ctx->owner_host;

    route->credential.data = ngx_pnalloc(r->pool,
                                         NGX_HTTP_VSB_PEER_CRED_MAX);
    if (route->credential.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    route->credential.len = ngx_snprintf(route->credential.data,
                                         NGX_HTTP_VSB_PEER_CRED_MAX,
                                         "v1;h=%V;t=%V;n=%V;b=%V%s%V%s%V;s=%s",
                                         &cred.host, &cred.time, &cred.nonce,
                                         &cred.body,
                                         cred.slot.len ? ";q=" : "",
                                         &cred.slot,
                                         cred.epoch.len ? ";e=" : "",
                                         &cred.epoch, sig)
                            - route->credential.data;

    cln->handler = ngx_http_veto_sandbox_peer_route_cleanup;

    ngx_str_set(&ctx->decision, "allow:routed");

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "veto_sandbox: %V %V routed to host \"%V\" at %V",
                  &r->method_name, &r->uri, &ctx->owner_host,
                  &route->addr.name);

    /* the named location takes the request over (its own count); the
     * one the API handler held for the gate goes */
    (void) ngx_http_named_location(r, &mcf->peer_pass);

    ngx_http_finalize_request(r, NGX_DONE);

    return NGX_DONE;
}


/* ---- the receiver --------------------------------------------------- */


/* Veto-Peer-Credential, when there is exactly one; *many when more */
static ngx_table_elt_t *
ngx_http_veto_sandbox_peer_header(ngx_http_request_t *r, ngx_uint_t *many)
{
    ngx_table_elt_t                    *h;
    ngx_http_veto_sandbox_header_it_t   it;

    it.part = NULL;
    h = ngx_http_veto_sandbox_header_next(&r->headers_in.headers,
                                          NGX_HTTP_VSB_PEER_HEADER, &it);

    *many = h != NULL
            && ngx_http_veto_sandbox_header_next(&r->headers_in.headers,
                                                 NGX_HTTP_VSB_PEER_HEADER,
                                                 &it)
               != NULL;

    return h;
}


static ngx_int_t
ngx_http_veto_sandbox_peer_refuse(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, const char *reason, const char *detail)
{
    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "veto_sandbox: a forwarded request refused (%s): %s",
                  reason, detail);

    return ngx_http_veto_sandbox_refuse(r, ctx, NGX_HTTP_FORBIDDEN,
                                        "peer_credential_invalid", detail,
                                        json_pack("{s:s}", "reason", reason));
}


/*
 * Before the gate: NGX_DECLINED when the request carries no credential
 * (the gate decides it); NGX_AGAIN when the credential is good and its
 * nonce is to be kept (ctx->step is NGX_HTTP_VSB_STEP_PEER,
 * ctx->peer_nonce holds it); else the answer (NGX_OK: a refusal sent).
 */
ngx_int_t
ngx_http_veto_sandbox_peer_receive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    off_t                                blen;
    int64_t                              now, skew;
    ngx_uint_t                           many;
    ngx_time_t                          *tp;
    ngx_table_elt_t                     *h;
    ngx_http_veto_sandbox_peer_cred_t    cred;
    ngx_http_veto_sandbox_main_conf_t   *mcf;
    u_char                               md[32], hex[64];

    h = ngx_http_veto_sandbox_peer_header(r, &many);

    if (h == NULL) {
        return NGX_DECLINED;
    }

    mcf = ngx_http_veto_sandbox_gate_mcf(r);

    if (many) {
        return ngx_http_veto_sandbox_peer_refuse(r, ctx, "malformed",
                   "more than one " NGX_HTTP_VSB_PEER_HEADER " header");
    }

    if (mcf->peer_key.len == 0 || ngx_http_veto_sandbox_rds == NULL) {
        return ngx_http_veto_sandbox_peer_refuse(r, ctx, "not_accepted",
                   "this gateway takes no requests from other gateway "
                   "hosts (no veto_sandbox_peer_key, or no Redis to keep "
                   "their nonces)");
    }

    if (ngx_http_veto_sandbox_peer_cred_parse(h->value.data, h->value.len,
                                              &cred)
        != NGX_OK)
    {
        return ngx_http_veto_sandbox_peer_refuse(r, ctx, "malformed",
                   "the " NGX_HTTP_VSB_PEER_HEADER " header is not "
                   "v1;h=<host>;t=<ms>;n=<32 hex>;b=<64 hex>[;q=<slot>]"
                   "[;e=<32 hex: the owner's helper epoch>];s=<64 hex>");
    }

    tp = ngx_timeofday();
    now = (int64_t) tp->sec * 1000 + tp->msec;
    skew = now - cred.ms;

    if (skew > NGX_HTTP_VSB_PEER_VALIDITY
        || skew < -NGX_HTTP_VSB_PEER_VALIDITY)
    {
        return ngx_http_veto_sandbox_peer_refuse(r, ctx, "expired",
                   "the credential's time is more than 10 s from this "
                   "host's clock (a late replay, or clocks apart)");
    }

    if (ngx_http_veto_sandbox_hash_body(r->request_body
                                        ? r->request_body->bufs : NULL,
                                        md, &blen, r->connection->log)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_hex_dump(hex, md, 32);

    if (ngx_memcmp(hex, cred.body.data, 64) != 0) {
        return ngx_http_veto_sandbox_peer_refuse(r, ctx, "body",
                   "the request body is not the one the credential was "
                   "made for");
    }

    switch (ngx_http_veto_sandbox_peer_cred_check(r->pool, &mcf->peer_key,
                                                  &cred, &r->method_name,
                                                  &r->unparsed_uri,
                                                  &ctx->tenant, &ctx->agent,
                                                  &ctx->jti))
    {
    case NGX_OK:
        break;

    case NGX_DECLINED:
        return ngx_http_veto_sandbox_peer_refuse(r, ctx, "signature",
                   "the credential's signature does not match this "
                   "request and identity under this gateway's "
                   "veto_sandbox_peer_key");

    default:
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->peer_nonce.data = ngx_pnalloc(r->pool, 32);
    if (ctx->peer_nonce.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(ctx->peer_nonce.data, cred.nonce.data, 32);
    ctx->peer_nonce.len = 32;

    /* a create placed here: only a create takes the sender's slot */
    if (cred.slot.len && ctx->op->quota == NGX_HTTP_VSB_QUOTA_SANDBOXES) {
        ctx->peer_slot.data = ngx_pnalloc(r->pool, cred.slot.len);
        if (ctx->peer_slot.data == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_memcpy(ctx->peer_slot.data, cred.slot.data, cred.slot.len);
        ctx->peer_slot.len = cred.slot.len;
    }

    /* the helper run the sender found in the ownership record: this
     * host's helper refuses the request if it is not its own, and the
     * fence answers (_fence.c), as for a request that landed here */
    if (cred.epoch.len && ctx->sandbox.len
        && ngx_http_veto_sandbox_fence_epoch(r, &ctx->own_epoch,
                                             (char *) cred.epoch.data,
                                             cred.epoch.len)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->step = NGX_HTTP_VSB_STEP_PEER;

    return NGX_AGAIN;
}


/* SET veto:{:hosts}:nonce:<n> NX PX: a nonce seen before is a replay */
ngx_int_t
ngx_http_veto_sandbox_peer_nonce(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_redis_call_t *call)
{
    u_char       key[sizeof(NGX_HTTP_VSB_KEY_PREFIX "{:hosts}:nonce:") + 32];
    u_char       px[NGX_INT_T_LEN];
    size_t       argvlen[6];
    const char  *argv[6];

    argv[0] = "SET";
    argvlen[0] = 3;
    argv[1] = (const char *) key;
    argvlen[1] = ngx_sprintf(key, NGX_HTTP_VSB_KEY_PREFIX "{:hosts}:nonce:%V",
                             &ctx->peer_nonce) - key;
    argv[2] = "1";
    argvlen[2] = 1;
    argv[3] = "NX";
    argvlen[3] = 2;
    argv[4] = "PX";
    argvlen[4] = 2;
    argv[5] = (const char *) px;
    argvlen[5] = ngx_sprintf(px, "%d", 3 * NGX_HTTP_VSB_PEER_VALIDITY) - px;

    return ngx_http_veto_sandbox_redis_command(call, 6, argv, argvlen);
}


/* NGX_AGAIN: the nonce is new, the op runs; else the answer. */
ngx_int_t
ngx_http_veto_sandbox_peer_nonce_result(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, redisReply *reply)
{
    if (reply->type == REDIS_REPLY_STATUS && reply->len == 2
        && ngx_strncmp(reply->str, "OK", 2) == 0)
    {
        ngx_str_set(&ctx->decision, "allow:peer");

        if (ctx->peer_slot.len) {
            /* the create's record swaps it for the sandbox, as here */
            ctx->slot = ctx->peer_slot;
            ctx->slot_held = 1;
        }

        ctx->step = NGX_HTTP_VSB_STEP_NEXT;
        return NGX_AGAIN;
    }

    if (reply->type == REDIS_REPLY_NIL) {
        return ngx_http_veto_sandbox_peer_refuse(r, ctx, "replayed",
                   "this credential was used before: a forwarded request "
                   "runs once");
    }

    return ngx_http_veto_sandbox_redis_problem(r, ctx, NGX_ERROR);
}
