/*
 * libFuzzer target: what the image store parses besides tar
 * (sandbox-helper/image_oci.c, image_meta.c, image_digest.c).  The first
 * byte picks the parser, the rest is its input: OCI/Docker index,
 * manifest, config; os-release, dpkg status, apk database; the
 * unpacker's report; a digest.  Checked: a refusal says why; an
 * accepted manifest's digests are well formed and its layer count within
 * the bound; what a parser adds to an object is a bounded string.
 *
 * FUZZ-COVERS: sandbox-helper/image_oci.c sandbox-helper/image_meta.c
 * sandbox-helper/image_digest.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vsb_image.h"
#include "vsb_image_meta.h"
#include "vsb_image_oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void
fz_digest_ok(const char *d)
{
    char  err[160];

    if (vsb_image_digest_parse(d, NULL, err, sizeof(err)) != 0) {
        abort();
    }
}


static void
fz_strings(json_t *o)
{
    const char  *k;
    json_t      *v;

    json_object_foreach(o, k, v) {
        if (!json_is_string(v) || json_string_length(v) > 256) {
            abort();
        }
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vsb_oci_manifest_t  m;
    const char                *p;
    char                       err[512], d[VSB_IMAGE_DIGEST_LEN + 1];
    char                       s[128];
    vsb_oci_kind_t             kind;
    json_t                    *o, *j;
    json_error_t               je;
    uint64_t                   sz;
    size_t                     i, len;
    int                        rc;

    if (size < 1) {
        return 0;
    }

    p = (const char *) data + 1;
    len = size - 1;
    err[0] = '\0';

    switch (data[0] % 8) {

    case 0:
        rc = vsb_oci_kind(p, len, &kind, err, sizeof(err));
        if (rc == 0 && kind != VSB_OCI_INDEX && kind != VSB_OCI_MANIFEST) {
            abort();
        }
        break;

    case 1:
        rc = vsb_oci_index_select(p, len, "amd64", d, &sz, err, sizeof(err));
        if (rc == 0) {
            fz_digest_ok(d);
        }
        break;

    case 2:
        rc = vsb_oci_manifest_parse(p, len, 16, &m, err, sizeof(err));
        if (rc == 0) {
            if (m.n_layers == 0 || m.n_layers > 16) {
                abort();
            }
            fz_digest_ok(m.config_digest);
            for (i = 0; i < m.n_layers; i++) {
                fz_digest_ok(m.layers[i].digest);
            }
        }
        break;

    case 3:
        memset(&m, 0, sizeof(m));
        m.n_layers = 2;
        rc = vsb_oci_config_parse(p, len, "amd64", &m, &o, err, sizeof(err));
        if (rc == 0) {
            fz_digest_ok(m.layers[0].diff_id);
            fz_digest_ok(m.layers[1].diff_id);
            json_decref(o);
        } else if (o != NULL) {
            abort();
        }
        break;

    case 4:
        o = json_object();
        vsb_meta_os_release(p, len, o);
        fz_strings(o);
        json_decref(o);
        return 0;

    case 5:
        o = json_object();
        if (data[size > 1 ? 1 : 0] & 1) {
            vsb_meta_dpkg_status(p, len, o);
        } else {
            vsb_meta_apk_installed(p, len, o);
        }
        fz_strings(o);
        json_decref(o);
        return 0;

    case 6:
        j = json_loadb(p, len, 0, &je);
        if (j == NULL) {
            return 0;
        }
        rc = vsb_meta_check(j, err, sizeof(err));
        json_decref(j);
        break;

    default:
        if (len >= sizeof(s)) {
            return 0;
        }
        memcpy(s, p, len);
        s[len] = '\0';
        rc = vsb_image_digest_parse(s, d, err, sizeof(err));
        if (rc == 0 && (strlen(s) != VSB_IMAGE_DIGEST_LEN
                        || strlen(d) != VSB_IMAGE_HEX_LEN))
        {
            abort();
        }
        break;
    }

    if (rc != 0 && err[0] == '\0') {
        abort();
    }

    return 0;
}
