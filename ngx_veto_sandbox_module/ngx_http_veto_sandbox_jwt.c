/*
 * Bearer token verification.  The algorithm is pinned first: the key is
 * chosen by "kid" and the header's alg must be that key's alg, or the
 * token is refused before any signature check (RS256 -> HS256 confusion,
 * "none").  Then the signature is checked with the key decoded at
 * configuration time (_jws.c), and the claims here, parsed strictly from
 * the very bytes the signature covers.
 */

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_jwt.h"

#include <openssl/evp.h>


static ngx_int_t ngx_http_veto_sandbox_jwt_prepare(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *token,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_jwt_job_t *job,
    const char **reason);
static ngx_int_t ngx_http_veto_sandbox_jwt_finish(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf,
    ngx_http_veto_sandbox_jwt_job_t *job, ngx_http_veto_sandbox_ctx_t *ctx,
    const char **reason);
static ngx_int_t ngx_http_veto_sandbox_jwt_key(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *p, size_t len,
    ngx_http_veto_sandbox_key_t **key, const char **reason);
static ngx_http_veto_sandbox_key_t *ngx_http_veto_sandbox_jwt_hdr_get(
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *p, size_t len);
static void ngx_http_veto_sandbox_jwt_hdr_put(
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *p, size_t len,
    ngx_http_veto_sandbox_key_t *key);
static ngx_uint_t ngx_http_veto_sandbox_b64_canonical(u_char *p,
    size_t len);
static json_t *ngx_http_veto_sandbox_b64_json(ngx_http_request_t *r,
    u_char *p, size_t len);
static ngx_int_t ngx_http_veto_sandbox_claims(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, json_t *claims,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t *until, const char **reason);
static ngx_int_t ngx_http_veto_sandbox_id_claim(ngx_http_request_t *r,
    json_t *claims, const char *name, ngx_str_t *out);


ngx_int_t
ngx_http_veto_sandbox_jwt_verify(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *token,
    ngx_http_veto_sandbox_ctx_t *ctx, const char **reason,
    ngx_uint_t may_wait)
{
    ngx_int_t                         rc;
    ngx_http_veto_sandbox_jwt_job_t   job;

    rc = ngx_http_veto_sandbox_jwt_prepare(r, vscf, token, ctx, &job, reason);
    if (rc != NGX_AGAIN) {
        return rc;              /* cached, or refused before any crypto */
    }

#if (NGX_THREADS)
    /* an HMAC costs less than handing it to a thread */
    if (may_wait && vscf->jwt_pool && job.key->pkey) {
        rc = ngx_http_veto_sandbox_jwt_post(r, vscf, ctx, &job);
        if (rc != NGX_DECLINED) {
            return rc;          /* NGX_AGAIN: posted; NGX_ERROR */
        }

        /* the pool's queue is full: verified here, as without a pool */
    }
#endif

    job.rc = ngx_http_veto_sandbox_jws_check(job.key, job.key->pctx, job.in,
                                             job.in_len, job.sig,
                                             job.sig_len);

    return ngx_http_veto_sandbox_jwt_finish(r, vscf, &job, ctx, reason);
}


/*
 * Everything before the signature's check, none of it crypto but the
 * cache's hash: NGX_OK (the cache knows the token: ctx is set),
 * NGX_DECLINED (*reason: malformed, an alg or a kid we do not take, a
 * signature that cannot be the key's), NGX_ERROR, or NGX_AGAIN: job is
 * ready for ngx_http_veto_sandbox_jws_check().
 */
