/*
 * Differential libFuzzer target for the module's token verification
 * (ngx_http_veto_sandbox_jwt.c, _jws.c: OpenSSL directly) against libjwt
 * (1.x, the design's JWT library) as an independent oracle.  The input
 * is a token: the module sees it as "Authorization: Bearer <input>" with
 * three keys configured (kid "hs" HS256, "rs" RS256, "ec" ES256, public
 * PEMs), the claims it requires (iss, aud, tenant in the policy, exp at
 * the harness's clock ...); libjwt decodes the same bytes with each key
 * in turn (jwt_decode(): signature and alg, no claims).
 *
 * The module must never accept what libjwt refuses: when it lets a token
 * through, libjwt must accept it with one of the keys under that key's
 * own algorithm (so an HS256 token MACed with the RSA key's PEM, which
 * libjwt takes as an HMAC secret, does not count), and read the same
 * sub and tenant.  Anything else aborts.  The module is stricter by
 * design, and those are fine: it refuses alg "none", a header without
 * kid or with crit, an alg its key does not pin, claims out of time or
 * of another issuer, audience or tenant, ids outside the helper's
 * alphabet, base64url that is not canonical.
 *
 * Where libjwt 1.10 is laxer or differs without it being a module bug
 * (the comparison skips these, see lax()):
 *   - libjwt reads the token as a C string: bytes after a NUL are not
 *     its (the module refuses a NUL: not base64url);
 *   - libjwt verifies only what the header's alg says, with whatever key
 *     it is handed: the key/alg pin is the module's own check (above);
 *   - the spaces around the token are the Authorization header's
 *     (RFC 6750: "Bearer" 1*SP b64token; nginx drops the trailing ones),
 *     which the module skips: libjwt gets the token without them.  The
 *     first run found this (" eyJ...": accepted by the module, refused
 *     by libjwt), a harness matter, not a module one.
 *
 * What it found: the module took a signature whose last base64url
 * character had a bit set past the data (the same bytes, another token;
 * libjwt re-encodes and compares, and refused it): now refused as
 * malformed (regress-noncanonical-sig, t/module/identity.t).
 *
 * Seeds (both accept the ok-* ones): t/fuzz/jwt_diff_seeds.py writes
 * t/fuzz/corpus/fuzz_module_jwt_diff/; regress-* are inputs it found.
 * VETO_FUZZ_VERBOSE=1 prints each input's verdicts.  No FUZZ-COVERS line: the line coverage of _jwt.c
 * and _jws.c is fuzz_module_jwt's to hold; these seeds are a handful of
 * valid tokens, enough to start from what verifies.
 */

#include "ngx_http_veto_sandbox_jwt.c"
#include "ngx_http_veto_sandbox_jws.c"
#include "ngx_http_veto_sandbox_keys.c"
#include "ngx_http_veto_sandbox_identity.c"

#include <jwt.h>
#include <sys/mman.h>

#include "ngx_core_stub.h"
/* the harness reaches the op table (a face) to load its policy */
#include "ngx_http_veto_sandbox_faces.h"
#include "fuzz_module_request.h"
#include "fuzz_module_file.h"
#include "fuzz_module_jwt_conf.h"


#include "fuzz_module_jwt_unreached.h"


/* the keys, the same bytes for both verifiers (jwt_diff_seeds.py holds
 * the private halves) */
static const char  hs_secret[] = "fuzz-diff-secret-0123456789abcdef0123";

