/*
 * What this worker heard from its helper: the last full ping's reply
 * (vsb_protocol.h) as one record, when it came, and one rule for it: it
 * is fresh for NGX_HTTP_VSB_HEARD_TTL, so that a helper restarted with
 * other settings is heard within that time.  It holds:
 *
 *   the exec timeout ceiling (limits_max.timeout_s): an exec whose
 *   timeout is the sandbox's own is waited for up to it (_reply.c asks
 *   with one ping before such an exec when nothing fresh is heard);
 *
 *   the credential bindings ("credentials"), the operator's binding of
 *   each secret (host, header, variable, path prefix; never a value,
 *   which only the egress proxy holds): a human asked to attach a secret
 *   is shown the hosts it goes to (the gate asks with the epoch's ping
 *   before such an approval when nothing fresh is heard).
 *
 * One record, not a cache each: both come in every full ping reply, the
 * epoch's (_epoch.c: before a create that counts against a quota, and
 * before the approval above) and the exec's, and either reply now
 * refreshes both.  Before, each had its own 60 s clock: the exec's ping
 * refreshed both, the epoch's only the bindings.  Nothing is heard less
 * often than before, so no exec waits for a ping it did not wait for
 * before; an exec after a create that counts against a sandbox quota
 * (or an approval with secrets) within a minute on the same worker now
 * needs none (t/module/metrics.t counts these pings).  What
 * changes: a ping answered without "ok" refreshes nothing (the exec it
 * came for is still waited for up to NGX_HTTP_VSB_MAX_WAIT_S, as a reply
 * naming no ceiling makes it), where its ceiling-less answer used to be
 * kept for a minute: a helper that answered every ping so would cost such
 * an exec its ping each time, as before the ceiling was kept at all.
 *
 * A worker keeps one record, whichever helper a reply came from (as
 * both caches did): servers naming different helpers share it.
 */

#include "ngx_http_veto_sandbox_transport.h"


#define NGX_HTTP_VSB_HEARD_TTL      60000
#define NGX_HTTP_VSB_BINDINGS_MAX   64      /* EG_CRED_MAX */


static struct {
    json_t      *bindings;      /* name -> binding; NULL: none heard */
    ngx_msec_t   ceiling_ms;    /* 0: none heard */
    ngx_msec_t   at;
} ngx_http_veto_sandbox_heard_rec;


/* A string field of at most max bytes, no NUL: copied into to.  0 when
 * it is absent and may be (optional); -1 when it is bad. */
static int
ngx_http_veto_sandbox_heard_str(json_t *from, const char *key, size_t max,
    ngx_uint_t optional, json_t *to)
{
    json_t  *v;
    size_t   len;

    v = json_object_get(from, key);

    if (v == NULL && optional) {
        return 0;
    }

    if (!json_is_string(v)) {
        return -1;
    }

    len = json_string_length(v);

    if (len == 0 || len > max || strlen(json_string_value(v)) != len) {
        return -1;
    }

    return json_object_set_new(to, key, json_stringn(json_string_value(v),
                                                     len)) == 0 ? 0 : -1;
}


/* The reply's bindings, by name; NULL when out of memory. */
static json_t *
ngx_http_veto_sandbox_heard_bindings_of(json_t *ping)
{
    json_t  *list, *b, *o, *all, *name;
    size_t   i;

    all = json_object();
    if (all == NULL) {
        return NULL;
    }

    /* none: the helper binds no secret */
    list = json_object_get(ping, "credentials");

    json_array_foreach(list, i, b) {
        if (i == NGX_HTTP_VSB_BINDINGS_MAX) {
            break;
        }

        name = json_object_get(b, "name");
        o = json_object();

        /* an entry that is not one is left out: its secret is then
         * shown as not bound, which is what attaching it finds */
        if (o == NULL || !json_is_string(name)
            || json_string_length(name) == 0 || json_string_length(name) > 64
            || ngx_http_veto_sandbox_heard_str(b, "host", 257, 0, o) != 0
            || ngx_http_veto_sandbox_heard_str(b, "header", 64, 0, o) != 0
            || ngx_http_veto_sandbox_heard_str(b, "env", 64, 0, o) != 0
            || ngx_http_veto_sandbox_heard_str(b, "path", 256, 1, o) != 0
            || json_object_set_new(o, "name", json_copy(name)) != 0
            || json_object_set_new(all, json_string_value(name), o) != 0)
        {
            json_decref(o);
            continue;
        }
    }

    return all;
}


void
ngx_http_veto_sandbox_heard(json_t *ping, ngx_log_t *log)
{
    json_t      *v, *all;
    json_int_t   max;

    if (!json_is_true(json_object_get(ping, "ok"))) {
        return;
    }

    all = ngx_http_veto_sandbox_heard_bindings_of(ping);
    if (all == NULL) {
        return;
    }

    v = json_object_get(json_object_get(ping, "limits_max"),
                        VSB_LIMIT_TIMEOUT_S);
    max = json_is_integer(v) ? json_integer_value(v) : 0;

    if (max <= 0 || max > NGX_HTTP_VSB_MAX_WAIT_S) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "veto_sandbox: the helper names no timeout ceiling; "
                      "an exec is waited for up to %d s",
                      NGX_HTTP_VSB_MAX_WAIT_S);
        max = NGX_HTTP_VSB_MAX_WAIT_S;
    }

    json_decref(ngx_http_veto_sandbox_heard_rec.bindings);
    ngx_http_veto_sandbox_heard_rec.bindings = all;
    ngx_http_veto_sandbox_heard_rec.ceiling_ms = (ngx_msec_t) max * 1000;
    ngx_http_veto_sandbox_heard_rec.at = ngx_current_msec;
}


ngx_uint_t
ngx_http_veto_sandbox_heard_fresh(void)
{
    return ngx_http_veto_sandbox_heard_rec.bindings != NULL
           && ngx_current_msec - ngx_http_veto_sandbox_heard_rec.at
              < NGX_HTTP_VSB_HEARD_TTL;
}


ngx_msec_t
ngx_http_veto_sandbox_heard_ceiling(void)
{
    return ngx_http_veto_sandbox_heard_fresh()
           ? ngx_http_veto_sandbox_heard_rec.ceiling_ms : 0;
}


json_t *
ngx_http_veto_sandbox_heard_bindings(json_t *names)
{
    json_t  *out, *v, *b;
    size_t   i;

    if (ngx_http_veto_sandbox_heard_rec.bindings == NULL) {
        return NULL;
    }

    out = json_array();
    if (out == NULL) {
        return NULL;
    }

    json_array_foreach(names, i, v) {
        if (!json_is_string(v)) {
            continue;
        }

        b = json_object_get(ngx_http_veto_sandbox_heard_rec.bindings,
                            json_string_value(v));

        if (json_array_append_new(out, b != NULL
                        ? json_deep_copy(b)
                        : json_pack("{s:O, s:b}", "name", v, "bound", 0))
            != 0)
        {
            json_decref(out);
            return NULL;
        }
    }

    return out;
}