static ngx_int_t
ngx_http_veto_sandbox_jwt_prepare(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, ngx_str_t *token,
    ngx_http_veto_sandbox_ctx_t *ctx, ngx_http_veto_sandbox_jwt_job_t *job,
    const char **reason)
{
    u_char                       *p, *last, *dot1, *dot2;
    ngx_int_t                     rc;
    ngx_uint_t                    dots;
    unsigned int                  hlen;
    ngx_http_veto_sandbox_key_t  *key;

    if (token->len == 0) {
        *reason = "empty token";
        return NGX_DECLINED;
    }

    if (token->len > vscf->max_token_size) {
        *reason = "token too large";
        return NGX_DECLINED;
    }

    /* compact serialization: three base64url parts, two dots */
    dots = 0;
    dot1 = NULL;
    dot2 = NULL;
    last = token->data + token->len;

    for (p = token->data; p < last; p++) {
        if (*p == '.') {
            if (++dots == 1) {
                dot1 = p;
            } else {
                dot2 = p;
            }
            continue;
        }

        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')
              || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
        {
            *reason = "malformed token";
            return NGX_DECLINED;
        }
    }

    if (dots != 2 || dot1 == token->data || dot2 == dot1 + 1) {
        *reason = "malformed token";
        return NGX_DECLINED;
    }

    if (dot2 + 1 == last) {
        *reason = "unsigned token";
        return NGX_DECLINED;
    }

    /* one token, one spelling: bits past the data in a part's last
     * character would let the same signed bytes travel as other tokens
     * (found by t/fuzz/fuzz_module_jwt_diff.c: libjwt refused them) */
    if (!ngx_http_veto_sandbox_b64_canonical(token->data,
                                             dot1 - token->data)
        || !ngx_http_veto_sandbox_b64_canonical(dot1 + 1, dot2 - dot1 - 1)
        || !ngx_http_veto_sandbox_b64_canonical(dot2 + 1, last - dot2 - 1))
    {
        *reason = "malformed token";
        return NGX_DECLINED;
    }

    job->r = r;
    job->hashed = 0;

    /* the hash is the cache's key: without a cache it is not needed */
    if (vscf->cache_zone) {
        if (EVP_Digest(token->data, token->len, job->hash, &hlen,
                       EVP_sha256(), NULL)
            != 1)
        {
            *reason = "internal error";
            return NGX_ERROR;
        }

        job->hashed = 1;

        if (ngx_http_veto_sandbox_cache_get(r, vscf, job->hash, ctx)
            == NGX_OK)
        {
            return NGX_OK;
        }
    }

    key = ngx_http_veto_sandbox_jwt_hdr_get(vscf, token->data,
                                            dot1 - token->data);
    if (key == NULL) {
        rc = ngx_http_veto_sandbox_jwt_key(r, vscf, token->data,
                                           dot1 - token->data, &key, reason);
        if (rc != NGX_OK) {
            return rc;
        }

        ngx_http_veto_sandbox_jwt_hdr_put(vscf, token->data,
                                          dot1 - token->data, key);
    }

    /* a signature of the wrong length, or not base64url, is refused
     * before any crypto */
    if (ngx_http_veto_sandbox_jws_decode(key, dot2 + 1, last - dot2 - 1,
                                         job->sig, &job->sig_len)
        != NGX_OK)
    {
        *reason = "bad signature";
        return NGX_DECLINED;
    }

    job->key = key;
    job->in = token->data;
    job->in_len = dot2 - token->data;
    job->claims = dot1 + 1;
    job->claims_len = dot2 - dot1 - 1;
    job->rc = NGX_ERROR;
    job->nice = 0;
    job->finish = ngx_http_veto_sandbox_jwt_finish;

    return NGX_AGAIN;
}


/*
 * The key a token's header (base64url, len bytes at p) names, with the
 * algorithm pinned: NGX_OK and *key, or NGX_DECLINED and *reason.
 */
