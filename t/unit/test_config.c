/* Config parsing: defaults, every key, errors that name the line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "vsb_config.h"
#include "vsb_log.h"

static vsb_config_t  cf;
static char          err[512];


static int
parse(const char *text)
{
    err[0] = '\0';
    return vsb_config_parse_buffer(text, strlen(text), &cf, err,
                                   sizeof(err));
}


static void
expect_error(const char *text, const char *fragment)
{
    assert_int_equal(parse(text), -1);
    if (strstr(err, fragment) == NULL) {
        fail_msg("error \"%s\" lacks \"%s\"", err, fragment);
    }
}


static void
test_defaults(void **state)
{
    assert_int_equal(parse(""), 0);
    assert_string_equal(cf.socket_path, "/run/veto-sandbox/helper.sock");
    assert_string_equal(cf.state_dir, "/var/lib/veto-sandbox");
    assert_string_equal(cf.cgroup_name, "veto-sandbox");
    assert_string_equal(cf.cgroup_mode, "auto");
    assert_int_equal(cf.socket_mode, 0660);
    assert_int_equal(cf.uid_base, 1000000000);
    assert_int_equal(cf.def.memory_mb, 512);
    assert_int_equal(cf.max.memory_mb, 4096);
    assert_int_equal(cf.def.pids, 256);
    assert_int_equal(cf.max.pids, 1024);
    assert_int_equal(cf.def.cpu_percent, 100);
    assert_int_equal(cf.max.cpu_percent, 200);
    assert_int_equal(cf.def.disk_mb, 256);
    assert_int_equal(cf.max.disk_mb, 2048);
    assert_int_equal(cf.def.timeout_s, 60);
    assert_int_equal(cf.max.timeout_s, 3600);
    assert_int_equal(cf.def.output_bytes, 1024 * 1024);
    assert_int_equal(cf.max.output_bytes, 16 * 1024 * 1024);
    assert_int_equal(cf.default_ttl_s, 3600);
    assert_int_equal(cf.max_ttl_s, 86400);
    assert_int_equal(cf.max_sandboxes, 64);
    assert_int_equal(cf.max_file_bytes, 16 * 1024 * 1024);
    assert_int_equal(cf.max_execs_per_sandbox, 8);
    assert_int_equal(cf.max_archive_bytes, 256 * 1024 * 1024);
    assert_int_equal(cf.max_background_execs, 4);
    assert_int_equal(cf.n_profiles, 1);
    assert_string_equal(cf.profiles[0].name, "default");
    assert_string_equal(cf.profiles[0].root, "/");
}


static void
test_full(void **state)
{
    assert_int_equal(parse(
        "# comment\n"
        "\n"
        "socket = /tmp/x.sock   # trailing comment\n"
        "socket_group = 0\n"
        "socket_mode = 0600\n"
        "allowed_uids = 0 1  33\n"
        "state_dir = /tmp/state/\n"
        "cgroup_name = veto-test\n"
        "cgroup_mode = v1\n"
        "uid_base = 200000\n"
        "max_memory_mb = 8192\n"
        "default_memory_mb = 1024\n"
        "max_sandboxes = 10\n"
        "profile = alt /\n"
        "profile = default /\n"
        "log_level = debug\n"), 0);
    assert_string_equal(cf.socket_path, "/tmp/x.sock");
    assert_int_equal(cf.socket_gid, 0);
    assert_int_equal(cf.socket_mode, 0600);
    assert_int_equal(cf.n_allowed_uids, 3);
    assert_int_equal(cf.allowed_uids[2], 33);
    assert_string_equal(cf.state_dir, "/tmp/state");
    assert_string_equal(cf.cgroup_mode, "v1");
    assert_int_equal(cf.uid_base, 200000);
    assert_int_equal(cf.max.memory_mb, 8192);
    assert_int_equal(cf.def.memory_mb, 1024);
    assert_int_equal(cf.n_profiles, 2);
    assert_non_null(vsb_config_profile(&cf, "alt"));
    assert_null(vsb_config_profile(&cf, "nope"));
    assert_int_equal(cf.log_level, VSB_LOG_DEBUG);
}


static void
test_archive_and_background(void **state)
{
    /* archives may be larger than any buffered frame */
    assert_int_equal(parse("max_archive_bytes = 4294967295\n"), 0);
    assert_int_equal(cf.max_archive_bytes, 4294967295ULL);
    expect_error("max_archive_bytes = 4294967296\n", "buffer:1:");

    /* the default follows a lower max_execs_per_sandbox ... */
    assert_int_equal(parse("max_execs_per_sandbox = 2\n"), 0);
    assert_int_equal(cf.max_background_execs, 2);

    /* ... a value given is checked against it */
    expect_error("max_execs_per_sandbox = 2\nmax_background_execs = 3\n",
                 "buffer:2: \"max_background_execs\" 3 exceeds "
                 "\"max_execs_per_sandbox\" 2");
    expect_error("max_background_execs = 65\n", "compiled ceiling");
}


