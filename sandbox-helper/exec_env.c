/*
 * An exec's argv and environment, built by the helper before clone: the
 * init allocates nothing, so both arrive ready (argv's strings borrowed
 * from the request, envp's owned).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_egress.h"
#include "vsb_exec_env.h"


static int
vsb_exec_env_name_ok(const char *name)
{
    const char  *p;

    if (!((*name >= 'A' && *name <= 'Z') || (*name >= 'a' && *name <= 'z')
          || *name == '_'))
    {
        return 0;
    }

    for (p = name + 1; *p != '\0'; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')
              || (*p >= '0' && *p <= '9') || *p == '_'))
        {
            return 0;
        }
    }

    return 1;
}


/* Sets name=value in envp (n entries), replacing an earlier value. */
static int
vsb_exec_env_set(char **envp, size_t *n, const char *name, const char *value)
{
    char    *s;
    size_t   i, nlen;

    nlen = strlen(name);

    if (asprintf(&s, "%s=%s", name, value) == -1) {
        return -1;
    }

    for (i = 0; i < *n; i++) {
        if (strncmp(envp[i], name, nlen) == 0 && envp[i][nlen] == '=') {
            free(envp[i]);
            envp[i] = s;
            return 0;
        }
    }

    envp[(*n)++] = s;
    envp[*n] = NULL;
    return 0;
}


void
vsb_exec_env_free(char **envp)
{
    size_t  i;

    if (envp == NULL) {
        return;
    }

    for (i = 0; envp[i] != NULL; i++) {
        free(envp[i]);
    }

    free(envp);
}


static int
vsb_exec_env_add(char **envp, size_t *n, json_t *env, const char *what,
    char *err, size_t errlen)
{
    const char  *name;
    json_t      *value;

    if (env == NULL) {
        return 0;
    }

    if (!json_is_object(env)) {
        snprintf(err, errlen, "%s env is not an object", what);
        return -1;
    }

    json_object_foreach(env, name, value) {
        if (!vsb_exec_env_name_ok(name) || !json_is_string(value)) {
            snprintf(err, errlen, "%s env: bad variable \"%.64s\"", what,
                     name);
            return -1;
        }

        if (strcmp(name, "HOME") == 0 || strcmp(name, "USER") == 0) {
            continue;           /* they describe the sandbox user */
        }

        if (vsb_exec_env_set(envp, n, name, json_string_value(value)) != 0) {
            snprintf(err, errlen, "env: %s", strerror(errno));
            return -1;
        }
    }

    return 0;
}


/* defaults, then the sandbox's env, then the request's */
char **
vsb_exec_envp(vsb_sandbox_t *sb, const vsb_exec_request_t *req, char *err,
    size_t errlen)
{
    char               **envp, name[72];
    const char *const   *egress, *eq;
    size_t               n, max, i;

    egress = vsb_egress_sandbox_env(sb);
    max = 4 + (sb->env ? json_object_size(sb->env) : 0)
          + (req->env ? json_object_size(req->env) : 0);
    for (i = 0; egress != NULL && egress[i] != NULL; i++) {
        max++;
    }

    if (max > 4 + 40 + 2 * VSB_MAX_ENV) {
        snprintf(err, errlen, "env: too many variables");
        return NULL;
    }

    envp = calloc(max + 1, sizeof(char *));
    if (envp == NULL) {
        snprintf(err, errlen, "env: %s", strerror(errno));
        return NULL;
    }

    n = 0;

    if (vsb_exec_env_set(envp, &n, "PATH", "/usr/local/bin:/usr/bin:/bin")
        != 0
        || vsb_exec_env_set(envp, &n, "HOME", "/home/sandbox") != 0
        || vsb_exec_env_set(envp, &n, "LANG", "C.UTF-8") != 0
        || vsb_exec_env_set(envp, &n, "USER", "sandbox") != 0)
    {
        snprintf(err, errlen, "env: %s", strerror(errno));
        goto failed;
    }

    /* an allowlist sandbox's proxy; the sandbox's or the request's env
     * may set them otherwise (nothing but the proxy leads out anyway) */
    for (i = 0; egress != NULL && egress[i] != NULL; i++) {
        eq = strchr(egress[i], '=');
        if (eq == NULL || (size_t) (eq - egress[i]) >= sizeof(name)) {
            continue;
        }
        memcpy(name, egress[i], (size_t) (eq - egress[i]));
        name[eq - egress[i]] = '\0';
        if (vsb_exec_env_set(envp, &n, name, eq + 1) != 0) {
            snprintf(err, errlen, "env: %s", strerror(errno));
            goto failed;
        }
    }

    if ((!req->own_env
         && vsb_exec_env_add(envp, &n, sb->env, "sandbox", err, errlen) != 0)
        || vsb_exec_env_add(envp, &n, req->env, "request", err, errlen) != 0)
    {
        goto failed;
    }

    return envp;

failed:

    vsb_exec_env_free(envp);
    return NULL;
}


char **
vsb_exec_argv(const vsb_exec_request_t *req, char *err, size_t errlen)
{
    char    **argv;
    size_t    i, n;
    json_t   *a;

    if (!json_is_array(req->argv) || json_array_size(req->argv) == 0
        || json_array_size(req->argv) > VSB_MAX_ARGV)
    {
        snprintf(err, errlen, "argv must be an array of 1 to %d strings",
                 VSB_MAX_ARGV);
        return NULL;
    }

    n = json_array_size(req->argv);

    argv = calloc(n + 1, sizeof(char *));
    if (argv == NULL) {
        snprintf(err, errlen, "argv: %s", strerror(errno));
        return NULL;
    }

    for (i = 0; i < n; i++) {
        a = json_array_get(req->argv, i);

        if (!json_is_string(a) || (i == 0 && json_string_length(a) == 0)
            || strlen(json_string_value(a)) != json_string_length(a))
        {
            snprintf(err, errlen, "argv[%zu] is not a valid string", i);
            free(argv);
            return NULL;
        }

        argv[i] = (char *) json_string_value(a);    /* copied by clone */
    }

    return argv;
}
