/*
 * Which run of its helper this gateway talks to.  The helper makes a
 * random epoch when it starts and reports it in "ping" and in every
 * sandbox; sandboxes never outlive their helper, so a sandbox Redis
 * counts under another epoch of this gateway's helper is gone.  The gate
 * asks before a create counts against a sandbox quota, so that a helper
 * crash does not lock a tenant out of its quota until the dead
 * sandboxes' lifetimes end (the quota script drops them).
 */

#include "ngx_http_veto_sandbox_transport.h"


static void ngx_http_veto_sandbox_epoch_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx);


/*
 * Pings the helper; its reply sets ctx->epoch (and ctx->epoch_known),
 * then next() goes on and the request resumes with its code.  NGX_OK:
 * asked; else the answer (503 when the helper is not reachable: the
 * create could not be made anyway).
 */
ngx_int_t
ngx_http_veto_sandbox_epoch(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_gate_pt next)
{
    json_t              *req;
    ngx_int_t            rc;
    ngx_pool_cleanup_t  *cln;

    /* the request lives as long as r: the exchange keeps pointers into
     * it until the reply (its op for the metrics, the request for a
     * resend) */
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    req = json_pack("{s:s}", "op", VSB_OP_PING);
    if (req == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_veto_sandbox_json_cleanup;
    cln->data = req;

    ctx->epoch_next = next;

    rc = ngx_http_veto_sandbox_helper_send(r, ctx, req, NULL, 0,
                                           ngx_http_veto_sandbox_epoch_reply);

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_veto_sandbox_problem(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                             "helper_unavailable",
                                             "the sandbox helper is not "
                                             "reachable", NULL);
    }

    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/* 1..64 lowercase hex digits: a key part and a record field */
static ngx_uint_t
ngx_http_veto_sandbox_epoch_valid(json_t *v)
{
    size_t  len;

    if (!json_is_string(v)) {
        return 0;
    }

    len = json_string_length(v);

    return len != 0 && len <= 64
           && ngx_http_veto_sandbox_hex_lower(
                  (const u_char *) json_string_value(v), len);
}


/* The ping's reply: the epoch (a helper without one is not reconciled,
 * nothing else changes), then next(). */
static void
ngx_http_veto_sandbox_epoch_reply(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    json_t                          *v;
    ngx_int_t                        rc;
    ngx_http_veto_sandbox_helper_t  *h;

    h = &ctx->helper;

    if (h->status != NGX_OK || !json_is_true(json_object_get(h->json, "ok")))
    {
        rc = ngx_http_veto_sandbox_problem(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                           "helper_unavailable",
                                           "the sandbox helper did not answer",
                                           NULL);
        ngx_http_veto_sandbox_resume(r, rc);
        return;
    }

    /* the same reply says what the helper binds each secret to, and
     * its exec timeout ceiling (_heard.c) */
    ngx_http_veto_sandbox_heard(h->json, r->connection->log);

    v = json_object_get(h->json, "epoch");

    if (ngx_http_veto_sandbox_epoch_valid(v)) {
        ctx->epoch.len = json_string_length(v);
        ctx->epoch.data = ngx_pnalloc(r->pool, ctx->epoch.len);

        if (ctx->epoch.data == NULL) {
            ngx_http_veto_sandbox_resume(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        ngx_memcpy(ctx->epoch.data, json_string_value(v), ctx->epoch.len);
    }

    /* that exchange is over; the create starts its own on a new
     * connection (the ping's reply is freed with the pool) */
    ngx_http_veto_sandbox_helper_reset(h);

    ctx->epoch_known = 1;

    rc = ctx->epoch_next(r, ctx);

    ngx_http_veto_sandbox_resume(r, rc);
}
