/*
 * Verification keys, loaded at configuration time only: PEM public keys
 * and HMAC secret files ("veto_sandbox_jwt_key kid alg file") and JWKS
 * files ("veto_sandbox_jwt_jwks file": RSA and EC P-256).  Every key
 * carries the one algorithm it may verify.  Keys are decoded here, once:
 * requests are verified with the EVP_PKEY and the digest fetched here
 * (_jws.c), never by decoding a PEM again.
 */

#include "ngx_http_veto_sandbox_stores.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>


#define NGX_HTTP_VSB_MIN_HMAC_LEN   32
#define NGX_HTTP_VSB_MIN_RSA_BITS   2048
#define NGX_HTTP_VSB_MAX_KEY_FILE   (1024 * 1024)


u_char *ngx_http_veto_sandbox_read_file(ngx_conf_t *cf,
    ngx_str_t *file, size_t *len);
static ngx_int_t ngx_http_veto_sandbox_key_check(ngx_conf_t *cf,
    EVP_PKEY *pkey, ngx_int_t alg, ngx_str_t *file, const char *what);
static ngx_int_t ngx_http_veto_sandbox_key_set(ngx_conf_t *cf,
    ngx_http_veto_sandbox_key_t *key, ngx_int_t alg, EVP_PKEY *pkey);
static void ngx_http_veto_sandbox_key_cleanup(void *data);
static ngx_http_veto_sandbox_key_t *ngx_http_veto_sandbox_key_add(
    ngx_conf_t *cf, ngx_array_t *keys, ngx_str_t *kid, ngx_str_t *file);
static EVP_PKEY *ngx_http_veto_sandbox_jwk_rsa(ngx_conf_t *cf, json_t *jwk,
    ngx_str_t *file, ngx_uint_t n);
static EVP_PKEY *ngx_http_veto_sandbox_jwk_ec(ngx_conf_t *cf, json_t *jwk,
    ngx_str_t *file, ngx_uint_t n);
static ngx_int_t ngx_http_vsb_b64url(ngx_conf_t *cf, json_t *jwk,
    const char *name, ngx_str_t *out);


typedef struct {
    ngx_str_t   name;
    ngx_int_t   alg;
} ngx_http_veto_sandbox_alg_t;


static ngx_http_veto_sandbox_alg_t  ngx_http_veto_sandbox_algs[] = {
    { ngx_string("HS256"), NGX_HTTP_VSB_ALG_HS256 },
    { ngx_string("HS384"), NGX_HTTP_VSB_ALG_HS384 },
    { ngx_string("HS512"), NGX_HTTP_VSB_ALG_HS512 },
    { ngx_string("RS256"), NGX_HTTP_VSB_ALG_RS256 },
    { ngx_string("RS384"), NGX_HTTP_VSB_ALG_RS384 },
    { ngx_string("RS512"), NGX_HTTP_VSB_ALG_RS512 },
    { ngx_string("ES256"), NGX_HTTP_VSB_ALG_ES256 },
    { ngx_string("ES384"), NGX_HTTP_VSB_ALG_ES384 },
    { ngx_string("ES512"), NGX_HTTP_VSB_ALG_ES512 },
    { ngx_null_string, NGX_HTTP_VSB_ALG_INVAL }
};


/* Maps an algorithm name (a key's, a token header's) to ours; "none" and
 * unknown names are NGX_HTTP_VSB_ALG_INVAL. */
ngx_int_t
ngx_http_veto_sandbox_key_alg(ngx_str_t *name)
{
    ngx_http_veto_sandbox_alg_t  *a;

    for (a = ngx_http_veto_sandbox_algs; a->name.len; a++) {
        if (a->name.len == name->len
            && ngx_strncmp(a->name.data, name->data, name->len) == 0)
        {
            return a->alg;
        }
    }

    return NGX_HTTP_VSB_ALG_INVAL;
}


/* Our error messages end with OpenSSL's own reason, when it has one. */
static const char *
ngx_http_veto_sandbox_ssl_error(void)
{
    unsigned long  e;
    const char    *s;

    e = ERR_get_error();
    ERR_clear_error();

    if (e == 0) {
        return "no detail";
    }

    s = ERR_reason_error_string(e);

    return s ? s : "unknown error";
}


