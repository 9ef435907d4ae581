/*
 * OCI (and Docker v2.2) index, manifest and config documents; see
 * vsb_image_oci.h.  Only what unpacking needs is read; everything read
 * is checked for type and bound.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "vsb_image_oci.h"

#define VSB_OCI_STR_MAX      4096    /* one env entry, cmd word, ... */
#define VSB_OCI_LIST_MAX     256     /* env entries, cmd words */
#define VSB_OCI_INDEX_MAX    1024    /* manifests in an index */

#define MT_OCI_INDEX     "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST  "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_CONFIG    "application/vnd.oci.image.config.v1+json"
#define MT_DOCKER_LIST   \
    "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST \
    "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"

typedef struct {
    const char             *type;
    vsb_oci_compression_t   compression;
    const char             *refused;    /* why, when refused */
} vsb_oci_layer_type_t;

static const vsb_oci_layer_type_t  vsb_oci_layer_types[] = {
    { "application/vnd.oci.image.layer.v1.tar", VSB_OCI_PLAIN, NULL },
    { "application/vnd.oci.image.layer.v1.tar+gzip", VSB_OCI_GZIP, NULL },
    { "application/vnd.docker.image.rootfs.diff.tar.gzip", VSB_OCI_GZIP,
      NULL },
    { "application/vnd.oci.image.layer.v1.tar+zstd", VSB_OCI_PLAIN,
      "zstd layers are not supported: convert the image with "
      "skopeo copy --dest-compress-format gzip" },
    { "application/vnd.oci.image.layer.nondistributable.v1.tar",
      VSB_OCI_PLAIN, "non-distributable (foreign) layers are refused" },
    { "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
      VSB_OCI_PLAIN, "non-distributable (foreign) layers are refused" },
    { "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
      VSB_OCI_PLAIN, "foreign layers are refused" },
};


static int vsb_oci_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
vsb_oci_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}


static json_t *
vsb_oci_load(const char *buf, size_t len, const char *what, char *err,
    size_t errlen)
{
    json_t        *j;
    json_error_t   je;

    if (len > VSB_IMAGE_JSON_MAX) {
        vsb_oci_err(err, errlen, "%s: larger than %d bytes", what,
                    VSB_IMAGE_JSON_MAX);
        return NULL;
    }

    j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        vsb_oci_err(err, errlen, "%s: not JSON: %s (line %d)", what, je.text,
                    je.line);
        return NULL;
    }

    if (!json_is_object(j)) {
        vsb_oci_err(err, errlen, "%s: not a JSON object", what);
        json_decref(j);
        return NULL;
    }

    return j;
}


static int
vsb_oci_schema2(json_t *j, const char *what, char *err, size_t errlen)
{
    json_t  *v = json_object_get(j, "schemaVersion");

    if (!json_is_integer(v) || json_integer_value(v) != 2) {
        return vsb_oci_err(err, errlen, "%s: schemaVersion must be 2", what);
    }

    return 0;
}


/* A string member; NULL when absent; -1 when of the wrong type. */
static int
vsb_oci_opt_string(json_t *j, const char *key, const char **out)
{
    json_t  *v = json_object_get(j, key);

    *out = NULL;

    if (v == NULL) {
        return 0;
    }

    if (!json_is_string(v) || json_string_length(v) > VSB_OCI_STR_MAX
        || strlen(json_string_value(v)) != json_string_length(v))
    {
        return -1;
    }

    *out = json_string_value(v);
    return 0;
}


static int
vsb_oci_descriptor(json_t *d, const char *what, char *digest,
    uint64_t *size, char *err, size_t errlen)
{
    json_t      *v;
    const char  *s;
    char         why[160];

    if (!json_is_object(d)) {
        return vsb_oci_err(err, errlen, "%s: descriptor is not an object",
                           what);
    }

    v = json_object_get(d, "digest");
    if (!json_is_string(v)) {
        return vsb_oci_err(err, errlen, "%s: descriptor without a digest",
                           what);
    }

    s = json_string_value(v);
    if (vsb_image_digest_parse(s, NULL, why, sizeof(why)) != 0) {
        return vsb_oci_err(err, errlen, "%s: %s", what, why);
    }

    v = json_object_get(d, "size");
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return vsb_oci_err(err, errlen, "%s: descriptor size must be a "
                           "non-negative integer", what);
    }

    if (json_object_get(d, "urls") != NULL) {
        return vsb_oci_err(err, errlen, "%s: descriptors with urls "
                           "(content fetched from elsewhere) are refused",
                           what);
    }

    memcpy(digest, s, VSB_IMAGE_DIGEST_LEN + 1);
    *size = (uint64_t) json_integer_value(v);
    return 0;
}


