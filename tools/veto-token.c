/*
 * veto-token: mints the JSON Web Tokens the gateway accepts and prints
 * the JWKS it verifies them with.
 *
 *   veto-token mint --key FILE --iss ISS --aud AUD --sub AGENT
 *                   --tenant TENANT (--role ROLE | --scope SCOPES)...
 *                   [--alg ALG] [--kid KID] [--ttl DURATION]
 *                   [--jti ID | --no-jti] [--tenant-claim NAME]
 *                   [--scope-claim NAME]
 *   veto-token jwks [--kid KID] [--alg ALG] FILE [[--kid KID] ... FILE]...
 *
 * Keys: PEM RSA (2048 bits or more; RS256/384/512), PEM EC P-256, P-384,
 * P-521 (ES256/384/512), or an HMAC secret file (HS256/384/512, at least
 * 32 bytes, trailing newlines dropped: the gateway reads it the same way).
 * The algorithm comes from the key; an HMAC secret must be asked for with
 * --alg, and a PEM key is never used as an HMAC secret (that is the
 * RS256-to-HS256 confusion the gateway refuses).  Without --kid, an RSA
 * or EC key's kid is its RFC 7638 thumbprint, so "mint" and "jwks" agree
 * without the operator choosing names.
 *
 * Every value the gateway would refuse (a tenant with a space, an agent
 * that cannot be a Redis key part, a 1024-bit RSA key) is refused here,
 * naming the option and the reason.  Exit status: 0 done, 1 bad input or
 * key, 2 usage.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/rand.h>

#include "vt_jose.h"

#define VT_MAX_ID_LEN       128
#define VT_MAX_TEXT_LEN     1024
#define VT_MAX_SCOPES       32
#define VT_MAX_TTL          (366LL * 86400)
#define VT_MAX_JWKS_KEYS    64


/* What --role stands for: the gateway's default scope names. */
static const struct {
    const char  *role;
    const char  *scopes;
} vt_roles[] = {
    { "agent",    "sandbox:create sandbox:exec sandbox:files" },
    { "reviewer", "approvals:review" },
    { "auditor",  "audit:read" },
};

/* Claims mint sets itself: --tenant-claim and --scope-claim may not be
 * one of them. */
static const char *vt_reserved[] = {
    "iss", "aud", "sub", "iat", "nbf", "exp", "jti",
};


static void
vt_usage(void)
{
    fputs(
"usage: veto-token mint --key FILE --iss ISSUER --aud AUDIENCE --sub AGENT\n"
"                       --tenant TENANT (--role ROLE | --scope SCOPES)...\n"
"                       [--alg ALG] [--kid KID] [--ttl DURATION]\n"
"                       [--jti ID | --no-jti] [--tenant-claim NAME]\n"
"                       [--scope-claim NAME]\n"
"       veto-token jwks [--kid KID] [--alg ALG] FILE [[--kid KID] FILE]...\n"
"\n"
"mint   prints a signed JWT.  FILE is a PEM private key (RSA, EC) or, with\n"
"       --alg HS256|HS384|HS512, a secret file.  ROLE: agent (sandbox:create\n"
"       sandbox:exec sandbox:files), reviewer (approvals:review), auditor\n"
"       (audit:read).  DURATION: N, Ns, Nm, Nh or Nd (default 1h).  A random\n"
"       jti is added unless --jti or --no-jti.  Claim names default to\n"
"       tenant and scope.\n"
"jwks   prints a JWKS of the public keys in the PEM FILEs (RSA, EC P-256).\n"
"       --kid and --alg apply to the FILE that follows them.\n"
"\n"
"Without --kid an RSA or EC key's kid is its RFC 7638 thumbprint.\n",
    stderr);
}



/* --- values the gateway would refuse -------------------------------- */

/*
 * sub, tenant and jti: 1..128 printable ASCII without space, as the
 * gateway requires of every identity claim; and none of the characters
 * that cannot be part of a Redis key, since a gateway with Redis refuses
 * such tokens (they could not be revoked).
 */
