/*
 * The control channel's request fields (control.c reads the requests):
 * each checked against the protocol (sandbox-helper/vsb_egress_protocol.h)
 * and the proxy's ceilings, and the named error a reply carries when one
 * is not as it must be.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "eg_control_fields.h"
#include "egress.h"
#include "vsb_egress_protocol.h"


json_t *
eg_ctl_err(const char *error, const char *field, const char *fmt, ...)
{
    va_list  ap;
    char     detail[512];
    json_t  *o;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);

    o = json_pack("{s:b, s:s, s:s}", "ok", 0, "error", error,
                  "detail", detail);
    if (o != NULL && field != NULL) {
        json_object_set_new(o, "field", json_string(field));
    }
    return o;
}


json_t *
eg_ctl_ok(const char *op)
{
    return json_pack("{s:b, s:s}", "ok", 1, "op", op);
}


/* Every key of req must be in allowed (NULL-terminated). */
json_t *
eg_ctl_check_fields(json_t *req, const char *const *allowed)
{
    const char  *k;
    json_t      *v;
    size_t       i;

    json_object_foreach(req, k, v) {
        for (i = 0; allowed[i] != NULL; i++) {
            if (strcmp(k, allowed[i]) == 0) {
                break;
            }
        }
        if (allowed[i] == NULL) {
            return eg_ctl_err("unknown_field", k, "unknown field \"%s\"", k);
        }
    }
    return NULL;
}


json_t *
eg_ctl_sandbox_id(json_t *req, const char *field, const char **out)
{
    json_t      *v = json_object_get(req, field);
    const char  *s;
    size_t       i, n;

    if (v == NULL) {
        return eg_ctl_err("missing_field", field, "\"%s\" is required",
                          field);
    }
    if (!json_is_string(v)) {
        return eg_ctl_err("bad_type", field, "\"%s\" must be a string",
                          field);
    }
    s = json_string_value(v);
    n = json_string_length(v);
    if (n == 0 || n > VSB_EGRESS_MAX_ID || strlen(s) != n) {
        return eg_ctl_err("bad_value", field, "a sandbox id is 1 .. %d "
                          "bytes", VSB_EGRESS_MAX_ID);
    }
    for (i = 0; i < n; i++) {
        char  c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
        {
            return eg_ctl_err("bad_value", field, "a sandbox id is made of "
                              "[A-Za-z0-9._-]");
        }
    }
    *out = s;
    return NULL;
}


/* A tenant as the helper names them: 1 .. 128 bytes of printable ASCII
 * without spaces. */
json_t *
eg_ctl_tenant(json_t *req, const char **out)
{
    json_t      *v = json_object_get(req, "tenant");
    const char  *s;
    size_t       i, n;

    if (v == NULL) {
        return eg_ctl_err("missing_field", "tenant", "\"tenant\" is "
                          "required (the sandbox's tenant: fair shares are "
                          "per tenant)");
    }
    if (!json_is_string(v)) {
        return eg_ctl_err("bad_type", "tenant", "\"tenant\" must be a "
                          "string");
    }
    s = json_string_value(v);
    n = json_string_length(v);
    if (n == 0 || n > VSB_EGRESS_MAX_TENANT || strlen(s) != n) {
        return eg_ctl_err("bad_value", "tenant", "a tenant is 1 .. %d bytes",
                          VSB_EGRESS_MAX_TENANT);
    }
    for (i = 0; i < n; i++) {
        if ((unsigned char) s[i] < 0x21 || (unsigned char) s[i] > 0x7e) {
            return eg_ctl_err("bad_value", "tenant", "a tenant is printable "
                              "ASCII without spaces");
        }
    }
    *out = s;
    return NULL;
}


