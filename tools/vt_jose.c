/*
 * JOSE for veto-token: the algorithms the gateway accepts, base64url,
 * loading PEM keys and HMAC secrets with the gateway's own rules, public
 * JWKs and their RFC 7638 thumbprints, and JWS signatures (ECDSA as
 * r || s, not DER).
 */

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "vt_jose.h"

#define VT_MAX_KEY_FILE     (1024 * 1024)
#define VT_MIN_HMAC_LEN     32
#define VT_MIN_RSA_BITS     2048


static const vt_alg_t vt_algs[] = {
    { "RS256", VT_KEY_RSA,  "SHA256", NULL, 0 },
    { "RS384", VT_KEY_RSA,  "SHA384", NULL, 0 },
    { "RS512", VT_KEY_RSA,  "SHA512", NULL, 0 },
    { "ES256", VT_KEY_EC,   "SHA256", "P-256", 32 },
    { "ES384", VT_KEY_EC,   "SHA384", "P-384", 48 },
    { "ES512", VT_KEY_EC,   "SHA512", "P-521", 66 },
    { "HS256", VT_KEY_HMAC, "SHA256", NULL, 0 },
    { "HS384", VT_KEY_HMAC, "SHA384", NULL, 0 },
    { "HS512", VT_KEY_HMAC, "SHA512", NULL, 0 },
};



void
vt_fail(const char *fmt, ...)
{
    va_list  ap;

    fputs("veto-token: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}


/* The first OpenSSL error, as text, or a placeholder. */
const char *
vt_ssl_error(void)
{
    static char    buf[256];
    unsigned long  e;

    e = ERR_get_error();
    ERR_clear_error();

    if (e == 0) {
        return "no detail from OpenSSL";
    }

    ERR_error_string_n(e, buf, sizeof(buf));
    return buf;
}




const vt_alg_t *
vt_alg_find(const char *name)
{
    size_t  i;

    for (i = 0; i < sizeof(vt_algs) / sizeof(vt_algs[0]); i++) {
        if (strcmp(vt_algs[i].name, name) == 0) {
            return &vt_algs[i];
        }
    }

    vt_fail("--alg: unknown algorithm \"%s\" (RS256, RS384, RS512, ES256, "
            "ES384, ES512, HS256, HS384, HS512)", name);
    return NULL;
}



/* --- base64url ------------------------------------------------------ */

/* Returns a malloc'ed, NUL-terminated base64url string without padding. */
char *
vt_b64url(const unsigned char *p, size_t n)
{
    static const char  tbl[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char              *out, *o;
    size_t             i;
    uint32_t           v;

    out = malloc(n / 3 * 4 + 5);
    if (out == NULL) {
        vt_fail("out of memory");
        return NULL;
    }

    o = out;

    for (i = 0; i + 2 < n; i += 3) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = tbl[v >> 6 & 63];
        *o++ = tbl[v & 63];
    }

    if (n - i == 1) {
        v = (uint32_t) p[i] << 16;
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];

    } else if (n - i == 2) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8;
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = tbl[v >> 6 & 63];
    }

    *o = '\0';
    return out;
}


/* A big number as base64url of its big-endian bytes, padded to len
 * bytes when len > 0 (EC coordinates), minimal otherwise (RSA n, e). */
static char *
vt_b64url_bn(const BIGNUM *bn, size_t len)
{
    unsigned char  *buf;
    char           *out;
    int             n;

    n = len ? (int) len : BN_num_bytes(bn);

    buf = malloc(n > 0 ? (size_t) n : 1);
    if (buf == NULL) {
        vt_fail("out of memory");
        return NULL;
    }

    if (BN_bn2binpad(bn, buf, n) != n) {
        vt_fail("converting a key parameter failed: %s", vt_ssl_error());
        free(buf);
        return NULL;
    }

    out = vt_b64url(buf, (size_t) n);
    free(buf);
    return out;
}


/* --- keys ----------------------------------------------------------- */