static int
vt_check_id(const char *opt, const char *v)
{
    size_t  len, i;

    len = strlen(v);

    if (len == 0 || len > VT_MAX_ID_LEN) {
        vt_fail("%s: must be 1 to %d characters, not %zu", opt,
                VT_MAX_ID_LEN, len);
        return -1;
    }

    for (i = 0; i < len; i++) {
        unsigned char  c = (unsigned char) v[i];

        if (c <= 0x20 || c >= 0x7f) {
            vt_fail("%s: character %zu (0x%02x) is not printable ASCII "
                    "(spaces are not allowed)", opt, i + 1, c);
            return -1;
        }

        if (strchr(":{}*?[]\\", c) != NULL) {
            vt_fail("%s: '%c' is not allowed (it cannot be part of a Redis "
                    "key, so the gateway refuses the token)", opt, c);
            return -1;
        }
    }

    return 0;
}


/* iss, aud, kid and claim names: printable ASCII, bounded.  Same shape as
 * vt_check_id(): kept apart because an id also refuses space and the
 * characters of a Redis key, each with its own reason. */
static int
vt_check_text(const char *opt, const char *v)
{
    size_t  len, i;

    len = strlen(v);

    if (len == 0 || len > VT_MAX_TEXT_LEN) {
        vt_fail("%s: must be 1 to %d characters, not %zu", opt,
                VT_MAX_TEXT_LEN, len);
        return -1;
    }

    for (i = 0; i < len; i++) {
        unsigned char  c = (unsigned char) v[i];

        if (c < 0x20 || c >= 0x7f) {
            vt_fail("%s: character %zu (0x%02x) is not printable ASCII",
                    opt, i + 1, c);
            return -1;
        }
    }

    return 0;
}


/* "90", "90s", "15m", "12h", "7d" -> seconds, 1 .. 366 days. */
static int
vt_parse_ttl(const char *v, long long *out)
{
    char       *end;
    long long   n, unit;

    if (v[0] < '0' || v[0] > '9') {
        vt_fail("--ttl: \"%s\" is not a positive duration (N, Ns, Nm, Nh, "
                "Nd)", v);
        return -1;
    }

    errno = 0;
    n = strtoll(v, &end, 10);

    if (errno != 0 || n <= 0) {
        vt_fail("--ttl: \"%s\" is not a positive duration (N, Ns, Nm, Nh, "
                "Nd)", v);
        return -1;
    }

    switch (*end) {
    case '\0': case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default:
        vt_fail("--ttl: unknown unit in \"%s\" (s, m, h or d)", v);
        return -1;
    }

    if (*end != '\0' && end[1] != '\0') {
        vt_fail("--ttl: trailing characters in \"%s\"", v);
        return -1;
    }

    if (n > VT_MAX_TTL / unit) {
        vt_fail("--ttl: \"%s\" is longer than 366 days", v);
        return -1;
    }

    *out = n * unit;
    return 0;
}


/* --- mint ----------------------------------------------------------- */

typedef struct {
    const char  *key_file;
    const char  *alg;
    const char  *kid;
    const char  *iss;
    const char  *aud;
    const char  *sub;
    const char  *tenant;
    const char  *jti;
    const char  *tenant_claim;
    const char  *scope_claim;
    const char  *scopes[VT_MAX_SCOPES];
    size_t       nscopes;
    long long    ttl;
    int          no_jti;
} vt_mint_t;


/* Adds each space-separated scope of list, once. */
static int
vt_add_scopes(vt_mint_t *m, const char *opt, const char *list)
{
    static char  store[VT_MAX_SCOPES][VT_MAX_ID_LEN + 1];
    const char  *p, *e;
    size_t       len, i;

    for (p = list; *p != '\0'; p = e) {
        while (*p == ' ') {
            p++;
        }

        e = p;
        while (*e != '\0' && *e != ' ') {
            e++;
        }

        len = (size_t) (e - p);
        if (len == 0) {
            continue;
        }

        if (len > VT_MAX_ID_LEN) {
            vt_fail("%s: a scope is longer than %d characters", opt,
                    VT_MAX_ID_LEN);
            return -1;
        }

        for (i = 0; i < m->nscopes; i++) {
            if (strlen(m->scopes[i]) == len
                && strncmp(m->scopes[i], p, len) == 0)
            {
                break;
            }
        }

        if (i < m->nscopes) {
            continue;
        }

        if (m->nscopes == VT_MAX_SCOPES) {
            vt_fail("%s: more than %d scopes", opt, VT_MAX_SCOPES);
            return -1;
        }

        memcpy(store[m->nscopes], p, len);
        store[m->nscopes][len] = '\0';

        if (vt_check_text(opt, store[m->nscopes]) != 0) {
            return -1;
        }

        m->scopes[m->nscopes] = store[m->nscopes];
        m->nscopes++;
    }

    return 0;
}