static ngx_int_t
ngx_http_veto_sandbox_jwt_key(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, u_char *p, size_t len,
    ngx_http_veto_sandbox_key_t **key, const char **reason)
{
    json_t                       *header, *v;
    ngx_int_t                     rc;
    ngx_str_t                     alg, kid;
    ngx_uint_t                    i;
    ngx_http_veto_sandbox_key_t  *keys, *k;

    header = ngx_http_veto_sandbox_b64_json(r, p, len);
    if (header == NULL) {
        *reason = "malformed token header";
        return NGX_DECLINED;
    }

    rc = NGX_DECLINED;

    v = json_object_get(header, "alg");
    if (!json_is_string(v)) {
        *reason = "token header has no alg";
        goto done;
    }

    alg.data = (u_char *) json_string_value(v);
    alg.len = json_string_length(v);

    if (ngx_http_veto_sandbox_key_alg(&alg) == NGX_HTTP_VSB_ALG_INVAL) {
        *reason = "token alg not accepted";
        goto done;
    }

    /* no extension is understood, so none may be critical */
    if (json_object_get(header, "crit") != NULL) {
        *reason = "token header has crit";
        goto done;
    }

    v = json_object_get(header, "kid");
    if (v != NULL && !json_is_string(v)) {
        *reason = "token kid is not a string";
        goto done;
    }

    keys = vscf->keys->elts;
    k = NULL;

    if (v != NULL) {
        kid.data = (u_char *) json_string_value(v);
        kid.len = json_string_length(v);

        for (i = 0; i < vscf->keys->nelts; i++) {
            if (keys[i].kid.len == kid.len
                && ngx_strncmp(keys[i].kid.data, kid.data, kid.len) == 0)
            {
                k = &keys[i];
                break;
            }
        }

        if (k == NULL) {
            *reason = "unknown kid";
            goto done;
        }

    } else if (vscf->keys->nelts == 1) {
        k = &keys[0];

    } else {
        *reason = "token has no kid";
        goto done;
    }

    /* the pin: the key, not the token, says how to verify */
    if (ngx_http_veto_sandbox_key_alg(&alg) != k->alg) {
        *reason = "token alg does not match its key";
        goto done;
    }

    *key = k;
    rc = NGX_OK;

done:

    json_decref(header);

    return rc;
}


/*
 * The headers this worker has seen name a key, by their exact base64url
 * bytes.  Every token a key signs carries the same header, so its decode,
 * its parse (jansson) and the key's lookup are done once per header, not
 * once per token (perf: a tenth of an uncached RS256 token's cost was
 * jansson).  Only a header that passed every check before the signature
 * is kept, and the same bytes decode and parse the same, so a hit is the
 * parse's own outcome.  A few entries, replaced in turn: headers made up
 * to miss cost a parse each, as they did before.  Per worker (its copy of
 * the configuration), so no lock.
 */
#define NGX_HTTP_VSB_JWT_HDRS     8
#define NGX_HTTP_VSB_JWT_HDR_LEN  256

typedef struct {
    ngx_http_veto_sandbox_key_t  *key;       /* NULL: empty */
    size_t                        len;
    u_char                        data[NGX_HTTP_VSB_JWT_HDR_LEN];
} ngx_http_veto_sandbox_jwt_hdr_t;


typedef struct {
    ngx_uint_t                       next;   /* replaced next */
    ngx_http_veto_sandbox_jwt_hdr_t  hdr[NGX_HTTP_VSB_JWT_HDRS];
} ngx_http_veto_sandbox_jwt_hdrs_t;


