/*
 * The metrics store (ngx_http_veto_sandbox_metrics_store.c): series made
 * once and found again, counters and histogram buckets, label escaping,
 * a full table, the text it renders (checked line by line here, and by
 * promtool in t/module/metrics.t), and two processes counting into one
 * shared table at once: nothing lost, no series twice.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/mman.h>
#include <sys/wait.h>

#include "ngx_core_stub.h"
#include "ngx_http_veto_sandbox_metrics.h"


static ngx_http_veto_sandbox_metrics_sh_t  *sh;


static int
setup(void **state)
{
    (void) ngx_stub_init();

    sh = mmap(NULL, sizeof(*sh), PROT_READ|PROT_WRITE,
              MAP_SHARED|MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        return 1;
    }

    ngx_http_veto_sandbox_metrics_reset(sh);

    return 0;
}


static int
teardown(void **state)
{
    return munmap(sh, sizeof(*sh));
}


/* the rendered text, NUL ended, in a buffer the caller frees */
static char *
render(size_t *len)
{
    u_char  *buf, *end;
    size_t   size;

    size = ngx_http_veto_sandbox_metrics_size(sh);
    buf = malloc(size + 1);
    assert_non_null(buf);

    end = ngx_http_veto_sandbox_metrics_render(sh, buf);
    assert_true((size_t) (end - buf) <= size);
    *end = '\0';

    if (len) {
        *len = end - buf;
    }

    return (char *) buf;
}


/* how many lines of text are exactly line */
static int
lines(const char *text, const char *line)
{
    int          n;
    size_t       len;
    const char  *p;

    n = 0;
    len = strlen(line);

    for (p = text; (p = strstr(p, line)) != NULL; p += len) {
        if ((p == text || p[-1] == '\n') && p[len] == '\n') {
            n++;
        }
    }

    return n;
}


static void
add(ngx_uint_t family, const char *labels, ngx_atomic_uint_t n)
{
    ngx_http_veto_sandbox_metrics_add(sh, family, (u_char *) labels,
                                      strlen(labels), n);
}


static void
test_initial_series(void **state)
{
    char  *t;

    t = render(NULL);

    assert_int_equal(lines(t, "veto_sandbox_approvals_total"
                              "{state=\"created\"} 0"), 1);
    assert_int_equal(lines(t, "veto_sandbox_jwt_cache_lookups_total"
                              "{result=\"miss\"} 0"), 1);
    assert_int_equal(lines(t, "veto_sandbox_exec_duration_seconds_count 0"),
                     1);
    assert_int_equal(lines(t, "# TYPE veto_sandbox_requests_total counter"),
                     1);
    assert_int_equal(lines(t, "# TYPE veto_sandbox_exec_duration_seconds "
                              "histogram"), 1);
    assert_int_equal(lines(t, "veto_sandbox_metrics_series_dropped_total 0"),
                     1);

    free(t);
}


static void
test_counters(void **state)
{
    char  *t;

    add(NGX_HTTP_VSB_M_REQUESTS, "route=\"a\",decision=\"allow\"", 1);
    add(NGX_HTTP_VSB_M_REQUESTS, "route=\"a\",decision=\"allow\"", 2);
    add(NGX_HTTP_VSB_M_REQUESTS, "route=\"a\",decision=\"deny\"", 5);
    /* the same labels in another family are another series */
    add(NGX_HTTP_VSB_M_HELPER_ERRORS, "route=\"a\",decision=\"allow\"", 7);

    t = render(NULL);

    assert_int_equal(lines(t, "veto_sandbox_requests_total"
                              "{route=\"a\",decision=\"allow\"} 3"), 1);
    assert_int_equal(lines(t, "veto_sandbox_requests_total"
                              "{route=\"a\",decision=\"deny\"} 5"), 1);
    assert_int_equal(lines(t, "veto_sandbox_helper_errors_total"
                              "{route=\"a\",decision=\"allow\"} 7"), 1);

    free(t);
}