static int
vt_add_role(vt_mint_t *m, const char *role)
{
    size_t  i;

    for (i = 0; i < sizeof(vt_roles) / sizeof(vt_roles[0]); i++) {
        if (strcmp(vt_roles[i].role, role) == 0) {
            return vt_add_scopes(m, "--role", vt_roles[i].scopes);
        }
    }

    vt_fail("--role: unknown role \"%s\" (agent, reviewer, auditor)", role);
    return -1;
}


/* Option "name" with its value in argv[*i + 1]; NULL when it has none. */
static const char *
vt_optarg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        vt_fail("%s needs a value", argv[*i]);
        return NULL;
    }

    (*i)++;
    return argv[*i];
}


static int
vt_mint_args(int argc, char **argv, vt_mint_t *m)
{
    const char   *v, *o;
    const char  **slot;
    int           i;

    m->ttl = 3600;
    m->tenant_claim = "tenant";
    m->scope_claim = "scope";

    for (i = 0; i < argc; i++) {
        o = argv[i];

        if (strcmp(o, "--no-jti") == 0) {
            m->no_jti = 1;
            continue;
        }

        if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
            vt_usage();
            exit(0);
        }

        slot = strcmp(o, "--key") == 0 ? &m->key_file
             : strcmp(o, "--alg") == 0 ? &m->alg
             : strcmp(o, "--kid") == 0 ? &m->kid
             : strcmp(o, "--iss") == 0 ? &m->iss
             : strcmp(o, "--aud") == 0 ? &m->aud
             : strcmp(o, "--sub") == 0 ? &m->sub
             : strcmp(o, "--tenant") == 0 ? &m->tenant
             : strcmp(o, "--jti") == 0 ? &m->jti
             : strcmp(o, "--tenant-claim") == 0 ? &m->tenant_claim
             : strcmp(o, "--scope-claim") == 0 ? &m->scope_claim
             : NULL;

        if (slot == NULL && strcmp(o, "--role") != 0
            && strcmp(o, "--scope") != 0 && strcmp(o, "--ttl") != 0)
        {
            vt_fail("mint: unknown option \"%s\"", o);
            return 2;
        }

        v = vt_optarg(argc, argv, &i);
        if (v == NULL) {
            return 2;
        }

        if (strcmp(o, "--role") == 0) {
            if (vt_add_role(m, v) != 0) {
                return 1;
            }

        } else if (strcmp(o, "--scope") == 0) {
            if (vt_add_scopes(m, "--scope", v) != 0) {
                return 1;
            }

        } else if (strcmp(o, "--ttl") == 0) {
            if (vt_parse_ttl(v, &m->ttl) != 0) {
                return 1;
            }

        } else if (*slot != NULL && slot != &m->tenant_claim
                   && slot != &m->scope_claim)
        {
            vt_fail("%s given twice", o);
            return 2;

        } else {
            *slot = v;
        }
    }

    if (m->key_file == NULL || m->iss == NULL || m->aud == NULL
        || m->sub == NULL || m->tenant == NULL)
    {
        vt_fail("mint needs --key, --iss, --aud, --sub and --tenant "
                "(missing: %s)",
                m->key_file == NULL ? "--key" : m->iss == NULL ? "--iss"
                : m->aud == NULL ? "--aud" : m->sub == NULL ? "--sub"
                : "--tenant");
        return 2;
    }

    if (m->nscopes == 0) {
        vt_fail("mint needs --role or --scope: a token without scopes can "
                "do nothing at the gateway");
        return 2;
    }

    if (m->jti != NULL && m->no_jti) {
        vt_fail("--jti and --no-jti exclude each other");
        return 2;
    }

    if (vt_check_text("--iss", m->iss) != 0
        || vt_check_text("--aud", m->aud) != 0
        || vt_check_id("--sub", m->sub) != 0
        || vt_check_id("--tenant", m->tenant) != 0
        || (m->jti && vt_check_id("--jti", m->jti) != 0)
        || (m->kid && vt_check_text("--kid", m->kid) != 0)
        || vt_check_text("--tenant-claim", m->tenant_claim) != 0
        || vt_check_text("--scope-claim", m->scope_claim) != 0)
    {
        return 1;
    }

    if (strcmp(m->tenant_claim, m->scope_claim) == 0) {
        vt_fail("--tenant-claim and --scope-claim name the same claim");
        return 1;
    }

    for (i = 0; i < (int) (sizeof(vt_reserved) / sizeof(vt_reserved[0]));
         i++)
    {
        if (strcmp(m->tenant_claim, vt_reserved[i]) == 0
            || strcmp(m->scope_claim, vt_reserved[i]) == 0)
        {
            vt_fail("claim name \"%s\" is a registered claim", vt_reserved[i]);
            return 1;
        }
    }

    return 0;
}


