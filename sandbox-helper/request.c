/*
 * Request schemas.  Every request is an object with "op" and exactly the
 * fields its op allows; anything else is refused, never ignored.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_paths.h"
#include "vsb_request.h"


int
vsb_error_set(vsb_error_t *e, const char *error, const char *field,
    const char *fmt, ...)
{
    va_list  ap;

    e->error = error;
    e->field = field;
    e->limit = NULL;
    e->step = NULL;
    e->epoch = NULL;

    va_start(ap, fmt);
    vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
    va_end(ap);

    return -1;
}


int
vsb_req_fields(json_t *obj, const char *const *allowed, const char *what,
    vsb_error_t *e)
{
    const char  *key;
    json_t      *v;
    size_t       i;

    json_object_foreach(obj, key, v) {
        for (i = 0; allowed[i] != NULL; i++) {
            if (strcmp(allowed[i], key) == 0) {
                break;
            }
        }

        if (allowed[i] == NULL) {
            vsb_error_set(e, VSB_E_UNKNOWN_FIELD, NULL,
                          "unknown field \"%.64s\" in %s", key, what);
            snprintf(e->field_buf, sizeof(e->field_buf), "%s", key);
            e->field = e->field_buf;
            return -1;
        }
    }

    return 0;
}


/* The field's value in *v, NULL when absent; absent is an error only
 * when the field is required. */
int
vsb_req_get(json_t *obj, const char *name, int required, json_t **v,
    vsb_error_t *e)
{
    *v = json_object_get(obj, name);
    if (*v == NULL && required) {
        return vsb_error_set(e, VSB_E_MISSING_FIELD, name,
                             "\"%s\" is required", name);
    }

    return 0;
}


int
vsb_req_string(json_t *obj, const char *name, int required, size_t maxlen,
    const char **out, vsb_error_t *e)
{
    json_t  *v;

    if (vsb_req_get(obj, name, required, &v, e) != 0) {
        *out = NULL;
        return -1;
    }

    if (v == NULL) {
        *out = NULL;
        return 0;
    }

    if (!json_is_string(v)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, name,
                             "\"%s\" must be a string", name);
    }

    if (json_string_length(v) > maxlen) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, name,
                             "\"%s\" is longer than %zu bytes", name, maxlen);
    }

    if (strlen(json_string_value(v)) != json_string_length(v)) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, name,
                             "\"%s\" contains a NUL byte", name);
    }

    *out = json_string_value(v);
    return 0;
}


int
vsb_req_uint(json_t *obj, const char *name, int required, uint64_t *out,
    vsb_error_t *e)
{
    json_t  *v;

    if (vsb_req_get(obj, name, required, &v, e) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    if (!json_is_integer(v)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, name,
                             "\"%s\" must be an integer", name);
    }

    if (json_integer_value(v) < 1) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, name,
                             "\"%s\" must be at least 1", name);
    }

    *out = (uint64_t) json_integer_value(v);
    return 0;
}


static const char *const  vsb_cap_names[VSB_NCAPS] = {
    [VSB_CAP_MEMORY_MB] = VSB_LIMIT_MEMORY_MB,
    [VSB_CAP_PIDS] = VSB_LIMIT_PIDS,
    [VSB_CAP_CPU_PERCENT] = VSB_LIMIT_CPU_PERCENT,
    [VSB_CAP_DISK_MB] = VSB_LIMIT_DISK_MB,
    [VSB_CAP_TIMEOUT_S] = VSB_LIMIT_TIMEOUT_S,
    [VSB_CAP_OUTPUT_BYTES] = VSB_LIMIT_OUTPUT_BYTES,
    [VSB_CAP_TTL_S] = VSB_LIMIT_TTL_S,
    [VSB_CAP_IDLE_S] = VSB_LIMIT_IDLE_S,
};


