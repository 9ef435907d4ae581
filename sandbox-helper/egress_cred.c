/*
 * Credentials in the helper (vsb_egress_cred.h): the bindings (read
 * with the proxy's own reader, eg_cred_file.h), attachments and their
 * placeholders, the trust bundle and the workload's variables.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eg_cred_file.h"
#include "eg_cred_parse.h"
#include "vsb_egress_cred.h"
#include "vsb_egress_proxy.h"
#include "vsb_fdio.h"
#include "vsb_hex.h"
#include "vsb_log.h"

static eg_cred_binding_t  vsb_ecreds[EG_CRED_MAX];
static size_t             vsb_necreds;
static const vsb_config_t *vsb_ecred_cf;


int
vsb_ecred_enabled(void)
{
    return vsb_ecred_cf != NULL && vsb_ecred_cf->egress.credentials[0] != '\0';
}


static const eg_cred_binding_t *
vsb_ecred_find(const char *name)
{
    size_t  i;

    for (i = 0; i < vsb_necreds; i++) {
        if (strcmp(vsb_ecreds[i].name, name) == 0) {
            return &vsb_ecreds[i];
        }
    }
    return NULL;
}


int
vsb_ecred_init(const vsb_config_t *cf, char *err, size_t errlen)
{
    char  path[PATH_MAX], perr[PATH_MAX + 480];

    vsb_ecred_cf = cf;
    vsb_necreds = 0;
    if (!cf->egress.enabled || cf->egress.credentials[0] == '\0') {
        return 0;
    }
    /* the sandboxes' bundle keeps the system roots: they must be there */
    if (cf->egress.trust_roots[0] != '\0'
        && access(cf->egress.trust_roots, R_OK) != 0)
    {
        snprintf(err, errlen, "egress_trust_roots %s: %s (the roots "
                 "sandboxes keep trusting besides the proxy's CA)",
                 cf->egress.trust_roots, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/bindings", cf->egress.credentials);
    if (eg_cred_bindings_read(path, vsb_ecreds, &vsb_necreds, perr,
                              sizeof(perr)) != 0)
    {
        snprintf(err, errlen, "egress_credentials: %s", perr);
        return -1;
    }
    vsb_log(VSB_LOG_INFO, "egress: %zu credential bindings in %s",
            vsb_necreds, path);
    return 0;
}


int
vsb_ecred_req(json_t *names, const char *field, json_t *attached,
    vsb_error_t *e)
{
    json_t      *v, *w, *a;
    size_t       i, j;
    const char  *n;

    if (!json_is_array(names)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, field, "\"%s\" must be an "
                             "array of credential names", field);
    }
    if (!vsb_ecred_enabled()) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, field, "no credentials "
                             "are configured on this helper "
                             "(egress_credentials)");
    }
    if (json_array_size(names) + json_array_size(attached)
        > EG_CRED_PER_SANDBOX)
    {
        return vsb_error_set(e, VSB_E_OVER_CEILING, field, "a sandbox holds "
                             "at most %d credentials", EG_CRED_PER_SANDBOX);
    }
    json_array_foreach(names, i, v) {
        if (!json_is_string(v)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, field, "\"%s\"[%zu] must "
                                 "be a string", field, i);
        }
        n = json_string_value(v);
        if (!eg_cred_name_ok(n, json_string_length(v))
            || strlen(n) != json_string_length(v) || vsb_ecred_find(n) == NULL)
        {
            return vsb_error_set(e, VSB_E_NOT_FOUND, field, "\"%s\"[%zu]: no "
                                 "credential \"%.64s\" is configured", field,
                                 i, n);
        }
        for (j = 0; j < i; j++) {
            w = json_array_get(names, j);
            if (strcmp(json_string_value(w), n) == 0) {
                return vsb_error_set(e, VSB_E_BAD_VALUE, field, "credential "
                                     "\"%s\" is named twice", n);
            }
        }
        json_array_foreach(attached, j, a) {
            if (strcmp(json_string_value(json_object_get(a, "name")), n)
                == 0)
            {
                return vsb_error_set(e, VSB_E_BAD_VALUE, field, "credential "
                                     "\"%s\" is attached already", n);
            }
        }
    }
    return 0;
}


