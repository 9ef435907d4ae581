/*
 * Building an exec's argv and environment (exec_env.c).
 */
#ifndef VSB_EXEC_ENV_H
#define VSB_EXEC_ENV_H

#include <stddef.h>

#include "vsb_exec.h"

/* NULL-terminated; the strings are req->argv's (free only the array).
 * NULL with err filled if argv is not 1 .. VSB_MAX_ARGV strings. */
char **vsb_exec_argv(const vsb_exec_request_t *req, char *err,
    size_t errlen);

/* PATH, HOME, LANG, USER defaults, then the sandbox's env, then the
 * request's; free with vsb_exec_env_free().  NULL with err filled. */
char **vsb_exec_envp(vsb_sandbox_t *sb, const vsb_exec_request_t *req,
    char *err, size_t errlen);
void vsb_exec_env_free(char **envp);

#endif
