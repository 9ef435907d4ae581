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
 * Two halves: ngx_http_veto_sandbox_jws_decode() turns the base64url
 * signature into what OpenSSL checks (cheap, on the event loop: a
 * malformed signature is refused before any crypto), and
 * ngx_http_veto_sandbox_jws_check() runs the check.  The check may run in
 * a thread of an nginx thread pool (veto_sandbox_jwt_thread_pool, _jwt.c):
 * there it uses that thread's own EVP_PKEY_CTX
 * (ngx_http_veto_sandbox_jws_thread_pctx()), never the key's, which the
 * event loop uses; the EVP_PKEY and EVP_MD themselves are only read,
 * which OpenSSL 3 allows from any number of threads.
 *
 * The caller (_jwt.c) has pinned the algorithm to the key; this file
 * checks the bytes only.
 */

#include "ngx_http_veto_sandbox_stores.h"

#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


static ngx_int_t ngx_http_veto_sandbox_jws_hmac(
    ngx_http_veto_sandbox_key_t *key, u_char *in, size_t in_len,
    u_char *sig, size_t sig_len);
static ngx_int_t ngx_http_veto_sandbox_jws_pkey(
    ngx_http_veto_sandbox_key_t *key, EVP_PKEY_CTX *pctx, u_char *in,
    size_t in_len, u_char *sig, size_t sig_len);
static ngx_int_t ngx_http_veto_sandbox_jws_ecdsa_der(
    ngx_http_veto_sandbox_key_t *key, u_char *sig, size_t sig_len,
    u_char *der, size_t *der_len);


/*
 * NGX_OK: sig_b64 (base64url, no padding) is key's signature of in.
 * NGX_DECLINED: it is not.  NGX_ERROR: OpenSSL failed to run the check.
 * The event loop's: it verifies with the key's own context.
 */
