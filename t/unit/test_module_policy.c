/*
 * The policy file (ngx_http_veto_sandbox_policy.c, read by "nginx -t")
 * and what it says of a request (_policy_match.c): every error names the
 * file and the field; agents inherit and may not exceed their tenant;
 * approval rules ask a human for exactly what they say, and err on
 * asking.
 */

#include "ngx_http_veto_sandbox_faces.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "module_policy_file.h"


static const char  *full =
    "{\"version\": 1, \"tenants\": {"
    " \"acme\": {"
    "  \"profiles\": [\"default\", \"python\"],"
    "  \"default_profile\": \"default\","
    "  \"ceilings\": {\"memory_mb\": 512, \"timeout_s\": 60,"
    "                 \"file_bytes\": 1048576},"
    "  \"defaults\": {\"memory_mb\": 128},"
    "  \"approvals\": {\"always\": [\"sandbox.delete\"],"
    "                  \"exec_argv\": [\"git push*\", \"curl *\"],"
    "                  \"network\": true, \"profiles\": [\"python\"],"
    "                  \"threshold\": 2, \"ttl_s\": 600},"
    "  \"quotas\": {\"concurrent_sandboxes\": 10, \"execs_per_minute\": 100,"
    "              \"per_agent\": {\"concurrent_sandboxes\": 2}},"
    "  \"agents\": {"
    "   \"small\": {\"ceilings\": {\"memory_mb\": 64, \"timeout_s\": 60,"
    "                             \"file_bytes\": 1024},"
    "              \"defaults\": {\"memory_mb\": 32},"
    "              \"approvals\": {\"export\": true},"
    "              \"quotas\": {\"execs_per_minute\": 5}}}},"
    " \"open\": {}}}";


static void
test_load_and_inherit(void **state)
{
    ngx_http_veto_sandbox_rule_t    *r, *a;
    ngx_http_veto_sandbox_policy_t  *p;

    p = load(full);
    if (p == NULL) {
        fail_msg("%s", ngx_stub_last_error());
    }

    assert_true(p->needs_redis);

    r = rule(p, "acme", "anyone");
    assert_non_null(r);
    assert_int_equal(r->ceiling[NGX_HTTP_VSB_L_MEMORY_MB], 512);
    assert_int_equal(r->def[NGX_HTTP_VSB_L_MEMORY_MB], 128);
    assert_int_equal(r->apr.always, NGX_HTTP_VSB_ACT_DELETE);
    assert_int_equal(r->apr.threshold, 2);
    assert_int_equal(r->apr.ttl, 600000);
    assert_int_equal(r->quota.tenant_sandboxes, 10);
    assert_int_equal(r->quota.tenant_execs, 100);
    assert_int_equal(r->quota.agent_sandboxes, 2);
    assert_int_equal(ngx_http_veto_sandbox_policy_profile(r, "python"),
                     NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_policy_profile(r, "ruby"),
                     NGX_DECLINED);

    /* an agent: its own values over a copy of its tenant's */
    a = rule(p, "acme", "small");
    assert_true(a != r);
    assert_int_equal(a->ceiling[NGX_HTTP_VSB_L_MEMORY_MB], 64);
    assert_int_equal(a->def[NGX_HTTP_VSB_L_MEMORY_MB], 32);
    assert_int_equal(a->ceiling[NGX_HTTP_VSB_L_TIMEOUT_S], 60);
    assert_int_equal(a->ceiling[NGX_HTTP_VSB_L_FILE_BYTES], 1024);
    assert_int_equal(ngx_http_veto_sandbox_policy_profile(a, "ruby"),
                     NGX_DECLINED);

    /* its approvals replace the tenant's whole rule */
    assert_int_equal(a->apr.always, 0);
    assert_true(a->apr.export);
    assert_null(a->apr.argv);

    /* its quotas are its own; the tenant totals still apply */
    assert_int_equal(a->quota.agent_execs, 5);
    assert_int_equal(a->quota.tenant_execs, 100);

    /* no rule at all: any profile, no ceiling */
    r = rule(p, "open", "x");
    assert_non_null(r);
    assert_int_equal(ngx_http_veto_sandbox_policy_profile(r, "anything"),
                     NGX_OK);
    assert_int_equal(r->ceiling[NGX_HTTP_VSB_L_MEMORY_MB], 0);

    assert_null(rule(p, "globex", "x"));
    assert_null(rule(p, "acm", "x"));
    assert_null(rule(p, "acmee", "x"));
}