static void
test_histogram(void **state)
{
    char  *t;

    /* "le" is inclusive: 10 ms is in the 0.01 bucket */
    ngx_http_veto_sandbox_metrics_observe(sh, NGX_HTTP_VSB_M_EXEC_DURATION,
                                          NULL, 0, 10000);
    ngx_http_veto_sandbox_metrics_observe(sh, NGX_HTTP_VSB_M_EXEC_DURATION,
                                          NULL, 0, 10001);
    /* beyond the last bound: only +Inf */
    ngx_http_veto_sandbox_metrics_observe(sh, NGX_HTTP_VSB_M_EXEC_DURATION,
                                          NULL, 0, 400000000);

    t = render(NULL);

    assert_int_equal(lines(t, "veto_sandbox_exec_duration_seconds_bucket"
                              "{le=\"0.01\"} 1"), 1);
    assert_int_equal(lines(t, "veto_sandbox_exec_duration_seconds_bucket"
                              "{le=\"0.025\"} 2"), 1);
    assert_int_equal(lines(t, "veto_sandbox_exec_duration_seconds_bucket"
                              "{le=\"300\"} 2"), 1);
    assert_int_equal(lines(t, "veto_sandbox_exec_duration_seconds_bucket"
                              "{le=\"+Inf\"} 3"), 1);
    assert_int_equal(lines(t, "veto_sandbox_exec_duration_seconds_count 3"),
                     1);
    assert_int_equal(lines(t, "veto_sandbox_exec_duration_seconds_sum "
                              "400.020001"), 1);

    free(t);

    ngx_http_veto_sandbox_metrics_observe(sh,
                                          NGX_HTTP_VSB_M_HELPER_DURATION,
                                          (u_char *) "op=\"x\"", 6, 2500);

    t = render(NULL);

    assert_int_equal(lines(t, "veto_sandbox_helper_request_duration_seconds"
                              "_bucket{op=\"x\",le=\"0.0025\"} 1"), 1);
    assert_int_equal(lines(t, "veto_sandbox_helper_request_duration_seconds"
                              "_bucket{op=\"x\",le=\"0.001\"} 0"), 1);
    assert_int_equal(lines(t, "veto_sandbox_helper_request_duration_seconds"
                              "_sum{op=\"x\"} 0.0025"), 1);

    free(t);

    /* a counter family takes no observation: counted as dropped */
    ngx_http_veto_sandbox_metrics_observe(sh, NGX_HTTP_VSB_M_REQUESTS,
                                          NULL, 0, 1);
    assert_int_equal(sh->dropped, 1);
}


static void
test_labels(void **state)
{
    u_char   buf[64], *p;

    p = ngx_http_veto_sandbox_metrics_label(buf, buf, buf + sizeof(buf), "a",
                                            (u_char *) "x\"y\\z\n", 6);
    assert_non_null(p);
    p = ngx_http_veto_sandbox_metrics_label(p, buf, buf + sizeof(buf), "b",
                                            (u_char *) "", 0);
    assert_non_null(p);
    assert_int_equal(p - buf, sizeof("a=\"x\\\"y\\\\z\\n\",b=\"\"") - 1);
    assert_memory_equal(buf, "a=\"x\\\"y\\\\z\\n\",b=\"\"", p - buf);

    /* what does not fit is refused, never cut */
    p = ngx_http_veto_sandbox_metrics_label(buf, buf, buf + 10, "name",
                                            (u_char *) "value", 5);
    assert_null(p);
    p = ngx_http_veto_sandbox_metrics_label(buf, buf, buf + 10, "name",
                                            (u_char *) "\"\"\"", 3);
    assert_null(p);
    assert_null(ngx_http_veto_sandbox_metrics_label(NULL, buf, buf + 10,
                                                    "a", (u_char *) "b", 1));
}