/* The whole file, bounded, NUL-terminated. */
static unsigned char *
vt_read_file(const char *path, size_t *len)
{
    FILE           *f;
    unsigned char  *buf;
    size_t          n;

    f = fopen(path, "rb");
    if (f == NULL) {
        vt_fail("cannot open key file \"%s\": %s", path, strerror(errno));
        return NULL;
    }

    buf = malloc(VT_MAX_KEY_FILE + 1);
    if (buf == NULL) {
        vt_fail("out of memory");
        fclose(f);
        return NULL;
    }

    n = fread(buf, 1, VT_MAX_KEY_FILE + 1, f);

    if (ferror(f)) {
        vt_fail("cannot read key file \"%s\": %s", path, strerror(errno));
        goto failed;
    }

    if (n > VT_MAX_KEY_FILE) {
        vt_fail("key file \"%s\" is larger than %d bytes", path,
                VT_MAX_KEY_FILE);
        goto failed;
    }

    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;

failed:

    fclose(f);
    free(buf);
    return NULL;
}


/* A passphrase callback that never prompts: encrypted keys are refused. */
static int
vt_no_passphrase(char *buf, int size, int rwflag, void *u)
{
    *(int *) u = 1;
    return -1;
}


/* "P-256" etc. for an EC key, NULL for other curves. */
static const char *
vt_ec_curve(EVP_PKEY *pkey)
{
    char    group[64];
    size_t  len;

    if (!EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME,
                                        group, sizeof(group), &len))
    {
        return NULL;
    }

    if (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0) {
        return "P-256";
    }

    if (strcmp(group, "secp384r1") == 0 || strcmp(group, "P-384") == 0) {
        return "P-384";
    }

    if (strcmp(group, "secp521r1") == 0 || strcmp(group, "P-521") == 0) {
        return "P-521";
    }

    return NULL;
}


/*
 * The algorithm a PEM key signs with: alg_name when given (it must fit
 * the key), else the key's natural one.  RSA keys under 2048 bits and
 * curves the gateway does not know are refused.
 */
static const vt_alg_t *
vt_key_alg(EVP_PKEY *pkey, const char *path, const char *alg_name)
{
    const char      *curve;
    const vt_alg_t  *alg;
    size_t           i;

    if (EVP_PKEY_is_a(pkey, "RSA")) {
        if (EVP_PKEY_get_bits(pkey) < VT_MIN_RSA_BITS) {
            vt_fail("\"%s\": RSA key has %d bits, the gateway needs at "
                    "least %d", path, EVP_PKEY_get_bits(pkey),
                    VT_MIN_RSA_BITS);
            return NULL;
        }

        alg = vt_alg_find(alg_name ? alg_name : "RS256");
        if (alg != NULL && alg->type != VT_KEY_RSA) {
            vt_fail("--alg %s does not fit \"%s\", an RSA key (RS256, "
                    "RS384, RS512)%s", alg->name, path,
                    alg->type == VT_KEY_HMAC
                    ? "; a PEM key is never used as an HMAC secret" : "");
            return NULL;
        }

        return alg;
    }

    if (EVP_PKEY_is_a(pkey, "EC")) {
        curve = vt_ec_curve(pkey);
        if (curve == NULL) {
            vt_fail("\"%s\": EC key on a curve the gateway does not "
                    "support (P-256, P-384, P-521)", path);
            return NULL;
        }

        if (alg_name == NULL) {
            for (i = 0; i < sizeof(vt_algs) / sizeof(vt_algs[0]); i++) {
                if (vt_algs[i].curve && strcmp(vt_algs[i].curve, curve) == 0) {
                    return &vt_algs[i];
                }
            }
        }

        alg = vt_alg_find(alg_name);
        if (alg != NULL
            && (alg->type != VT_KEY_EC || strcmp(alg->curve, curve) != 0))
        {
            vt_fail("--alg %s does not fit \"%s\", an EC %s key (ES256 "
                    "needs P-256, ES384 P-384, ES512 P-521)%s", alg->name,
                    path, curve, alg->type == VT_KEY_HMAC
                    ? "; a PEM key is never used as an HMAC secret" : "");
            return NULL;
        }

        return alg;
    }

    vt_fail("\"%s\": unsupported key type (RSA or EC)", path);
    return NULL;
}


/*
 * Reads a key for signing (want_private) or for its public part.  A PEM
 * private key serves both; a PEM public key only the JWKS; anything else
 * is an HMAC secret, and only when an HS algorithm was asked for.
 */