/* A fresh placeholder into ph.  -1 with e. */
static int
vsb_ecred_placeholder(char ph[EG_CRED_PLACEHOLDER_LEN + 1], vsb_error_t *e)
{
    size_t  k = sizeof(EG_CRED_PLACEHOLDER_PREFIX) - 1;

    memcpy(ph, EG_CRED_PLACEHOLDER_PREFIX, k);
    if (vsb_random_hex(ph + k, (EG_CRED_PLACEHOLDER_LEN - k) / 2) != 0) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "getrandom(): %s",
                             strerror(errno));
    }
    return 0;
}


int
vsb_ecred_attach(json_t *attached, json_t *names, vsb_error_t *e)
{
    json_t          *v;
    size_t           i;
    char             ph[EG_CRED_PLACEHOLDER_LEN + 1];

    json_array_foreach(names, i, v) {
        if (vsb_ecred_placeholder(ph, e) != 0) {
            return -1;
        }
        if (json_array_append_new(attached, json_pack("{s:s, s:s}", "name",
                                  json_string_value(v), "placeholder", ph))
            != 0)
        {
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        }
    }
    return 0;
}


/* The index of name's attachment in attached, or -1. */
static ssize_t
vsb_ecred_index(json_t *attached, const char *name)
{
    json_t  *a;
    size_t   i;

    json_array_foreach(attached, i, a) {
        if (strcmp(json_string_value(json_object_get(a, "name")), name) == 0) {
            return (ssize_t) i;
        }
    }
    return -1;
}


int
vsb_ecred_detach_req(json_t *names, json_t *attached, vsb_error_t *e)
{
    static const char  *field = "credentials_remove";
    json_t             *v;
    size_t              i, j;
    const char         *n;

    if (!json_is_array(names) || json_array_size(names) == 0
        || json_array_size(names) > EG_CRED_PER_SANDBOX)
    {
        return vsb_error_set(e, json_is_array(names) ? VSB_E_BAD_VALUE
                             : VSB_E_BAD_TYPE, field, "\"%s\" must be an "
                             "array of 1 .. %d credential names", field,
                             EG_CRED_PER_SANDBOX);
    }
    if (!vsb_ecred_enabled()) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, field, "no credentials "
                             "are configured on this helper "
                             "(egress_credentials)");
    }
    json_array_foreach(names, i, v) {
        n = json_string_value(v);
        if (n == NULL || !eg_cred_name_ok(n, json_string_length(v))
            || strlen(n) != json_string_length(v))
        {
            return vsb_error_set(e, VSB_E_BAD_VALUE, field, "\"%s\"[%zu] is "
                                 "not a credential name", field, i);
        }
        for (j = 0; j < i; j++) {
            if (strcmp(json_string_value(json_array_get(names, j)), n) == 0) {
                return vsb_error_set(e, VSB_E_BAD_VALUE, field, "credential "
                                     "\"%s\" is named twice", n);
            }
        }
        if (attached != NULL && vsb_ecred_index(attached, n) < 0) {
            return vsb_error_set(e, VSB_E_NOT_FOUND, field, "\"%s\"[%zu]: "
                                 "the sandbox holds no credential \"%s\"",
                                 field, i, n);
        }
    }
    return 0;
}


int
vsb_ecred_detach(json_t *attached, json_t *names, vsb_error_t *e)
{
    json_t   *v;
    size_t    i;
    ssize_t   k;

    json_array_foreach(names, i, v) {
        k = vsb_ecred_index(attached, json_string_value(v));
        if (k < 0 || json_array_remove(attached, (size_t) k) != 0) {
            return vsb_error_set(e, VSB_E_NOT_FOUND, "credentials_remove",
                                 "the sandbox holds no credential \"%s\"",
                                 json_string_value(v));
        }
    }
    return 0;
}


