/*
 * OCI image index, manifest and config documents (also Docker's v2
 * schema 2 equivalents, which skopeo and docker save produce).  Strict:
 * schemaVersion 2, sha256 digests only, known media types only, every
 * count and string bounded.  Pure: parses buffers, fuzzed.
 */
#ifndef VSB_IMAGE_OCI_H
#define VSB_IMAGE_OCI_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "vsb_image.h"

typedef enum {
    VSB_OCI_INDEX = 1,
    VSB_OCI_MANIFEST,
} vsb_oci_kind_t;

typedef enum {
    VSB_OCI_PLAIN = 0,
    VSB_OCI_GZIP,
} vsb_oci_compression_t;

typedef struct {
    char                   digest[VSB_IMAGE_DIGEST_LEN + 1];
    char                   diff_id[VSB_IMAGE_DIGEST_LEN + 1];
    uint64_t               size;
    vsb_oci_compression_t  compression;
} vsb_oci_layer_t;

typedef struct {
    char             config_digest[VSB_IMAGE_DIGEST_LEN + 1];
    uint64_t         config_size;
    size_t           n_layers;
    vsb_oci_layer_t  layers[VSB_IMAGE_ABS_LAYERS];
} vsb_oci_manifest_t;

/* Index or manifest, from mediaType or, when absent, from the shape. */
int vsb_oci_kind(const char *buf, size_t len, vsb_oci_kind_t *kind,
    char *err, size_t errlen);

/* The one manifest of an index for linux/arch (variant ignored); more
 * than one match or none is an error that lists what the index has. */
int vsb_oci_index_select(const char *buf, size_t len, const char *arch,
    char *digest, uint64_t *size, char *err, size_t errlen);

int vsb_oci_manifest_parse(const char *buf, size_t len, size_t max_layers,
    vsb_oci_manifest_t *m, char *err, size_t errlen);

/*
 * The config: os must be linux and architecture arch; rootfs.diff_ids
 * must name one layer each, copied into m->layers[].diff_id.  *summary
 * gets a new object with what a profile may show (env, cmd, entrypoint,
 * working_dir, user, created), bounded.
 */
int vsb_oci_config_parse(const char *buf, size_t len, const char *arch,
    vsb_oci_manifest_t *m, json_t **summary, char *err, size_t errlen);

/* The OCI name of this machine's architecture ("amd64", "arm64", ...). */
const char *vsb_oci_host_arch(void);

#endif