int
vsb_req_caps(json_t *root, unsigned mask, vsb_request_t *r, vsb_error_t *e)
{
    const char  *key;
    json_t      *obj, *v;
    size_t       i;

    memset(r->caps, 0, sizeof(r->caps));

    obj = json_object_get(root, "caps");
    if (obj == NULL) {
        return 0;
    }

    if (!json_is_object(obj)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "caps",
                             "\"caps\" must be an object");
    }

    json_object_foreach(obj, key, v) {
        for (i = 0; i < VSB_NCAPS; i++) {
            if ((mask & (1u << i)) && strcmp(vsb_cap_names[i], key) == 0) {
                break;
            }
        }

        if (i == VSB_NCAPS) {
            vsb_error_set(e, VSB_E_UNKNOWN_FIELD, NULL,
                          "unknown field \"%.64s\" in caps", key);
            snprintf(e->field_buf, sizeof(e->field_buf), "caps.%.64s", key);
            e->field = e->field_buf;
            return -1;
        }

        if (!json_is_integer(v) || json_integer_value(v) < 1) {
            snprintf(e->field_buf, sizeof(e->field_buf), "caps.%s", key);
            vsb_error_set(e, json_is_integer(v) ? VSB_E_BAD_VALUE
                                                : VSB_E_BAD_TYPE, NULL,
                          "\"caps.%s\" must be a positive integer", key);
            e->field = e->field_buf;
            return -1;
        }

        r->caps[i] = (uint64_t) json_integer_value(v);
    }

    return 0;
}


uint64_t
vsb_capped(uint64_t v, uint64_t cap)
{
    return (cap != 0 && v > cap) ? cap : v;
}


static int
vsb_req_env_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    {
        return 0;
    }

    for (s++; *s; s++) {
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')
              || (*s >= '0' && *s <= '9') || *s == '_'))
        {
            return 0;
        }
    }

    return 1;
}


int
vsb_req_env(json_t *obj, const char *name, json_t **out, vsb_error_t *e)
{
    json_t      *env, *v;
    const char  *key;

    *out = NULL;

    env = json_object_get(obj, name);
    if (env == NULL) {
        return 0;
    }

    if (!json_is_object(env)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, name,
                             "\"%s\" must be an object", name);
    }

    if (json_object_size(env) > VSB_MAX_ENV) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, name,
                             "\"%s\" has more than %d variables", name,
                             VSB_MAX_ENV);
    }

    json_object_foreach(env, key, v) {
        if (strlen(key) > VSB_MAX_NAME || !vsb_req_env_name_ok(key)) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, name,
                                 "\"%s\": variable name \"%.64s\" must match "
                                 "[A-Za-z_][A-Za-z0-9_]*", name, key);
        }
        if (!json_is_string(v)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, name,
                                 "\"%s\": value of %s must be a string",
                                 name, key);
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, name,
                                 "\"%s\": value of %s contains a NUL byte",
                                 name, key);
        }
    }

    *out = env;
    return 0;
}


int
vsb_req_id_ok(const char *s)
{
    size_t  i;

    if (strlen(s) != VSB_SANDBOX_ID_LEN || strncmp(s, "sb-", 3) != 0) {
        return 0;
    }

    for (i = 3; i < VSB_SANDBOX_ID_LEN; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }

    return 1;
}


/* tenant and agent: 1 .. VSB_MAX_ID_LEN printable ASCII, no space. */
int
vsb_req_owner(json_t *root, const char *name, int required, const char **out,
    vsb_error_t *e)
{
    const char  *s, *p;

    if (vsb_req_string(root, name, required, VSB_MAX_ID_LEN, out, e) != 0) {
        return -1;
    }

    s = *out;
    if (s == NULL) {
        return 0;
    }

    if (*s == '\0') {
        return vsb_error_set(e, VSB_E_BAD_VALUE, name, "\"%s\" is empty",
                             name);
    }

    for (p = s; *p; p++) {
        if ((unsigned char) *p < 0x21 || (unsigned char) *p > 0x7e) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, name,
                                 "\"%s\" must be printable ASCII without "
                                 "spaces", name);
        }
    }

    return 0;
}


/* "epoch": the helper run the caller believes holds the sandbox (a
 * gateway's ownership record); checked against ours at dispatch. */
static int
vsb_req_epoch(json_t *root, vsb_request_t *r, vsb_error_t *e)
{
    const char  *p;

    if (vsb_req_string(root, "epoch", 0, VSB_EPOCH_LEN, &r->epoch, e) != 0) {
        return -1;
    }

    if (r->epoch == NULL) {
        return 0;
    }

    for (p = r->epoch; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) {
            break;
        }
    }

    if (*p != '\0' || p - r->epoch != VSB_EPOCH_LEN) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "epoch",
                             "\"epoch\" must be %d lowercase hex digits",
                             VSB_EPOCH_LEN);
    }

    return 0;
}