ngx_int_t
ngx_http_veto_sandbox_jwt_init_conf(ngx_conf_t *cf,
    ngx_http_veto_sandbox_srv_conf_t *vscf)
{
    if (vscf->keys == NULL || vscf->jwt_hdrs != NULL) {
        return NGX_OK;
    }

    vscf->jwt_hdrs = ngx_pcalloc(cf->pool,
                                 sizeof(ngx_http_veto_sandbox_jwt_hdrs_t));
    if (vscf->jwt_hdrs == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_http_veto_sandbox_key_t *
ngx_http_veto_sandbox_jwt_hdr_get(ngx_http_veto_sandbox_srv_conf_t *vscf,
    u_char *p, size_t len)
{
    ngx_uint_t                         i;
    ngx_http_veto_sandbox_jwt_hdr_t   *h;
    ngx_http_veto_sandbox_jwt_hdrs_t  *hs;

    hs = vscf->jwt_hdrs;

    if (hs == NULL || len > NGX_HTTP_VSB_JWT_HDR_LEN) {
        return NULL;
    }

    for (i = 0; i < NGX_HTTP_VSB_JWT_HDRS; i++) {
        h = &hs->hdr[i];

        if (h->key != NULL && h->len == len
            && ngx_memcmp(h->data, p, len) == 0)
        {
            return h->key;
        }
    }

    return NULL;
}


static void
ngx_http_veto_sandbox_jwt_hdr_put(ngx_http_veto_sandbox_srv_conf_t *vscf,
    u_char *p, size_t len, ngx_http_veto_sandbox_key_t *key)
{
    ngx_http_veto_sandbox_jwt_hdr_t   *h;
    ngx_http_veto_sandbox_jwt_hdrs_t  *hs;

    hs = vscf->jwt_hdrs;

    if (hs == NULL || len > NGX_HTTP_VSB_JWT_HDR_LEN) {
        return;
    }

    h = &hs->hdr[hs->next];
    hs->next = (hs->next + 1) % NGX_HTTP_VSB_JWT_HDRS;

    ngx_memcpy(h->data, p, len);
    h->len = len;
    h->key = key;
}


/* After the check (job->rc): the claims, parsed strictly from the bytes
 * the signature covers, and the cache.  On the event loop: here, or a
 * thread's completion (_jwt_thread.c) through job->finish. */
static ngx_int_t
ngx_http_veto_sandbox_jwt_finish(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf,
    ngx_http_veto_sandbox_jwt_job_t *job, ngx_http_veto_sandbox_ctx_t *ctx,
    const char **reason)
{
    time_t      until;
    json_t     *claims;
    ngx_int_t   rc;

    if (job->rc != NGX_OK) {
        *reason = job->rc == NGX_DECLINED ? "bad signature"
                                          : "internal error";
        return job->rc;
    }

    claims = ngx_http_veto_sandbox_b64_json(r, job->claims, job->claims_len);
    if (claims == NULL) {
        *reason = "malformed token claims";
        return NGX_DECLINED;
    }

    rc = ngx_http_veto_sandbox_claims(r, vscf, claims, ctx, &until, reason);

    if (rc == NGX_OK && job->hashed) {
        ngx_http_veto_sandbox_cache_put(r, vscf, job->hash, ctx, until);
    }

    json_decref(claims);

    return rc;
}




/*
 * base64url without padding as RFC 4648 3.5 spells it: no length that
 * leaves a lone character, and no bit set in the last character past the
 * data it carries (2 or 3 characters: 4 or 2 of its bits unused).  p
 * holds base64url characters only (checked before).
 */
static ngx_uint_t
ngx_http_veto_sandbox_b64_canonical(u_char *p, size_t len)
{
    u_char      c;
    ngx_uint_t  v;

    if (len % 4 == 0) {
        return 1;
    }

    if (len % 4 == 1) {
        return 0;
    }

    c = p[len - 1];

    if (c >= 'A' && c <= 'Z') {
        v = c - 'A';

    } else if (c >= 'a' && c <= 'z') {
        v = c - 'a' + 26;

    } else if (c >= '0' && c <= '9') {
        v = c - '0' + 52;

    } else {
        v = (c == '-') ? 62 : 63;
    }

    return (v & (len % 4 == 2 ? 0x0f : 0x03)) == 0;
}


static json_t *
ngx_http_veto_sandbox_b64_json(ngx_http_request_t *r, u_char *p, size_t len)
{
    json_t     *j;
    ngx_str_t   in, out;

    in.data = p;
    in.len = len;

    out.data = ngx_pnalloc(r->pool, ngx_base64_decoded_length(len) + 1);
    if (out.data == NULL) {
        return NULL;
    }

    if (ngx_decode_base64url(&out, &in) != NGX_OK) {
        return NULL;
    }

    j = json_loadb((char *) out.data, out.len, JSON_REJECT_DUPLICATES, NULL);
    if (j == NULL) {
        return NULL;
    }

    if (!json_is_object(j)) {
        json_decref(j);
        return NULL;
    }

    return j;
}


static ngx_int_t
ngx_http_veto_sandbox_time_claim(json_t *claims, const char *name,
    time_t *t)
{
    json_t  *v;

    v = json_object_get(claims, name);
    if (v == NULL) {
        return NGX_DECLINED;
    }

    /* NumericDate; beyond year 5000 is nonsense and would overflow the
     * leeway arithmetic */
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0 || json_integer_value(v) > 95617584000LL)
        {
            return NGX_ERROR;
        }

        *t = (time_t) json_integer_value(v);
        return NGX_OK;
    }

    if (json_is_real(v) && json_real_value(v) >= 0
        && json_real_value(v) <= 95617584000.0)
    {
        *t = (time_t) json_real_value(v);
        return NGX_OK;
    }

    return NGX_ERROR;
}


