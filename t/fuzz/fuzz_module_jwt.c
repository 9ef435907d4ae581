/*
 * libFuzzer target for the module's token side: what an agent puts in
 * the Authorization header, the claims of a token whose signature holds,
 * and the JWKS file an operator points "veto_sandbox_jwt_jwks" at.
 *
 * The first byte picks the input:
 *
 *   0  an Authorization header value, through
 *      ngx_http_veto_sandbox_identify() with three keys configured (an
 *      HS256 secret, an ES256 and an RS256 JWK): hostile tokens are
 *      refused with a reason, never crash, and the same with and without
 *      the headers already seen (_jwt.c's header cache);
 *   1  a JOSE header and claims (split at the first NUL), signed here
 *      with the HS256 key and sent as "Bearer <token>": the claims checks
 *      after the signature (sub, tenant, exp/nbf/iat, iss, aud, jti,
 *      scope) on exactly these bytes;
 *   2  a JWKS document, loaded as "nginx -t" would: refused with a
 *      message, or every key it gave carries an algorithm and a key that
 *      fits it.
 *
 * An identity let through must be one the claims named: sub and tenant
 * within the helper's id alphabet, the policy's rule for them, a scope
 * the token listed.  Anything else aborts.  The module's files are
 * included so that their static checks are reachable; nginx's core calls
 * come from t/unit/ngx_core_stub.c.
 *
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_jwt.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_jws.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_identity.c:ngx_http_veto_sandbox_(identify|scope_check)
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_keys.c:ngx_http_veto_sandbox_(keys_jwks|jwk_.*|key_check|key_set|key_add|read_file)|ngx_http_vsb_b64url
 */

#include "ngx_http_veto_sandbox_jwt.c"
#include "ngx_http_veto_sandbox_jws.c"
#include "ngx_http_veto_sandbox_keys.c"
#include "ngx_http_veto_sandbox_identity.c"

#include <openssl/hmac.h>
#include <sys/mman.h>

#include "ngx_core_stub.h"
/* the harness reaches the op table (a face) to load its policy */
#include "ngx_http_veto_sandbox_faces.h"
#include "fuzz_module_request.h"
#include "fuzz_module_file.h"
#include "fuzz_module_jwt_conf.h"


enum {
    FUZZ_HEADER = 0,
    FUZZ_CLAIMS,
    FUZZ_JWKS,
    FUZZ_NMODES
};


#include "fuzz_module_jwt_unreached.h"


/* the keys: an HS256 secret (what mode 1 signs with), and one EC P-256
 * and one RSA 2048 public JWK, so that hostile signatures meet every
 * verifier */

/* the RSA JWK's modulus (2048 bits, base64url) */
#define FUZZ_RSA_N \
    "u9uSzDWAxEF52rbvFHmObBAtlk487fkIUjvCFOM2PBIs4gWVewKoWeT6MGX2" \
    "RV_OB_wMLlb3RGWY9x-h_0-2duxB9NPUQKURPHSSnu4H1zK6PeXy0Bdgpfut" \
    "vSIlo8bfypAemAMJHh3V9WDdkvGMBuMhaphGsbxRCV1k21kuuZx9947NH44j" \
    "H_Br74HSkiWSp-Bxvsuxi6u_7jXExktVTO_OYs5k-KE5U4mAbzn-jpyP0aW0" \
    "MvnpEMs5afdafLUNociFKj3A5rKrlUDW8z8O1rW4OXTjE8j5aqWU5LdW2nEU" \
    "p1HPK6f3JaShynzcCNiSLSQJ5gR2FegYj09KOvcJ1w"

static const char  hs_secret[] = "fuzz-secret-0123456789abcdef0123456789";

static const char  jwks_text[] =
    "{\"keys\": ["
    "{\"kty\": \"EC\", \"kid\": \"ec\", \"use\": \"sig\", \"crv\": \"P-256\","
    " \"x\": \"n11thFh4aJiRZ0d4BHyWvf0kYzW4lOFJK6TWKcsAwlM\","
    " \"y\": \"CN6IoQL3oaD7_KQrxdIu53j6yehxfY_i0CG1X4Eifuk\"},"
    "{\"kty\": \"RSA\", \"kid\": \"rs\", \"alg\": \"RS256\", \"e\": \"AQAB\","
    " \"n\": \"" FUZZ_RSA_N "\"}]}";

static const char  policy_text[] =
    "{\"version\": 1, \"tenants\": {\"acme\": {\"profiles\": [\"default\"]},"
    " \"t1\": {\"agents\": {\"a1\": {\"profiles\": [\"default\"]}}}}}";