/* Appends the whole of path to fd.  -1 with e. */
static int
vsb_ecred_copy(int fd, const char *path, size_t *total, vsb_error_t *e)
{
    char     buf[16384];
    ssize_t  n;
    int      in;

    in = open(path, O_RDONLY | O_CLOEXEC);
    if (in == -1) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: open "
                             "%s: %s", path, strerror(errno));
    }
    for (;;) {
        n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        *total += (size_t) n;
        if (*total > VSB_ECRED_BUNDLE_MAX) {
            close(in);
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: the "
                                 "trust bundle would pass %d bytes",
                                 VSB_ECRED_BUNDLE_MAX);
        }
        if (vsb_write_full(fd, buf, (size_t) n) != 0) {
            close(in);
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: "
                                 "write the trust bundle: %s",
                                 strerror(errno));
        }
    }
    close(in);
    if (n < 0) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: read "
                             "%s: %s", path, strerror(errno));
    }
    return 0;
}


int
vsb_ecred_bundle(vsb_sandbox_t *sb, vsb_error_t *e)
{
    char         path[PATH_MAX + 64];
    const char  *ca = vsb_eproxy_ca_cert();
    size_t       total = 0;
    int          fd, dfd;

    if (ca == NULL) {
        return vsb_error_set(e, VSB_E_UNAVAILABLE, NULL, "credentials: the "
                             "egress proxy's CA is not known yet");
    }
    /* the image's /etc is not followed if it is a link: the file is made
     * in the directory itself, or not at all */
    snprintf(path, sizeof(path), "%s/root/etc", sb->dir);
    dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd == -1) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: open "
                             "%s: %s", path, strerror(errno));
    }
    (void) unlinkat(dfd, VSB_ECRED_BUNDLE_NAME, 0);
    fd = openat(dfd, VSB_ECRED_BUNDLE_NAME, O_WRONLY | O_CREAT | O_EXCL
                | O_NOFOLLOW | O_CLOEXEC, 0644);
    close(dfd);
    snprintf(path, sizeof(path), "%s/root%s", sb->dir, VSB_ECRED_BUNDLE);
    if (fd == -1) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: create "
                             "%s: %s", path, strerror(errno));
    }
    if ((vsb_ecred_cf->egress.trust_roots[0] != '\0'
         && vsb_ecred_copy(fd, vsb_ecred_cf->egress.trust_roots, &total, e)
            != 0))
    {
        close(fd);
        return -1;
    }
    /* (a roots file may lack its last newline) */
    if (write(fd, "\n", 1) != 1) {
        close(fd);
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: write "
                             "%s: %s", path, strerror(errno));
    }
    if (vsb_ecred_copy(fd, ca, &total, e) != 0) {
        close(fd);
        return -1;
    }
    if (fchmod(fd, 0644) != 0 || close(fd) != 0) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "credentials: close "
                             "%s: %s", path, strerror(errno));
    }
    return 0;
}


char **
vsb_ecred_env(const char *const *base, json_t *attached)
{
    static const char *const  ca_vars[] = {
        "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
        "GIT_SSL_CAINFO", "CURL_CA_BUNDLE", NULL
    };
    const eg_cred_binding_t  *b;
    json_t                   *a;
    char                    **env;
    size_t                    n = 0, i;

    for (i = 0; base != NULL && base[i] != NULL; i++) {
        n++;
    }
    env = calloc(n + 5 + json_array_size(attached) + 1, sizeof(char *));
    if (env == NULL) {
        return NULL;
    }
    n = 0;
    for (i = 0; base != NULL && base[i] != NULL; i++) {
        if ((env[n++] = strdup(base[i])) == NULL) {
            goto failed;
        }
    }
    for (i = 0; ca_vars[i] != NULL; i++) {
        if (asprintf(&env[n++], "%s=%s", ca_vars[i], VSB_ECRED_BUNDLE) < 0) {
            env[n - 1] = NULL;
            goto failed;
        }
    }
    json_array_foreach(attached, i, a) {
        b = vsb_ecred_find(json_string_value(json_object_get(a, "name")));
        if (b == NULL && json_object_get(a, "value") == NULL) {
            continue;
        }
        if (asprintf(&env[n++], "%s=%s", b != NULL ? b->env
                     : json_string_value(json_object_get(a, "env")),
                     json_string_value(json_object_get(a, "placeholder")))
            < 0)
        {
            env[n - 1] = NULL;
            goto failed;
        }
    }
    return env;

failed:
    vsb_ecred_env_free(env);
    return NULL;
}


void
vsb_ecred_env_free(char **env)
{
    size_t  i;

    for (i = 0; env != NULL && env[i] != NULL; i++) {
        free(env[i]);
    }
    free(env);
}