json_t *
eg_ctl_entries(json_t *req, const char *field, int required,
    eg_allow_entry_t **out, size_t *nout)
{
    json_t            *a = json_object_get(req, field), *v;
    eg_allow_entry_t  *list;
    size_t             i;
    char               err[400];

    *out = NULL;
    *nout = 0;

    if (a == NULL) {
        return required ? eg_ctl_err("missing_field", field,
                                     "\"%s\" is required", field)
                        : NULL;
    }
    if (!json_is_array(a)) {
        return eg_ctl_err("bad_type", field, "\"%s\" must be an array of "
                          "strings", field);
    }
    if (json_array_size(a) > VSB_EGRESS_MAX_ENTRIES) {
        return eg_ctl_err("over_ceiling", field, "\"%s\" has more than %d "
                          "entries", field, VSB_EGRESS_MAX_ENTRIES);
    }
    if (json_array_size(a) == 0) {
        return NULL;
    }

    list = calloc(json_array_size(a), sizeof(*list));
    if (list == NULL) {
        return eg_ctl_err("internal", NULL, "out of memory");
    }

    json_array_foreach(a, i, v) {
        if (!json_is_string(v)
            || strlen(json_string_value(v)) != json_string_length(v))
        {
            free(list);
            return eg_ctl_err("bad_type", field, "\"%s\"[%zu] must be a "
                              "string", field, i);
        }
        if (eg_allow_parse(json_string_value(v), &list[i], err, sizeof(err))
            != 0)
        {
            free(list);
            return eg_ctl_err("bad_value", field, "%s", err);
        }
    }

    *out = list;
    *nout = json_array_size(a);
    return NULL;
}


json_t *
eg_ctl_limits(json_t *req, eg_limits_t *l)
{
    json_t      *o = json_object_get(req, "limits"), *v;
    const char  *k;
    json_int_t   n;
    uint64_t     max;

    *l = eg_proxy.cf.ceiling;
    if (o == NULL) {
        return NULL;
    }
    if (!json_is_object(o)) {
        return eg_ctl_err("bad_type", "limits", "\"limits\" must be an "
                          "object");
    }

    json_object_foreach(o, k, v) {
        if (!json_is_integer(v) || (n = json_integer_value(v)) < 0) {
            return eg_ctl_err("bad_type", "limits", "limits.%s must be a "
                              "non-negative integer", k);
        }
        if (strcmp(k, "max_connections") == 0) {
            max = eg_proxy.cf.ceiling.max_connections;
        } else if (strcmp(k, "max_bytes_out") == 0) {
            max = eg_proxy.cf.ceiling.max_bytes_out;
        } else if (strcmp(k, "max_bytes_in") == 0) {
            max = eg_proxy.cf.ceiling.max_bytes_in;
        } else if (strcmp(k, "connect_timeout_ms") == 0) {
            max = eg_proxy.cf.ceiling.connect_timeout_ms;
        } else if (strcmp(k, "idle_timeout_ms") == 0) {
            max = eg_proxy.cf.ceiling.idle_timeout_ms;
        } else {
            return eg_ctl_err("unknown_field", "limits", "unknown limit "
                              "\"%s\"", k);
        }
        if ((uint64_t) n > max) {
            json_t  *e = eg_ctl_err("over_ceiling", "limits", "limits.%s "
                                    "= %lld is over the proxy's ceiling "
                                    "%llu", k, (long long) n,
                                    (unsigned long long) max);
            json_object_set_new(e, "limit", json_string(k));
            return e;
        }
        if (strcmp(k, "max_connections") == 0) {
            l->max_connections = (uint32_t) n;
        } else if (strcmp(k, "max_bytes_out") == 0) {
            l->max_bytes_out = (uint64_t) n;
        } else if (strcmp(k, "max_bytes_in") == 0) {
            l->max_bytes_in = (uint64_t) n;
        } else if (strcmp(k, "connect_timeout_ms") == 0) {
            l->connect_timeout_ms = n < 100 ? 100 : (uint32_t) n;
        } else {
            l->idle_timeout_ms = n < 100 ? 100 : (uint32_t) n;
        }
    }
    return NULL;
}


json_t *
eg_ctl_limits_json(const eg_limits_t *l)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I}",
                     "max_connections", (json_int_t) l->max_connections,
                     "max_bytes_out", (json_int_t) l->max_bytes_out,
                     "max_bytes_in", (json_int_t) l->max_bytes_in,
                     "connect_timeout_ms", (json_int_t) l->connect_timeout_ms,
                     "idle_timeout_ms", (json_int_t) l->idle_timeout_ms);
}