int
vt_key_load(const char *path, const char *alg_name, int want_private,
    vt_key_t *key)
{
    BIO             *bio;
    EVP_PKEY        *pkey;
    unsigned char   *data;
    size_t           len;
    int              encrypted, is_pem;
    const vt_alg_t  *alg;

    memset(key, 0, sizeof(*key));

    alg = NULL;
    if (alg_name != NULL) {
        alg = vt_alg_find(alg_name);
        if (alg == NULL) {
            return -1;
        }
    }

    data = vt_read_file(path, &len);
    if (data == NULL) {
        return -1;
    }

    is_pem = strstr((char *) data, "-----BEGIN ") != NULL;

    if (alg != NULL && alg->type == VT_KEY_HMAC) {
        if (!want_private) {
            vt_fail("%s is an HMAC algorithm: a shared secret has no public "
                    "part to publish in a JWKS (configure it with "
                    "veto_sandbox_jwt_key)", alg->name);
            goto failed;
        }

        if (is_pem) {
            vt_fail("\"%s\" holds a PEM key, not an HMAC secret: a public "
                    "or private key must never be used as an HMAC secret",
                    path);
            goto failed;
        }

        while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r')) {
            len--;
        }

        if (len < VT_MIN_HMAC_LEN) {
            vt_fail("\"%s\": HMAC secret is %zu bytes, at least %d needed "
                    "(e.g. openssl rand -hex 32 > FILE)", path, len,
                    VT_MIN_HMAC_LEN);
            goto failed;
        }

        key->alg = alg;
        key->secret = data;
        key->secret_len = len;
        return 0;
    }

    if (!is_pem) {
        vt_fail("\"%s\" is not a PEM key%s", path, want_private
                ? " (for an HMAC secret file give --alg HS256)" : "");
        goto failed;
    }

    bio = BIO_new_mem_buf(data, (int) len);
    if (bio == NULL) {
        vt_fail("BIO_new_mem_buf: %s", vt_ssl_error());
        goto failed;
    }

    encrypted = 0;
    pkey = PEM_read_bio_PrivateKey(bio, NULL, vt_no_passphrase, &encrypted);

    if (pkey == NULL) {
        ERR_clear_error();

        if (encrypted) {
            vt_fail("\"%s\" is an encrypted private key; decrypt it first "
                    "(openssl pkey -in FILE -out PLAIN)", path);
            BIO_free(bio);
            goto failed;
        }

        if (want_private) {
            vt_fail("\"%s\" holds no PEM private key%s", path,
                    strstr((char *) data, "PUBLIC KEY-----")
                    ? ": it is a public key, minting needs the private one"
                    : "");
            BIO_free(bio);
            goto failed;
        }

        (void) BIO_reset(bio);
        pkey = PEM_read_bio_PUBKEY(bio, NULL, vt_no_passphrase, &encrypted);

        if (pkey == NULL) {
            vt_fail("\"%s\" holds no PEM public or private key: %s", path,
                    vt_ssl_error());
            BIO_free(bio);
            goto failed;
        }
    }

    BIO_free(bio);
    free(data);

    key->alg = vt_key_alg(pkey, path, alg_name);
    if (key->alg == NULL) {
        EVP_PKEY_free(pkey);
        return -1;
    }

    key->pkey = pkey;
    return 0;

failed:

    free(data);
    return -1;
}


void
vt_key_free(vt_key_t *key)
{
    EVP_PKEY_free(key->pkey);
    if (key->secret != NULL) {
        OPENSSL_cleanse(key->secret, key->secret_len);
        free(key->secret);
    }
    memset(key, 0, sizeof(*key));
}


/* --- JWK ------------------------------------------------------------ */

/* The public JWK members of an RSA or EC key: kty and n, e or crv, x, y. */
json_t *
vt_jwk_public(const vt_key_t *key)
{
    json_t   *jwk;
    BIGNUM   *a, *b;
    char     *sa, *sb;
    int       rsa;

    rsa = key->alg->type == VT_KEY_RSA;
    a = NULL;
    b = NULL;
    sa = NULL;
    sb = NULL;
    jwk = NULL;

    if (!EVP_PKEY_get_bn_param(key->pkey, rsa ? OSSL_PKEY_PARAM_RSA_N
                                              : OSSL_PKEY_PARAM_EC_PUB_X, &a)
        || !EVP_PKEY_get_bn_param(key->pkey, rsa ? OSSL_PKEY_PARAM_RSA_E
                                                 : OSSL_PKEY_PARAM_EC_PUB_Y,
                                  &b))
    {
        vt_fail("reading the public key's parameters failed: %s",
                vt_ssl_error());
        goto done;
    }

    sa = vt_b64url_bn(a, rsa ? 0 : key->alg->coord);
    sb = vt_b64url_bn(b, rsa ? 0 : key->alg->coord);
    if (sa == NULL || sb == NULL) {
        goto done;
    }

    jwk = rsa ? json_pack("{s:s, s:s, s:s}", "kty", "RSA", "n", sa, "e", sb)
              : json_pack("{s:s, s:s, s:s, s:s}", "kty", "EC",
                          "crv", key->alg->curve, "x", sa, "y", sb);
    if (jwk == NULL) {
        vt_fail("out of memory");
    }

done:

    BN_free(a);
    BN_free(b);
    free(sa);
    free(sb);
    return jwk;
}


