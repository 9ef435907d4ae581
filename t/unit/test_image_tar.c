/*
 * The layer tar reader: numbers, checksums, canonical paths, and whole
 * archives read from memory (ustar, GNU long names, PAX overrides, the
 * refusals: sparse files, unknown types, bad checksums, truncation).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "vsb_image_tar.h"
#include "tar_mem.h"


static unsigned char  arc[1 << 16];
static size_t         arclen;


/* appends a ustar header (+ data, padded) to arc */
static void
add(const char *name, char type, const void *data, size_t len,
    uint64_t size)
{
    unsigned char  *h = arc + arclen;
    unsigned        sum = 0, i;

    memset(h, 0, 512);
    snprintf((char *) h, 100, "%s", name);
    snprintf((char *) h + 100, 8, "%07o", 0644);
    snprintf((char *) h + 108, 8, "%07o", 0);
    snprintf((char *) h + 116, 8, "%07o", 0);
    {
        char  num[32];

        snprintf(num, sizeof(num), "%011llo",
                 (unsigned long long) (size & 077777777777ULL));
        memcpy(h + 124, num, 12);
    }
    snprintf((char *) h + 136, 12, "%011o", 1700000000);
    memset(h + 148, ' ', 8);
    h[156] = (unsigned char) type;
    memcpy(h + 257, "ustar\0" "00", 8);
    for (i = 0; i < 512; i++) {
        sum += h[i];
    }
    snprintf((char *) h + 148, 8, "%06o", sum);
    arclen += 512;

    if (len) {
        memcpy(arc + arclen, data, len);
        arclen += (len + 511) & ~(size_t) 511;
    }
}


static void
end(void)
{
    memset(arc + arclen, 0, 1024);
    arclen += 1024;
}


static void
reset(void)
{
    memset(arc, 0, sizeof(arc));
    arclen = 0;
}


static vsb_tar_t        t;
static vsb_tar_entry_t  e;
static tar_mem_t        m;


static vsb_tar_rc_t
first(void)
{
    m.p = arc;
    m.len = arclen;
    m.off = 0;
    vsb_tar_init(&t, tar_mem_read, &m);
    return vsb_tar_next(&t, &e);
}


/* one PAX record "LEN key=value\n", LEN counting itself */
static const char *
rec(const char *kv)
{
    static char  out[8][256];
    static int   k;
    size_t       n = strlen(kv) + 2, len = n + 1;

    while ((size_t) snprintf(NULL, 0, "%zu", len) + n != len) {
        len++;
    }
    k = (k + 1) % 8;
    snprintf(out[k], sizeof(out[k]), "%zu %s\n", len, kv);
    return out[k];
}


static void
pax(const char *records)
{
    add("PaxHeaders/x", 'x', records, strlen(records), strlen(records));
}


