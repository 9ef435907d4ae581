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
static int
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
static int
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


static int
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

    return 0;
}


static int
vsb_req_over(vsb_error_t *e, const char *field, const char *limit,
    uint64_t v, uint64_t max)
{
    vsb_error_set(e, VSB_E_OVER_CEILING, field,
                  "%s %llu exceeds the ceiling %llu", limit,
                  (unsigned long long) v, (unsigned long long) max);
    e->limit = limit;
    return -1;
}


static int
vsb_req_limits(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        VSB_LIMIT_MEMORY_MB, VSB_LIMIT_PIDS, VSB_LIMIT_CPU_PERCENT,
        VSB_LIMIT_DISK_MB, VSB_LIMIT_TIMEOUT_S, VSB_LIMIT_OUTPUT_BYTES, NULL
    };
    struct {
        const char  *name;
        uint64_t    *val;
        uint64_t     max;
    } lim[] = {
        { VSB_LIMIT_MEMORY_MB, &r->limits.memory_mb, cf->max.memory_mb },
        { VSB_LIMIT_PIDS, &r->limits.pids, cf->max.pids },
        { VSB_LIMIT_CPU_PERCENT, &r->limits.cpu_percent,
          cf->max.cpu_percent },
        { VSB_LIMIT_DISK_MB, &r->limits.disk_mb, cf->max.disk_mb },
        { VSB_LIMIT_TIMEOUT_S, &r->limits.timeout_s, cf->max.timeout_s },
        { VSB_LIMIT_OUTPUT_BYTES, &r->limits.output_bytes,
          cf->max.output_bytes },
    };
    json_t  *obj;
    size_t   i;

    r->limits = cf->def;

    obj = json_object_get(root, "limits");
    if (obj == NULL) {
        return 0;
    }

    if (!json_is_object(obj)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "limits",
                             "\"limits\" must be an object");
    }

    if (vsb_req_fields(obj, allowed, "limits", e) != 0) {
        return -1;
    }

    for (i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
        if (vsb_req_uint(obj, lim[i].name, 0, lim[i].val, e) != 0) {
            return -1;
        }
        if (*lim[i].val > lim[i].max) {
            return vsb_req_over(e, lim[i].name, lim[i].name, *lim[i].val,
                                lim[i].max);
        }
    }

    return 0;
}


static int
vsb_req_create(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "profile", "limits", "ttl_s",
        "network", "env", "metadata", NULL
    };
    const char  *s;
    json_t      *md;
    char        *dump;
    size_t       len;

    if (vsb_req_fields(root, allowed, "create", e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
        || vsb_req_string(root, "profile", 0, VSB_PROFILE_NAME_LEN, &s, e)
           != 0)
    {
        return -1;
    }

    r->profile = vsb_config_profile(cf, s ? s : "default");
    if (r->profile == NULL) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "profile",
                             "no profile named \"%s\"", s);
    }

    if (vsb_req_limits(root, cf, r, e) != 0) {
        return -1;
    }

    r->ttl_s = cf->default_ttl_s;
    if (vsb_req_uint(root, "ttl_s", 0, &r->ttl_s, e) != 0) {
        return -1;
    }
    if (r->ttl_s > cf->max_ttl_s) {
        return vsb_req_over(e, "ttl_s", VSB_LIMIT_TTL_S, r->ttl_s,
                            cf->max_ttl_s);
    }

    if (vsb_req_string(root, "network", 0, 64, &s, e) != 0) {
        return -1;
    }
    if (s != NULL && strcmp(s, "none") != 0) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "network",
                             "only network \"none\" is supported: egress "
                             "allowlists are not available yet");
    }

    if (vsb_req_env(root, "env", &r->env, e) != 0) {
        return -1;
    }

    md = json_object_get(root, "metadata");
    if (md != NULL) {
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
        r->metadata = md;
    }

    return 0;
}


static int
vsb_req_exec(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "argv", "cwd", "env",
        "timeout_s", NULL
    };
    json_t  *argv, *v;
    size_t   i;

    if (vsb_req_fields(root, allowed, "exec", e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
        || vsb_req_sandbox_id(root, r, e) != 0)
    {
        return -1;
    }

    if (vsb_req_get(root, "argv", 1, &argv, e) != 0) {
        return -1;
    }
    if (!json_is_array(argv)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "argv",
                             "\"argv\" must be an array of strings");
    }
    if (json_array_size(argv) == 0 || json_array_size(argv) > VSB_MAX_ARGV) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "argv",
                             "\"argv\" must have 1 to %d elements",
                             VSB_MAX_ARGV);
    }
    json_array_foreach(argv, i, v) {
        if (!json_is_string(v)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, "argv",
                                 "\"argv\"[%zu] must be a string", i);
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "argv",
                                 "\"argv\"[%zu] contains a NUL byte", i);
        }
    }
    if (json_string_length(json_array_get(argv, 0)) == 0) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "argv",
                             "\"argv\"[0] is empty");
    }
    r->argv = argv;

    if (vsb_req_string(root, "cwd", 0, VSB_MAX_PATH, &r->cwd, e) != 0) {
        return -1;
    }
    if (r->cwd == NULL) {
        r->cwd = "/workspace";
    } else if (r->cwd[0] != '/') {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "cwd",
                             "\"cwd\" must be an absolute path");
    }

    if (vsb_req_env(root, "env", &r->env, e) != 0) {
        return -1;
    }

    r->timeout_s = 0;
    if (vsb_req_uint(root, "timeout_s", 0, &r->timeout_s, e) != 0) {
        return -1;
    }
    if (r->timeout_s > cf->max.timeout_s) {
        return vsb_req_over(e, "timeout_s", VSB_LIMIT_TIMEOUT_S, r->timeout_s,
                            cf->max.timeout_s);
    }

    return 0;
}


