/*
 * Redaction (ngx_http_veto_sandbox_redact.c): what audit records and
 * approval summaries keep of free text.  Secrets are hidden; what could
 * run something stays visible to the human who decides.  The summaries
 * themselves: test_module_summary.c.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <sys/time.h>
#include <cmocka.h>

#include <jansson.h>

#include "module_pool.h"
#include "ngx_http_veto_sandbox_redact.h"
#include "ngx_http_veto_sandbox_summary.h"


static json_t *summary_of(json_t *argv);


static const char *
redact(const char *s)
{
    static char  buf[65536];
    ngx_str_t    in, out;

    in.data = (u_char *) s;
    in.len = strlen(s);

    assert_int_equal(ngx_http_veto_sandbox_redact(pool, &in, &out), NGX_OK);
    assert_true(out.len < sizeof(buf));
    assert_int_equal(out.data[out.len], '\0');

    memcpy(buf, out.data, out.len + 1);

    return buf;
}


static void
test_redact_table(void **state)
{
    size_t  i;

    static const char  *cases[][2] = {
        /* schemes */
        { "Authorization: Bearer abc.def",
          "Authorization: Bearer [redacted]" },
        { "curl -H 'authorization: bearer xyz' http://h",
          "curl -H 'authorization: bearer [redacted]' http://h" },
        { "Basic dXNlcjpwYXNz, then", "Basic [redacted], then" },

        /* anything shaped like a JWT */
        { "t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln end",
          "t [redacted] end" },
        { "eyJonly.one", "eyJonly.one" },

        /* key=value, key: value, "key": "value" with a secret key */
        { "password=hunter2 next", "password=[redacted] next" },
        { "PASSWORD = hunter2", "PASSWORD = [redacted]" },
        { "{\"token\": \"abc\", \"user\": \"bob\"}",
          "{\"token\": \"[redacted]\", \"user\": \"bob\"}" },
        { "MY_API_KEY=k1&x=2", "MY_API_KEY=[redacted]&x=2" },
        { "mytoken=abc", "mytoken=[redacted]" },
        { "a=1;session_id=s;b=2", "a=1;session_id=[redacted];b=2" },
        { "aws_access_key: AKIAEXAMPLE", "aws_access_key: [redacted]" },
        { "'secret':'a\\'b' tail", "'secret':'[redacted]' tail" },

        /* what could run something stays in sight */
        { "password=\"$(curl x | sh)\"", "password=\"$(curl x | sh)\"" },
        { "token=`id`", "token=`id`" },
        { "Bearer $(cat /etc/key)", "Bearer $(cat /etc/key)" },

        /* and what is no secret is left alone */
        { "user=bob", "user=bob" },
        { "tokens are nice", "tokens are nice" },
        { "session:", "session:" },
        { "git push origin main", "git push origin main" },
        { "", "" },

        /* Authorization: token|Bearer|Basic, after a key: any value */
        { "curl -H 'Authorization: token ghp_0123456789abcdefghijABCDEFGHIJ"
          "klmnop' https://api.github.com/user",
          "curl -H 'Authorization: token [redacted]' "
          "https://api.github.com/user" },
        { "Authorization: token abc123", "Authorization: token [redacted]" },
        { "authorization: Basic x", "authorization: Basic [redacted]" },
        { "Proxy-Authorization: Bearer t0k", "Proxy-Authorization: Bearer "
          "[redacted]" },
        /* alone: only what looks like a credential */
        { "a basic test of bearer bonds", "a basic test of bearer bonds" },
        { "Bearer abc", "Bearer abc" },
        { "token abcdefghijklmnop", "token abcdefghijklmnop" },

        /* bare tokens, by their prefix */
        { "git clone https://ghp_0123456789abcdefghijABCDEFGHIJklmnop@github."
          "com/o/r", "git clone https://[redacted]@github.com/o/r" },
        { "GH=gho_0123456789abcdefghijklmnop x", "GH=[redacted] x" },
        { "ghu_0123456789abcdefghij ghs_0123456789abcdefghij "
          "ghr_0123456789abcdefghij",
          "[redacted] [redacted] [redacted]" },
        { "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz end",
          "[redacted] end" },
        { "aws AKIAIOSFODNN7EXAMPLE,ASIAIOSFODNN7EXAMPLE",
          "aws [redacted],[redacted]" },
        { "OPENAI_KEY=sk-proj-0123456789abcdefghijklmn",
          "OPENAI_KEY=[redacted]" },
        { "slack xoxb-1234567890-0987654321-abcdefghij", "slack [redacted]" },
        { "\"glpat-0123456789abcdefghij\"", "\"[redacted]\"" },
        /* too short, or inside a word: not a token */
        { "AKIA123 sk-learn disk-usage ghp_x glpat-1 xoxb-1",
          "AKIA123 sk-learn disk-usage ghp_x glpat-1 xoxb-1" },
        { "AKIAIOSFODNN7EXAMPLEx", "AKIAIOSFODNN7EXAMPLEx" },

        /* URL userinfo */
        { "https://alice:hunter2@example.com/x",
          "https://alice:[redacted]@example.com/x" },
        { "git push https://x-access-token:abc@github.com/o/r.git main",
          "git push https://x-access-token:[redacted]@github.com/o/r.git "
          "main" },
        { "https://example.com/a:b@c?x=y@z", "https://example.com/a:b@c?x=y@z" },
        { "ssh://git@host:22/r", "ssh://git@host:22/r" },
        { "redis://:pw@127.0.0.1:6379", "redis://:[redacted]@127.0.0.1:6379" },

        /* curl -u, --user */
        { "curl -u alice:s3cret https://h", "curl -u alice:[redacted] https://h" },
        { "curl -ualice:s3cret h", "curl -ualice:[redacted] h" },
        { "/usr/bin/curl --user bob:pw --proxy-user p:q -U r:s h",
          "/usr/bin/curl --user bob:[redacted] --proxy-user p:[redacted] "
          "-U r:[redacted] h" },
        { "curl -u bob https://h", "curl -u bob https://h" },
        /* found by fuzz_module_hash: a user-less -u at a line's end took
         * the next line's key, and its value was shown */
        { "curl -u \n ACCESS_KEY = s3cret&", "curl -u \n ACCESS_KEY = [redacted]&" },
        { "curl -u ACCESS_KEY = s3cret", "curl -u ACCESS_KEY = [redacted]" },
        { "x --password\npassword=s3cret", "x --password\npassword=[redacted]" },
        { "sort -u a:b", "sort -u a:b" },

        /* --password X, -pX */
        { "tool --password hunter2 --db x", "tool --password [redacted] --db x" },
        { "tool --api-key 'my key' rest", "tool --api-key '[redacted]' rest" },
        { "vault --client-secret=abc x", "vault --client-secret=[redacted] x" },
        { "mysql -uroot -phunter2 db", "mysql -uroot -p[redacted] db" },
        { "mariadb-dump -pS3cr3t! db", "mariadb-dump -p[redacted] db" },
        { "mysql -u root -p db", "mysql -u root -p db" },
        { "cc -pthread -pipe x.c", "cc -pthread -pipe x.c" },
        { "sshpass -p hunter2 ssh host", "sshpass -p [redacted] ssh host" },
        { "openssl enc -pass pass:hunter2 -in f",
          "openssl enc -pass [redacted] -in f" },
        /* flags that name where a secret is, or that take no value */
        { "docker login --password-stdin reg.example.com",
          "docker login --password-stdin reg.example.com" },
        { "tool --token-file /run/tok --password-env PW x",
          "tool --token-file /run/tok --password-env PW x" },
        { "tool --token --verbose", "tool --token --verbose" },
        { "tool --password $(cat /run/pw)", "tool --password $(cat /run/pw)" },

        /* PEM private keys: the body */
        { "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc=\n"
          "-----END RSA PRIVATE KEY-----\n",
          "-----BEGIN RSA PRIVATE KEY-----[redacted]"
          "-----END RSA PRIVATE KEY-----\n" },
        { "key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk",
          "key: -----BEGIN OPENSSH PRIVATE KEY-----[redacted]" },
        { "{\"k\":\"-----BEGIN PRIVATE KEY-----\\nMIIE\\n"
          "-----END PRIVATE KEY-----\"}",
          "{\"k\":\"-----BEGIN PRIVATE KEY-----[redacted]"
          "-----END PRIVATE KEY-----\"}" },
        { "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
          "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----" },
        { "-----BEGIN ", "-----BEGIN " },

        /* password = x, password: "x" */
        { "password = x", "password = [redacted]" },
        { "db.password: \"p w\"", "db.password: \"[redacted]\"" },

        /* issue 29: white space of any kind around '=' and ':' */
        { "password\t=\tx", "password\t=\t[redacted]" },
        { "token \t:\v x y", "token \t:\v [redacted] y" },
        { "secret\r= x", "secret\r= [redacted]" },
        /* ... but a line's end is not: the next line is its own */
        { "password\nuser=bob", "password\nuser=bob" },

        /* names: whole (any case, a flag's dashes aside) */
        { "PASS=hunter2 AUTH=u:p KEY=k1", "PASS=[redacted] AUTH=[redacted] "
          "KEY=[redacted]" },
        { "pw: s3cret", "pw: [redacted]" },
        { "tool --pass=x --key=y", "tool --pass=[redacted] --key=[redacted]" },
        /* ... and suffixes after '_', '-' or '.' */
        { "DB_PWD=p1 SMTP_PASS=p2 STRIPE_KEY=p3 REDIS_AUTH=p4 X-API-PW=p5",
          "DB_PWD=[redacted] SMTP_PASS=[redacted] STRIPE_KEY=[redacted] "
          "REDIS_AUTH=[redacted] X-API-PW=[redacted]" },
        { "{\"db.key\": \"k\"}", "{\"db.key\": \"[redacted]\"}" },
        /* not secrets: a name that only ends like one, PWD (the working
         * directory), a word that only starts like one */
        { "KEYBOARD=us MONKEY=1 OLDPWD=/tmp PWD=/home/a AUTHOR=bob",
          "KEYBOARD=us MONKEY=1 OLDPWD=/tmp PWD=/home/a AUTHOR=bob" },
        { "keyword=x passes=3 pwdx=1", "keyword=x passes=3 pwdx=1" },

        /* flags by their whole name: --pass X, not --passes 3 */
        { "tool --pass hunter2 x", "tool --pass [redacted] x" },
        { "gpg --passphrase 'a b' f", "gpg --passphrase '[redacted]' f" },
        { "http --auth alice:pw h", "http --auth [redacted] h" },
        { "tool --passes 3 --pass-count 2", "tool --passes 3 --pass-count 2" },
        { "gpg --passphrase-file /run/p f", "gpg --passphrase-file /run/p f" },

        /* a scheme used as a key */
        { "Bearer: x", "Bearer: [redacted]" },
        { "bearer:\tabc def", "bearer:\t[redacted] def" },

        /* more issuers' prefixes, each with its shape */
        { "npm_0123456789abcdefghijklmnopqrstuvwxYZ end", "[redacted] end" },
        { "k=AIzaSyA-0123456789abcdefghijklmnopq_rst x", "k=[redacted] x" },
        { "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "[redacted]" },
        { "SG.abcdefghijklmnopqrstuv.0123456789abcdefghijklmnopqrstuvwxyzABCDEFG "
          "x", "[redacted] x" },
        /* too short, or not their shape: left alone */
        { "npm_install hf_hub AIzaX SG.x", "npm_install hf_hub AIzaX SG.x" },
        { "npm_0123456789abcdefghijklmnopqrst-uvwxyz",
          "npm_0123456789abcdefghijklmnopqrst-uvwxyz" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (strcmp(redact(cases[i][0]), cases[i][1]) != 0) {
            fail_msg("case %zu: \"%s\"\n  got  \"%s\"\n  want \"%s\"", i,
                     cases[i][0], redact(cases[i][0]), cases[i][1]);
        }
    }
}


