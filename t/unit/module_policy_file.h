/*
 * The fixture of the unit tests that read policy files
 * (test_module_policy.c, test_module_network.c): load() writes a text to
 * a temporary file and reads it the way "nginx -t" does, refused() says
 * a text is refused with a message that names the file and the words
 * given, rule() finds an agent's rule.  A test names policy_setup and
 * policy_teardown in its cmocka_unit_test_setup_teardown(); the pool
 * (module_pool.h) holds the policy's JSON document until the teardown.
 */

#ifndef _MODULE_POLICY_FILE_H_INCLUDED_
#define _MODULE_POLICY_FILE_H_INCLUDED_


#include <stdio.h>

#include "module_pool.h"


#define POLICY_FILE_TEMPLATE  "/tmp/veto-unit-policy-XXXXXX"

static ngx_conf_t   conf;
static char         file[] = POLICY_FILE_TEMPLATE;


static int
policy_setup(void **state)
{
    int  fd;

    if (pool_setup(state) != 0) {
        return -1;
    }

    ngx_stub_conf(&conf, pool);

    memcpy(file, POLICY_FILE_TEMPLATE, sizeof(file));
    fd = mkstemp(file);
    if (fd == -1) {
        return -1;
    }

    close(fd);

    return 0;
}


static int
policy_teardown(void **state)
{
    unlink(file);
    return pool_teardown(state);    /* drops the policy's JSON document */
}


static ngx_http_veto_sandbox_policy_t *
load(const char *text)
{
    FILE       *f;
    ngx_str_t   name;

    f = fopen(file, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);

    name.data = (u_char *) file;
    name.len = strlen(file);

    return ngx_http_veto_sandbox_policy_load(&conf, &name,
                                             ngx_http_veto_sandbox_ops_table());
}


/* a refusal, and its message names the file and the words given */
static void
refused(const char *text, const char *words)
{
    if (load(text) != NULL) {
        fail_msg("accepted: %s", text);
    }

    if (strstr(ngx_stub_last_error(), words) == NULL
        || strstr(ngx_stub_last_error(), file) == NULL)
    {
        fail_msg("\"%s\" does not say \"%s\"", ngx_stub_last_error(), words);
    }
}


static ngx_http_veto_sandbox_rule_t *
rule(ngx_http_veto_sandbox_policy_t *p, const char *tenant,
    const char *agent)
{
    ngx_str_t  t, a;

    t.data = (u_char *) tenant;
    t.len = strlen(tenant);
    a.data = (u_char *) agent;
    a.len = strlen(agent);

    return ngx_http_veto_sandbox_policy_rule(p, &t, &a);
}


#endif /* _MODULE_POLICY_FILE_H_INCLUDED_ */