static void
test_numbers(void **state)
{
    uint64_t             v;
    const unsigned char  b256[12] = { 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x80, 0,
                                      0, 0 };
    const unsigned char  neg[12] = { 0xff, 0xff };

    (void) state;
    assert_int_equal(vsb_tar_number((const unsigned char *) "0000644\0", 8,
                                    &v), 0);
    assert_int_equal(v, 0644);
    assert_int_equal(vsb_tar_number((const unsigned char *) "   755 \0", 8,
                                    &v), 0);
    assert_int_equal(v, 0755);
    assert_int_equal(vsb_tar_number((const unsigned char *) "\0\0\0\0\0\0\0",
                                    8, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(vsb_tar_number(b256, 12, &v), 0);
    assert_int_equal(v, 10ULL << 30);
    assert_int_equal(vsb_tar_number(neg, 12, &v), -1);
    assert_int_equal(vsb_tar_number((const unsigned char *) "0008\0", 5, &v),
                     -1);
    assert_int_equal(vsb_tar_number((const unsigned char *) "12x4\0", 5, &v),
                     -1);
}


static void
test_clean_path(void **state)
{
    char  out[VSB_IMAGE_PATH_MAX + 1], err[256], buf[8192];
    int   i;

    (void) state;
#define GOOD(in, want) \
    assert_int_equal(vsb_tar_clean_path(in, out, err, sizeof(err)), 0); \
    assert_string_equal(out, want)
#define BAD(in) \
    assert_int_equal(vsb_tar_clean_path(in, out, err, sizeof(err)), -1)

    GOOD("./usr/bin/env", "usr/bin/env");
    GOOD("/etc//passwd/", "etc/passwd");
    GOOD("./", "");
    GOOD("a/./b/.", "a/b");
    GOOD("..a/b..", "..a/b..");
    GOOD(".wh..wh..opq", ".wh..wh..opq");
    BAD("..");
    BAD("../etc");
    BAD("a/../../b");
    BAD("a/..");

    memset(buf, 'a', 256);
    buf[256] = '\0';
    BAD(buf);

    for (i = 0; i < 129; i++) {
        buf[2 * i] = 'd';
        buf[2 * i + 1] = '/';
    }
    buf[258] = '\0';
    BAD(buf);
    buf[256] = '\0';
    GOOD(buf, (buf[255] = '\0', buf));
#undef GOOD
#undef BAD
}


static void
test_regular_and_end(void **state)
{
    char  data[16];

    (void) state;
    reset();
    add("./hello.txt", '0', "hello", 5, 5);
    add("dir/", '5', NULL, 0, 0);
    add("link", '2', NULL, 0, 0);
    memcpy(arc + arclen - 512 + 157, "hello.txt", 9);
    /* the checksum of a patched header is recomputed by hand below */
    {
        unsigned char  *h = arc + arclen - 512;
        unsigned        sum = 0, i;

        memset(h + 148, ' ', 8);
        for (i = 0; i < 512; i++) {
            sum += h[i];
        }
        snprintf((char *) h + 148, 8, "%06o", sum);
    }
    end();

    assert_int_equal(first(), VSB_TAR_OK);
    assert_int_equal(e.type, VSB_TAR_REG);
    assert_string_equal(e.path, "./hello.txt");
    assert_int_equal(e.size, 5);
    assert_int_equal(e.mode, 0644);
    assert_int_equal(vsb_tar_data(&t, data, sizeof(data)), 5);
    assert_memory_equal(data, "hello", 5);
    assert_int_equal(vsb_tar_data(&t, data, sizeof(data)), 0);

    assert_int_equal(vsb_tar_next(&t, &e), VSB_TAR_OK);
    assert_int_equal(e.type, VSB_TAR_DIR);
    assert_int_equal(vsb_tar_next(&t, &e), VSB_TAR_OK);
    assert_int_equal(e.type, VSB_TAR_SYMLINK);
    assert_string_equal(e.link, "hello.txt");
    assert_int_equal(vsb_tar_next(&t, &e), VSB_TAR_END);
}


static void
test_unpadded_end(void **state)
{
    (void) state;

    /* umoci insert: data, then nothing: no padding, no end blocks */
    reset();
    add("marker", '0', "abc", 3, 3);
    arclen -= 512 - 3;
    assert_int_equal(first(), VSB_TAR_OK);
    assert_int_equal(vsb_tar_next(&t, &e), VSB_TAR_END);

    /* but data cut short is an error */
    reset();
    add("marker", '0', "abcdef", 6, 6);
    arclen -= 512 - 3;
    assert_int_equal(first(), VSB_TAR_OK);
    assert_int_equal(vsb_tar_next(&t, &e), VSB_TAR_ERROR);
}


static void
test_long_names(void **state)
{
    char  name[300];

    (void) state;
    memset(name, 'n', 299);
    name[299] = '\0';

    reset();
    add("././@LongLink", 'L', name, 300, 300);
    add("short", '0', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_OK);
    assert_string_equal(e.path, name);

    reset();
    {
        char  r[512];

        snprintf(r, sizeof(r), "%s%s%s", rec("path=pax/overrides/name"),
                 rec("size=0000000003"), rec("SCHILY.xattr.user.a=bcd"));
        pax(r);
    }
    add("ignored", '0', "xyz", 3, 999);
    end();
    assert_int_equal(first(), VSB_TAR_OK);
    assert_string_equal(e.path, "pax/overrides/name");
    assert_int_equal(e.size, 3);
    assert_int_equal(e.xattrs, 1);
}


static void
test_refusals(void **state)
{
    int  i;

    (void) state;

    reset();
    add("sparse", 'S', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "sparse"));

    reset();
    pax(rec("GNU.sparse.major=1"));
    add("f", '0', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "sparse"));

    reset();
    add("vol", 'V', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "'V'"));

    reset();
    add("f", '0', NULL, 0, 0);
    arc[0] ^= 1;
    end();
    assert_int_equal(first(), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "checksum"));

    reset();
    add("g", 'g', rec("path=evil"), strlen(rec("path=evil")),
        strlen(rec("path=evil")));
    add("f", '0', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "global"));

    reset();
    pax("9 bad=\n");
    add("f", '0', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_ERROR);

    reset();
    for (i = 0; i < 20; i++) {
        pax(rec("comment=abc"));
    }
    add("f", '0', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "extended headers"));

    reset();
    add("f", '0', NULL, 0, 0);
    arclen += 512;              /* a zero block */
    add("g", '0', NULL, 0, 0);
    end();
    assert_int_equal(first(), VSB_TAR_OK);
    assert_int_equal(vsb_tar_next(&t, &e), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "zero block"));

    reset();
    memcpy(arc, "not a tar at all", 16);
    arclen = 512;
    assert_int_equal(first(), VSB_TAR_ERROR);

    reset();
    pax(rec("path=pax/overrides/name"));
    assert_int_equal(first(), VSB_TAR_ERROR);
    assert_non_null(strstr(t.err, "extended header"));
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_clean_path),
        cmocka_unit_test(test_regular_and_end),
        cmocka_unit_test(test_unpadded_end),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