/* One binding as the gateway may see it: never a value (the helper has
 * none). */
static json_t *
vsb_ecred_binding_json(const eg_cred_binding_t *b)
{
    json_t  *o;
    char     host[EG_HOST_MAX + 3];

    snprintf(host, sizeof(host), "%s%s", b->host.wildcard ? "*." : "",
             b->host.host);
    o = json_pack("{s:s, s:s, s:s, s:s}", "name", b->name, "host", host,
                  "header", b->header, "env", b->env);
    if (o != NULL && b->path[0] != '\0'
        && json_object_set_new(o, "path", json_string(b->path)) != 0)
    {
        json_decref(o);
        return NULL;
    }
    return o;
}


/* An agent's own secret as anyone may see it: its binding, never its
 * value. */
static json_t *
vsb_ecred_agent_json(json_t *a)
{
    static const char *const  keys[] = {
        "name", "host", "header", "template", "env", "path", NULL
    };
    json_t  *o = json_object(), *v;
    size_t   i;

    for (i = 0; o != NULL && keys[i] != NULL; i++) {
        if ((v = json_object_get(a, keys[i])) != NULL) {
            json_object_set(o, keys[i], v);
        }
    }
    if (o != NULL) {
        json_object_set_new(o, "agent", json_true());
    }
    return o;
}


json_t *
vsb_ecred_json(json_t *attached)
{
    const eg_cred_binding_t  *b;
    json_t                   *arr = json_array(), *a;
    size_t                    i;

    json_array_foreach(attached, i, a) {
        if (arr != NULL && json_object_get(a, "value") != NULL) {
            json_array_append_new(arr, vsb_ecred_agent_json(a));
            continue;
        }
        b = vsb_ecred_find(json_string_value(json_object_get(a, "name")));
        if (b == NULL || arr == NULL) {
            continue;
        }
        json_array_append_new(arr, vsb_ecred_binding_json(b));
    }
    return arr;
}


json_t *
vsb_ecred_bindings_json(void)
{
    json_t  *arr = json_array();
    size_t   i;

    for (i = 0; arr != NULL && i < vsb_necreds; i++) {
        if (json_array_append_new(arr, vsb_ecred_binding_json(&vsb_ecreds[i]))
            != 0)
        {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}


int
vsb_ecred_secret_req(json_t *s, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "name", "value", "host", "header", "template", "env", "path", NULL
    };
    static const char *const  strs[] = {
        "name", "value", "host", "header", "template", "env", "path", NULL
    };
    static const char         *field = "secret";
    eg_cred_binding_t          b;
    const char                *k, *why = NULL;
    json_t                    *v, *name, *value;
    size_t                     i;
    char                       err[400];

    if (!json_is_object(s)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, field, "\"secret\" must be "
                             "an object");
    }
    json_object_foreach(s, k, v) {
        for (i = 0; allowed[i] != NULL && strcmp(allowed[i], k) != 0; i++) {
        }
        if (allowed[i] == NULL) {
            return vsb_error_set(e, VSB_E_UNKNOWN_FIELD, field, "\"secret\" "
                                 "has an unknown field \"%.32s\"", k);
        }
    }
    for (i = 0; strs[i] != NULL; i++) {
        v = json_object_get(s, strs[i]);
        if (v != NULL && (!json_is_string(v)
                          || strlen(json_string_value(v))
                             != json_string_length(v)))
        {
            return vsb_error_set(e, VSB_E_BAD_TYPE, field, "secret.%s must "
                                 "be a string without a NUL byte", strs[i]);
        }
    }
    name = json_object_get(s, "name");
    value = json_object_get(s, "value");
    if (name == NULL || value == NULL || json_object_get(s, "host") == NULL
        || json_object_get(s, "env") == NULL)
    {
        return vsb_error_set(e, VSB_E_MISSING_FIELD, field, "\"secret\" "
                             "needs \"name\", \"value\", \"host\" and "
                             "\"env\"");
    }
    if (!vsb_ecred_enabled()) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, field, "no credentials "
                             "are configured on this helper "
                             "(egress_credentials)");
    }
    if (!eg_cred_name_ok(json_string_value(name), json_string_length(name))) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, field, "secret.name is 1 .. "
                             "%d bytes of [a-z0-9._-], starting with a "
                             "letter or digit", EG_CRED_NAME_MAX);
    }
    if (vsb_ecred_find(json_string_value(name)) != NULL) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, field, "\"%s\" is the name "
                             "of an operator's credential: an agent's "
                             "secret may not take it", json_string_value(name));
    }
    /* never the value in an error */
    if (eg_cred_value_ok((const unsigned char *) json_string_value(value),
                         json_string_length(value), &why) != 0)
    {
        return vsb_error_set(e, VSB_E_BAD_VALUE, field, "secret.value %s",
                             why);
    }
    err[0] = '\0';
    if (eg_cred_binding_from(json_string_value(name),
            json_string_value(json_object_get(s, "host")),
            json_string_value(json_object_get(s, "header")),
            json_object_get(s, "template") != NULL
            ? json_string_value(json_object_get(s, "template"))
            : VSB_ECRED_AGENT_TEMPLATE,
            json_string_value(json_object_get(s, "env")),
            json_string_value(json_object_get(s, "path")), &b, err,
            sizeof(err)) != 0)
    {
        return vsb_error_set(e, VSB_E_BAD_VALUE, field, "secret: %s", err);
    }
    return 0;
}