static ngx_int_t
ngx_http_veto_sandbox_claims(ngx_http_request_t *r,
    ngx_http_veto_sandbox_srv_conf_t *vscf, json_t *claims,
    ngx_http_veto_sandbox_ctx_t *ctx, time_t *until, const char **reason)
{
    u_char       *p, *last, *s;
    char          name[128];
    time_t        now, exp, t;
    json_t       *v, *e;
    size_t        len;
    ngx_int_t     rc;
    ngx_uint_t    i, k;
    ngx_str_t     scope;

    /* who, first: a signed token refused below (expired, another
     * audience) is still on its tenant's audit record */
    if (ngx_http_veto_sandbox_id_claim(r, claims, "sub", &ctx->agent)
        != NGX_OK)
    {
        *reason = "missing or invalid sub";
        return NGX_DECLINED;
    }

    if (vscf->tenant_claim.len >= sizeof(name)) {
        *reason = "tenant claim name too long";
        return NGX_DECLINED;
    }

    ngx_cpystrn((u_char *) name, vscf->tenant_claim.data,
                vscf->tenant_claim.len + 1);

    if (ngx_http_veto_sandbox_id_claim(r, claims, name, &ctx->tenant)
        != NGX_OK)
    {
        *reason = "missing or invalid tenant claim";
        return NGX_DECLINED;
    }

    now = ngx_time();

    rc = ngx_http_veto_sandbox_time_claim(claims, "exp", &exp);
    if (rc != NGX_OK) {
        *reason = rc == NGX_DECLINED ? "token has no exp" : "bad exp";
        return NGX_DECLINED;
    }

    if (now >= exp + vscf->leeway) {
        *reason = "token expired";
        return NGX_DECLINED;
    }

    rc = ngx_http_veto_sandbox_time_claim(claims, "nbf", &t);
    if (rc == NGX_ERROR) {
        *reason = "bad nbf";
        return NGX_DECLINED;
    }

    if (rc == NGX_OK && t > now + vscf->leeway) {
        *reason = "token not yet valid";
        return NGX_DECLINED;
    }

    rc = ngx_http_veto_sandbox_time_claim(claims, "iat", &t);
    if (rc == NGX_ERROR) {
        *reason = "bad iat";
        return NGX_DECLINED;
    }

    if (rc == NGX_OK && t > now + vscf->leeway) {
        *reason = "token issued in the future";
        return NGX_DECLINED;
    }

    ctx->iat = (rc == NGX_OK) ? t : -1;

    v = json_object_get(claims, "iss");
    if (!json_is_string(v)
        || json_string_length(v) != vscf->issuer.len
        || ngx_strncmp(json_string_value(v), vscf->issuer.data,
                       vscf->issuer.len) != 0)
    {
        *reason = "wrong issuer";
        return NGX_DECLINED;
    }

    /* aud: a string or an array of strings; ours must be among them */
    v = json_object_get(claims, "aud");
    k = 0;

    if (json_is_string(v)) {
        k = json_string_length(v) == vscf->audience.len
            && ngx_strncmp(json_string_value(v), vscf->audience.data,
                           vscf->audience.len) == 0;

    } else if (json_is_array(v)) {
        json_array_foreach(v, i, e) {
            if (json_is_string(e)
                && json_string_length(e) == vscf->audience.len
                && ngx_strncmp(json_string_value(e), vscf->audience.data,
                               vscf->audience.len) == 0)
            {
                k = 1;
            }
        }
    }

    if (!k) {
        *reason = "wrong audience";
        return NGX_DECLINED;
    }

    /* a jti that is there must be usable: revocation looks tokens up by
     * it, and one it cannot name (a number, 129 bytes) could never be
     * revoked */
    if (json_object_get(claims, "jti") != NULL
        && ngx_http_veto_sandbox_id_claim(r, claims, "jti", &ctx->jti)
           != NGX_OK)
    {
        *reason = "invalid jti";
        return NGX_DECLINED;
    }

    /* scope: "a b c" (RFC 8693) or ["a", "b"] */
    ctx->scopes = 0;

    if (vscf->scope_claim.len >= sizeof(name)) {
        *reason = "scope claim name too long";
        return NGX_DECLINED;
    }

    ngx_cpystrn((u_char *) name, vscf->scope_claim.data,
                vscf->scope_claim.len + 1);

    v = json_object_get(claims, name);

    for (i = 0; v != NULL; i++) {

        if (json_is_string(v)) {
            if (i > 0) {
                break;
            }
            s = (u_char *) json_string_value(v);
            len = json_string_length(v);

        } else if (json_is_array(v)) {
            if (i >= json_array_size(v)) {
                break;
            }
            e = json_array_get(v, i);
            if (!json_is_string(e)) {
                continue;
            }
            s = (u_char *) json_string_value(e);
            len = json_string_length(e);

        } else {
            *reason = "bad scope claim";
            return NGX_DECLINED;
        }

        last = s + len;

        while (s < last) {
            while (s < last && *s == ' ') {
                s++;
            }

            for (p = s; p < last && *p != ' '; p++) { /* void */ }

            scope.data = s;
            scope.len = p - s;

            for (k = 0; k < NGX_HTTP_VSB_NSCOPES; k++) {
                if (scope.len == vscf->scope[k].len
                    && ngx_strncmp(scope.data, vscf->scope[k].data,
                                   scope.len) == 0)
                {
                    ctx->scopes |= (ngx_uint_t) 1 << k;
                }
            }

            s = p;
        }
    }

    *until = exp + vscf->leeway;

    return NGX_OK;
}


/* sub and tenant name owners in the helper: 1..128 printable ASCII. */
static ngx_int_t
ngx_http_veto_sandbox_id_claim(ngx_http_request_t *r, json_t *claims,
    const char *name, ngx_str_t *out)
{
    u_char      *p;
    json_t      *v;
    size_t       len, i;

    v = json_object_get(claims, name);

    if (!json_is_string(v)) {
        return NGX_DECLINED;
    }

    len = json_string_length(v);
    p = (u_char *) json_string_value(v);

    if (len == 0 || len > VSB_MAX_ID_LEN) {
        return NGX_DECLINED;
    }

    for (i = 0; i < len; i++) {
        if (p[i] < 0x21 || p[i] > 0x7e) {
            return NGX_DECLINED;
        }
    }

    out->data = ngx_pnalloc(r->pool, len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(out->data, p, len);
    out->len = len;

    return NGX_OK;
}