static void
test_load_refusals(void **state)
{
    char  *big;

    refused("{\"version\": 1, \"tenants\": {}", "line");
    refused("[]", "the top level must be an object");
    refused("{\"version\": 2, \"tenants\": {}}", "\"version\" must be 1");
    refused("{\"tenants\": {}, \"extra\": 1}", "unknown field \"extra\"");
    refused("{\"tenants\": []}", "\"tenants\" must be an object");
    refused("{\"tenants\": {\"a\": {\"ceilings\": {\"memory_mb\": 64},"
            " \"ceilings\": {}}}}", "line");
    refused("{\"tenants\": {\"a b\": {}}}", "name \"a b\"");
    refused("{\"tenants\": {\"a\": {\"color\": 1}}}",
            "tenants.a: unknown field \"color\"");
    refused("{\"tenants\": {\"a\": {\"profiles\": \"default\"}}}",
            "field \"profiles\" has the wrong type");
    refused("{\"tenants\": {\"a\": {\"ceilings\": {\"memory_gb\": 1}}}}",
            "unknown limit \"memory_gb\"");
    refused("{\"tenants\": {\"a\": {\"ceilings\": {\"pids\": 0}}}}",
            "ceilings.pids must be a positive integer");
    refused("{\"tenants\": {\"a\": {\"ceilings\": {\"pids\": 10},"
            " \"defaults\": {\"pids\": 11}}}}",
            "defaults.pids 11 is above ceilings.pids 10");
    refused("{\"tenants\": {\"a\": {\"profiles\": [\"x\"],"
            " \"default_profile\": \"y\"}}}",
            "default_profile \"y\" is not in profiles");
    refused("{\"tenants\": {\"a\": {\"ceilings\": {\"pids\": 10},"
            " \"agents\": {\"b\": {\"ceilings\": {\"pids\": 11}}}}}}",
            "tenants.a.agents.b: ceilings.pids exceeds the tenant's 10");
    refused("{\"tenants\": {\"a\": {\"agents\": {\"b\": {\"agents\": {}}}}}}",
            "unknown field \"agents\"");

    /* names longer than the message buffer: cut, still NUL terminated */
    big = malloc(2048);
    assert_non_null(big);
    strcpy(big, "{\"tenants\": {\"a\": {\"agents\": {\"");
    memset(big + strlen(big), 'b', 600);
    strcpy(big + strlen("{\"tenants\": {\"a\": {\"agents\": {\"") + 600,
           " x\": {}}}}}");
    refused(big, "must be 1..128 printable ASCII characters");
    assert_non_null(strstr(ngx_stub_last_error(), "bbbb: name \"bbbb"));
    free(big);
    refused("{\"tenants\": {\"a\": {\"approvals\": {\"always\":"
            " [\"sandbox.explode\"]}}}}", "approvals.always: unknown action");
    /* the known ones are the op table's rows with an approval kind */
    refused("{\"tenants\": {\"a\": {\"approvals\": {\"always\":"
            " [\"sandbox.get\"]}}}}",
            "unknown action (known: sandbox.create, sandbox.update, "
            "sandbox.delete, sandbox.changes, sandbox.exec, "
            "sandbox.files.read, sandbox.files.write, "
            "sandbox.archive.write, sandbox.archive.read)");
    refused("{\"tenants\": {\"a\": {\"approvals\": {\"threshold\": 0}}}}",
            "approvals.threshold has the wrong type or value");
    refused("{\"tenants\": {\"a\": {\"approvals\": {\"exec_argv\": [\"\"]}}}}",
            "approvals.exec_argv");
    refused("{\"tenants\": {\"a\": {\"quotas\": {\"per_agent\":"
            " {\"nope\": 1}}}}}", "quotas: unknown field \"nope\"");
    refused("{\"tenants\": {\"a\": {\"quotas\":"
            " {\"execs_per_minute\": -1}}}}", "quotas: bad value in");
}


