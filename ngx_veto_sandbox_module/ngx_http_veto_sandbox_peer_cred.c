/*
 * The inter-gateway credential: what a gateway that decided a request
 * (identity, policy, revocation, quotas, approval) signs when it hands
 * the request to the gateway host that holds the sandbox, and what that
 * host checks before it runs the request without deciding it again.
 *
 *   Veto-Peer-Credential: v1;h=<host>;t=<ms>;n=<32 hex>;b=<64 hex>[;q=<slot>]
 *                         [;e=<32 hex>];s=<64 hex>
 *
 * h the sending host's name, t its clock (unix ms), n a random nonce
 * (kept in Redis by the receiver: a replay is refused), b the SHA-256 of
 * the request body, q (a create placed on another host) the provisional
 * quota slot the sender holds for it, which the receiver swaps for the
 * sandbox it makes, e (a request for a sandbox) the run of the
 * receiver's helper that the sandbox's ownership record named when the
 * sender read it, which the receiver's helper checks (the epoch fence),
 * s the HMAC-SHA256, under the key every host shares
 * (veto_sandbox_peer_key), of
 *
 *   "veto-peer-v1\n" h "\n" t "\n" n "\n" method "\n" URI "\n" b "\n"
 *   tenant "\n" agent "\n" jti "\n" q "\n" [e "\n"]
 *
 * (the epoch's line only with an epoch: a credential without one is
 * signed as before it existed, so hosts not yet upgraded still route
 * to upgraded ones)
 *
 * so that the credential binds the request (method, URI with its query,
 * body) to the identity the sender decided it for (the receiver reads
 * that identity from the same bearer token, forwarded, and verifies it
 * itself).  Parsing is strict: this order, these lengths, lowercase hex.
 * Pure functions (nginx core and OpenSSL only): fuzz_module_parsers runs
 * the parser.
 */

#include "ngx_http_veto_sandbox_base.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