char *
ngx_http_veto_sandbox_keys_pem(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *kid, ngx_str_t *alg, ngx_str_t *file)
{
    u_char                       *data, *last;
    size_t                        len;
    BIO                          *bio;
    EVP_PKEY                     *pkey;
    ngx_int_t                     a;
    ngx_http_veto_sandbox_key_t  *key;

    a = ngx_http_veto_sandbox_key_alg(alg);
    if (a == NGX_HTTP_VSB_ALG_INVAL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_key\": unsupported algorithm "
                           "\"%V\" (HS256, HS384, HS512, RS256, RS384, RS512,"
                           " ES256, ES384, ES512)", alg);
        return NGX_CONF_ERROR;
    }

    data = ngx_http_veto_sandbox_read_file(cf, file, &len);
    if (data == NULL) {
        return NGX_CONF_ERROR;
    }

    key = ngx_http_veto_sandbox_key_add(cf, keys, kid, file);
    if (key == NULL) {
        return NGX_CONF_ERROR;
    }

    if (a == NGX_HTTP_VSB_ALG_HS256 || a == NGX_HTTP_VSB_ALG_HS384 || a == NGX_HTTP_VSB_ALG_HS512) {

        /* a secret file may end with a newline an editor added */
        last = data + len;
        while (last > data && (last[-1] == '\n' || last[-1] == '\r')) {
            last--;
        }

        len = last - data;

        if (len < NGX_HTTP_VSB_MIN_HMAC_LEN) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_jwt_key\": HMAC secret in "
                               "\"%V\" is %uz bytes, at least %d needed",
                               file, len, NGX_HTTP_VSB_MIN_HMAC_LEN);
            return NGX_CONF_ERROR;
        }

        key->secret = data;
        key->secret_len = len;

        if (ngx_http_veto_sandbox_key_set(cf, key, a, NULL) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    bio = BIO_new_mem_buf(data, (int) len);
    if (bio == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_key\": BIO_new_mem_buf() "
                           "failed for \"%V\"", file);
        return NGX_CONF_ERROR;
    }

    pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);

    if (pkey == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_key\": \"%V\" is not a PEM "
                           "public key (\"BEGIN PUBLIC KEY\"): %s",
                           file, ngx_http_veto_sandbox_ssl_error());
        return NGX_CONF_ERROR;
    }

    if (ngx_http_veto_sandbox_key_check(cf, pkey, a, file,
                                        "veto_sandbox_jwt_key")
        != NGX_OK)
    {
        EVP_PKEY_free(pkey);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_veto_sandbox_key_set(cf, key, a, pkey) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


char *
ngx_http_veto_sandbox_keys_jwks(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *file)
{
    u_char                       *data;
    size_t                        len;
    json_t                       *doc, *arr, *jwk, *v;
    EVP_PKEY                     *pkey;
    ngx_str_t                     kid, alg;
    ngx_int_t                     a;
    ngx_uint_t                    i;
    const char                   *kty, *key;
    json_error_t                  err;
    ngx_http_veto_sandbox_key_t  *k;

    data = ngx_http_veto_sandbox_read_file(cf, file, &len);
    if (data == NULL) {
        return NGX_CONF_ERROR;
    }

    doc = json_loadb((char *) data, len, JSON_REJECT_DUPLICATES, &err);
    if (doc == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_jwks\": \"%V\" line %d: %s",
                           file, err.line, err.text);
        return NGX_CONF_ERROR;
    }

    arr = json_object_get(doc, "keys");

    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_jwks\": \"%V\" has no "
                           "\"keys\" array", file);
        goto failed;
    }

    json_array_foreach(arr, i, jwk) {

        if (!json_is_object(jwk)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui] "
                               "is not an object", file, i);
            goto failed;
        }

        json_object_foreach(jwk, key, v) {
            if (!json_is_string(v) && ngx_strcmp(key, "key_ops") != 0
                && ngx_strcmp(key, "x5c") != 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_jwt_jwks\": \"%V\" "
                                   "keys[%ui].%s must be a string",
                                   file, i, key);
                goto failed;
            }
        }

        /* a private JWK here means someone published the wrong file */
        if (json_object_get(jwk, "d") != NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui] "
                               "holds private key material (\"d\")", file, i);
            goto failed;
        }

        v = json_object_get(jwk, "use");
        if (v != NULL && ngx_strcmp(json_string_value(v), "sig") != 0) {
            continue;
        }

        v = json_object_get(jwk, "kid");
        if (v == NULL || json_string_length(v) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui] "
                               "has no \"kid\"", file, i);
            goto failed;
        }

        kid.len = json_string_length(v);
        kid.data = ngx_pstrdup(cf->pool, &(ngx_str_t) {
                                   kid.len, (u_char *) json_string_value(v) });
        if (kid.data == NULL) {
            goto failed;
        }

        v = json_object_get(jwk, "kty");
        kty = v ? json_string_value(v) : "";

        if (ngx_strcmp(kty, "RSA") == 0) {
            ngx_str_set(&alg, "RS256");
            pkey = ngx_http_veto_sandbox_jwk_rsa(cf, jwk, file, i);

        } else if (ngx_strcmp(kty, "EC") == 0) {
            ngx_str_set(&alg, "ES256");
            pkey = ngx_http_veto_sandbox_jwk_ec(cf, jwk, file, i);

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui] "
                               "has unsupported \"kty\" \"%s\" (RSA or EC; "
                               "HMAC secrets go in \"veto_sandbox_jwt_key\")",
                               file, i, kty);
            goto failed;
        }

        if (pkey == NULL) {
            goto failed;
        }

        v = json_object_get(jwk, "alg");
        if (v != NULL) {
            alg.data = (u_char *) json_string_value(v);
            alg.len = json_string_length(v);
        }

        a = ngx_http_veto_sandbox_key_alg(&alg);

        if (a == NGX_HTTP_VSB_ALG_INVAL
            || ngx_http_veto_sandbox_key_check(cf, pkey, a, file,
                                               "veto_sandbox_jwt_jwks")
               != NGX_OK)
        {
            if (a == NGX_HTTP_VSB_ALG_INVAL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"veto_sandbox_jwt_jwks\": \"%V\" "
                                   "keys[%ui] has unsupported \"alg\" \"%V\"",
                                   file, i, &alg);
            }

            EVP_PKEY_free(pkey);
            goto failed;
        }

        k = ngx_http_veto_sandbox_key_add(cf, keys, &kid, file);
        if (k == NULL) {
            EVP_PKEY_free(pkey);
            goto failed;
        }

        if (ngx_http_veto_sandbox_key_set(cf, k, a, pkey) != NGX_OK) {
            goto failed;
        }
    }

    json_decref(doc);

    return NGX_CONF_OK;