/* The agent's own secret entry v (its "value" given): a new eg_cred_t
 * in *cr, or the one in own[0 .. nown) holding the same binding, value
 * and placeholder (the helper sends the whole list with each update).
 * NULL; or the error. */
static json_t *
eg_ctl_agent_cred(json_t *v, size_t i, const char *name, const char *ph,
    eg_cred_t *const *own, size_t nown, eg_cred_t **cr, int *fresh)
{
    json_t             *jv = json_object_get(v, "value");
    const char         *host, *header, *tmpl, *path, *env, *why = NULL;
    eg_cred_binding_t   b;
    eg_cred_t          *c;
    char                err[400];
    size_t              k;

    host = json_string_value(json_object_get(v, "host"));
    header = json_string_value(json_object_get(v, "header"));
    tmpl = json_string_value(json_object_get(v, "template"));
    path = json_string_value(json_object_get(v, "path"));
    env = json_string_value(json_object_get(v, "env"));
    if (!json_is_string(jv) || host == NULL || tmpl == NULL
        || (json_object_get(v, "env") != NULL && env == NULL)
        || (json_object_get(v, "header") != NULL && header == NULL)
        || (json_object_get(v, "path") != NULL && path == NULL))
    {
        return eg_ctl_err("bad_type", "credentials", "credentials[%zu]: an "
                          "agent's secret needs \"value\", \"host\" and "
                          "\"template\" (strings; \"header\" and \"path\" "
                          "optional strings)", i);
    }
    if (eg_cred_value_ok((const unsigned char *) json_string_value(jv),
                         json_string_length(jv), &why) != 0
        || strlen(json_string_value(jv)) != json_string_length(jv))
    {
        return eg_ctl_err("bad_value", "credentials", "credentials[%zu]: the "
                          "value %s", i, why ? why : "holds a NUL byte");
    }
    err[0] = '\0';
    if (eg_cred_binding_from(name, host, header, tmpl, env, path, &b, err,
                             sizeof(err)) != 0)
    {
        return eg_ctl_err("bad_value", "credentials", "credentials[%zu]: %s",
                          i, err);
    }
    for (k = 0; k < nown; k++) {
        c = own[k];
        if (c->value != NULL && memcmp(&c->b, &b, sizeof(b)) == 0
            && c->vlen == json_string_length(jv)
            && CRYPTO_memcmp(c->value, json_string_value(jv), c->vlen) == 0
            && c->agent_placeholder[0] != '\0'
            && strcmp(c->agent_placeholder, ph) == 0)
        {
            *cr = c;
            *fresh = 0;
            return NULL;
        }
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL || (c->value = malloc(json_string_length(jv) + 1)) == NULL)
    {
        free(c);
        return eg_ctl_err("internal", NULL, "out of memory");
    }
    c->b = b;
    c->agent = 1;
    c->vlen = json_string_length(jv);
    memcpy(c->value, json_string_value(jv), c->vlen + 1);
    memcpy(c->agent_placeholder, ph, EG_CRED_PLACEHOLDER_LEN + 1);
    *cr = c;
    *fresh = 1;
    return NULL;
}