static void
test_seconds(void **state)
{
    u_char  buf[32], *e;

    static struct {
        uint64_t     us;
        const char  *s;
    } cases[] = {
        { 0, "0" }, { 1, "0.000001" }, { 2500, "0.0025" },
        { 1000000, "1" }, { 30000000, "30" }, { 1500000, "1.5" },
        { 18446744073709551615ULL, "18446744073709.551615" },
    };
    size_t  i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        e = ngx_http_veto_sandbox_metrics_seconds(buf, cases[i].us);
        assert_int_equal(e - buf, strlen(cases[i].s));
        assert_memory_equal(buf, cases[i].s, e - buf);
    }
}


static void
test_full_table(void **state)
{
    char        labels[NGX_HTTP_VSB_M_LABELS + 1], *t;
    size_t      len;
    ngx_uint_t  i, free_slots;

    free_slots = 0;
    for (i = 0; i < NGX_HTTP_VSB_M_SERIES; i++) {
        free_slots += (sh->series[i].key == 0);
    }

    /* longest labels, more series than slots */
    for (i = 0; i < NGX_HTTP_VSB_M_SERIES + 10; i++) {
        memset(labels, 'x', NGX_HTTP_VSB_M_LABELS);
        snprintf(labels, sizeof(labels), "route=\"%05lu", (unsigned long) i);
        labels[strlen(labels)] = 'x';
        labels[NGX_HTTP_VSB_M_LABELS - 1] = '"';
        labels[NGX_HTTP_VSB_M_LABELS] = '\0';
        add(NGX_HTTP_VSB_M_REQUESTS, labels, 1);
        /* the histogram family's worst case too */
        if (i % 4 == 0) {
            ngx_http_veto_sandbox_metrics_observe(sh,
                    NGX_HTTP_VSB_M_HELPER_DURATION, (u_char *) labels,
                    NGX_HTTP_VSB_M_LABELS, 1);
        }
    }

    assert_int_equal(sh->dropped,
                     NGX_HTTP_VSB_M_SERIES + 10 + (NGX_HTTP_VSB_M_SERIES + 10
                                                   + 3) / 4 - free_slots);

    /* an existing series still counts in a full table */
    add(NGX_HTTP_VSB_M_APPROVALS, "state=\"created\"", 1);

    /* labels longer than a slot: dropped */
    memset(labels, 'y', sizeof(labels));
    ngx_http_veto_sandbox_metrics_add(sh, NGX_HTTP_VSB_M_REQUESTS,
                                      (u_char *) labels,
                                      NGX_HTTP_VSB_M_LABELS + 1, 1);

    t = render(&len);
    assert_int_equal(lines(t, "veto_sandbox_approvals_total"
                              "{state=\"created\"} 1"), 1);
    free(t);
}


/* two processes, one table: every count arrives, each series once */
static void
test_two_processes(void **state)
{
    int         status, k;
    char        labels[64], *t, line[128];
    pid_t       pid[2];
    ngx_uint_t  i, j;

    for (k = 0; k < 2; k++) {
        pid[k] = fork();
        assert_true(pid[k] >= 0);

        if (pid[k] == 0) {
            for (j = 0; j < 2000; j++) {
                for (i = 0; i < 50; i++) {
                    snprintf(labels, sizeof(labels), "kind=\"k%lu\"",
                             (unsigned long) i);
                    add(NGX_HTTP_VSB_M_REDIS_ERRORS, labels, 1);
                }
            }
            _exit(0);
        }
    }

    for (k = 0; k < 2; k++) {
        assert_int_equal(waitpid(pid[k], &status, 0), pid[k]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    t = render(NULL);

    for (i = 0; i < 50; i++) {
        snprintf(line, sizeof(line),
                 "veto_sandbox_redis_errors_total{kind=\"k%lu\"} 4000",
                 (unsigned long) i);
        assert_int_equal(lines(t, line), 1);
    }

    assert_int_equal(sh->dropped, 0);

    free(t);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initial_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_histogram, setup, teardown),
        cmocka_unit_test_setup_teardown(test_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seconds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_processes, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