static ngx_uint_t
asks(ngx_http_veto_sandbox_rule_t *r, ngx_uint_t act, const char *argv,
    const char *profile, const char *network)
{
    json_t      *a;
    ngx_uint_t   rc;

    a = argv ? json_loads(argv, JSON_ALLOW_NUL, NULL) : NULL;
    assert_true(argv == NULL || a != NULL);

    rc = ngx_http_veto_sandbox_policy_approval(r, act, a, profile, network,
                                               NULL);

    json_decref(a);

    return rc;
}


static void
test_approval_rules(void **state)
{
    char                            *big;
    size_t                           i;
    ngx_http_veto_sandbox_rule_t    *r, *a;
    ngx_http_veto_sandbox_policy_t  *p;

    p = load(full);
    assert_non_null(p);
    r = rule(p, "acme", "x");
    a = rule(p, "acme", "small");

    /* always */
    assert_true(asks(r, NGX_HTTP_VSB_ACT_DELETE, NULL, NULL, NULL));
    assert_false(asks(r, NGX_HTTP_VSB_ACT_WRITE, NULL, NULL, NULL));

    /* a create: asking for egress, or a listed profile */
    assert_true(asks(r, NGX_HTTP_VSB_ACT_CREATE, NULL, "default", "allow"));
    assert_false(asks(r, NGX_HTTP_VSB_ACT_CREATE, NULL, "default", "none"));
    assert_true(asks(r, NGX_HTTP_VSB_ACT_CREATE, NULL, "python", NULL));
    assert_false(asks(r, NGX_HTTP_VSB_ACT_CREATE, NULL, "default", NULL));

    /* export: reading files out */
    assert_true(asks(a, NGX_HTTP_VSB_ACT_READ, NULL, NULL, NULL));
    assert_false(asks(r, NGX_HTTP_VSB_ACT_READ, NULL, NULL, NULL));

    /* exec_argv, from any word start, over the joined argv or one element */
    static const struct {
        const char  *argv;
        ngx_uint_t   asks;
    } execs[] = {
        { "[\"git\", \"push\", \"origin\", \"main\"]", 1 },
        { "[\"curl\", \"x\"]", 1 },
        { "[\"/usr/bin/curl\", \"x\"]", 1 },
        { "[\"env\", \"A=1\", \"curl\", \"x\"]", 1 },
        { "[\"sh\", \"-c\", \"cd /tmp && curl x\"]", 1 },
        { "[\"timeout\", \"5\", \"curl\", \"x\"]", 1 },
        { "[\"grep\", \"curl x\"]", 1 },              /* errs on asking */
        { "[\"git\", \"pull\"]", 0 },
        { "[\"echo\", \"curly\"]", 0 },
        { "[\"curl\"]", 0 },
        { "[\"git\", \"pu\\u0000sh\"]", 1 },          /* a NUL could hide */
    };

    for (i = 0; i < sizeof(execs) / sizeof(execs[0]); i++) {
        assert_int_equal(asks(r, NGX_HTTP_VSB_ACT_EXEC, execs[i].argv, NULL,
                              NULL),
                         execs[i].asks);
    }

    /* too long to search in the event loop: a human decides */
    big = malloc(70 * 1024);
    assert_non_null(big);
    strcpy(big, "[\"echo\", \"");
    memset(big + strlen(big), 'a', 66 * 1024);
    strcpy(big + strlen("[\"echo\", \"") + 66 * 1024, "\"]");
    assert_true(asks(r, NGX_HTTP_VSB_ACT_EXEC, big, NULL, NULL));
    free(big);

    /* the agent still has a policy that loads, with a defaults above
     * its ceiling refused */
    refused("{\"tenants\": {\"a\": {\"defaults\": {\"pids\": 20},"
            " \"agents\": {\"b\": {\"ceilings\": {\"pids\": 10}}}}}}",
            "tenants.a.agents.b: defaults.pids 20 is above ceilings.pids 10");

    /* an agent whose approvals name no argv: never for its argv */
    assert_false(asks(a, NGX_HTTP_VSB_ACT_EXEC, "[\"git\", \"push\"]", NULL,
                      NULL));
}