failed:

    json_decref(doc);

    return NGX_CONF_ERROR;
}


/* The whole file, NUL terminated, from cf->pool (config time only). */
u_char *
ngx_http_veto_sandbox_read_file(ngx_conf_t *cf, ngx_str_t *file, size_t *len)
{
    u_char           *data;
    ssize_t           n;
    ngx_file_t        f;
    ngx_file_info_t   fi;

    ngx_memzero(&f, sizeof(ngx_file_t));

    f.name = *file;
    f.log = cf->log;

    f.fd = ngx_open_file(file->data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (f.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", file);
        return NULL;
    }

    data = NULL;

    if (ngx_fd_info(f.fd, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_fd_info_n " \"%V\" failed", file);
        goto done;
    }

    if (!ngx_is_file(&fi) || ngx_file_size(&fi) > NGX_HTTP_VSB_MAX_KEY_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" is not a regular file of at most %d bytes",
                           file, NGX_HTTP_VSB_MAX_KEY_FILE);
        goto done;
    }

    *len = (size_t) ngx_file_size(&fi);

    data = ngx_pnalloc(cf->pool, *len + 1);
    if (data == NULL) {
        goto done;
    }

    n = ngx_read_file(&f, data, *len, 0);

    if (n == NGX_ERROR || (size_t) n != *len) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "reading \"%V\" failed or was short", file);
        data = NULL;
        goto done;
    }

    data[*len] = '\0';

