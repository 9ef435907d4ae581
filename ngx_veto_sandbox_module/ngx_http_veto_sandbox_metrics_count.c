/*
 * The metrics' counting: what the other files call as things happen (a
 * helper exchange, a Redis error, a token cache lookup, an approval's
 * outcome), each an atomic add to the shared zone's table
 * (_metrics_store.c).  Without a metrics location there is no zone, and
 * every call returns at once.  The directive, the zone and the scrape
 * are _metrics.c's; this file only counts, so the lowest callers (the
 * helper client, the Redis connection) call down into it.
 */

#include "ngx_http_veto_sandbox_base.h"
#include "ngx_http_veto_sandbox_metrics.h"

#include <time.h>


/* the zone's table in this process's cycle, or NULL */
ngx_http_veto_sandbox_metrics_sh_t *
ngx_http_veto_sandbox_metrics_sh(void)
{
    ngx_http_veto_sandbox_main_conf_t  *vmcf;

    vmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_veto_sandbox_module);

    if (vmcf == NULL || vmcf->metrics_zone == NULL) {
        return NULL;
    }

    return vmcf->metrics_zone->data;
}


static uint64_t
ngx_http_veto_sandbox_metrics_now_us(void)
{
    struct timespec  ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1) {
        return (uint64_t) ngx_current_msec * 1000;
    }

    return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}


/* family{name="value"}, n */
static void
ngx_http_veto_sandbox_metrics_count(ngx_uint_t family, const char *name,
    u_char *value, size_t len, ngx_atomic_uint_t n)
{
    u_char                              *p;
    u_char                               labels[NGX_HTTP_VSB_M_LABELS];
    ngx_http_veto_sandbox_metrics_sh_t  *sh;

    sh = ngx_http_veto_sandbox_metrics_sh();
    if (sh == NULL) {
        return;
    }

    p = ngx_http_veto_sandbox_metrics_label(labels, labels,
                                            labels + sizeof(labels), name,
                                            value, len);
    if (p == NULL) {
        (void) ngx_atomic_fetch_add(&sh->dropped, 1);
        return;
    }

    ngx_http_veto_sandbox_metrics_add(sh, family, labels, p - labels, n);
}


void
ngx_http_veto_sandbox_metrics_helper_start(ngx_http_veto_sandbox_ctx_t *ctx,
    void *req)
{
    ngx_http_veto_sandbox_helper_t  *h;

    if (ngx_http_veto_sandbox_metrics_sh() == NULL) {
        return;
    }

    h = &ctx->helper;

    h->start_us = ngx_http_veto_sandbox_metrics_now_us();
    h->op = json_string_value(json_object_get((json_t *) req, "op"));
}


void
ngx_http_veto_sandbox_metrics_helper_error(const char *kind)
{
    ngx_http_veto_sandbox_metrics_count(NGX_HTTP_VSB_M_HELPER_ERRORS, "kind",
                                        (u_char *) kind, ngx_strlen(kind), 1);
}


/* the helper's own errors that say it is in trouble (a client's bad
 * request, or a sandbox that is not there, is not the helper's fault) */
static const char  *ngx_http_veto_sandbox_helper_faults[] = {
    VSB_E_TERMINATION_FAILED, VSB_E_INTERNAL, VSB_E_IO, VSB_E_EXEC_FAILED,
    VSB_E_CAPACITY, VSB_E_NOT_PERMITTED, VSB_E_UNAVAILABLE, VSB_E_NO_SPACE,
    VSB_E_BAD_FRAME, VSB_E_UNKNOWN_OP, NULL
};


/* An exec's result: its wall time and its network attempts. */
static void
ngx_http_veto_sandbox_metrics_exec(ngx_http_veto_sandbox_metrics_sh_t *sh,
    json_t *j)
{
    size_t       i;
    json_t      *v, *a;
    const char  *d;

    v = json_object_get(json_object_get(j, "usage"), "wall_ms");

    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        ngx_http_veto_sandbox_metrics_observe(sh,
                                    NGX_HTTP_VSB_M_EXEC_DURATION, NULL, 0,
                                    (uint64_t) json_integer_value(v) * 1000);
    }

    /* "none", or {attempts: [...], dropped, complete} */
    v = json_object_get(j, "network");

    json_array_foreach(json_object_get(v, "attempts"), i, a) {
        d = json_string_value(json_object_get(a, "decision"));

        if (d != NULL
            && (ngx_strcmp(d, "allowed") == 0 || ngx_strcmp(d, "refused") == 0
                || ngx_strcmp(d, "error") == 0))
        {
            ngx_http_veto_sandbox_metrics_count(NGX_HTTP_VSB_M_EGRESS,
                                                "outcome", (u_char *) d,
                                                ngx_strlen(d), 1);
        }
    }

    a = json_object_get(v, "dropped");

    if (json_is_integer(a) && json_integer_value(a) > 0) {
        ngx_http_veto_sandbox_metrics_count(NGX_HTTP_VSB_M_EGRESS, "outcome",
                                 (u_char *) "unlisted", 8,
                                 (ngx_atomic_uint_t) json_integer_value(a));
    }
}