static ngx_pool_t                        *conf_pool;
static ngx_http_veto_sandbox_srv_conf_t   vscf;
static int                                file_fd = -1;
static ngx_str_t                          file_path;


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ngx_conf_t  cf;

    ngx_stub_init();

    file_fd = fuzz_file_open("veto-fuzz-jwt", &file_path);

    conf_pool = ngx_create_pool(1024, ngx_cycle->log);
    ngx_stub_conf(&cf, conf_pool);

    vscf.keys = ngx_array_create(conf_pool, 4,
                                 sizeof(ngx_http_veto_sandbox_key_t));
    if (vscf.keys == NULL) {
        abort();
    }

    fuzz_file_put(file_fd, hs_secret, sizeof(hs_secret) - 1);
    if (ngx_http_veto_sandbox_keys_pem(&cf, vscf.keys,
                                       &(ngx_str_t) ngx_string("hs"),
                                       &(ngx_str_t) ngx_string("HS256"),
                                       &file_path)
        != NGX_CONF_OK)
    {
        abort();
    }

    fuzz_file_put(file_fd, jwks_text, sizeof(jwks_text) - 1);
    if (ngx_http_veto_sandbox_keys_jwks(&cf, vscf.keys, &file_path)
        != NGX_CONF_OK || vscf.keys->nelts != 3)
    {
        fprintf(stderr, "fuzz_module_jwt: %s\n", ngx_stub_last_error());
        abort();
    }

    fuzz_file_put(file_fd, policy_text, sizeof(policy_text) - 1);
    vscf.policy = ngx_http_veto_sandbox_policy_load(&cf, &file_path,
                                                    ngx_http_veto_sandbox_ops_table());
    if (vscf.policy == NULL) {
        abort();
    }

    fuzz_jwt_conf(&cf, &vscf);

    return 0;
}


/* id claims as the helper takes them: 1..128 printable ASCII */
static ngx_uint_t
id_ok(ngx_str_t *s)
{
    size_t  i;

    if (s->len == 0 || s->len > VSB_MAX_ID_LEN) {
        return 0;
    }

    for (i = 0; i < s->len; i++) {
        if (s->data[i] < 0x21 || s->data[i] > 0x7e) {
            return 0;
        }
    }

    return 1;
}


/* value through identify(): refused with a reason, or an identity the
 * policy knows; its ctx in *out */
static ngx_int_t
identify_once(ngx_pool_t *pool, u_char *value, size_t len,
    ngx_http_veto_sandbox_ctx_t **out)
{
    void                         *ctxs[1];
    void                         *srv[1];
    ngx_int_t                     rc;
    ngx_uint_t                    k;
    ngx_table_elt_t               h;
    ngx_http_veto_sandbox_op_t    op;
    ngx_connection_t              c;
    ngx_http_request_t            r;
    ngx_http_veto_sandbox_ctx_t  *ctx;

    ctx = ngx_pcalloc(pool, sizeof(ngx_http_veto_sandbox_ctx_t));
    if (ctx == NULL) {
        abort();
    }

    ngx_memzero(&h, sizeof(ngx_table_elt_t));
    ngx_memzero(&op, sizeof(ngx_http_veto_sandbox_op_t));

    fuzz_request_init(&r, &c, ctxs, srv, pool, ctx, &vscf);

    h.value.data = value;
    h.value.len = len;
    r.headers_in.authorization = &h;

    /* may wait: no thread pool is configured, so it never does */
    rc = ngx_http_veto_sandbox_identify(&r, ctx, 1);
    *out = ctx;

#define must(cond)  do { if (!(cond)) abort(); } while (0)

    if (rc == NGX_DECLINED) {
        must(ctx->decision.len > 0 && !ctx->identified);
        must(ngx_strncmp(ctx->decision.data, "deny:", 5) == 0);
        return rc;
    }

    must(rc == NGX_OK && ctx->identified && ctx->rule != NULL);
    must(id_ok(&ctx->agent) && id_ok(&ctx->tenant));
    must(ctx->jti.len == 0 || id_ok(&ctx->jti));
    must(ctx->scopes < (1u << NGX_HTTP_VSB_NSCOPES));

    /* an op asking for one scope: let through iff the token listed it,
     * else refused naming it */
    for (k = 0; k < NGX_HTTP_VSB_NSCOPES; k++) {
        op.scopes = (ngx_uint_t) 1 << k;
        ctx->op = &op;
        ctx->reason = NULL;

        rc = ngx_http_veto_sandbox_scope_check(&r, ctx);

        must((rc == NGX_OK) == ((ctx->scopes & op.scopes) != 0));
        must(rc == NGX_OK
             || (ctx->reason != NULL
                 && ngx_strlen(ctx->reason) == vscf.scope[k].len));
    }

#undef must

    return NGX_OK;
}


static ngx_int_t
str_eq(ngx_str_t *a, ngx_str_t *b)
{
    return a->len == b->len
           && (a->len == 0 || ngx_memcmp(a->data, b->data, a->len) == 0);
}


/*
 * identify_once() with this worker's known headers (_jwt.c: a header
 * that named a key before skips its parse) and again without them: the
 * header cache never changes a verdict, a reason or an identity.
 */
