/* Workspace path validation: good paths and every bad class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vsb_paths.h"
#include "vsb_protocol.h"

static int
check(const char *p, size_t len)
{
    char  err[128];

    err[0] = '\0';
    if (vsb_path_check(p, len, err, sizeof(err)) != 0) {
        assert_true(err[0] != '\0');
        return -1;
    }
    return 0;
}

#define OK(s)   assert_int_equal(check(s, strlen(s)), 0)
#define BAD(s)  assert_int_equal(check(s, strlen(s)), -1)


static void
test_good(void **state)
{
    char  buf[VSB_MAX_PATH + 2];
    int   i;

    OK("a");
    OK("file.txt");
    OK("dir/sub/file");
    OK(".hidden");
    OK("..dots");
    OK("a..b/...");
    OK("with space/ü-utf8");

    memset(buf, 'a', 255);
    buf[255] = '\0';
    OK(buf);

    /* Exactly VSB_MAX_PATH bytes. */
    for (i = 0; i < VSB_MAX_PATH; i++) {
        buf[i] = (i % 200 == 199) ? '/' : 'b';
    }
    buf[VSB_MAX_PATH] = '\0';
    assert_int_equal(check(buf, VSB_MAX_PATH), 0);
}


static void
test_bad(void **state)
{
    char  buf[VSB_MAX_PATH + 2];

    BAD("");
    BAD("/etc/passwd");
    BAD("/");
    BAD("..");
    BAD("../x");
    BAD("a/../b");
    BAD("a/..");
    BAD(".");
    BAD("./a");
    BAD("a/./b");
    BAD("a/.");
    BAD("a//b");
    BAD("a/");
    BAD("a\nb");
    BAD("a\tb");
    BAD("a\x7f");
    BAD("\x1b[31m");

    /* NUL inside the given length. */
    assert_int_equal(check("a\0b", 3), -1);

    /* Component of 256. */
    memset(buf, 'a', 256);
    buf[256] = '\0';
    BAD(buf);

    /* VSB_MAX_PATH + 1 bytes. */
    memset(buf, 'a', sizeof(buf));
    for (int i = 100; i < VSB_MAX_PATH + 1; i += 101) {
        buf[i] = '/';
    }
    buf[VSB_MAX_PATH + 1] = '\0';
    assert_int_equal(check(buf, VSB_MAX_PATH + 1), -1);
}


/* The relative form vsb_path_workspace() gives, or "!" on refusal. */
static const char *
ws(const char *p, int allow_root)
{
    static char  out[VSB_MAX_PATH + 2];
    const char  *rel;
    size_t       len;
    char         err[128];

    err[0] = '\0';
    if (vsb_path_workspace(p, strlen(p), allow_root, &rel, &len, err,
                           sizeof(err)) != 0)
    {
        assert_true(err[0] != '\0');
        return "!";
    }

    assert_true(len <= VSB_MAX_PATH);
    memcpy(out, rel, len);
    out[len] = '\0';
    return out;
}


static void
test_workspace_forms(void **state)
{
    /* both forms name the same file */
    assert_string_equal(ws("src/a.c", 0), "src/a.c");
    assert_string_equal(ws("/workspace/src/a.c", 0), "src/a.c");
    assert_string_equal(ws("/workspace/x", 1), "x");

    /* the workspace itself: only where a directory is meant */
    assert_string_equal(ws("/workspace", 1), "");
    assert_string_equal(ws("/workspace/", 1), "");
    assert_string_equal(ws(".", 1), "");
    assert_string_equal(ws("/workspace", 0), "!");
    assert_string_equal(ws("/workspace/", 0), "!");
    assert_string_equal(ws(".", 0), "!");

    /* everything else absolute, and the relative rules after the prefix */
    assert_string_equal(ws("/etc/passwd", 1), "!");
    assert_string_equal(ws("/workspacex/a", 1), "!");
    assert_string_equal(ws("/workspace2", 1), "!");
    assert_string_equal(ws("/", 1), "!");
    assert_string_equal(ws("/workspace//a", 1), "!");
    assert_string_equal(ws("/workspace/../etc", 1), "!");
    assert_string_equal(ws("/workspace/a/../../etc", 1), "!");
    assert_string_equal(ws("/workspace/./a", 1), "!");
    assert_string_equal(ws("/workspace/a/", 1), "!");
    assert_string_equal(ws("", 1), "!");
    assert_string_equal(ws("../x", 1), "!");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_workspace_forms),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
