/*
 * Prometheus metrics, what a scrape adds to the zone's families: the
 * helper's own figures (its "stats" reply, as gauges) and the webhook
 * notifier's counters (_notify.c), which have a zone of their own,
 * shared by the workers and kept across reloads, and are read as they
 * are when a webhook is configured.  Together, with the scrape's Redis
 * gauge, they write at most NGX_HTTP_VSB_METRICS_GAUGES bytes.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_metrics.h"
#include "ngx_http_veto_sandbox_notify.h"


/* # HELP, # TYPE and one sample */
u_char *
ngx_http_veto_sandbox_metrics_gauge(u_char *p, const char *name,
    const char *type, const char *help, json_int_t value)
{
    return ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n%s %L\n", name, help,
                       name, type, name, (int64_t) value);
}


/* a non-negative integer of the helper's figures, or -1 */
static json_int_t
ngx_http_veto_sandbox_stat(json_t *j, const char *name)
{
    json_t  *v;

    v = json_object_get(j, name);

    return json_is_integer(v) && json_integer_value(v) >= 0
           ? json_integer_value(v) : -1;
}


static const struct {
    const char  *field;
    const char  *name;
    const char  *type;
    const char  *help;
} ngx_http_veto_sandbox_stats[] = {
    { "sandboxes", "veto_sandbox_sandboxes", "gauge",
      "Sandboxes the helper holds now, in any state." },
    { "sandboxes_max", "veto_sandbox_sandboxes_max", "gauge",
      "The most sandboxes the helper holds (max_sandboxes)." },
    { "execs_running", "veto_sandbox_execs_running", "gauge",
      "Execs running now in the helper's sandboxes." },
    { "teardowns_pending", "veto_sandbox_teardowns_pending", "gauge",
      "Sandboxes being destroyed: termination not confirmed yet." },
    { "teardowns_failed", "veto_sandbox_teardowns_failed", "gauge",
      "Sandboxes whose termination could not be confirmed "
      "(termination_failed)." },
    { "started_at", "veto_sandbox_helper_start_time_seconds", "gauge",
      "When the helper started, unix seconds." },
    { "uptime_s", "veto_sandbox_helper_uptime_seconds", "gauge",
      "How long the helper has run." },
    { "connections", "veto_sandbox_helper_connections", "gauge",
      "Client connections the helper holds now." },
    { "buffered_bytes", "veto_sandbox_helper_buffered_bytes", "gauge",
      "Request and reply frames the helper holds in memory." },
    { "buffer_limit_bytes", "veto_sandbox_helper_buffer_limit_bytes",
      "gauge", "The helper's budget for held frames." },
    { NULL, NULL, NULL, NULL }
};


static const char  *ngx_http_veto_sandbox_egress_states[] = {
    "off", "unavailable", "starting", "up", "restarting", NULL
};