static void
test_errors(void **state)
{
    expect_error("\n\nbogus = 1\n", "buffer:3: unknown key \"bogus\"");
    expect_error("socket\n", "buffer:1: expected");
    expect_error("socket =\n", "buffer:1:");
    expect_error("socket = relative\n", "buffer:1:");
    expect_error("max_pids = 12x\n", "buffer:1:");
    expect_error("max_pids = -1\n", "buffer:1:");
    expect_error("max_pids = 0\n", "buffer:1:");
    expect_error("max_pids = 99999999999999999999999\n", "buffer:1:");
    expect_error("\nmax_pids = 40000\n", "buffer:2: \"max_pids\" 40000 "
                 "exceeds the compiled ceiling");
    expect_error("max_memory_mb = 1000000\n", "buffer:1:");
    expect_error("max_file_bytes = 67108865\n", "buffer:1:");
    expect_error("max_sandboxes = 1025\n", "buffer:1:");
    expect_error("# x\ndefault_pids = 2000\n", "buffer:2: \"default_pids\"");
    expect_error("max_pids = 10\n", "buffer:1: \"default_pids\" 256 exceeds");
    expect_error("default_ttl_s = 100000\n", "buffer:1:");
    expect_error("socket_mode = 0666\n", "buffer:1:");
    expect_error("socket_mode = 999\n", "buffer:1:");
    expect_error("socket_mode = 0200\n", "buffer:1:");
    expect_error("cgroup_mode = v3\n", "buffer:1:");
    expect_error("cgroup_name = ../x\n", "buffer:1:");
    expect_error("cgroup_name = a/b\n", "buffer:1:");
    expect_error("uid_base = 1000\n", "buffer:1:");
    expect_error("uid_base = 4294000000\n", "buffer:1: \"uid_base\"");
    expect_error("allowed_uids = 0 no-such-user-xyz\n", "buffer:1:");
    expect_error("allowed_uids = 4294967295\n", "buffer:1:");
    expect_error("socket_group = no-such-group-xyz\n", "buffer:1:");
    expect_error("state_dir = /\n", "buffer:1:");
    expect_error("state_dir = x\n", "buffer:1:");
    /* found by fuzz_config: a ".." or "." component in any position */
    expect_error("state_dir = /..\n", "buffer:1:");
    expect_error("state_dir = /var/..\n", "buffer:1:");
    expect_error("state_dir = /var/../etc\n", "buffer:1:");
    expect_error("state_dir = /var/./lib\n", "buffer:1:");
    expect_error("state_dir = //..//\n", "buffer:1:");
    expect_error("image_store = /srv/..\n", "buffer:1:");
    expect_error("profile = x\n", "buffer:1:");
    expect_error("profile = x /nonexistent-dir\n", "buffer:1:");
    expect_error("profile = x relative\n", "buffer:1:");
    expect_error("profile = b@d /\n", "buffer:1:");
    expect_error("profile = x /\nprofile = x /\n", "buffer:2:");
    expect_error("log_level = loud\n", "buffer:1:");
    expect_error("socket = /a\nsocket = /b\n", "buffer:2:");
    expect_error("max_output_bytes = 40000000\n", "buffer:1:");
    expect_error("a\x01 = 1\n", "buffer:1:");
}


