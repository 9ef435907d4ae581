#ifndef VT_JOSE_H
#define VT_JOSE_H

/* JOSE pieces of veto-token (tools/vt_jose.c). */

#include <stddef.h>

#include <jansson.h>
#include <openssl/evp.h>


typedef enum {
    VT_KEY_RSA,
    VT_KEY_EC,
    VT_KEY_HMAC
} vt_key_type_t;

typedef struct {
    const char      *name;      /* "RS256" ... */
    vt_key_type_t    type;
    const char      *md;        /* digest name for OpenSSL */
    const char      *curve;     /* EC: the curve this alg requires */
    size_t           coord;     /* EC: bytes per coordinate in r||s */
} vt_alg_t;

typedef struct {
    const vt_alg_t  *alg;
    EVP_PKEY        *pkey;          /* RSA, EC */
    unsigned char   *secret;        /* HMAC */
    size_t           secret_len;
} vt_key_t;


/* "veto-token: <message>" on stderr. */
void vt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *vt_ssl_error(void);

/* NULL (and a message) for a name the gateway does not accept. */
const vt_alg_t *vt_alg_find(const char *name);

/* malloc'ed base64url without padding; NULL on failure (reported). */
char *vt_b64url(const unsigned char *p, size_t n);
char *vt_b64url_json(json_t *obj);

/*
 * Loads FILE for signing (want_private) or for its public part; alg_name
 * NULL means the key's own algorithm.  Every failure is reported, naming
 * the file and the reason; -1.
 */
int vt_key_load(const char *path, const char *alg_name, int want_private,
    vt_key_t *key);
void vt_key_free(vt_key_t *key);

/* RSA or EC only: {"kty","n","e"} or {"kty","crv","x","y"}. */
json_t *vt_jwk_public(const vt_key_t *key);
char *vt_thumbprint(const vt_key_t *key);

/* The base64url JWS signature of "header.payload". */
char *vt_sign(const vt_key_t *key, const char *input);

#endif /* VT_JOSE_H */