/* An argv: what one element says of the next (--password X, curl -u X,
 * "Authorization: token" X), element by element as the summary does. */
static void
test_redact_argv(void **state)
{
    size_t       i, j;
    json_t      *sum, *argv;
    const char  *got;

    static const struct {
        const char  *argv[8];
        const char  *want[8];
    } cases[] = {
        { { "curl", "-u", "alice:pw", "https://h", NULL },
          { "curl", "-u", "alice:[redacted]", "https://h", NULL } },
        { { "curl", "-H", "Authorization: token", "ghs_x", "-H",
            "Authorization:", "Bearer abc", NULL },
          { "curl", "-H", "Authorization: token", "[redacted]", "-H",
            "Authorization:", "[redacted]", NULL } },
        { { "tool", "--password", "two words", "--db", "x", NULL },
          { "tool", "--password", "[redacted]", "--db", "x", NULL } },
        { { "echo", "Bearer", "abc", NULL },
          { "echo", "Bearer", "[redacted]", NULL } },
        { { "sshpass", "-p", "pw", "ssh", "host", NULL },
          { "sshpass", "-p", "[redacted]", "ssh", "host", NULL } },
        { { "mysql", "-h", "db", "-psecret", NULL },
          { "mysql", "-h", "db", "-p[redacted]", NULL } },
        /* the next element is no secret when it is a flag, or runs
         * something; an empty value pends nothing */
        { { "tool", "--token", "--verbose", "x", NULL },
          { "tool", "--token", "--verbose", "x", NULL } },
        { { "sh", "-c", "--password", "$(id)", NULL },
          { "sh", "-c", "--password", "$(id)", NULL } },
        { { "env", "PASSWORD=", "make", NULL },
          { "env", "PASSWORD=", "make", NULL } },
        { { "pytest", "-k", "basic", "tests/", NULL },
          { "pytest", "-k", "basic", "tests/", NULL } },
        { { "mysql", "-u", "root", "-p", "db", NULL },
          { "mysql", "-u", "root", "-p", "db", NULL } },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        argv = json_array();

        for (j = 0; cases[i].argv[j]; j++) {
            json_array_append_new(argv, json_string(cases[i].argv[j]));
        }

        sum = summary_of(argv);

        for (j = 0; cases[i].want[j]; j++) {
            got = json_string_value(json_array_get(
                                        json_object_get(sum, "argv"), j));
            if (got == NULL || strcmp(got, cases[i].want[j]) != 0) {
                fail_msg("argv case %zu, element %zu: got \"%s\", want "
                         "\"%s\"", i, j, got ? got : "(none)",
                         cases[i].want[j]);
            }
        }

        json_decref(sum);
    }
}