static void
identify(ngx_pool_t *pool, u_char *value, size_t len)
{
    void                         *hdrs;
    ngx_int_t                     rc1, rc2;
    ngx_http_veto_sandbox_ctx_t  *c1, *c2;

    rc1 = identify_once(pool, value, len, &c1);

    hdrs = vscf.jwt_hdrs;
    vscf.jwt_hdrs = NULL;
    rc2 = identify_once(pool, value, len, &c2);
    vscf.jwt_hdrs = hdrs;

    if (rc1 != rc2 || !str_eq(&c1->decision, &c2->decision)
        || c1->reason != c2->reason || !str_eq(&c1->agent, &c2->agent)
        || !str_eq(&c1->tenant, &c2->tenant) || c1->scopes != c2->scopes)
    {
        abort();
    }
}


static size_t
b64url(u_char *dst, const u_char *src, size_t len)
{
    ngx_str_t  d, s;

    d.data = dst;
    s.data = (u_char *) src;
    s.len = len;

    ngx_encode_base64url(&d, &s);

    return d.len;
}


/* header NUL claims (or the claims alone under an HS256 header), signed
 * with the HS256 key */
static void
fuzz_claims(ngx_pool_t *pool, const uint8_t *data, size_t size)
{
    u_char         *tok, *p, *signed_from;
    size_t          hlen, clen;
    unsigned int    mlen;
    u_char          mac[EVP_MAX_MD_SIZE];
    const uint8_t  *hdr, *cl, *nul;

    static const u_char  hs[] =
        "{\"alg\":\"HS256\",\"kid\":\"hs\",\"typ\":\"JWT\"}";

    nul = memchr(data, '\0', size);

    if (nul == NULL) {
        hdr = hs;
        hlen = sizeof(hs) - 1;
        cl = data;
        clen = size;

    } else {
        hdr = data;
        hlen = nul - data;
        cl = nul + 1;
        clen = size - hlen - 1;
    }

    tok = ngx_pnalloc(pool, sizeof("Bearer ") - 1
                            + ngx_base64_encoded_length(hlen)
                            + ngx_base64_encoded_length(clen)
                            + ngx_base64_encoded_length(EVP_MAX_MD_SIZE) + 2);
    if (tok == NULL) {
        abort();
    }

    p = ngx_cpymem(tok, "Bearer ", sizeof("Bearer ") - 1);
    signed_from = p;
    p += b64url(p, hdr, hlen);
    *p++ = '.';
    p += b64url(p, cl, clen);

    if (HMAC(EVP_sha256(), hs_secret, sizeof(hs_secret) - 1, signed_from,
             p - signed_from, mac, &mlen)
        == NULL)
    {
        abort();
    }

    *p++ = '.';
    p += b64url(p, mac, mlen);

    identify(pool, tok, p - tok);
}


/* a JWKS file: refused, or keys that each fit their algorithm */
static void
fuzz_jwks(ngx_pool_t *pool, const uint8_t *data, size_t size)
{
    char                         *rv;
    ngx_uint_t                    i;
    ngx_conf_t                    cf;
    ngx_array_t                  *keys;
    ngx_http_veto_sandbox_key_t  *k;

    ngx_stub_conf(&cf, pool);

    keys = ngx_array_create(pool, 2, sizeof(ngx_http_veto_sandbox_key_t));
    if (keys == NULL) {
        abort();
    }

    fuzz_file_put(file_fd, data, size);
    ngx_stub_clear_error();

    rv = ngx_http_veto_sandbox_keys_jwks(&cf, keys, &file_path);

    if (rv != NGX_CONF_OK) {
        if (ngx_stub_last_error()[0] == '\0') {
            abort();            /* refused without saying why */
        }
        return;
    }

    k = keys->elts;

    for (i = 0; i < keys->nelts; i++) {
        if (k[i].kid.len == 0 || k[i].pkey == NULL || k[i].pctx == NULL
            || k[i].md == NULL
            || (k[i].alg != NGX_HTTP_VSB_ALG_RS256
                && k[i].alg != NGX_HTTP_VSB_ALG_RS384
                && k[i].alg != NGX_HTTP_VSB_ALG_RS512
                && k[i].alg != NGX_HTTP_VSB_ALG_ES256
                && k[i].alg != NGX_HTTP_VSB_ALG_ES384
                && k[i].alg != NGX_HTTP_VSB_ALG_ES512)
            || k[i].ec != (k[i].alg >= NGX_HTTP_VSB_ALG_ES256))
        {
            abort();
        }
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char      *copy;
    ngx_pool_t  *pool;

    if (size == 0) {
        return 0;
    }

    pool = ngx_create_pool(1024, ngx_cycle->log);
    if (pool == NULL) {
        abort();
    }

    switch (data[0] % FUZZ_NMODES) {

    case FUZZ_HEADER:
        /* its own allocation, so ASan sees a read past the header */
        copy = ngx_pnalloc(pool, size);
        if (copy == NULL) {
            abort();
        }
        ngx_memcpy(copy, data + 1, size - 1);
        identify(pool, copy, size - 1);
        break;

    case FUZZ_CLAIMS:
        fuzz_claims(pool, data + 1, size - 1);
        break;

    default:
        fuzz_jwks(pool, data + 1, size - 1);
        break;
    }

    ngx_destroy_pool(pool);

    return 0;
}