/* "<name>=" then bytes up to ';' or the end: NGX_OK with v set */
static ngx_int_t
ngx_http_veto_sandbox_peer_field(u_char **pp, u_char *last, char name,
    ngx_str_t *v, ngx_uint_t final)
{
    u_char  *p, *q;

    p = *pp;

    if (last - p < 2 || p[0] != (u_char) name || p[1] != '=') {
        return NGX_DECLINED;
    }

    p += 2;
    q = p;

    while (q < last && *q != ';') {
        q++;
    }

    if (final ? q != last : q == last) {
        return NGX_DECLINED;
    }

    v->data = p;
    v->len = q - p;

    *pp = final ? q : q + 1;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_peer_cred_parse(u_char *p, size_t len,
    ngx_http_veto_sandbox_peer_cred_t *cred)
{
    u_char     *last, *c;

    ngx_memzero(cred, sizeof(*cred));

    if (len > NGX_HTTP_VSB_PEER_CRED_MAX || len < 3
        || ngx_strncmp(p, "v1;", 3) != 0)
    {
        return NGX_DECLINED;
    }

    last = p + len;
    p += 3;

    if (ngx_http_veto_sandbox_peer_field(&p, last, 'h', &cred->host, 0)
        != NGX_OK
        || ngx_http_veto_sandbox_peer_field(&p, last, 't', &cred->time, 0)
           != NGX_OK
        || ngx_http_veto_sandbox_peer_field(&p, last, 'n', &cred->nonce, 0)
           != NGX_OK
        || ngx_http_veto_sandbox_peer_field(&p, last, 'b', &cred->body, 0)
           != NGX_OK
        || (last - p >= 2 && p[0] == 'q'
            && ngx_http_veto_sandbox_peer_field(&p, last, 'q', &cred->slot, 0)
               != NGX_OK)
        || (last - p >= 2 && p[0] == 'e'
            && ngx_http_veto_sandbox_peer_field(&p, last, 'e', &cred->epoch,
                                                0)
               != NGX_OK)
        || ngx_http_veto_sandbox_peer_field(&p, last, 's', &cred->sig, 1)
           != NGX_OK)
    {
        return NGX_DECLINED;
    }

    if (cred->slot.data != NULL) {
        if (cred->slot.len == 0 || cred->slot.len > 128) {
            return NGX_DECLINED;
        }

        for (c = cred->slot.data; c < cred->slot.data + cred->slot.len; c++) {
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')
                  || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'
                  || *c == '_'))
            {
                return NGX_DECLINED;
            }
        }
    }

    /* the helper's epoch: exactly its length, lowercase hex */
    if (cred->epoch.data != NULL
        && (cred->epoch.len != VSB_EPOCH_LEN
            || !ngx_http_veto_sandbox_hex_lower(cred->epoch.data,
                                                VSB_EPOCH_LEN)))
    {
        return NGX_DECLINED;
    }

    if (cred->host.len == 0 || cred->host.len > 64) {
        return NGX_DECLINED;
    }

    for (c = cred->host.data; c < cred->host.data + cred->host.len; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')
              || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'
              || *c == '_'))
        {
            return NGX_DECLINED;
        }
    }

    if (cred->time.len == 0 || cred->time.len > 15) {
        return NGX_DECLINED;
    }

    /* at most 15 digits: no overflow */
    for (c = cred->time.data; c < cred->time.data + cred->time.len; c++) {
        if (*c < '0' || *c > '9') {
            return NGX_DECLINED;
        }

        cred->ms = cred->ms * 10 + (*c - '0');
    }

    if (cred->nonce.len != 32 || cred->body.len != 64 || cred->sig.len != 64
        || !ngx_http_veto_sandbox_hex_lower(cred->nonce.data, 32)
        || !ngx_http_veto_sandbox_hex_lower(cred->body.data, 64)
        || !ngx_http_veto_sandbox_hex_lower(cred->sig.data, 64))
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* The HMAC of the signed text, as 64 lowercase hex digits in out[65]. */
ngx_int_t
ngx_http_veto_sandbox_peer_cred_sign(ngx_pool_t *pool, ngx_str_t *key,
    ngx_http_veto_sandbox_peer_cred_t *cred, ngx_str_t *method,
    ngx_str_t *uri, ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *jti,
    u_char *out)
{
    u_char        *text, *p;
    size_t         len;
    unsigned int   mdlen;
    u_char         md[EVP_MAX_MD_SIZE];

    if (key->len == 0) {
        return NGX_ERROR;
    }

    len = sizeof("veto-peer-v1\n") - 1 + cred->host.len + cred->time.len
          + cred->nonce.len + method->len + uri->len + cred->body.len
          + tenant->len + agent->len + jti->len + cred->slot.len
          + cred->epoch.len + 11;

    text = ngx_pnalloc(pool, len);
    if (text == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(text,
                    "veto-peer-v1\n%V\n%V\n%V\n%V\n%V\n%V\n%V\n%V\n%V\n%V\n"
                    "%V%s",
                    &cred->host, &cred->time, &cred->nonce, method, uri,
                    &cred->body, tenant, agent, jti, &cred->slot,
                    &cred->epoch, cred->epoch.len ? "\n" : "");

    if (HMAC(EVP_sha256(), key->data, (int) key->len, text, p - text, md,
             &mdlen)
        == NULL || mdlen != 32)
    {
        return NGX_ERROR;
    }

    p = ngx_hex_dump(out, md, 32);
    *p = '\0';

    return NGX_OK;
}


/* NGX_OK when the signature is the one the key makes; constant time. */
ngx_int_t
ngx_http_veto_sandbox_peer_cred_check(ngx_pool_t *pool, ngx_str_t *key,
    ngx_http_veto_sandbox_peer_cred_t *cred, ngx_str_t *method,
    ngx_str_t *uri, ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *jti)
{
    u_char  want[65];

    if (ngx_http_veto_sandbox_peer_cred_sign(pool, key, cred, method, uri,
                                             tenant, agent, jti, want)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return CRYPTO_memcmp(want, cred->sig.data, 64) == 0 ? NGX_OK
                                                        : NGX_DECLINED;
}
