/*
 * The helper's credential bindings, as this worker last heard them: a
 * full ping's "credentials" (vsb_protocol.h), the operator's binding of
 * each secret (host, header, variable, path prefix; never a value, which
 * only the egress proxy holds).  A human asked to attach a secret is
 * shown the hosts it goes to from here.  Heard again (one ping before
 * such an approval) once older than NGX_HTTP_VSB_BINDINGS_TTL, so that a
 * helper restarted with other bindings is heard within that time.
 */

#include "ngx_http_veto_sandbox_transport.h"


#define NGX_HTTP_VSB_BINDINGS_TTL   60000
#define NGX_HTTP_VSB_BINDINGS_MAX   64      /* EG_CRED_MAX */


static json_t      *ngx_http_veto_sandbox_bindings;   /* name -> binding */
static ngx_msec_t   ngx_http_veto_sandbox_bindings_at;


/* A string field of at most max bytes, no NUL: copied into to.  0 when
 * it is absent and may be (optional); -1 when it is bad. */
static int
ngx_http_veto_sandbox_bindings_str(json_t *from, const char *key,
    size_t max, ngx_uint_t optional, json_t *to)
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


void
ngx_http_veto_sandbox_bindings_heard(json_t *ping)
{
    json_t  *list, *b, *o, *all, *name;
    size_t   i;

    if (!json_is_true(json_object_get(ping, "ok"))) {
        return;
    }

    all = json_object();
    if (all == NULL) {
        return;
    }

    /* none: the helper binds no secret (a cold cache would ask again) */
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
            || ngx_http_veto_sandbox_bindings_str(b, "host", 257, 0, o) != 0
            || ngx_http_veto_sandbox_bindings_str(b, "header", 64, 0, o) != 0
            || ngx_http_veto_sandbox_bindings_str(b, "env", 64, 0, o) != 0
            || ngx_http_veto_sandbox_bindings_str(b, "path", 256, 1, o) != 0
            || json_object_set_new(o, "name", json_copy(name)) != 0
            || json_object_set_new(all, json_string_value(name), o) != 0)
        {
            json_decref(o);
            continue;
        }
    }

    json_decref(ngx_http_veto_sandbox_bindings);
    ngx_http_veto_sandbox_bindings = all;
    ngx_http_veto_sandbox_bindings_at = ngx_current_msec;
}


ngx_uint_t
ngx_http_veto_sandbox_bindings_fresh(void)
{
    return ngx_http_veto_sandbox_bindings != NULL
           && ngx_current_msec - ngx_http_veto_sandbox_bindings_at
              < NGX_HTTP_VSB_BINDINGS_TTL;
}


json_t *
ngx_http_veto_sandbox_bindings_of(json_t *names)
{
    json_t  *out, *v, *b;
    size_t   i;

    if (ngx_http_veto_sandbox_bindings == NULL) {
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

        b = json_object_get(ngx_http_veto_sandbox_bindings,
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