int
vsb_ecred_put(json_t *attached, json_t *s, vsb_error_t *e)
{
    static const char *const  keys[] = {
        "name", "value", "host", "env", "path", NULL
    };
    const char  *name = json_string_value(json_object_get(s, "name"));
    const char  *env = json_string_value(json_object_get(s, "env"));
    json_t      *a, *o, *v;
    size_t       i, at = (size_t) -1;
    char         ph[EG_CRED_PLACEHOLDER_LEN + 1];
    const char  *oenv;
    const eg_cred_binding_t  *b;

    json_array_foreach(attached, i, a) {
        if (strcmp(json_string_value(json_object_get(a, "name")), name) == 0) {
            at = i;
            continue;
        }
        b = vsb_ecred_find(json_string_value(json_object_get(a, "name")));
        oenv = b != NULL ? b->env
               : json_string_value(json_object_get(a, "env"));
        if (oenv != NULL && strcmp(oenv, env) == 0) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "secret", "the variable "
                                 "%s holds the placeholder of credential "
                                 "\"%s\" already", env,
                                 json_string_value(json_object_get(a,
                                                                   "name")));
        }
    }
    if (at == (size_t) -1 && json_array_size(attached) >= EG_CRED_PER_SANDBOX) {
        return vsb_error_set(e, VSB_E_OVER_CEILING, "secret", "a sandbox "
                             "holds at most %d credentials",
                             EG_CRED_PER_SANDBOX);
    }
    if (at != (size_t) -1) {
        /* a new value for the same name keeps the placeholder */
        snprintf(ph, sizeof(ph), "%s", json_string_value(
                 json_object_get(json_array_get(attached, at),
                                 "placeholder")));
    } else if (vsb_ecred_placeholder(ph, e) != 0) {
        return -1;
    }
    o = json_pack("{s:s, s:s, s:s}", "placeholder", ph, "header",
                  json_object_get(s, "header") != NULL
                  ? json_string_value(json_object_get(s, "header"))
                  : "Authorization", "template",
                  json_object_get(s, "template") != NULL
                  ? json_string_value(json_object_get(s, "template"))
                  : VSB_ECRED_AGENT_TEMPLATE);
    for (i = 0; o != NULL && keys[i] != NULL; i++) {
        if ((v = json_object_get(s, keys[i])) != NULL) {
            json_object_set(o, keys[i], v);
        }
    }
    if (o == NULL
        || (at != (size_t) -1 ? json_array_set_new(attached, at, o)
                              : json_array_append_new(attached, o)) != 0)
    {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
    }
    return 0;
}


int
vsb_ecred_is_agent(json_t *attached, const char *name)
{
    json_t  *a;
    size_t   i;

    json_array_foreach(attached, i, a) {
        if (strcmp(json_string_value(json_object_get(a, "name")), name) == 0) {
            return json_object_get(a, "value") != NULL;
        }
    }
    return 0;
}