int
vsb_req_sandbox_id(json_t *root, vsb_request_t *r, vsb_error_t *e)
{
    if (vsb_req_string(root, "id", 1, VSB_SANDBOX_ID_LEN, &r->id, e) != 0) {
        return -1;
    }

    if (!vsb_req_id_ok(r->id)) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "id",
                             "\"id\" must be \"sb-\" and 24 lowercase hex "
                             "digits");
    }

    return vsb_req_epoch(root, r, e);
}


int
vsb_req_over(vsb_error_t *e, const char *field, const char *limit,
    uint64_t v, uint64_t max)
{
    vsb_error_set(e, VSB_E_OVER_CEILING, field,
                  "%s %llu exceeds the ceiling %llu", limit,
                  (unsigned long long) v, (unsigned long long) max);
    e->limit = limit;
    return -1;
}

int
vsb_req_metadata(json_t *root, json_t **out, vsb_error_t *e)
{
    json_t  *md;
    char    *dump;
    size_t   len;

    *out = NULL;

    md = json_object_get(root, "metadata");
    if (md == NULL) {
        return 0;
    }
    if (!json_is_object(md)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "metadata",
                             "\"metadata\" must be an object");
    }
    dump = json_dumps(md, JSON_COMPACT);
    if (dump == NULL) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "metadata",
                             "\"metadata\" cannot be serialized");
    }
    len = strlen(dump);
    free(dump);
    if (len > VSB_MAX_METADATA_JSON) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "metadata",
                             "\"metadata\" is larger than %d bytes",
                             VSB_MAX_METADATA_JSON);
    }
    *out = md;
    return 0;
}


int
vsb_req_sandbox_ref(json_t *root, const char *const *allowed,
    const char *what, vsb_request_t *r, vsb_error_t *e)
{
    if (vsb_req_fields(root, allowed, what, e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
        || vsb_req_sandbox_id(root, r, e) != 0)
    {
        return -1;
    }
    return 0;
}


/* status and destroy: tenant, agent, id and nothing else. */
int
vsb_req_owned(json_t *root, const char *what, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed_owned[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", NULL
    };

    return vsb_req_sandbox_ref(root, allowed_owned, what, r, e);
}


int
vsb_req_bool(json_t *obj, const char *name, unsigned *out, vsb_error_t *e)
{
    json_t  *v;

    *out = 0;

    v = json_object_get(obj, name);
    if (v == NULL) {
        return 0;
    }

    if (!json_is_boolean(v)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, name,
                             "\"%s\" must be true or false", name);
    }

    *out = json_is_true(v);
    return 0;
}


int
vsb_req_exec_id(json_t *root, vsb_request_t *r, vsb_error_t *e)
{
    const char  *s;
    size_t       i;

    if (vsb_req_string(root, "exec", 1, VSB_EXEC_ID_LEN, &s, e) != 0) {
        return -1;
    }

    if (strlen(s) != VSB_EXEC_ID_LEN || strncmp(s, "ex-", 3) != 0) {
        goto bad;
    }

    for (i = 3; i < VSB_EXEC_ID_LEN; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            goto bad;
        }
    }

    r->exec_id = s;
    return 0;

bad:

    return vsb_error_set(e, VSB_E_BAD_VALUE, "exec",
                         "\"exec\" must be \"ex-\" and 16 lowercase hex "
                         "digits");
}


int
vsb_req_ws_path(json_t *root, const char *name, int required, int allow_root,
    vsb_request_t *r, vsb_error_t *e)
{
    json_t      *v;
    const char  *rel;
    size_t       len;
    char         why[128];

    if (vsb_req_get(root, name, required, &v, e) != 0) {
        return -1;
    }

    if (v == NULL) {
        r->path = "";
        return 0;
    }

    if (!json_is_string(v)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, name,
                             "\"%s\" must be a string", name);
    }

    if (vsb_path_workspace(json_string_value(v), json_string_length(v),
                           allow_root, &rel, &len, why, sizeof(why)) != 0)
    {
        return vsb_error_set(e, VSB_E_BAD_PATH, name,
                             "\"%s\": %s (a path is relative to the "
                             "workspace, or absolute under /workspace/)",
                             name, why);
    }

    r->path = rel;
    return 0;
}