int
vsb_oci_kind(const char *buf, size_t len, vsb_oci_kind_t *kind, char *err,
    size_t errlen)
{
    json_t      *j;
    const char  *mt;
    int          rc = -1;

    j = vsb_oci_load(buf, len, "manifest", err, errlen);
    if (j == NULL) {
        return -1;
    }

    if (vsb_oci_opt_string(j, "mediaType", &mt) != 0) {
        vsb_oci_err(err, errlen, "manifest: mediaType is not a string");
        goto done;
    }

    if (mt == NULL) {
        if (json_is_array(json_object_get(j, "manifests"))) {
            *kind = VSB_OCI_INDEX;
        } else if (json_is_array(json_object_get(j, "layers"))) {
            *kind = VSB_OCI_MANIFEST;
        } else {
            vsb_oci_err(err, errlen, "manifest: neither an image index nor "
                        "an image manifest");
            goto done;
        }
    } else if (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST)
               == 0)
    {
        *kind = VSB_OCI_INDEX;
    } else if (strcmp(mt, MT_OCI_MANIFEST) == 0
               || strcmp(mt, MT_DOCKER_MANIFEST) == 0)
    {
        *kind = VSB_OCI_MANIFEST;
    } else {
        vsb_oci_err(err, errlen, "manifest: media type \"%.100s\" is not an "
                    "OCI or Docker v2 image manifest or index", mt);
        goto done;
    }

    rc = 0;

done:

    json_decref(j);
    return rc;
}


int
vsb_oci_index_select(const char *buf, size_t len, const char *arch,
    char *digest, uint64_t *size, char *err, size_t errlen)
{
    json_t      *j, *ms, *m, *pf;
    const char  *os, *ar, *mt;
    size_t       i, found = 0;
    char         seen[256], tmp[VSB_IMAGE_DIGEST_LEN + 1];
    uint64_t     sz;
    int          rc = -1;

    j = vsb_oci_load(buf, len, "index", err, errlen);
    if (j == NULL) {
        return -1;
    }

    if (vsb_oci_schema2(j, "index", err, errlen) != 0) {
        goto done;
    }

    ms = json_object_get(j, "manifests");
    if (!json_is_array(ms) || json_array_size(ms) > VSB_OCI_INDEX_MAX) {
        vsb_oci_err(err, errlen, "index: manifests must be an array of at "
                    "most %d", VSB_OCI_INDEX_MAX);
        goto done;
    }

    seen[0] = '\0';

    json_array_foreach(ms, i, m) {
        if (vsb_oci_descriptor(m, "index", tmp, &sz, err, errlen) != 0) {
            goto done;
        }

        if (vsb_oci_opt_string(m, "mediaType", &mt) != 0) {
            vsb_oci_err(err, errlen, "index: mediaType is not a string");
            goto done;
        }

        if (mt != NULL && strcmp(mt, MT_OCI_MANIFEST) != 0
            && strcmp(mt, MT_DOCKER_MANIFEST) != 0)
        {
            continue;            /* nested indexes, attestations, ... */
        }

        pf = json_object_get(m, "platform");
        if (!json_is_object(pf)
            || vsb_oci_opt_string(pf, "os", &os) != 0
            || vsb_oci_opt_string(pf, "architecture", &ar) != 0
            || os == NULL || ar == NULL)
        {
            continue;
        }

        if (strlen(seen) < sizeof(seen) - 40) {
            snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
                     "%s%.16s/%.16s", seen[0] ? ", " : "", os, ar);
        }

        if (strcmp(os, "linux") != 0 || strcmp(ar, arch) != 0) {
            continue;
        }

        if (found++ == 0) {
            memcpy(digest, tmp, sizeof(tmp));
            *size = sz;
        }
    }

    if (found == 0) {
        vsb_oci_err(err, errlen, "index: no manifest for linux/%s (it has: "
                    "%s)", arch, seen[0] ? seen : "none with a platform");
        goto done;
    }

    if (found > 1) {
        vsb_oci_err(err, errlen, "index: %zu manifests for linux/%s: import "
                    "the one you mean by its own digest", found, arch);
        goto done;
    }

    rc = 0;