done:

    if (ngx_close_file(f.fd) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_ALERT, cf, ngx_errno,
                           ngx_close_file_n " \"%V\" failed", file);
    }

    return data;
}


/* The key's type fits the algorithm it is pinned to, and is strong. */
static ngx_int_t
ngx_http_veto_sandbox_key_check(ngx_conf_t *cf, EVP_PKEY *pkey,
    ngx_int_t alg, ngx_str_t *file, const char *what)
{
    int    bits;
    char   group[64];
    size_t glen;

    switch (alg) {

    case NGX_HTTP_VSB_ALG_RS256:
    case NGX_HTTP_VSB_ALG_RS384:
    case NGX_HTTP_VSB_ALG_RS512:
        if (!EVP_PKEY_is_a(pkey, "RSA")) {
            break;
        }

        bits = EVP_PKEY_get_bits(pkey);
        if (bits < NGX_HTTP_VSB_MIN_RSA_BITS) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%s\": RSA key in \"%V\" has %d bits, "
                               "at least %d needed", what, file, bits,
                               NGX_HTTP_VSB_MIN_RSA_BITS);
            return NGX_ERROR;
        }

        return NGX_OK;

    case NGX_HTTP_VSB_ALG_ES256:
    case NGX_HTTP_VSB_ALG_ES384:
    case NGX_HTTP_VSB_ALG_ES512:
        if (!EVP_PKEY_is_a(pkey, "EC")) {
            break;
        }

        if (!EVP_PKEY_get_utf8_string_param(pkey,
                                            OSSL_PKEY_PARAM_GROUP_NAME,
                                            group, sizeof(group), &glen))
        {
            break;
        }

        if ((alg == NGX_HTTP_VSB_ALG_ES256 && ngx_strcmp(group, "prime256v1") == 0)
            || (alg == NGX_HTTP_VSB_ALG_ES384 && ngx_strcmp(group, "secp384r1") == 0)
            || (alg == NGX_HTTP_VSB_ALG_ES512 && ngx_strcmp(group, "secp521r1") == 0))
        {
            return NGX_OK;
        }

        break;

    default:
        break;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"%s\": the key in \"%V\" does not fit its algorithm "
                       "(RS* needs RSA, ES256 EC P-256, ES384 P-384, "
                       "ES512 P-521)", what, file);

    return NGX_ERROR;
}


/*
 * Gives key its algorithm, its digest (fetched once: an implicit fetch
 * per verification costs a lock and a lookup) and pkey, which it owns
 * from here on, freed with cf->pool even when this fails.
 */
static ngx_int_t
ngx_http_veto_sandbox_key_set(ngx_conf_t *cf,
    ngx_http_veto_sandbox_key_t *key, ngx_int_t alg, EVP_PKEY *pkey)
{
    const char                   *md;
    ngx_pool_cleanup_t           *cln;
    ngx_http_veto_sandbox_key_t  *owned;

    /* the cleanup keeps its own copy: the keys array may move */
    cln = ngx_pool_cleanup_add(cf->pool, sizeof(ngx_http_veto_sandbox_key_t));
    if (cln == NULL) {
        EVP_PKEY_free(pkey);
        return NGX_ERROR;
    }

    owned = cln->data;
    ngx_memzero(owned, sizeof(ngx_http_veto_sandbox_key_t));
    owned->pkey = pkey;
    cln->handler = ngx_http_veto_sandbox_key_cleanup;

    key->alg = alg;
    key->pkey = pkey;

    switch (alg) {

    case NGX_HTTP_VSB_ALG_HS384:
    case NGX_HTTP_VSB_ALG_RS384:
    case NGX_HTTP_VSB_ALG_ES384:
        md = "SHA384";
        break;

    case NGX_HTTP_VSB_ALG_HS512:
    case NGX_HTTP_VSB_ALG_RS512:
    case NGX_HTTP_VSB_ALG_ES512:
        md = "SHA512";
        break;

    default:
        md = "SHA256";
        break;
    }

    key->ec = (alg == NGX_HTTP_VSB_ALG_ES256 || alg == NGX_HTTP_VSB_ALG_ES384
               || alg == NGX_HTTP_VSB_ALG_ES512);

    key->md = EVP_MD_fetch(NULL, md, NULL);
    if (key->md == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "EVP_MD_fetch(\"%s\") failed for the key in "
                           "\"%V\": %s", md, &key->source,
                           ngx_http_veto_sandbox_ssl_error());
        return NGX_ERROR;
    }

    owned->md = key->md;

    if (pkey == NULL) {
        return NGX_OK;
    }

    /* made once: the event loop verifies with it, one token at a time
     * (a thread pool's threads make their own, _jws.c) */
    key->pctx = ngx_http_veto_sandbox_key_verify_ctx(key);
    owned->pctx = key->pctx;

    if (key->pctx == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "preparing to verify with the key in \"%V\" "
                           "failed: %s", &key->source,
                           ngx_http_veto_sandbox_ssl_error());
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A context that verifies key's signatures: padding (RS*) and digest set.
 * Touches key->pkey and key->md only to read them (and count a reference
 * to the EVP_PKEY), so any thread may make one.
 */
