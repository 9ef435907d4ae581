/*
 * The JWS signature (RFC 7515, algorithms of RFC 7518) over a token's
 * "header.claims" bytes, checked with the key _keys.c decoded once at
 * configuration time: an EVP_PKEY_CTX ready to verify (RS*, ES*) or an
 * HMAC secret (HS*), with its digest already fetched.  Nothing is parsed,
 * decoded or looked up per request but the signature itself: a PEM
 * decoder per verification (what libjwt 1.x does when it is handed a
 * PEM) costs ~20x the RSA check, and so, in OpenSSL 3.0, does a little
 * of every EVP_DigestVerifyInit() (provider fetches, a new context).
 *
 * The caller (_jwt.c) has pinned the algorithm to the key; this file
 * checks the bytes only.
 */

#include "ngx_http_veto_sandbox_module.h"

#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


/* the longest signature: RSA 16384 bits; ES512 is 132 bytes */
#define NGX_HTTP_VSB_MAX_SIG_LEN  2048


static ngx_int_t ngx_http_veto_sandbox_jws_hmac(
    ngx_http_veto_sandbox_key_t *key, u_char *in, size_t in_len,
    u_char *sig, size_t sig_len);
static ngx_int_t ngx_http_veto_sandbox_jws_pkey(
    ngx_http_veto_sandbox_key_t *key, u_char *in, size_t in_len,
    u_char *sig, size_t sig_len);
static ngx_int_t ngx_http_veto_sandbox_jws_ecdsa_der(
    ngx_http_veto_sandbox_key_t *key, u_char *sig, size_t sig_len,
    u_char *der, size_t *der_len);


/*
 * NGX_OK: sig_b64 (base64url, no padding) is key's signature of in.
 * NGX_DECLINED: it is not.  NGX_ERROR: OpenSSL failed to run the check.
 */
ngx_int_t
ngx_http_veto_sandbox_jws_verify(ngx_http_veto_sandbox_key_t *key,
    u_char *in, size_t in_len, u_char *sig_b64, size_t sig_b64_len)
{
    u_char     sig[NGX_HTTP_VSB_MAX_SIG_LEN];
    ngx_int_t  rc;
    ngx_str_t  src, dst;

    if (ngx_base64_decoded_length(sig_b64_len) > sizeof(sig)) {
        return NGX_DECLINED;
    }

    src.data = sig_b64;
    src.len = sig_b64_len;
    dst.data = sig;

    if (ngx_decode_base64url(&dst, &src) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (key->pkey == NULL) {
        return ngx_http_veto_sandbox_jws_hmac(key, in, in_len, sig, dst.len);
    }

    rc = ngx_http_veto_sandbox_jws_pkey(key, in, in_len, sig, dst.len);

    /* a refused signature leaves reasons on the thread's error queue;
     * nothing else in the worker should find them there */
    ERR_clear_error();

    return rc;
}


static ngx_int_t
ngx_http_veto_sandbox_jws_hmac(ngx_http_veto_sandbox_key_t *key, u_char *in,
    size_t in_len, u_char *sig, size_t sig_len)
{
    u_char        mac[EVP_MAX_MD_SIZE];
    unsigned int  mac_len;

    if (HMAC(key->md, key->secret, (int) key->secret_len, in, in_len,
             mac, &mac_len)
        == NULL)
    {
        ERR_clear_error();
        return NGX_ERROR;
    }

    /* the length is public; the bytes are compared in constant time */
    if (sig_len != mac_len || CRYPTO_memcmp(mac, sig, mac_len) != 0) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_jws_pkey(ngx_http_veto_sandbox_key_t *key, u_char *in,
    size_t in_len, u_char *sig, size_t sig_len)
{
    int           ok;
    u_char        der[NGX_HTTP_VSB_MAX_SIG_LEN];
    u_char        digest[EVP_MAX_MD_SIZE];
    size_t        der_len;
    unsigned int  digest_len;

    if (key->ec) {
        if (ngx_http_veto_sandbox_jws_ecdsa_der(key, sig, sig_len, der,
                                                &der_len)
            != NGX_OK)
        {
            return NGX_DECLINED;
        }

        sig = der;
        sig_len = der_len;

    } else if (sig_len != (size_t) EVP_PKEY_get_size(key->pkey)) {
        /* RSASSA-PKCS1-v1_5: exactly the modulus' length */
        return NGX_DECLINED;
    }

    if (EVP_Digest(in, in_len, digest, &digest_len, key->md, NULL) != 1) {
        return NGX_ERROR;
    }

    /* the context was made and set (padding, digest) at configuration
     * time; verification keeps no state in it between calls */
    ok = EVP_PKEY_verify(key->pctx, sig, sig_len, digest, digest_len);

    /* 0 is a bad signature, < 0 a malformed one: both are refusals */
    return ok == 1 ? NGX_OK : NGX_DECLINED;
}


/*
 * JWS ECDSA signatures are R || S, each the curve's byte length
 * (RFC 7518 3.4); OpenSSL verifies DER ECDSA-Sig-Value.
 */
static ngx_int_t
ngx_http_veto_sandbox_jws_ecdsa_der(ngx_http_veto_sandbox_key_t *key,
    u_char *sig, size_t sig_len, u_char *der, size_t *der_len)
{
    int         n;
    size_t      half;
    BIGNUM     *br, *bs;
    ECDSA_SIG  *es;

    half = (size_t) (EVP_PKEY_get_bits(key->pkey) + 7) / 8;

    if (sig_len != 2 * half) {
        return NGX_DECLINED;
    }

    es = ECDSA_SIG_new();
    br = BN_bin2bn(sig, (int) half, NULL);
    bs = BN_bin2bn(sig + half, (int) half, NULL);

    if (es == NULL || br == NULL || bs == NULL) {
        goto failed;
    }

    if (ECDSA_SIG_set0(es, br, bs) != 1) {
        goto failed;
    }

    /* es owns br and bs now */
    br = NULL;
    bs = NULL;

    if (i2d_ECDSA_SIG(es, NULL) > NGX_HTTP_VSB_MAX_SIG_LEN) {
        goto failed;
    }

    n = i2d_ECDSA_SIG(es, &der);
    if (n <= 0) {
        goto failed;
    }

    *der_len = (size_t) n;
    ECDSA_SIG_free(es);

    return NGX_OK;

failed:

    BN_free(br);
    BN_free(bs);
    ECDSA_SIG_free(es);

    return NGX_DECLINED;
}