done:

    json_decref(j);
    return rc;
}


int
vsb_oci_manifest_parse(const char *buf, size_t len, size_t max_layers,
    vsb_oci_manifest_t *m, char *err, size_t errlen)
{
    json_t      *j, *cfg, *layers, *l;
    const char  *mt;
    size_t       i, k;
    int          rc = -1;
    char         what[48];

    memset(m, 0, sizeof(*m));

    if (max_layers > VSB_IMAGE_ABS_LAYERS) {
        max_layers = VSB_IMAGE_ABS_LAYERS;
    }

    j = vsb_oci_load(buf, len, "manifest", err, errlen);
    if (j == NULL) {
        return -1;
    }

    if (vsb_oci_schema2(j, "manifest", err, errlen) != 0) {
        goto done;
    }

    cfg = json_object_get(j, "config");
    if (vsb_oci_descriptor(cfg, "manifest config", m->config_digest,
                           &m->config_size, err, errlen) != 0)
    {
        goto done;
    }

    if (vsb_oci_opt_string(cfg, "mediaType", &mt) != 0
        || (mt != NULL && strcmp(mt, MT_OCI_CONFIG) != 0
            && strcmp(mt, MT_DOCKER_CONFIG) != 0))
    {
        vsb_oci_err(err, errlen, "manifest: config media type is not an "
                    "image config (an artifact, not an image?)");
        goto done;
    }

    if (m->config_size > VSB_IMAGE_JSON_MAX) {
        vsb_oci_err(err, errlen, "manifest: config of %llu bytes is over "
                    "the bound of %d", (unsigned long long) m->config_size,
                    VSB_IMAGE_JSON_MAX);
        goto done;
    }

    layers = json_object_get(j, "layers");
    if (!json_is_array(layers)) {
        vsb_oci_err(err, errlen, "manifest: layers must be an array");
        goto done;
    }

    if (json_array_size(layers) > max_layers) {
        vsb_oci_err(err, errlen, "manifest: %zu layers, more than the bound "
                    "of %zu", json_array_size(layers), max_layers);
        goto done;
    }

    json_array_foreach(layers, i, l) {
        vsb_oci_layer_t  *ly = &m->layers[i];

        snprintf(what, sizeof(what), "manifest layer %zu", i);

        if (vsb_oci_descriptor(l, what, ly->digest, &ly->size, err, errlen)
            != 0)
        {
            goto done;
        }

        if (vsb_oci_opt_string(l, "mediaType", &mt) != 0 || mt == NULL) {
            vsb_oci_err(err, errlen, "%s: mediaType missing", what);
            goto done;
        }

        for (k = 0;
             k < sizeof(vsb_oci_layer_types) / sizeof(vsb_oci_layer_types[0]);
             k++)
        {
            if (strcmp(mt, vsb_oci_layer_types[k].type) == 0) {
                break;
            }
        }

        if (k == sizeof(vsb_oci_layer_types) / sizeof(vsb_oci_layer_types[0]))
        {
            vsb_oci_err(err, errlen, "%s: media type \"%.100s\" is not a "
                        "layer type this store unpacks", what, mt);
            goto done;
        }

        if (vsb_oci_layer_types[k].refused != NULL) {
            vsb_oci_err(err, errlen, "%s: %s", what,
                        vsb_oci_layer_types[k].refused);
            goto done;
        }

        ly->compression = vsb_oci_layer_types[k].compression;
        m->n_layers++;
    }

    if (m->n_layers == 0) {
        vsb_oci_err(err, errlen, "manifest: no layers");
        goto done;
    }

    rc = 0;

done:

    json_decref(j);
    return rc;
}


/* A bounded array of bounded strings, copied; NULL member -> absent. */
static int
vsb_oci_strings(json_t *from, const char *key, json_t *to, const char *as,
    char *err, size_t errlen)
{
    json_t  *a, *v, *copy;
    size_t   i;

    a = json_object_get(from, key);
    if (a == NULL || json_is_null(a)) {
        return 0;
    }

    if (!json_is_array(a) || json_array_size(a) > VSB_OCI_LIST_MAX) {
        return vsb_oci_err(err, errlen, "config: %s must be an array of at "
                           "most %d strings", key, VSB_OCI_LIST_MAX);
    }

    copy = json_array();
    if (copy == NULL) {
        return vsb_oci_err(err, errlen, "config: out of memory");
    }

    json_array_foreach(a, i, v) {
        if (!json_is_string(v) || json_string_length(v) > VSB_OCI_STR_MAX
            || strlen(json_string_value(v)) != json_string_length(v))
        {
            json_decref(copy);
            return vsb_oci_err(err, errlen, "config: %s[%zu] is not a "
                               "string of at most %d bytes", key, i,
                               VSB_OCI_STR_MAX);
        }
        json_array_append(copy, v);
    }

    json_object_set_new(to, as, copy);
    return 0;
}