static const char  rsa_pem[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvURVB+Z/V6VB3/p1d5qX\n"
    "OusjSSyVyvvIDi2ddab1Z41nvxQWRPeM7JuUmfy3jKdjeH+3BJ+k8FXGi6K8mf91\n"
    "Xs07sat5d6NPZXgm0EgUGGhCKIkycxkxPSgcjQGXNgLvi9/6+j1KRhkRaRQV6TyI\n"
    "XwfD3DG7hPZOUR7tyEL4lNU5grN/kdTpRX/Hu0Dhq3etq5/tL/DfyWxbgEfiZEiy\n"
    "VbRX6jcu7dE+0/r8yGXrxue7p4YxlCKNG0rcglR/RqVpvYaO9+3Wqvng+7wUW6Wj\n"
    "g4N3FyzsPExNKAmEFrxZao89K2DrehspikSElhepNwjZe/yXUWHfZTIEpoue1afx\n"
    "jQIDAQAB\n"
    "-----END PUBLIC KEY-----\n";

static const char  ec_pem[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEVGo3lLVMNJwuTen5mTYx93b8KSkB\n"
    "X8DE8zQuNWFSKPcItJ3YXGgklYsxPLZ2Or2B6vdsEFE7/bb6+k1aZ39TRg==\n"
    "-----END PUBLIC KEY-----\n";

static const struct {
    const char  *kid;
    const char  *alg;
    const char  *key;
    size_t       len;
    jwt_alg_t    jalg;
} keys[] = {
    { "hs", "HS256", hs_secret, sizeof(hs_secret) - 1, JWT_ALG_HS256 },
    { "rs", "RS256", rsa_pem, sizeof(rsa_pem) - 1, JWT_ALG_RS256 },
    { "ec", "ES256", ec_pem, sizeof(ec_pem) - 1, JWT_ALG_ES256 },
};

#define NKEYS  (sizeof(keys) / sizeof(keys[0]))

static const char  policy_text[] =
    "{\"version\": 1, \"tenants\": {\"acme\": {}, \"t1\": {}}}";

static ngx_http_veto_sandbox_srv_conf_t   vscf;
static int                                verbose;


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int           fd;
    ngx_str_t     file, kid, alg;
    ngx_uint_t    i;
    ngx_conf_t    cf;
    ngx_pool_t   *pool;

    verbose = getenv("VETO_FUZZ_VERBOSE") != NULL;

    ngx_stub_init();

    fd = fuzz_file_open("veto-fuzz-jwt-diff", &file);

    pool = ngx_create_pool(1024, ngx_cycle->log);
    ngx_stub_conf(&cf, pool);

    vscf.keys = ngx_array_create(pool, NKEYS,
                                 sizeof(ngx_http_veto_sandbox_key_t));
    if (vscf.keys == NULL) {
        abort();
    }

    for (i = 0; i < NKEYS; i++) {
        fuzz_file_put(fd, keys[i].key, keys[i].len);

        kid.data = (u_char *) keys[i].kid;
        kid.len = ngx_strlen(keys[i].kid);
        alg.data = (u_char *) keys[i].alg;
        alg.len = ngx_strlen(keys[i].alg);

        if (ngx_http_veto_sandbox_keys_pem(&cf, vscf.keys, &kid, &alg, &file)
            != NGX_CONF_OK)
        {
            fprintf(stderr, "fuzz_module_jwt_diff: key %s: %s\n",
                    keys[i].kid, ngx_stub_last_error());
            abort();
        }
    }

    fuzz_file_put(fd, policy_text, sizeof(policy_text) - 1);
    vscf.policy = ngx_http_veto_sandbox_policy_load(&cf, &file,
                                                    ngx_http_veto_sandbox_ops_table());
    if (vscf.policy == NULL) {
        abort();
    }

    fuzz_jwt_conf(&cf, &vscf);

    return 0;
}


/* the module's verdict on "Bearer <token>": NGX_OK with the identity in
 * *out, or NGX_DECLINED */
static ngx_int_t
module_verify(ngx_pool_t *pool, const uint8_t *data, size_t size,
    ngx_http_veto_sandbox_ctx_t **out)
{
    u_char                       *v;
    void                         *ctxs[1], *srv[1];
    ngx_int_t                     rc;
    ngx_table_elt_t               h;
    ngx_connection_t              c;
    ngx_http_request_t            r;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_pcalloc(pool, sizeof(ngx_http_veto_sandbox_ctx_t));
    v = ngx_pnalloc(pool, sizeof("Bearer ") - 1 + size);
    if (ctx == NULL || v == NULL) {
        abort();
    }

    ngx_memcpy(ngx_cpymem(v, "Bearer ", sizeof("Bearer ") - 1), data, size);

    ngx_memzero(&h, sizeof(ngx_table_elt_t));

    fuzz_request_init(&r, &c, ctxs, srv, pool, ctx, &vscf);

    h.value.data = v;
    h.value.len = sizeof("Bearer ") - 1 + size;
    r.headers_in.authorization = &h;

    rc = ngx_http_veto_sandbox_identify(&r, ctx, 1);

    if (rc != NGX_OK && rc != NGX_DECLINED) {
        abort();                /* no thread pool: it never waits */
    }

    *out = ctx;

    return rc;
}


/* a grant libjwt read, against the module's: the same bytes */
static ngx_uint_t
same(jwt_t *jwt, const char *grant, ngx_str_t *s)
{
    const char  *v;

    v = jwt_get_grant(jwt, grant);

    return v != NULL && strlen(v) == s->len
           && ngx_memcmp(v, s->data, s->len) == 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char                         *tok;
    jwt_t                        *jwt;
    ngx_int_t                     mrc;
    ngx_uint_t                    i, lib, agree;
    ngx_pool_t                   *pool;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    if (size > 16384) {
        return 0;
    }

    pool = ngx_create_pool(1024, ngx_cycle->log);
    if (pool == NULL) {
        abort();
    }

    mrc = module_verify(pool, data, size, &ctx);

    /* libjwt reads a C string: what follows a NUL is not its (lax(),
     * above); the module must refuse a NUL anyway */
    if (memchr(data, '\0', size) != NULL) {
        if (mrc == NGX_OK) {
            fprintf(stderr, "module accepted a token with a NUL\n");
            abort();
        }

        ngx_destroy_pool(pool);
        return 0;
    }

    /* a refusal is the module's to make (it is stricter by design):
     * libjwt, which decodes each PEM on every call, is asked only about
     * what the module let through (and for the seeds' verdicts) */
    if (mrc != NGX_OK && !verbose) {
        ngx_destroy_pool(pool);
        return 0;
    }

    tok = ngx_pnalloc(pool, size + 1);
    if (tok == NULL) {
        abort();
    }

    /* the token the module verified: without the header's spaces */
    while (size && data[0] == ' ') {
        data++;
        size--;
    }

    while (size && data[size - 1] == ' ') {
        size--;
    }

    ngx_memcpy(tok, data, size);
    tok[size] = '\0';

    lib = 0;
    agree = 0;

    for (i = 0; i < NKEYS; i++) {
        jwt = NULL;

        if (jwt_decode(&jwt, tok, (const unsigned char *) keys[i].key,
                       (int) keys[i].len) == 0
            && jwt != NULL && jwt_get_alg(jwt) == keys[i].jalg)
        {
            lib |= 1u << i;

            if (mrc == NGX_OK
                && same(jwt, "sub", &ctx->agent)
                && same(jwt, "tenant", &ctx->tenant))
            {
                agree = 1;
            }
        }

        jwt_free(jwt);
    }

    if (verbose) {
        fprintf(stderr, "fuzz_module_jwt_diff: module %s%s%s, libjwt keys "
                "0x%x\n", mrc == NGX_OK ? "accepts" : "refuses: ",
                mrc == NGX_OK ? "" : ctx->reason ? ctx->reason : "?",
                "", (unsigned) lib);
    }

    if (mrc == NGX_OK && !agree) {
        fprintf(stderr, "fuzz_module_jwt_diff: the module accepted a token "
                "libjwt refuses (libjwt keys 0x%x): %.*s\n", (unsigned) lib,
                (int) size, (const char *) data);
        abort();
    }

    ngx_destroy_pool(pool);

    return 0;
}