static int
vt_mint(int argc, char **argv)
{
    vt_mint_t       m;
    vt_key_t        key;
    json_t         *hdr, *claims;
    char           *kid, *h64, *c64, *sig, *input, *scope;
    unsigned char   rnd[16];
    char            jti[33];
    size_t          i, len;
    long long       now;
    int             rc;

    memset(&m, 0, sizeof(m));

    rc = vt_mint_args(argc, argv, &m);
    if (rc != 0) {
        if (rc == 2) {
            fputs("run \"veto-token --help\" for usage\n", stderr);
        }
        return rc;
    }

    if (vt_key_load(m.key_file, m.alg, 1, &key) != 0) {
        return 1;
    }

    rc = 1;
    kid = NULL;
    hdr = NULL;
    claims = NULL;
    h64 = NULL;
    c64 = NULL;
    sig = NULL;
    input = NULL;
    scope = NULL;

    if (m.kid != NULL) {
        kid = strdup(m.kid);
    } else if (key.alg->type != VT_KEY_HMAC) {
        kid = vt_thumbprint(&key);
        if (kid == NULL) {
            goto done;
        }
    }

    if (!m.no_jti && m.jti == NULL) {
        if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
            vt_fail("RAND_bytes: %s", vt_ssl_error());
            goto done;
        }

        for (i = 0; i < sizeof(rnd); i++) {
            snprintf(jti + 2 * i, 3, "%02x", rnd[i]);
        }

        m.jti = jti;
    }

    for (len = 0, i = 0; i < m.nscopes; i++) {
        len += strlen(m.scopes[i]) + 1;
    }

    scope = malloc(len + 1);
    if (scope == NULL) {
        vt_fail("out of memory");
        goto done;
    }

    scope[0] = '\0';
    for (i = 0; i < m.nscopes; i++) {
        if (i > 0) {
            strcat(scope, " ");
        }
        strcat(scope, m.scopes[i]);
    }

    now = (long long) time(NULL);

    hdr = json_pack("{s:s, s:s}", "alg", key.alg->name, "typ", "JWT");
    claims = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}",
                       "iss", m.iss, "aud", m.aud, "sub", m.sub,
                       m.tenant_claim, m.tenant, m.scope_claim, scope,
                       "iat", (json_int_t) now, "nbf", (json_int_t) now,
                       "exp", (json_int_t) (now + m.ttl));

    if (hdr == NULL || claims == NULL
        || (kid != NULL && json_object_set_new(hdr, "kid",
                                               json_string(kid)) != 0)
        || (m.jti != NULL && json_object_set_new(claims, "jti",
                                                 json_string(m.jti)) != 0))
    {
        vt_fail("building the token failed (out of memory)");
        goto done;
    }

    h64 = vt_b64url_json(hdr);
    c64 = vt_b64url_json(claims);
    if (h64 == NULL || c64 == NULL) {
        goto done;
    }

    len = strlen(h64) + 1 + strlen(c64) + 1;
    input = malloc(len);
    if (input == NULL) {
        vt_fail("out of memory");
        goto done;
    }

    snprintf(input, len, "%s.%s", h64, c64);

    sig = vt_sign(&key, input);
    if (sig == NULL) {
        goto done;
    }

    if (printf("%s.%s\n", input, sig) < 0 || fflush(stdout) != 0) {
        vt_fail("writing the token: %s", strerror(errno));
        goto done;
    }

    rc = 0;

done:

    json_decref(hdr);
    json_decref(claims);
    free(kid);
    free(h64);
    free(c64);
    free(input);
    free(sig);
    free(scope);
    vt_key_free(&key);
    return rc;
}