json_t *
eg_ctl_credentials(json_t *req, eg_cred_t **own, size_t *nown,
    eg_cred_att_t *out, size_t *n)
{
    static const char *const  fields[] = {
        "name", "placeholder", "value", "host", "header", "template", "env",
        "path", NULL
    };
    json_t      *a = json_object_get(req, "credentials"), *v, *nm, *ph, *e;
    const char  *name, *p;
    eg_cred_t   *cr = NULL, *fresh[EG_CRED_PER_SANDBOX];
    size_t       i, j, nfresh = 0, base = nown != NULL ? *nown : 0;
    int          isnew = 0;

    *n = 0;
    if (a == NULL) {
        return NULL;
    }
    if (!json_is_array(a)) {
        return eg_ctl_err("bad_type", "credentials", "\"credentials\" must "
                          "be an array of {\"name\", \"placeholder\"}");
    }
    if (json_array_size(a) > EG_CRED_PER_SANDBOX) {
        return eg_ctl_err("over_ceiling", "credentials", "a sandbox holds at "
                          "most %d credentials", EG_CRED_PER_SANDBOX);
    }
    json_array_foreach(a, i, v) {
        e = NULL;
        if (!json_is_object(v)) {
            e = eg_ctl_err("bad_type", "credentials", "credentials[%zu] "
                           "must be an object", i);
            goto failed;
        }
        if ((e = eg_ctl_check_fields(v, fields)) != NULL) {
            goto failed;
        }
        nm = json_object_get(v, "name");
        ph = json_object_get(v, "placeholder");
        if (!json_is_string(nm) || !json_is_string(ph)) {
            e = eg_ctl_err("bad_type", "credentials", "credentials[%zu] "
                           "needs \"name\" and \"placeholder\" (strings)", i);
            goto failed;
        }
        name = json_string_value(nm);
        p = json_string_value(ph);
        if (!eg_cred_name_ok(name, json_string_length(nm))
            || strlen(name) != json_string_length(nm))
        {
            e = eg_ctl_err("bad_value", "credentials", "credentials[%zu]: "
                           "a credential name is 1 .. %d bytes of "
                           "[a-z0-9._-]", i, EG_CRED_NAME_MAX);
            goto failed;
        }
        if (!eg_cred_placeholder_ok(p, json_string_length(ph))) {
            e = eg_ctl_err("bad_value", "credentials", "credentials[%zu]: "
                           "a placeholder is \"%s\" and 32 lower-case "
                           "hex digits", i, EG_CRED_PLACEHOLDER_PREFIX);
            goto failed;
        }
        if (json_object_get(v, "value") != NULL) {
            if (eg_cred_find(name) != NULL) {
                e = eg_ctl_err("bad_value", "credentials", "credentials[%zu]:"
                               " \"%s\" is the operator's credential: an "
                               "agent's secret may not shadow it", i, name);
                goto failed;
            }
            if ((e = eg_ctl_agent_cred(v, i, name, p, own, base, &cr,
                                       &isnew)) != NULL)
            {
                goto failed;
            }
            if (isnew) {
                fresh[nfresh++] = cr;
            }
        } else {
            if (json_object_size(v) != 2) {
                e = eg_ctl_err("bad_value", "credentials", "credentials[%zu]:"
                               " \"host\", \"header\", \"template\", "
                               "\"env\" and \"path\" go with an agent's \"value\" only",
                               i);
                goto failed;
            }
            cr = eg_cred_find(name);
            if (cr == NULL) {
                e = eg_ctl_err("unknown_credential", "credentials", "no "
                               "credential \"%s\" in the proxy's bindings",
                               name);
                goto failed;
            }
            if (cr->value == NULL) {
                e = eg_ctl_err("credential_unavailable", "credentials",
                               "credential \"%s\" was refused when the "
                               "proxy loaded it: %s", name, cr->refused);
                goto failed;
            }
        }
        for (j = 0; j < *n; j++) {
            if (out[j].cred == cr
                || strcmp(out[j].cred->b.name, name) == 0
                || strcmp(out[j].placeholder, p) == 0)
            {
                e = eg_ctl_err("bad_value", "credentials", "credential "
                               "\"%s\" or its placeholder is named twice",
                               name);
                goto failed;
            }
        }
        out[*n].cred = cr;
        memcpy(out[*n].placeholder, p, EG_CRED_PLACEHOLDER_LEN + 1);
        (*n)++;
    }
    if (nown == NULL || base + nfresh > EG_CRED_OWN_MAX) {
        if (nown != NULL) {
            e = eg_ctl_err("over_ceiling", "credentials", "the sandbox keeps "
                           "%d agents' secrets at most (attached and "
                           "detached)", EG_CRED_OWN_MAX);
            goto failed;
        }
        for (j = 0; j < nfresh; j++) {      /* a check only */
            eg_cred_free_agent(fresh[j]);
        }
        return NULL;
    }
    for (j = 0; j < nfresh; j++) {
        own[(*nown)++] = fresh[j];
    }
    return NULL;

failed:
    for (j = 0; j < nfresh; j++) {
        eg_cred_free_agent(fresh[j]);
    }
    *n = 0;
    return e;
}