/* the helper's figures: up, then each one it gave */
u_char *
ngx_http_veto_sandbox_metrics_helper_gauges(u_char *p, json_t *stats)
{
    u_char       *q;
    json_t       *eg;
    ngx_uint_t    i, seen;
    json_int_t    v;
    const char   *state;

    p = ngx_http_veto_sandbox_metrics_gauge(p, "veto_sandbox_helper_up",
                                    "gauge",
                                    "1 when the sandbox helper answered "
                                    "this scrape, else 0.",
                                    stats != NULL);
    if (stats == NULL) {
        return p;
    }

    for (i = 0; ngx_http_veto_sandbox_stats[i].field; i++) {
        v = ngx_http_veto_sandbox_stat(stats,
                                       ngx_http_veto_sandbox_stats[i].field);
        if (v >= 0) {
            p = ngx_http_veto_sandbox_metrics_gauge(p,
                                          ngx_http_veto_sandbox_stats[i].name,
                                          ngx_http_veto_sandbox_stats[i].type,
                                          ngx_http_veto_sandbox_stats[i].help,
                                          v);
        }
    }

    eg = json_object_get(stats, "egress");
    if (!json_is_object(eg)) {
        return p;
    }

    p = ngx_http_veto_sandbox_metrics_gauge(p, "veto_sandbox_egress_proxy_up",
                                    "gauge",
                                    "1 when the egress proxy serves "
                                    "allowlist sandboxes.",
                                    json_is_true(json_object_get(eg,
                                                              "available")));

    v = ngx_http_veto_sandbox_stat(eg, "restarts");
    if (v >= 0) {
        p = ngx_http_veto_sandbox_metrics_gauge(p,
                                "veto_sandbox_egress_proxy_restarts_total",
                                "counter",
                                "Restarts of the egress proxy since the "
                                "helper started.", v);
    }

    /* credentials (a helper without them reports 0) */
    v = ngx_http_veto_sandbox_stat(eg, "injections");
    if (v >= 0) {
        p = ngx_http_veto_sandbox_metrics_gauge(p,
                                "veto_sandbox_egress_credential_"
                                "injections_total",
                                "counter",
                                "Requests the egress proxy added a "
                                "credential's header to, since the helper "
                                "started.", v);
    }

    v = ngx_http_veto_sandbox_stat(eg, "placeholders_refused");
    if (v >= 0) {
        p = ngx_http_veto_sandbox_metrics_gauge(p,
                                "veto_sandbox_egress_placeholders_"
                                "refused_total",
                                "counter",
                                "Requests the egress proxy refused for "
                                "carrying a credential's placeholder where "
                                "its binding does not cover (exfiltration "
                                "attempts), since the helper started.", v);
    }

    state = json_string_value(json_object_get(eg, "state"));

    p = ngx_sprintf(p, "# HELP veto_sandbox_egress_proxy_state The egress "
                    "proxy's state: 1 for the current one.\n"
                    "# TYPE veto_sandbox_egress_proxy_state gauge\n");

    seen = 0;

    for (i = 0; ngx_http_veto_sandbox_egress_states[i]; i++) {
        v = state != NULL
            && ngx_strcmp(state, ngx_http_veto_sandbox_egress_states[i]) == 0;
        seen |= v;

        p = ngx_sprintf(p, "veto_sandbox_egress_proxy_state{state=\"%s\"} "
                        "%L\n", ngx_http_veto_sandbox_egress_states[i],
                        (int64_t) v);
    }

    if (!seen && state != NULL) {
        /* a state this gateway does not know yet, as it is */
        q = ngx_cpymem(p, "veto_sandbox_egress_proxy_state{",
                       sizeof("veto_sandbox_egress_proxy_state{") - 1);
        q = ngx_http_veto_sandbox_metrics_label(q, q, q + 80, "state",
                                                (u_char *) state,
                                                ngx_strlen(state));
        if (q != NULL) {
            p = ngx_sprintf(q, "} 1\n");
        }
    }

    return p;
}


static const struct {
    const char  *name;
    size_t       offset;
    const char  *help;
} ngx_http_veto_sandbox_webhook_counters[] = {
    { "veto_sandbox_webhook_queued_total",
      offsetof(ngx_http_veto_sandbox_notify_counters_t, queued),
      "Webhook deliveries accepted into a worker's buffer, one per "
      "approval event and webhook." },
    { "veto_sandbox_webhook_delivered_total",
      offsetof(ngx_http_veto_sandbox_notify_counters_t, delivered),
      "Webhook deliveries a receiver answered with a 2xx." },
    { "veto_sandbox_webhook_retries_total",
      offsetof(ngx_http_veto_sandbox_notify_counters_t, retries),
      "Webhook attempts made after a failed one." },
    { "veto_sandbox_webhook_failed_total",
      offsetof(ngx_http_veto_sandbox_notify_counters_t, failed),
      "Webhook deliveries given up: the last attempt failed, or the "
      "receiver refused (4xx)." },
    { "veto_sandbox_webhook_dropped_total",
      offsetof(ngx_http_veto_sandbox_notify_counters_t, dropped),
      "Webhook events never fully tried: the worker's buffer full, no "
      "memory, or the worker stopped." },
    { NULL, 0, NULL }
};


/* the notifier's counters, when a webhook is configured */
u_char *
ngx_http_veto_sandbox_metrics_webhooks(u_char *p)
{
    ngx_uint_t                                i;
    ngx_atomic_uint_t                         v;
    ngx_http_veto_sandbox_notify_counters_t  *nc;

    nc = ngx_http_veto_sandbox_notify_counters();
    if (nc == NULL) {
        return p;
    }

    for (i = 0; ngx_http_veto_sandbox_webhook_counters[i].name; i++) {
        v = *(ngx_atomic_t *) ((u_char *) nc
                          + ngx_http_veto_sandbox_webhook_counters[i].offset);

        p = ngx_http_veto_sandbox_metrics_gauge(p,
                                ngx_http_veto_sandbox_webhook_counters[i].name,
                                "counter",
                                ngx_http_veto_sandbox_webhook_counters[i].help,
                                (json_int_t) v);
    }

    return p;
}