/* RFC 7638: base64url(SHA-256(the required members, sorted, compact)). */
char *
vt_thumbprint(const vt_key_t *key)
{
    json_t         *jwk;
    char           *canon, *out;
    unsigned char   md[EVP_MAX_MD_SIZE];
    unsigned int    mdlen;

    jwk = vt_jwk_public(key);
    if (jwk == NULL) {
        return NULL;
    }

    canon = json_dumps(jwk, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(jwk);

    if (canon == NULL) {
        vt_fail("out of memory");
        return NULL;
    }

    if (!EVP_Digest(canon, strlen(canon), md, &mdlen, EVP_sha256(), NULL)) {
        vt_fail("SHA-256 failed: %s", vt_ssl_error());
        free(canon);
        return NULL;
    }

    free(canon);
    out = vt_b64url(md, mdlen);
    return out;
}


/* --- signing -------------------------------------------------------- */

/* Signs "header.payload"; returns the base64url signature. */
char *
vt_sign(const vt_key_t *key, const char *input)
{
    EVP_MD_CTX           *ctx;
    ECDSA_SIG            *ecsig;
    const BIGNUM         *r, *s;
    const unsigned char  *p;
    unsigned char        *der, raw[2 * 66], mac[EVP_MAX_MD_SIZE];
    unsigned int          maclen;
    size_t                derlen, c;
    char                 *out;

    out = NULL;

    if (key->alg->type == VT_KEY_HMAC) {
        if (HMAC(EVP_get_digestbyname(key->alg->md), key->secret,
                 (int) key->secret_len, (const unsigned char *) input,
                 strlen(input), mac, &maclen) == NULL)
        {
            vt_fail("HMAC failed: %s", vt_ssl_error());
            return NULL;
        }

        out = vt_b64url(mac, maclen);
        OPENSSL_cleanse(mac, sizeof(mac));
        return out;
    }

    ctx = EVP_MD_CTX_new();
    der = NULL;

    if (ctx == NULL
        || EVP_DigestSignInit_ex(ctx, NULL, key->alg->md, NULL, NULL,
                                 key->pkey, NULL) != 1
        || EVP_DigestSign(ctx, NULL, &derlen, (const unsigned char *) input,
                          strlen(input)) != 1
        || (der = malloc(derlen)) == NULL
        || EVP_DigestSign(ctx, der, &derlen, (const unsigned char *) input,
                          strlen(input)) != 1)
    {
        vt_fail("signing with %s failed: %s", key->alg->name,
                vt_ssl_error());
        goto done;
    }

    if (key->alg->type == VT_KEY_RSA) {
        out = vt_b64url(der, derlen);
        goto done;
    }

    /* JWS wants ECDSA as r || s, each padded to the curve's size, not
     * the DER sequence OpenSSL produces */
    p = der;
    ecsig = d2i_ECDSA_SIG(NULL, &p, (long) derlen);
    if (ecsig == NULL) {
        vt_fail("decoding the ECDSA signature failed: %s", vt_ssl_error());
        goto done;
    }

    ECDSA_SIG_get0(ecsig, &r, &s);
    c = key->alg->coord;

    if (BN_bn2binpad(r, raw, (int) c) != (int) c
        || BN_bn2binpad(s, raw + c, (int) c) != (int) c)
    {
        vt_fail("converting the ECDSA signature failed: %s", vt_ssl_error());
        ECDSA_SIG_free(ecsig);
        goto done;
    }

    ECDSA_SIG_free(ecsig);
    out = vt_b64url(raw, 2 * c);

done:

    free(der);
    EVP_MD_CTX_free(ctx);
    return out;
}


/* base64url of a JSON object's compact text. */
char *
vt_b64url_json(json_t *obj)
{
    char  *text, *out;

    text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text == NULL) {
        vt_fail("out of memory");
        return NULL;
    }

    out = vt_b64url((unsigned char *) text, strlen(text));
    free(text);
    return out;
}