/* "env": an allowlist (every name but the inert ones, the default list or
 * the policy's, is dangerous; "dangerous" names never inert), what a
 * create or exec setting one gets; "irreversible_*": what a summary marks */
static void
test_env_and_irreversible(void **state)
{
    json_t                          *env, *argv;
    ngx_http_veto_sandbox_rule_t    *r, *a, *o;
    ngx_http_veto_sandbox_policy_t  *p;

    p = load("{\"version\": 1, \"tenants\": {"
             " \"acme\": {\"env\": {\"on_dangerous\": \"approve\"},"
             "  \"approvals\": {\"irreversible_argv\": [\"git push*\"],"
             "                  \"irreversible_actions\": [\"sandbox.delete\"]},"
             "  \"agents\": {\"own\": {\"env\": {\"dangerous\": [\"FOO_*\"],"
             "                              \"also_inert\": [\"FOO_*\", \"MY_*\"],"
             "                              \"on_dangerous\": \"refuse\"}},"
             "              \"mine\": {\"env\": {\"inert\": [\"PATH\"]}}}},"
             " \"open\": {}}}");
    assert_non_null(p);
    assert_true(p->needs_redis);        /* "approve" asks a human */

    r = rule(p, "acme", "x");
    a = rule(p, "acme", "own");
    o = rule(p, "open", "x");

    assert_int_equal(r->env_mode, NGX_HTTP_VSB_ENV_APPROVE);
    assert_int_equal(a->env_mode, NGX_HTTP_VSB_ENV_REFUSE);
    assert_int_equal(o->env_mode, NGX_HTTP_VSB_ENV_ALLOW);

    /* the default list */
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "PATH"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "LD_PRELOAD"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "GIT_SSH_COMMAND"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "https_proxy"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "PYTHONPATH"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "PERL5OPT"));
    assert_false(ngx_http_veto_sandbox_policy_env_dangerous(r, "CI"));
    assert_false(ngx_http_veto_sandbox_policy_env_dangerous(r, "LANG"));
    assert_false(ngx_http_veto_sandbox_policy_env_dangerous(r, "LC_ALL"));
    assert_false(ngx_http_veto_sandbox_policy_env_dangerous(r, "TZ"));

    /* not inert: on no list of dangerous names, still dangerous */
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "PATHS"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "OPENSSL_CONF"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "GOFLAGS"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "HOME"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(r, "LC"));

    /* also_inert adds to the default, "dangerous" wins over both */
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(a, "FOO_BAR"));
    assert_false(ngx_http_veto_sandbox_policy_env_dangerous(a, "MY_X"));
    assert_false(ngx_http_veto_sandbox_policy_env_dangerous(a, "LANG"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(a, "PATH"));

    /* inert replaces the default */
    assert_false(ngx_http_veto_sandbox_policy_env_dangerous(
                     rule(p, "acme", "mine"), "PATH"));
    assert_true(ngx_http_veto_sandbox_policy_env_dangerous(
                     rule(p, "acme", "mine"), "LANG"));

    env = json_pack("{s:s, s:s}", "CI", "1", "LD_PRELOAD", "x");
    assert_string_equal(ngx_http_veto_sandbox_policy_env_first(r, env),
                        "LD_PRELOAD");
    assert_true(ngx_http_veto_sandbox_policy_approval(r,
                                NGX_HTTP_VSB_ACT_CREATE, NULL, NULL, NULL, env));
    assert_true(ngx_http_veto_sandbox_policy_approval(r,
                                NGX_HTTP_VSB_ACT_EXEC, NULL, NULL, NULL, env));
    assert_false(ngx_http_veto_sandbox_policy_approval(o,
                                NGX_HTTP_VSB_ACT_EXEC, NULL, NULL, NULL, env));
    json_decref(env);

    env = json_pack("{s:s}", "CI", "1");
    assert_null(ngx_http_veto_sandbox_policy_env_first(r, env));
    assert_false(ngx_http_veto_sandbox_policy_approval(r,
                                NGX_HTTP_VSB_ACT_CREATE, NULL, NULL, NULL, env));
    json_decref(env);

    /* irreversible: export and egress always, the policy's marks */
    assert_non_null(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_READ, NULL, NULL));
    assert_non_null(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_CREATE, NULL, "allowlist"));
    assert_null(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_CREATE, NULL, "none"));
    assert_null(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_CREATE, NULL, NULL));
    /* hosts added by a PATCH: egress too */
    assert_string_equal(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_UPDATE, NULL, "allowlist"),
                        ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_CREATE, NULL, "allowlist"));
    assert_non_null(strstr(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_UPDATE, NULL, "allowlist"),
                           "network egress"));
    assert_null(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_UPDATE, NULL, NULL));
    assert_non_null(ngx_http_veto_sandbox_policy_irreversible(r,
                                NGX_HTTP_VSB_ACT_DELETE, NULL, NULL));
    assert_null(ngx_http_veto_sandbox_policy_irreversible(o,
                                NGX_HTTP_VSB_ACT_DELETE, NULL, NULL));

    argv = json_pack("[s, s]", "/usr/bin/git", "push");
    assert_non_null(ngx_http_veto_sandbox_policy_irreversible(r,
                                NGX_HTTP_VSB_ACT_EXEC, argv, NULL));
    json_decref(argv);
    argv = json_pack("[s, s]", "git", "pull");
    assert_null(ngx_http_veto_sandbox_policy_irreversible(r,
                                NGX_HTTP_VSB_ACT_EXEC, argv, NULL));
    json_decref(argv);

    /* a tenant's approvals need Redis, whether or not it has agents */
    p = load("{\"version\": 1, \"tenants\": {\"acme\": {\"approvals\":"
             " {\"always\": [\"sandbox.exec\"]}}}}");
    assert_non_null(p);
    assert_true(p->needs_redis);

    refused("{\"version\": 1, \"tenants\": {\"a\": {\"env\":"
            " {\"on_dangerous\": \"sometimes\"}}}}", "env.on_dangerous");
    refused("{\"version\": 1, \"tenants\": {\"a\": {\"env\":"
            " {\"dangerous\": [1]}}}}", "env.dangerous");
    refused("{\"version\": 1, \"tenants\": {\"a\": {\"env\":"
            " {\"x\": 1}}}}", "env: unknown field \"x\"");
    refused("{\"version\": 1, \"tenants\": {\"a\": {\"approvals\":"
            " {\"irreversible_actions\": [\"sandbox.nuke\"]}}}}",
            "approvals.irreversible_actions: unknown action");
}