ngx_int_t
ngx_http_veto_sandbox_jws_verify(ngx_http_veto_sandbox_key_t *key,
    u_char *in, size_t in_len, u_char *sig_b64, size_t sig_b64_len)
{
    u_char  sig[NGX_HTTP_VSB_MAX_SIG_LEN];
    size_t  sig_len;

    if (ngx_http_veto_sandbox_jws_decode(key, sig_b64, sig_b64_len, sig,
                                         &sig_len)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    return ngx_http_veto_sandbox_jws_check(key, key->pctx, in, in_len, sig,
                                           sig_len);
}


/*
 * The signature as the check takes it, in sig (NGX_HTTP_VSB_MAX_SIG_LEN
 * bytes): an HMAC or RSA signature as it is, an ECDSA one as DER.
 * NGX_DECLINED: it cannot be key's (not base64url, the wrong length), so
 * no check is needed to refuse it.
 */
ngx_int_t
ngx_http_veto_sandbox_jws_decode(ngx_http_veto_sandbox_key_t *key,
    u_char *sig_b64, size_t sig_b64_len, u_char *sig, size_t *sig_len)
{
    u_char     raw[NGX_HTTP_VSB_MAX_SIG_LEN];
    ngx_int_t  rc;
    ngx_str_t  src, dst;

    if (ngx_base64_decoded_length(sig_b64_len) > sizeof(raw)) {
        return NGX_DECLINED;
    }

    src.data = sig_b64;
    src.len = sig_b64_len;
    dst.data = key->ec ? raw : sig;

    if (ngx_decode_base64url(&dst, &src) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (key->pkey == NULL) {
        *sig_len = dst.len;
        return NGX_OK;
    }

    if (key->ec) {
        rc = ngx_http_veto_sandbox_jws_ecdsa_der(key, raw, dst.len, sig,
                                                 sig_len);

        /* a refused conversion leaves reasons on the error queue */
        ERR_clear_error();

        return rc;
    }

    /* RSASSA-PKCS1-v1_5: exactly the modulus' length */
    if (dst.len != (size_t) EVP_PKEY_get_size(key->pkey)) {
        return NGX_DECLINED;
    }

    *sig_len = dst.len;

    return NGX_OK;
}


/*
 * NGX_OK: sig (from ngx_http_veto_sandbox_jws_decode()) is key's signature
 * of in; NGX_DECLINED: it is not; NGX_ERROR: the check could not run.
 * pctx: a verify context of key->pkey that no other thread uses now
 * (unused for HS*).  Safe in any thread.
 */
ngx_int_t
ngx_http_veto_sandbox_jws_check(ngx_http_veto_sandbox_key_t *key,
    EVP_PKEY_CTX *pctx, u_char *in, size_t in_len, u_char *sig,
    size_t sig_len)
{
    ngx_int_t  rc;

    if (key->pkey == NULL) {
        return ngx_http_veto_sandbox_jws_hmac(key, in, in_len, sig, sig_len);
    }

    rc = ngx_http_veto_sandbox_jws_pkey(key, pctx, in, in_len, sig, sig_len);

    /* a refused signature leaves reasons on the thread's error queue;
     * nothing else in the worker should find them there */
    ERR_clear_error();

    return rc;
}


#if (NGX_THREADS)

/*
 * A thread's own verify contexts, one per key it has verified with, made
 * on first use.  Each holds a reference to its EVP_PKEY, so a key's
 * address cannot be reused while its context is listed here.
 *
 * They live as long as the thread, which lives as long as the worker
 * process (nginx's pools never shrink), and go with the process: no
 * destructor frees them at the thread's exit.  A destructor would be
 * this module's code run by an exiting thread, and nginx lets a pool's
 * threads finish exiting while the worker goes on to destroy the cycle,
 * which unloads the module: the thread would call into unmapped code.
 */
typedef struct ngx_http_veto_sandbox_tctx_s  ngx_http_veto_sandbox_tctx_t;

struct ngx_http_veto_sandbox_tctx_s {
    ngx_http_veto_sandbox_tctx_t  *next;
    EVP_PKEY                      *pkey;
    const EVP_MD                  *md;
    EVP_PKEY_CTX                  *pctx;
};


static __thread ngx_http_veto_sandbox_tctx_t  *ngx_http_veto_sandbox_tctx;


/* The calling thread's verify context for key; NULL (logged) when one
 * cannot be made. */
EVP_PKEY_CTX *
ngx_http_veto_sandbox_jws_thread_pctx(ngx_http_veto_sandbox_key_t *key,
    ngx_log_t *log)
{
    EVP_PKEY_CTX                  *pctx;
    ngx_http_veto_sandbox_tctx_t  *t;

    for (t = ngx_http_veto_sandbox_tctx; t; t = t->next) {
        if (t->pkey == key->pkey && t->md == key->md) {
            return t->pctx;
        }
    }

    pctx = ngx_http_veto_sandbox_key_verify_ctx(key);
    if (pctx == NULL) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "veto_sandbox: a thread's verify context for the "
                      "key in \"%V\" could not be made", &key->source);
        ERR_clear_error();
        return NULL;
    }

    t = ngx_alloc(sizeof(ngx_http_veto_sandbox_tctx_t), log);
    if (t == NULL) {
        EVP_PKEY_CTX_free(pctx);
        return NULL;
    }

    t->next = ngx_http_veto_sandbox_tctx;
    t->pkey = key->pkey;
    t->md = key->md;
    t->pctx = pctx;

    ngx_http_veto_sandbox_tctx = t;

    return pctx;
}

#endif


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
ngx_http_veto_sandbox_jws_pkey(ngx_http_veto_sandbox_key_t *key,
    EVP_PKEY_CTX *pctx, u_char *in, size_t in_len, u_char *sig,
    size_t sig_len)
{
    int           ok;
    u_char        digest[EVP_MAX_MD_SIZE];
    unsigned int  digest_len;

    if (EVP_Digest(in, in_len, digest, &digest_len, key->md, NULL) != 1) {
        return NGX_ERROR;
    }

    /* the context was made and set (padding, digest) beforehand;
     * verification keeps no state in it between calls */
    ok = EVP_PKEY_verify(pctx, sig, sig_len, digest, digest_len);

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