int
vsb_oci_config_parse(const char *buf, size_t len, const char *arch,
    vsb_oci_manifest_t *m, json_t **summary, char *err, size_t errlen)
{
    json_t      *j, *c, *rootfs, *ids, *v, *out = NULL;
    const char  *os, *ar, *s;
    size_t       i;
    char         why[160];
    int          rc = -1;

    *summary = NULL;

    j = vsb_oci_load(buf, len, "config", err, errlen);
    if (j == NULL) {
        return -1;
    }

    if (vsb_oci_opt_string(j, "os", &os) != 0
        || vsb_oci_opt_string(j, "architecture", &ar) != 0
        || os == NULL || ar == NULL)
    {
        vsb_oci_err(err, errlen, "config: os and architecture must be "
                    "strings");
        goto done;
    }

    if (strcmp(os, "linux") != 0 || strcmp(ar, arch) != 0) {
        vsb_oci_err(err, errlen, "config: the image is for %.32s/%.32s, this "
                    "host runs linux/%s", os, ar, arch);
        goto done;
    }

    rootfs = json_object_get(j, "rootfs");
    if (!json_is_object(rootfs)
        || vsb_oci_opt_string(rootfs, "type", &s) != 0 || s == NULL
        || strcmp(s, "layers") != 0)
    {
        vsb_oci_err(err, errlen, "config: rootfs.type must be \"layers\"");
        goto done;
    }

    ids = json_object_get(rootfs, "diff_ids");
    if (!json_is_array(ids) || json_array_size(ids) != m->n_layers) {
        vsb_oci_err(err, errlen, "config: rootfs.diff_ids must name each of "
                    "the manifest's %zu layers", m->n_layers);
        goto done;
    }

    json_array_foreach(ids, i, v) {
        if (!json_is_string(v)
            || vsb_image_digest_parse(json_string_value(v), NULL, why,
                                      sizeof(why)) != 0)
        {
            vsb_oci_err(err, errlen, "config: diff_ids[%zu]: %s", i,
                        json_is_string(v) ? why : "not a string");
            goto done;
        }
        memcpy(m->layers[i].diff_id, json_string_value(v),
               VSB_IMAGE_DIGEST_LEN + 1);
    }

    out = json_object();
    if (out == NULL) {
        vsb_oci_err(err, errlen, "config: out of memory");
        goto done;
    }

    json_object_set_new(out, "architecture", json_string(ar));

    if (vsb_oci_opt_string(j, "created", &s) == 0 && s != NULL
        && strlen(s) < 64)
    {
        json_object_set_new(out, "created", json_string(s));
    }

    c = json_object_get(j, "config");
    if (c != NULL && !json_is_null(c)) {
        if (!json_is_object(c)) {
            vsb_oci_err(err, errlen, "config: config must be an object");
            goto done;
        }

        if (vsb_oci_strings(c, "Env", out, "env", err, errlen) != 0
            || vsb_oci_strings(c, "Cmd", out, "cmd", err, errlen) != 0
            || vsb_oci_strings(c, "Entrypoint", out, "entrypoint", err,
                               errlen) != 0)
        {
            goto done;
        }

        if (vsb_oci_opt_string(c, "WorkingDir", &s) != 0
            || (s != NULL
                && json_object_set_new(out, "working_dir", json_string(s))))
        {
            vsb_oci_err(err, errlen, "config: WorkingDir is not a string");
            goto done;
        }

        if (vsb_oci_opt_string(c, "User", &s) != 0
            || (s != NULL && json_object_set_new(out, "user", json_string(s))))
        {
            vsb_oci_err(err, errlen, "config: User is not a string");
            goto done;
        }
    }

    *summary = out;
    out = NULL;
    rc = 0;

done:

    json_decref(out);
    json_decref(j);
    return rc;
}


const char *
vsb_oci_host_arch(void)
{
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__i386__)
    return "386";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return "ppc64le";
#elif defined(__s390x__)
    return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#else
    return "unknown";
#endif
}