/*
 * Linear in what an agent sends: inputs built to make a backtracking or
 * rescanning redactor quadratic (2 MiB of near-misses of every rule) end
 * at once.  The CPU-time alarm (not wall time: a loaded machine must not
 * fail it) ends the test where a quadratic one would run for hours; it
 * measures nothing.
 */
static void
test_redact_linear(void **state)
{
    char              *in;
    size_t             i, j, n, len;
    ngx_str_t          s, out;
    ngx_pool_t        *p;
    struct itimerval   cpu;

    static const char  *units[] = {
        "-----BEGIN ", "-----BEGIN RSA PRIVATE KEY-----", "https://a:",
        "a://", "eyJ.", "ghp_", "AKIA", "password", "password:", "curl -u ",
        "--password ", "Bearer ", "'", "\"", "\\", "sk-", "x",
    };

    len = 2 * 1024 * 1024;
    in = malloc(len + 1);
    assert_non_null(in);

    ngx_memzero(&cpu, sizeof(cpu));
    cpu.it_value.tv_sec = 60;
    assert_int_equal(setitimer(ITIMER_VIRTUAL, &cpu, NULL), 0);

    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        n = strlen(units[i]);

        for (j = 0; j + n <= len; j += n) {
            memcpy(in + j, units[i], n);
        }

        s.data = (u_char *) in;
        s.len = j;

        p = ngx_create_pool(1024, ngx_cycle->log);
        assert_non_null(p);

        assert_int_equal(ngx_http_veto_sandbox_redact(p, &s, &out), NGX_OK);
        assert_true(out.len <= s.len * 10);

        ngx_destroy_pool(p);
    }

    ngx_memzero(&cpu, sizeof(cpu));
    assert_int_equal(setitimer(ITIMER_VIRTUAL, &cpu, NULL), 0);

    free(in);
}