EVP_PKEY_CTX *
ngx_http_veto_sandbox_key_verify_ctx(ngx_http_veto_sandbox_key_t *key)
{
    EVP_PKEY_CTX  *pctx;

    pctx = EVP_PKEY_CTX_new_from_pkey(NULL, key->pkey, NULL);
    if (pctx == NULL) {
        return NULL;
    }

    if (EVP_PKEY_verify_init(pctx) <= 0
        || (!key->ec
            && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) <= 0)
        || EVP_PKEY_CTX_set_signature_md(pctx, key->md) <= 0)
    {
        EVP_PKEY_CTX_free(pctx);
        return NULL;
    }

    return pctx;
}


static void
ngx_http_veto_sandbox_key_cleanup(void *data)
{
    ngx_http_veto_sandbox_key_t  *key = data;

    EVP_PKEY_CTX_free(key->pctx);
    EVP_PKEY_free(key->pkey);
    EVP_MD_free(key->md);
}


static ngx_http_veto_sandbox_key_t *
ngx_http_veto_sandbox_key_add(ngx_conf_t *cf, ngx_array_t *keys,
    ngx_str_t *kid, ngx_str_t *file)
{
    ngx_uint_t                    i;
    ngx_http_veto_sandbox_key_t  *k;

    k = keys->elts;

    for (i = 0; i < keys->nelts; i++) {
        if (k[i].kid.len == kid->len
            && ngx_strncmp(k[i].kid.data, kid->data, kid->len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate JWT key id \"%V\" in \"%V\" "
                               "(first in \"%V\")", kid, file, &k[i].source);
            return NULL;
        }
    }

    k = ngx_array_push(keys);
    if (k == NULL) {
        return NULL;
    }

    ngx_memzero(k, sizeof(ngx_http_veto_sandbox_key_t));

    k->kid = *kid;
    k->source = *file;

    return k;
}