void
ngx_http_veto_sandbox_metrics_helper(ngx_http_request_t *r,
    ngx_http_veto_sandbox_ctx_t *ctx)
{
    u_char                              *p;
    u_char                               labels[NGX_HTTP_VSB_M_LABELS];
    json_t                              *j;
    uint64_t                             now;
    const char                          *op, *kind, **f;
    ngx_http_veto_sandbox_helper_t      *h;
    ngx_http_veto_sandbox_metrics_sh_t  *sh;

    sh = ngx_http_veto_sandbox_metrics_sh();
    if (sh == NULL) {
        return;
    }

    h = &ctx->helper;
    op = h->op ? h->op : "unknown";

    now = ngx_http_veto_sandbox_metrics_now_us();

    p = ngx_http_veto_sandbox_metrics_label(labels, labels,
                                            labels + sizeof(labels), "op",
                                            (u_char *) op, ngx_strlen(op));
    if (p != NULL && h->start_us && now >= h->start_us) {
        ngx_http_veto_sandbox_metrics_observe(sh,
                                       NGX_HTTP_VSB_M_HELPER_DURATION,
                                       labels, p - labels,
                                       now - h->start_us);
    }

    if (h->status != NGX_OK) {
        kind = h->status == NGX_HTTP_GATEWAY_TIME_OUT ? "timeout"
               : h->status == NGX_HTTP_SERVICE_UNAVAILABLE ? "send"
               : h->status == NGX_HTTP_BAD_GATEWAY ? "protocol"
               : "internal";

        ngx_http_veto_sandbox_metrics_helper_error(kind);
        return;
    }

    j = h->json;

    if (!json_is_true(json_object_get(j, "ok"))) {
        kind = json_string_value(json_object_get(j, "error"));

        for (f = ngx_http_veto_sandbox_helper_faults; kind && *f; f++) {
            if (ngx_strcmp(kind, *f) == 0) {
                ngx_http_veto_sandbox_metrics_helper_error(kind);
                break;
            }
        }

        return;
    }

    if (ngx_strcmp(op, VSB_OP_EXEC) == 0) {
        ngx_http_veto_sandbox_metrics_exec(sh, j);
    }
}


void
ngx_http_veto_sandbox_metrics_redis(ngx_int_t rc, void *reply)
{
    redisReply  *rr = reply;

    if (rc == NGX_HTTP_GATEWAY_TIME_OUT) {
        ngx_http_veto_sandbox_metrics_redis_error("timeout");

    } else if (rc != NGX_OK) {
        ngx_http_veto_sandbox_metrics_redis_error("connection_lost");

    } else if (rr != NULL && rr->type == REDIS_REPLY_ERROR) {
        ngx_http_veto_sandbox_metrics_redis_error("error_reply");
    }
}


void
ngx_http_veto_sandbox_metrics_redis_error(const char *kind)
{
    ngx_http_veto_sandbox_metrics_count(NGX_HTTP_VSB_M_REDIS_ERRORS, "kind",
                                        (u_char *) kind, ngx_strlen(kind), 1);
}


void
ngx_http_veto_sandbox_metrics_jwt_cache(ngx_uint_t hit)
{
    ngx_http_veto_sandbox_metrics_count(NGX_HTTP_VSB_M_JWT_CACHE, "result",
                                        (u_char *) (hit ? "hit" : "miss"),
                                        hit ? 3 : 4, 1);
}


void
ngx_http_veto_sandbox_metrics_outcome(const char *outcome)
{
    const char  *state;

    if (ngx_strncmp(outcome, "approval_", 9) != 0) {
        return;
    }

    outcome += 9;

    /* "approved" is counted from the decision's state (a threshold above
     * one takes several approvals) */
    state = ngx_strcmp(outcome, "requested") == 0 ? "created"
            : ngx_strcmp(outcome, "denied") == 0 ? "denied"
            : ngx_strcmp(outcome, "expired") == 0 ? "expired"
            : ngx_strcmp(outcome, "consumed") == 0 ? "consumed"
            : NULL;

    if (state != NULL) {
        ngx_http_veto_sandbox_metrics_count(NGX_HTTP_VSB_M_APPROVALS, "state",
                                            (u_char *) state,
                                            ngx_strlen(state), 1);
    }
}


void
ngx_http_veto_sandbox_metrics_approval(ngx_str_t *state)
{
    if (state->len == 8 && ngx_strncmp(state->data, "approved", 8) == 0) {
        ngx_http_veto_sandbox_metrics_count(NGX_HTTP_VSB_M_APPROVALS, "state",
                                            state->data, state->len, 1);
    }
}