static void
test_redact_bounds(void **state)
{
    char        *in, *want;
    size_t       i, n;
    const char  *out;

    /* many short secrets: each grows to "[redacted]", within the output's
     * bound (ASan watches the buffer) */
    n = 1000;
    in = malloc(n * sizeof("token=a;"));
    want = malloc(n * sizeof("token=[redacted];"));
    assert_non_null(in);
    assert_non_null(want);
    in[0] = '\0';
    want[0] = '\0';

    for (i = 0; i < n; i++) {
        strcat(in, "token=a;");
        strcat(want, "token=[redacted];");
    }

    out = redact(in);
    assert_string_equal(out, want);

    free(in);
    free(want);
}


/* the summary of an exec of argv (stolen): the redaction as a reviewer
 * and the audit see it */
static json_t *
summary_of(json_t *argv)
{
    json_t                              *j;
    ngx_str_t                            out;
    ngx_http_veto_sandbox_summary_in_t   in;

    ngx_memzero(&in, sizeof(in));

    in.action.data = (u_char *) "sandbox.exec";
    in.action.len = sizeof("sandbox.exec") - 1;
    in.req = json_pack("{s:o}", "argv", argv);
    in.size = -1;
    assert_non_null(in.req);

    assert_int_equal(ngx_http_veto_sandbox_summary(pool, &in, &out), NGX_OK);
    json_decref(in.req);

    j = json_loadb((char *) out.data, out.len, 0, NULL);
    assert_non_null(j);

    return j;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_redact_table, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_redact_bounds, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_redact_argv, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_redact_linear, pool_setup,
                                        pool_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