static ngx_int_t
ngx_http_vsb_b64url(ngx_conf_t *cf, json_t *jwk, const char *name,
    ngx_str_t *out)
{
    json_t     *v;
    ngx_str_t   in;

    v = json_object_get(jwk, name);
    if (v == NULL || json_string_length(v) == 0) {
        return NGX_DECLINED;
    }

    in.data = (u_char *) json_string_value(v);
    in.len = json_string_length(v);

    out->data = ngx_pnalloc(cf->pool, ngx_base64_decoded_length(in.len));
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    if (ngx_decode_base64url(out, &in) != NGX_OK) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static EVP_PKEY *
ngx_http_veto_sandbox_jwk_from(ngx_conf_t *cf, const char *type,
    OSSL_PARAM_BLD *bld, ngx_str_t *file, ngx_uint_t i)
{
    EVP_PKEY      *pkey;
    OSSL_PARAM    *params;
    EVP_PKEY_CTX  *pctx, *cctx;

    pkey = NULL;
    pctx = NULL;

    params = OSSL_PARAM_BLD_to_param(bld);
    if (params == NULL) {
        goto failed;
    }

    pctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (pctx == NULL
        || EVP_PKEY_fromdata_init(pctx) <= 0
        || EVP_PKEY_fromdata(pctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
    {
        goto failed;
    }

    /* the point must be on the curve, the modulus sane */
    cctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (cctx == NULL || EVP_PKEY_public_check(cctx) <= 0) {
        EVP_PKEY_CTX_free(cctx);
        EVP_PKEY_free(pkey);
        pkey = NULL;
        goto failed;
    }

    EVP_PKEY_CTX_free(cctx);
    EVP_PKEY_CTX_free(pctx);
    OSSL_PARAM_free(params);

    return pkey;

failed:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui] is not a "
                       "valid %s public key: %s", file, i, type,
                       ngx_http_veto_sandbox_ssl_error());

    EVP_PKEY_CTX_free(pctx);
    OSSL_PARAM_free(params);

    return NULL;
}


static EVP_PKEY *
ngx_http_veto_sandbox_jwk_rsa(ngx_conf_t *cf, json_t *jwk, ngx_str_t *file,
    ngx_uint_t i)
{
    BIGNUM          *n, *e;
    EVP_PKEY        *pkey;
    ngx_str_t        nb, eb;
    OSSL_PARAM_BLD  *bld;

    if (ngx_http_vsb_b64url(cf, jwk, "n", &nb) != NGX_OK
        || ngx_http_vsb_b64url(cf, jwk, "e", &eb) != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui]: "
                           "\"n\" and \"e\" must be base64url", file, i);
        return NULL;
    }

    pkey = NULL;
    n = BN_bin2bn(nb.data, (int) nb.len, NULL);
    e = BN_bin2bn(eb.data, (int) eb.len, NULL);
    bld = OSSL_PARAM_BLD_new();

    if (n == NULL || e == NULL || bld == NULL
        || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n)
        || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui]: "
                           "building RSA parameters failed: %s", file, i,
                           ngx_http_veto_sandbox_ssl_error());
        goto done;
    }

    pkey = ngx_http_veto_sandbox_jwk_from(cf, "RSA", bld, file, i);

done:

    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);

    return pkey;
}


/* same shape as ngx_http_veto_sandbox_jwk_rsa(): kept apart, a key's
 * parameters are its type's (jwk_from() is the part they share) */
static EVP_PKEY *
ngx_http_veto_sandbox_jwk_ec(ngx_conf_t *cf, json_t *jwk, ngx_str_t *file,
    ngx_uint_t i)
{
    u_char           pub[65];
    json_t          *crv;
    EVP_PKEY        *pkey;
    ngx_str_t        x, y;
    OSSL_PARAM_BLD  *bld;

    crv = json_object_get(jwk, "crv");

    if (crv == NULL || ngx_strcmp(json_string_value(crv), "P-256") != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui]: "
                           "only EC \"crv\" \"P-256\" is supported", file, i);
        return NULL;
    }

    if (ngx_http_vsb_b64url(cf, jwk, "x", &x) != NGX_OK
        || ngx_http_vsb_b64url(cf, jwk, "y", &y) != NGX_OK
        || x.len != 32 || y.len != 32)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui]: "
                           "\"x\" and \"y\" must be 32 bytes of base64url",
                           file, i);
        return NULL;
    }

    pub[0] = 0x04;                      /* uncompressed point */
    ngx_memcpy(pub + 1, x.data, 32);
    ngx_memcpy(pub + 33, y.data, 32);

    pkey = NULL;
    bld = OSSL_PARAM_BLD_new();

    if (bld == NULL
        || !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                            "prime256v1", 0)
        || !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY,
                                             pub, sizeof(pub)))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"veto_sandbox_jwt_jwks\": \"%V\" keys[%ui]: "
                           "building EC parameters failed: %s", file, i,
                           ngx_http_veto_sandbox_ssl_error());
        goto done;
    }

    pkey = ngx_http_veto_sandbox_jwk_from(cf, "EC", bld, file, i);

done:

    OSSL_PARAM_BLD_free(bld);

    return pkey;
}