#define VSB_T_DIGEST \
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void
test_image_profiles(void **state)
{
    const vsb_profile_t  *p;

    assert_int_equal(parse(
        "image_profile = py " VSB_T_DIGEST "\n"
        "profile = host /\n"), 0);
    assert_int_equal(cf.n_profiles, 3);
    p = vsb_config_profile(&cf, "py");
    assert_non_null(p);
    assert_true(vsb_profile_is_image(p));
    assert_string_equal(p->digest, VSB_T_DIGEST);
    assert_string_equal(p->root, "");
    assert_false(vsb_profile_is_image(vsb_config_profile(&cf, "host")));
    assert_false(vsb_profile_is_image(&cf.profiles[0]));
    assert_string_equal(cf.image_store, "");

    assert_int_equal(parse(
        "image_profile = py " VSB_T_DIGEST "\n"
        "image_store = /srv/images\n"), 0);
    assert_string_equal(cf.image_store, "/srv/images");

    /* an image may be the default */
    assert_int_equal(parse("image_profile = default " VSB_T_DIGEST "\n"), 0);
    assert_int_equal(cf.n_profiles, 1);
    assert_true(vsb_profile_is_image(&cf.profiles[0]));
    assert_string_equal(cf.profiles[0].root, "");

    /* and a directory the default again after it */
    assert_int_equal(parse(
        "image_profile = default " VSB_T_DIGEST "\n"
        "profile = default /\n"), 0);
    assert_false(vsb_profile_is_image(&cf.profiles[0]));
    assert_string_equal(cf.profiles[0].digest, "");

    expect_error("image_profile = py\n", "buffer:1: \"image_profile\" takes");
    expect_error("image_profile = py debian:12\n", "never by a tag");
    expect_error("image_profile = py latest\n", "never by a tag");
    expect_error("image_profile = py sha256:abc\n", "64 hex");
    expect_error("image_profile = py sha512:" VSB_T_DIGEST "\n",
                 "only sha256");
    expect_error("image_profile = py SHA256:" VSB_T_DIGEST "\n", "buffer:1:");
    expect_error("image_profile = b@d " VSB_T_DIGEST "\n", "buffer:1: "
                 "profile name");
    expect_error("image_profile = py " VSB_T_DIGEST " extra\n", "buffer:1:");
    expect_error("profile = py /\nimage_profile = py " VSB_T_DIGEST "\n",
                 "buffer:2: profile \"py\" is duplicate");
    expect_error("image_profile = py " VSB_T_DIGEST "\nprofile = py /\n",
                 "buffer:2: profile \"py\" is duplicate");
    expect_error("image_store = relative\n", "buffer:1:");
    expect_error("image_store = /\n", "buffer:1:");
    expect_error("image_store = /a\nimage_store = /b\n", "buffer:2:");
}


static void
test_file(void **state)
{
    char   path[] = "/tmp/vsb-test-config-XXXXXX";
    FILE  *f;
    int    fd;

    assert_int_equal(vsb_config_load("/nonexistent/x.conf", &cf, err,
                                     sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/x.conf"));

    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("max_pids = 512\nnope = 1\n", f);
    fclose(f);

    assert_int_equal(vsb_config_load(path, &cf, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: unknown key"));
    assert_true(strncmp(err, path, strlen(path)) == 0);
    unlink(path);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_archive_and_background),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_image_profiles),
        cmocka_unit_test(test_file),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
