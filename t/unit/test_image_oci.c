/*
 * Image documents: digests (tags refused), OCI/Docker index, manifest and
 * config parsing with their refusals, and what the store reads from an
 * image about itself (os-release, dpkg, apk) and from the unpacker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vsb_image.h"
#include "vsb_image_meta.h"
#include "vsb_image_oci.h"

#define H64  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define D1   "sha256:" H64
#define D2   "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

#define MANIFEST(layer_type, extra) \
    "{\"schemaVersion\":2,\"mediaType\":" \
    "\"application/vnd.oci.image.manifest.v1+json\"," \
    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\"," \
    "\"digest\":\"" D1 "\",\"size\":100},\"layers\":[{\"mediaType\":\"" \
    layer_type "\",\"digest\":\"" D2 "\",\"size\":10" extra "}]}"

static char  err[512];


static int
parse_manifest(const char *j, vsb_oci_manifest_t *m)
{
    return vsb_oci_manifest_parse(j, strlen(j), 128, m, err, sizeof(err));
}


static void
test_digest(void **state)
{
    char  hex[65];

    (void) state;
    assert_int_equal(vsb_image_digest_parse(D1, hex, err, sizeof(err)), 0);
    assert_string_equal(hex, H64);

    assert_int_equal(vsb_image_digest_parse("latest", hex, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "never by a tag"));
    assert_int_equal(vsb_image_digest_parse("debian:12", hex, err,
                                            sizeof(err)), -1);
    assert_int_equal(vsb_image_digest_parse("sha256:" "ABCDEF", hex, err,
                                            sizeof(err)), -1);
    assert_int_equal(vsb_image_digest_parse(D1 "0", hex, err, sizeof(err)),
                     -1);
    assert_int_equal(vsb_image_digest_parse("sha512:00", hex, err,
                                            sizeof(err)), -1);
    assert_non_null(strstr(err, "only sha256"));
    assert_int_equal(vsb_image_digest_parse("sha256:0123456789abcdef0123456789"
        "abcdef0123456789abcdef0123456789abcdeF", hex, err, sizeof(err)), -1);
}


static void
test_kind(void **state)
{
    vsb_oci_kind_t  k;
    const char     *idx = "{\"schemaVersion\":2,\"manifests\":[]}";
    const char     *man = MANIFEST("application/vnd.oci.image.layer.v1.tar",
                                   "");

    (void) state;
    assert_int_equal(vsb_oci_kind(idx, strlen(idx), &k, err, sizeof(err)),
                     0);
    assert_int_equal(k, VSB_OCI_INDEX);
    assert_int_equal(vsb_oci_kind(man, strlen(man), &k, err, sizeof(err)),
                     0);
    assert_int_equal(k, VSB_OCI_MANIFEST);
    assert_int_equal(vsb_oci_kind("{\"mediaType\":\"text/html\"}", 25, &k,
                                  err, sizeof(err)), -1);
    assert_int_equal(vsb_oci_kind("[1]", 3, &k, err, sizeof(err)), -1);
    assert_int_equal(vsb_oci_kind("{\"a\":1,\"a\":2}", 13, &k, err,
                                  sizeof(err)), -1);
}


static void
test_manifest(void **state)
{
    vsb_oci_manifest_t  m;

    (void) state;
    assert_int_equal(parse_manifest(MANIFEST(
        "application/vnd.oci.image.layer.v1.tar+gzip", ""), &m), 0);
    assert_int_equal(m.n_layers, 1);
    assert_string_equal(m.config_digest, D1);
    assert_string_equal(m.layers[0].digest, D2);
    assert_int_equal(m.layers[0].compression, VSB_OCI_GZIP);

    assert_int_equal(parse_manifest(MANIFEST(
        "application/vnd.docker.image.rootfs.diff.tar.gzip", ""), &m), 0);

    assert_int_equal(parse_manifest(MANIFEST(
        "application/vnd.oci.image.layer.v1.tar+zstd", ""), &m), -1);
    assert_non_null(strstr(err, "zstd"));
    assert_int_equal(parse_manifest(MANIFEST(
        "application/vnd.oci.image.layer.nondistributable.v1.tar", ""), &m),
        -1);
    assert_int_equal(parse_manifest(MANIFEST(
        "application/vnd.oci.image.layer.v1.tar",
        ",\"urls\":[\"http://x\"]"), &m), -1);
    assert_non_null(strstr(err, "urls"));
    assert_int_equal(parse_manifest(MANIFEST("text/plain", ""), &m), -1);

    assert_int_equal(parse_manifest("{\"schemaVersion\":1}", &m), -1);
    assert_int_equal(parse_manifest("{\"schemaVersion\":2,\"config\":{"
        "\"digest\":\"" D1 "\",\"size\":1},\"layers\":[]}", &m), -1);
    assert_non_null(strstr(err, "no layers"));
    assert_int_equal(parse_manifest("{\"schemaVersion\":2,\"config\":{"
        "\"digest\":\"latest\",\"size\":1},\"layers\":[]}", &m), -1);
    assert_int_equal(parse_manifest("{\"schemaVersion\":2,\"config\":{"
        "\"digest\":\"" D1 "\",\"size\":-1},\"layers\":[]}", &m), -1);
    assert_int_equal(vsb_oci_manifest_parse(MANIFEST(
        "application/vnd.oci.image.layer.v1.tar", ""), strlen(MANIFEST(
        "application/vnd.oci.image.layer.v1.tar", "")), 0, &m, err,
        sizeof(err)), -1);
    assert_non_null(strstr(err, "bound"));
}


static void
test_index(void **state)
{
    char        d[VSB_IMAGE_DIGEST_LEN + 1];
    uint64_t    sz;
    const char *one = "{\"schemaVersion\":2,\"manifests\":["
        "{\"digest\":\"" D1 "\",\"size\":5,\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"arm64\"}},"
        "{\"digest\":\"" D2 "\",\"size\":7,\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"amd64\"}}]}";
    const char *two = "{\"schemaVersion\":2,\"manifests\":["
        "{\"digest\":\"" D1 "\",\"size\":5,\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"amd64\"}},"
        "{\"digest\":\"" D2 "\",\"size\":7,\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"amd64\"}}]}";

    (void) state;
    assert_int_equal(vsb_oci_index_select(one, strlen(one), "amd64", d, &sz,
                                          err, sizeof(err)), 0);
    assert_string_equal(d, D2);
    assert_int_equal(sz, 7);
    assert_int_equal(vsb_oci_index_select(one, strlen(one), "s390x", d, &sz,
                                          err, sizeof(err)), -1);
    assert_non_null(strstr(err, "linux/arm64"));
    assert_int_equal(vsb_oci_index_select(two, strlen(two), "amd64", d, &sz,
                                          err, sizeof(err)), -1);
    assert_non_null(strstr(err, "2 manifests"));
}


static void
test_config(void **state)
{
    vsb_oci_manifest_t  m;
    json_t             *sum;
    const char         *good = "{\"os\":\"linux\",\"architecture\":\"amd64\","
        "\"config\":{\"Env\":[\"PATH=/usr/bin\"],\"Cmd\":[\"/bin/sh\"],"
        "\"WorkingDir\":\"/w\",\"User\":\"1000\"},"
        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\"]}}";
    const char         *arm = "{\"os\":\"linux\",\"architecture\":\"arm64\","
        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\"]}}";
    const char         *two = "{\"os\":\"linux\",\"architecture\":\"amd64\","
        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\",\"" D2
        "\"]}}";
    const char         *env = "{\"os\":\"linux\",\"architecture\":\"amd64\","
        "\"config\":{\"Env\":[1]},"
        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\"]}}";

    (void) state;
    memset(&m, 0, sizeof(m));
    m.n_layers = 1;

    assert_int_equal(vsb_oci_config_parse(good, strlen(good), "amd64", &m,
                                          &sum, err, sizeof(err)), 0);
    assert_string_equal(m.layers[0].diff_id, D1);
    assert_string_equal(json_string_value(json_object_get(sum,
                        "working_dir")), "/w");
    assert_int_equal(json_array_size(json_object_get(sum, "env")), 1);
    json_decref(sum);

    assert_int_equal(vsb_oci_config_parse(arm, strlen(arm), "amd64", &m,
                                          &sum, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "linux/arm64"));
    assert_int_equal(vsb_oci_config_parse(two, strlen(two), "amd64", &m,
                                          &sum, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "diff_ids"));
    assert_int_equal(vsb_oci_config_parse(env, strlen(env), "amd64", &m,
                                          &sum, err, sizeof(err)), -1);
}


static void
test_meta(void **state)
{
    json_t      *o = json_object(), *t = json_object(), *r;
    const char  *osr = "NAME=\"Debian\"\nID=debian\nVERSION_ID=\"12\"\n"
                       "PRETTY_NAME='Debian \x01 12'\n";
    const char  *dpkg = "Package: python3\nStatus: install ok installed\n"
                        "Version: 3.11.2-1+b1\n\n"
                        "Package: nodejs\nStatus: deinstall ok config-files\n"
                        "Version: 18\n\n"
                        "Package: libfoo\nStatus: install ok installed\n"
                        "Version: 1\n\nPackage: git\nVersion: 1:2.39\n"
                        "Status: install ok installed";
    const char  *apk = "P:musl\nV:1.2.4-r2\n\nP:busybox\nV:1.36\n";

    (void) state;
    vsb_meta_os_release(osr, strlen(osr), o);
    assert_string_equal(json_string_value(json_object_get(o, "id")),
                        "debian");
    assert_string_equal(json_string_value(json_object_get(o, "version_id")),
                        "12");
    assert_string_equal(json_string_value(json_object_get(o, "pretty_name")),
                        "Debian ? 12");

    vsb_meta_dpkg_status(dpkg, strlen(dpkg), t);
    assert_string_equal(json_string_value(json_object_get(t, "python3")),
                        "3.11.2-1+b1");
    assert_null(json_object_get(t, "nodejs"));     /* not installed */
    assert_null(json_object_get(t, "libfoo"));     /* not notable */
    assert_string_equal(json_string_value(json_object_get(t, "git")),
                        "1:2.39");
    vsb_meta_apk_installed(apk, strlen(apk), t);
    assert_string_equal(json_string_value(json_object_get(t, "musl")),
                        "1.2.4-r2");

    r = json_pack("{ssss}", "digest", D1, "manifest_digest", D1);
    assert_int_equal(vsb_meta_check(r, err, sizeof(err)), 0);
    json_object_set_new(r, "evil", json_true());
    assert_int_equal(vsb_meta_check(r, err, sizeof(err)), -1);
    json_decref(r);
    r = json_pack("{sssss{s{s{s{s{si}}}}}}", "digest", D1,
                  "manifest_digest", D1, "tools", "a", "b", "c", "d", "e", 1);
    assert_int_equal(vsb_meta_check(r, err, sizeof(err)), -1);
    json_decref(r);
    r = json_pack("{sssssi}", "digest", D1, "manifest_digest", D1,
                  "unpacked_bytes", -5);
    assert_int_equal(vsb_meta_check(r, err, sizeof(err)), -1);
    json_decref(r);

    json_decref(o);
    json_decref(t);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_kind),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_meta),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
