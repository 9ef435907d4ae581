/*
 * Image digests: the only way to name an image.  A tag ("debian:12",
 * "latest") is refused with a reason an operator can act on.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "vsb_hex.h"
#include "vsb_image.h"


void
vsb_image_limits_default(vsb_image_limits_t *l)
{
    l->max_entries = VSB_IMAGE_DEF_ENTRIES;
    l->max_file_bytes = VSB_IMAGE_DEF_FILE_BYTES;
    l->max_bytes = VSB_IMAGE_DEF_BYTES;
    l->max_layers = VSB_IMAGE_DEF_LAYERS;
    l->max_seconds = VSB_IMAGE_DEF_SECONDS;
}


int
vsb_image_digest_parse(const char *s, char *hex, char *err, size_t errlen)
{
    size_t  i, n;

    n = strlen(s);

    if (strncmp(s, VSB_IMAGE_DIGEST_PREFIX, 7) != 0) {
        if (strchr(s, ':') != NULL && strncmp(s, "sha512:", 7) == 0) {
            snprintf(err, errlen, "digest \"%.80s\": only sha256 digests "
                     "are supported", s);
        } else {
            snprintf(err, errlen, "\"%.80s\" is not a digest: images are "
                     "named by their manifest digest (sha256:<64 hex>), "
                     "never by a tag", s);
        }
        return -1;
    }

    if (n != VSB_IMAGE_DIGEST_LEN) {
        snprintf(err, errlen, "digest \"%.80s\": want sha256: and 64 hex "
                 "digits", s);
        return -1;
    }

    for (i = 7; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            snprintf(err, errlen, "digest \"%.80s\": want lowercase hex "
                     "digits after sha256:", s);
            return -1;
        }
    }

    if (hex != NULL) {
        memcpy(hex, s + 7, VSB_IMAGE_HEX_LEN + 1);
    }

    return 0;
}


int
vsb_image_digest_md(const unsigned char *md, unsigned int mdlen, char *digest)
{
    memcpy(digest, VSB_IMAGE_DIGEST_PREFIX, 7);
    return vsb_sha256_md_hex(md, mdlen, digest + 7);
}


int
vsb_image_sha256_buf(const void *p, size_t len, char *digest)
{
    unsigned char  md[EVP_MAX_MD_SIZE];
    unsigned int   mdlen = 0;

    if (EVP_Digest(p, len, md, &mdlen, EVP_sha256(), NULL) != 1) {
        return -1;
    }

    return vsb_image_digest_md(md, mdlen, digest);
}