/* ask_ceilings: the lifetime only, above its ceiling, an agent within
 * its tenant's; they need Redis (a human decides) */
static void
test_ask_ceilings(void **state)
{
    ngx_http_veto_sandbox_rule_t    *r, *a;
    ngx_http_veto_sandbox_policy_t  *p;

    p = load("{\"tenants\": {\"t\": {"
             " \"ceilings\": {\"ttl_s\": 600, \"idle_s\": 300},"
             " \"ask_ceilings\": {\"ttl_s\": 3600},"
             " \"defaults\": {\"idle_s\": 120},"
             " \"agents\": {\"a\": {\"ceilings\": {\"ttl_s\": 60}},"
             "             \"b\": {\"ceilings\": {\"idle_s\": 100},"
             "                   \"defaults\": {\"idle_s\": 100},"
             "                   \"ask_ceilings\": {\"ttl_s\": 1800,"
             "                                    \"idle_s\": 300}}}}}}");
    if (p == NULL) {
        fail_msg("%s", ngx_stub_last_error());
    }
    assert_true(p->needs_redis);

    r = rule(p, "t", "other");
    assert_non_null(r);
    assert_int_equal(r->ceiling[NGX_HTTP_VSB_L_TTL_S], 600);
    assert_int_equal(r->ask[NGX_HTTP_VSB_L_TTL_S], 3600);
    assert_int_equal(r->ask[NGX_HTTP_VSB_L_IDLE_S], 0);
    assert_int_equal(r->def[NGX_HTTP_VSB_L_IDLE_S], 120);

    /* inherited: asking past 60 up to the tenant's 3600 */
    a = rule(p, "t", "a");
    assert_int_equal(a->ceiling[NGX_HTTP_VSB_L_TTL_S], 60);
    assert_int_equal(a->ask[NGX_HTTP_VSB_L_TTL_S], 3600);

    /* its own replaces the tenant's */
    a = rule(p, "t", "b");
    assert_int_equal(a->ask[NGX_HTTP_VSB_L_TTL_S], 1800);
    assert_int_equal(a->ask[NGX_HTTP_VSB_L_IDLE_S], 300);

    refused("{\"tenants\": {\"t\": {\"ceilings\": {\"memory_mb\": 64},"
            " \"ask_ceilings\": {\"memory_mb\": 128}}}}",
            "ask_ceilings.memory_mb: only ttl_s and idle_s");
    refused("{\"tenants\": {\"t\": {\"ceilings\": {\"ttl_s\": 600},"
            " \"ask_ceilings\": {\"ttl_s\": 600}}}}",
            "ask_ceilings.ttl_s 600 must be above ceilings.ttl_s");
    refused("{\"tenants\": {\"t\": {\"ask_ceilings\": {\"ttl_s\": 60}}}}",
            "must be above ceilings.ttl_s (0; 0: not set)");
    refused("{\"tenants\": {\"t\": {\"ceilings\": {\"ttl_s\": 600},"
            " \"ask_ceilings\": {\"ttl_s\": 900},"
            " \"agents\": {\"a\": {\"ask_ceilings\": {\"ttl_s\": 901}}}}}}",
            "ask_ceilings.ttl_s exceeds the tenant's 900");
    refused("{\"tenants\": {\"t\": {\"ceilings\": {\"ttl_s\": 600},"
            " \"agents\": {\"a\": {\"ask_ceilings\": {\"ttl_s\": 601}}}}}}",
            "ask_ceilings.ttl_s exceeds the tenant's 600");
    refused("{\"tenants\": {\"t\": {\"ceilings\": {\"idle_s\": 60},"
            " \"defaults\": {\"idle_s\": 61}}}}",
            "defaults.idle_s 61 is above ceilings.idle_s 60");
    refused("{\"tenants\": {\"t\": {\"ask_ceilings\": []}}}",
            "\"ask_ceilings\" must be an object");
}