static int
vsb_req_file(json_t *root, int write, vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed_w[] = {
        "op", "request_id", "tenant", "agent", "id", "path", "mode", NULL
    };
    static const char *const  allowed_r[] = {
        "op", "request_id", "tenant", "agent", "id", "path", NULL
    };
    json_t  *v, *m;
    char     why[128];

    if (vsb_req_fields(root, write ? allowed_w : allowed_r,
                       write ? "write_file" : "read_file", e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
        || vsb_req_sandbox_id(root, r, e) != 0)
    {
        return -1;
    }

    if (vsb_req_get(root, "path", 1, &v, e) != 0) {
        return -1;
    }
    if (!json_is_string(v)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "path",
                             "\"path\" must be a string");
    }
    if (vsb_path_check(json_string_value(v), json_string_length(v), why,
                       sizeof(why)) != 0)
    {
        return vsb_error_set(e, VSB_E_BAD_PATH, "path", "%s", why);
    }
    r->path = json_string_value(v);

    r->mode = 0644;
    m = json_object_get(root, "mode");
    if (m != NULL) {
        if (!json_is_integer(m)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, "mode",
                                 "\"mode\" must be an integer");
        }
        if (json_integer_value(m) < 0 || json_integer_value(m) > 0777) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "mode",
                                 "\"mode\" must be 0 .. 0777 (511)");
        }
        r->mode = (unsigned) json_integer_value(m);
    }

    return 0;
}


int
vsb_request_parse(json_t *root, size_t payload_len, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed_ping[] = { "op", "request_id", NULL };
    static const char *const  allowed_owned[] = {
        "op", "request_id", "tenant", "agent", "id", NULL
    };
    static const char *const  allowed_list[] = {
        "op", "request_id", "tenant", "agent", NULL
    };
    static const struct {
        const char    *name;
        vsb_req_op_t   op;
        int            payload;
    } ops[] = {
        { VSB_OP_PING, VSB_REQ_PING, 0 },
        { VSB_OP_CREATE, VSB_REQ_CREATE, 0 },
        { VSB_OP_STATUS, VSB_REQ_STATUS, 0 },
        { VSB_OP_LIST, VSB_REQ_LIST, 0 },
        { VSB_OP_EXEC, VSB_REQ_EXEC, 1 },
        { VSB_OP_WRITE_FILE, VSB_REQ_WRITE_FILE, 1 },
        { VSB_OP_READ_FILE, VSB_REQ_READ_FILE, 0 },
        { VSB_OP_DESTROY, VSB_REQ_DESTROY, 0 },
    };
    const char  *op;
    size_t       i;
    json_t      *v;

    memset(r, 0, sizeof(*r));
    memset(e, 0, sizeof(*e));

    if (!json_is_object(root)) {
        return vsb_error_set(e, VSB_E_BAD_JSON, NULL,
                             "the JSON header must be an object");
    }

    /* Echo request_id whenever it is well formed, even on errors. */
    v = json_object_get(root, "request_id");
    if (v != NULL) {
        if (vsb_req_string(root, "request_id", 0, VSB_MAX_ID_LEN,
                           &r->request_id, e) != 0)
        {
            r->request_id = NULL;
            return -1;
        }
    }

    if (vsb_req_string(root, "op", 1, 32, &op, e) != 0) {
        return -1;
    }

    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strcmp(ops[i].name, op) == 0) {
            break;
        }
    }

    if (i == sizeof(ops) / sizeof(ops[0])) {
        return vsb_error_set(e, VSB_E_UNKNOWN_OP, "op",
                             "unknown op \"%.32s\"", op);
    }

    r->op = ops[i].op;

    if (payload_len > 0 && !ops[i].payload) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, NULL,
                             "op \"%s\" takes no payload", ops[i].name);
    }

    switch (r->op) {

    case VSB_REQ_PING:
        return vsb_req_fields(root, allowed_ping, "ping", e);

    case VSB_REQ_CREATE:
        return vsb_req_create(root, cf, r, e);

    case VSB_REQ_STATUS:
    case VSB_REQ_DESTROY:
        if (vsb_req_fields(root, allowed_owned, ops[i].name, e) != 0
            || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
            || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
            || vsb_req_sandbox_id(root, r, e) != 0)
        {
            return -1;
        }
        return 0;

    case VSB_REQ_LIST:
        if (vsb_req_fields(root, allowed_list, "list", e) != 0
            || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
            || vsb_req_owner(root, "agent", 0, &r->agent, e) != 0)
        {
            return -1;
        }
        return 0;

    case VSB_REQ_EXEC:
        return vsb_req_exec(root, cf, r, e);

    case VSB_REQ_WRITE_FILE:
        return vsb_req_file(root, 1, r, e);

    case VSB_REQ_READ_FILE:
        return vsb_req_file(root, 0, r, e);
    }

    return vsb_error_set(e, VSB_E_INTERNAL, NULL, "unhandled op");
}