/* --- jwks ----------------------------------------------------------- */

static int
vt_jwks(int argc, char **argv)
{
    json_t      *keys, *jwk, *doc;
    vt_key_t     key;
    const char  *kid, *alg, *o;
    char        *tp;
    size_t       n, j;
    int          i;

    keys = json_array();
    if (keys == NULL) {
        vt_fail("out of memory");
        return 1;
    }

    kid = NULL;
    alg = NULL;
    n = 0;

    for (i = 0; i < argc; i++) {
        o = argv[i];

        if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
            vt_usage();
            json_decref(keys);
            return 0;
        }

        if (strcmp(o, "--kid") == 0 || strcmp(o, "--alg") == 0) {
            const char  *v = vt_optarg(argc, argv, &i);

            if (v == NULL) {
                goto usage;
            }

            if (o[2] == 'k') {
                if (vt_check_text("--kid", v) != 0) {
                    goto failed;
                }
                kid = v;
            } else {
                alg = v;
            }

            continue;
        }

        if (o[0] == '-' && o[1] != '\0') {
            vt_fail("jwks: unknown option \"%s\"", o);
            goto usage;
        }

        if (n == VT_MAX_JWKS_KEYS) {
            vt_fail("jwks: more than %d keys", VT_MAX_JWKS_KEYS);
            goto failed;
        }

        if (vt_key_load(o, alg, 0, &key) != 0) {
            goto failed;
        }

        if (key.alg->type != VT_KEY_RSA
            && strcmp(key.alg->curve, "P-256") != 0)
        {
            vt_fail("\"%s\": the gateway's JWKS takes RSA and EC P-256 keys; "
                    "configure a %s key with veto_sandbox_jwt_key instead",
                    o, key.alg->curve);
            vt_key_free(&key);
            goto failed;
        }

        jwk = vt_jwk_public(&key);
        tp = kid ? strdup(kid) : vt_thumbprint(&key);

        if (jwk == NULL || tp == NULL
            || json_object_set_new(jwk, "kid", json_string(tp)) != 0
            || json_object_set_new(jwk, "use", json_string("sig")) != 0
            || json_object_set_new(jwk, "alg",
                                   json_string(key.alg->name)) != 0)
        {
            vt_fail("building the JWK of \"%s\" failed", o);
            json_decref(jwk);
            free(tp);
            vt_key_free(&key);
            goto failed;
        }

        for (j = 0; j < n; j++) {
            if (strcmp(json_string_value(json_object_get(
                           json_array_get(keys, j), "kid")), tp) == 0)
            {
                vt_fail("\"%s\": kid \"%s\" is already used by another key "
                        "(or this key is given twice)", o, tp);
                json_decref(jwk);
                free(tp);
                vt_key_free(&key);
                goto failed;
            }
        }

        free(tp);
        vt_key_free(&key);
        json_array_append_new(keys, jwk);
        n++;
        kid = NULL;
        alg = NULL;
    }

    if (n == 0) {
        vt_fail("jwks needs at least one PEM key file");
        goto usage;
    }

    if (kid != NULL || alg != NULL) {
        vt_fail("jwks: --kid/--alg after the last key file apply to nothing");
        goto usage;
    }

    doc = json_pack("{s:o}", "keys", keys);
    if (doc == NULL || json_dumpf(doc, stdout, JSON_INDENT(2)
                                               | JSON_PRESERVE_ORDER) != 0
        || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
    {
        vt_fail("writing the JWKS failed");
        json_decref(doc);
        return 1;
    }

    json_decref(doc);
    return 0;

usage:

    fputs("run \"veto-token --help\" for usage\n", stderr);
    json_decref(keys);
    return 2;

failed:

    json_decref(keys);
    return 1;
}


int
main(int argc, char **argv)
{
    if (argc < 2) {
        vt_usage();
        return 2;
    }

    if (strcmp(argv[1], "mint") == 0) {
        return vt_mint(argc - 2, argv + 2);
    }

    if (strcmp(argv[1], "jwks") == 0) {
        return vt_jwks(argc - 2, argv + 2);
    }

    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        vt_usage();
        return 0;
    }

    vt_fail("unknown command \"%s\" (mint or jwks)", argv[1]);
    vt_usage();
    return 2;
}