static void
test_actions(void **state)
{
    size_t     i;
    ngx_str_t  n;

    static const struct {
        const char  *name;
        ngx_uint_t   bit;
    } actions[] = {
        { "sandbox.create", NGX_HTTP_VSB_ACT_CREATE },
        { "sandbox.exec", NGX_HTTP_VSB_ACT_EXEC },
        { "sandbox.files.write", NGX_HTTP_VSB_ACT_WRITE },
        { "sandbox.files.read", NGX_HTTP_VSB_ACT_READ },
        { "sandbox.delete", NGX_HTTP_VSB_ACT_DELETE },
        /* the op table's rows: an archive is files written or read */
        { "sandbox.update", NGX_HTTP_VSB_ACT_UPDATE },
        { "sandbox.archive.write", NGX_HTTP_VSB_ACT_WRITE },
        { "sandbox.archive.read", NGX_HTTP_VSB_ACT_READ },
        { "sandbox.list", 0 },
        { "sandbox.get", 0 },
        { "approval.approve", 0 },
        { "sandbox.exe", 0 },
        { "sandbox.execs", 0 },
        { "", 0 },
    };

    for (i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
        n.data = (u_char *) actions[i].name;
        n.len = strlen(actions[i].name);
        assert_int_equal(ngx_http_veto_sandbox_policy_action(
                             ngx_http_veto_sandbox_ops_table(), &n),
                         actions[i].bit);
    }
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_and_inherit, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_load_refusals, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_approval_rules, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_env_and_irreversible, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_ask_ceilings, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_actions, policy_setup,
                                        policy_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
