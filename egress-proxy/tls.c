/*
 * The CA, the leaf cache and the two SSL contexts (eg_tls.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "eg_allow.h"
#include "eg_log.h"
#include "eg_tls.h"

typedef struct {
    char        host[EG_HOST_MAX + 1];
    X509       *cert;
    EVP_PKEY   *key;
    time_t      not_after;
    unsigned    used;               /* the clock of the last use */
} eg_leaf_t;

static struct {
    int            on;
    X509          *ca;
    EVP_PKEY      *ca_key;
    SSL_CTX       *server;
    SSL_CTX       *client;
    eg_leaf_t     *leaves;
    unsigned       nleaves, cap, clock;
    unsigned long  minted;
} eg_tls;


static void
eg_tls_errstr(char *err, size_t errlen, const char *what)
{
    unsigned long  e = ERR_get_error();
    char           buf[256];

    ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, errlen, "%s: %s", what, e ? buf : "failed");
    ERR_clear_error();
}


int
eg_tls_enabled(void)
{
    return eg_tls.on;
}


unsigned long
eg_tls_minted(void)
{
    return eg_tls.minted;
}


unsigned
eg_tls_cached(void)
{
    return eg_tls.nleaves;
}


static int
eg_tls_serial(X509 *x)
{
    unsigned char  r[16];
    BIGNUM        *bn;
    int            ok;

    if (RAND_bytes(r, sizeof(r)) != 1) {
        return -1;
    }
    r[0] &= 0x7f;                   /* positive */
    bn = BN_bin2bn(r, sizeof(r), NULL);
    ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))
                       != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}


static int
eg_tls_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX       ctx;
    X509_EXTENSION  *ext;
    int              ok;

    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL) {
        return -1;
    }
    ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}


/* A certificate for key, signed by signer (itself for the CA). */
static X509 *
eg_tls_make_cert(const char *cn, EVP_PKEY *key, X509 *issuer,
    EVP_PKEY *signer, long days, int ca)
{
    X509       *x = X509_new();
    X509_NAME  *name;
    char        san[EG_HOST_MAX + 8];

    if (x == NULL || !X509_set_version(x, 2) || eg_tls_serial(x) != 0
        || X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L) == NULL
        || !X509_set_pubkey(x, key))
    {
        X509_free(x);
        return NULL;
    }
    name = X509_get_subject_name(x);
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    (const unsigned char *) cn, -1, -1, 0)
        || !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer)
                                           : name))
    {
        X509_free(x);
        return NULL;
    }
    if (ca) {
        if (eg_tls_ext(x, x, NID_basic_constraints,
                       "critical,CA:TRUE,pathlen:0") != 0
            || eg_tls_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign")
               != 0
            || eg_tls_ext(x, x, NID_subject_key_identifier, "hash") != 0)
        {
            X509_free(x);
            return NULL;
        }
    } else {
        snprintf(san, sizeof(san), "DNS:%s", cn);
        if (eg_tls_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE")
            != 0
            || eg_tls_ext(x, issuer, NID_key_usage,
                          "critical,digitalSignature") != 0
            || eg_tls_ext(x, issuer, NID_ext_key_usage, "serverAuth") != 0
            || eg_tls_ext(x, issuer, NID_subject_alt_name, san) != 0
            || eg_tls_ext(x, issuer, NID_authority_key_identifier,
                          "keyid:always") != 0)
        {
            X509_free(x);
            return NULL;
        }
    }
    if (X509_sign(x, signer, EVP_sha256()) == 0) {
        X509_free(x);
        return NULL;
    }
    return x;
}


static int
eg_tls_write_pem(const char *path, mode_t mode, X509 *x, EVP_PKEY *k,
    char *err, size_t errlen)
{
    int    fd, ok;
    FILE  *f;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              mode);
    if (fd == -1 || fchmod(fd, mode) != 0 || (f = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "create %s: %s", path, strerror(errno));
        if (fd != -1) {
            close(fd);
            unlink(path);
        }
        return -1;
    }
    ok = x ? PEM_write_X509(f, x)
           : PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    if (fclose(f) != 0 || !ok) {
        snprintf(err, errlen, "write %s failed", path);
        unlink(path);
        return -1;
    }
    return 0;
}


/* Loads ca_dir's CA, or makes one if neither file exists. */
static int
eg_tls_ca(const char *dir, char *err, size_t errlen)
{
    char          cp[300], kp[300];
    struct stat   st;
    int           hc, hk;
    FILE         *f;

    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "ca_dir: mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)
        || (st.st_mode & 022) != 0)
    {
        snprintf(err, errlen, "ca_dir %s: not a directory, or writable by "
                 "group or others", dir);
        return -1;
    }
    snprintf(cp, sizeof(cp), "%s/ca.pem", dir);
    snprintf(kp, sizeof(kp), "%s/ca.key", dir);
    hc = lstat(cp, &st) == 0;
    hk = lstat(kp, &st) == 0;

    if (!hc && !hk) {
        eg_tls.ca_key = EVP_EC_gen("P-256");
        if (eg_tls.ca_key == NULL) {
            eg_tls_errstr(err, errlen, "CA key");
            return -1;
        }
        eg_tls.ca = eg_tls_make_cert("Veto Sandbox egress CA",
                                     eg_tls.ca_key, NULL, eg_tls.ca_key,
                                     3650, 1);
        if (eg_tls.ca == NULL) {
            eg_tls_errstr(err, errlen, "CA certificate");
            return -1;
        }
        if (eg_tls_write_pem(kp, 0600, NULL, eg_tls.ca_key, err, errlen)
            != 0
            || eg_tls_write_pem(cp, 0644, eg_tls.ca, NULL, err, errlen) != 0)
        {
            unlink(kp);
            return -1;
        }
        eg_log(EG_LOG_INFO, "made a new CA in %s (ca.pem, ca.key)", dir);
        return 0;
    }
    if (!hc || !hk) {
        snprintf(err, errlen, "ca_dir %s holds only one of ca.pem and ca.key "
                 "(remove it to have a new CA made)", dir);
        return -1;
    }

    if ((st.st_mode & 077) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
        snprintf(err, errlen, "%s must be a file owned by root, mode 0600",
                 kp);
        return -1;
    }
    f = fopen(kp, "re");
    if (f == NULL) {
        snprintf(err, errlen, "open %s: %s", kp, strerror(errno));
        return -1;
    }
    eg_tls.ca_key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    f = fopen(cp, "re");
    if (f == NULL) {
        snprintf(err, errlen, "open %s: %s", cp, strerror(errno));
        return -1;
    }
    eg_tls.ca = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (eg_tls.ca == NULL || eg_tls.ca_key == NULL
        || X509_check_private_key(eg_tls.ca, eg_tls.ca_key) != 1)
    {
        eg_tls_errstr(err, errlen, "the CA in ca_dir (ca.pem and ca.key "
                      "must be a pair)");
        return -1;
    }
    return 0;
}


static int
eg_tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char  h11[] = "\x08http/1.1";

    (void) ssl;
    (void) arg;
    if (SSL_select_next_proto((unsigned char **) out, outlen, h11,
                              sizeof(h11) - 1, in, inlen)
        != OPENSSL_NPN_NEGOTIATED)
    {
        return SSL_TLSEXT_ERR_ALERT_FATAL;  /* no http/1.1 offered */
    }
    return SSL_TLSEXT_ERR_OK;
}


/* The SNI must name the host the connection was allowed for (OpenSSL
 * calls this for every ClientHello, with or without SNI). */
static int
eg_tls_sni(SSL *ssl, int *alert, void *arg)
{
    const char  *want = SSL_get_app_data(ssl);
    const char  *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    size_t       n;

    (void) arg;
    if (want == NULL || sni == NULL) {
        *alert = SSL_AD_ACCESS_DENIED;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    n = strlen(sni);
    if (n > 0 && sni[n - 1] == '.') {
        n--;
    }
    if (n != strlen(want) || strncasecmp(sni, want, n) != 0) {
        *alert = SSL_AD_ACCESS_DENIED;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    return SSL_TLSEXT_ERR_OK;
}


int
eg_tls_init(const eg_config_t *cf, char *err, size_t errlen)
{
    X509_STORE  *store;
    char         e2[512];

    if (cf->credentials_dir[0] == '\0') {
        return 0;
    }
    if (cf->ca_dir[0] == '\0') {
        snprintf(err, errlen, "credentials_dir needs ca_dir (where the "
                 "proxy's CA is kept)");
        return -1;
    }
    if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1) {
        eg_tls_errstr(err, errlen, "OPENSSL_init_ssl");
        return -1;
    }
    if (eg_tls_ca(cf->ca_dir, e2, sizeof(e2)) != 0) {
        snprintf(err, errlen, "ca_dir: %s", e2);
        return -1;
    }

    eg_tls.server = SSL_CTX_new(TLS_server_method());
    eg_tls.client = SSL_CTX_new(TLS_client_method());
    if (eg_tls.server == NULL || eg_tls.client == NULL
        || !SSL_CTX_set_min_proto_version(eg_tls.server, TLS1_2_VERSION)
        || !SSL_CTX_set_min_proto_version(eg_tls.client, TLS1_2_VERSION))
    {
        eg_tls_errstr(err, errlen, "SSL_CTX_new");
        return -1;
    }
    SSL_CTX_set_options(eg_tls.server, SSL_OP_NO_RENEGOTIATION
                        | SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_session_cache_mode(eg_tls.server, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_alpn_select_cb(eg_tls.server, eg_tls_alpn_select, NULL);
    SSL_CTX_set_tlsext_servername_callback(eg_tls.server, eg_tls_sni);

    SSL_CTX_set_options(eg_tls.client, SSL_OP_NO_RENEGOTIATION
                        | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_verify(eg_tls.client, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(eg_tls.client, SSL_SESS_CACHE_OFF);
    store = SSL_CTX_get_cert_store(eg_tls.client);
    /* loaded now: after the drop the proxy opens no file */
    if (X509_STORE_load_file(store, cf->upstream_ca_file) != 1) {
        eg_tls_errstr(e2, sizeof(e2), "");
        snprintf(err, errlen, "upstream_ca_file %s: cannot load it%s",
                 cf->upstream_ca_file, e2);
        return -1;
    }

    eg_tls.cap = cf->leaf_cache_size;
    eg_tls.leaves = calloc(eg_tls.cap, sizeof(*eg_tls.leaves));
    if (eg_tls.leaves == NULL) {
        snprintf(err, errlen, "out of memory for the leaf cache");
        return -1;
    }
    eg_tls.on = 1;
    return 0;
}


static void
eg_leaf_clear(eg_leaf_t *l)
{
    X509_free(l->cert);
    EVP_PKEY_free(l->key);
    memset(l, 0, sizeof(*l));
}


/* The cached leaf for host, or a new one (evicting the least recently
 * used when full).  NULL with err. */
static eg_leaf_t *
eg_tls_leaf(const char *host, char *err, size_t errlen)
{
    eg_leaf_t  *l, *victim = NULL;
    time_t      now = time(NULL);
    unsigned    i;

    for (i = 0; i < eg_tls.nleaves; i++) {
        l = &eg_tls.leaves[i];
        if (strcmp(l->host, host) == 0) {
            if (l->not_after - now > 86400) {
                l->used = ++eg_tls.clock;
                return l;
            }
            victim = l;             /* about to expire: make it again */
            break;
        }
    }
    if (victim == NULL) {
        if (eg_tls.nleaves < eg_tls.cap) {
            victim = &eg_tls.leaves[eg_tls.nleaves++];
        } else {
            victim = &eg_tls.leaves[0];
            for (i = 1; i < eg_tls.nleaves; i++) {
                if (eg_tls.leaves[i].used < victim->used) {
                    victim = &eg_tls.leaves[i];
                }
            }
        }
    }
    eg_leaf_clear(victim);

    victim->key = EVP_EC_gen("P-256");
    if (victim->key != NULL) {
        victim->cert = eg_tls_make_cert(host, victim->key, eg_tls.ca,
                                        eg_tls.ca_key, EG_TLS_LEAF_DAYS, 0);
    }
    if (victim->cert == NULL) {
        eg_tls_errstr(err, errlen, "mint a leaf certificate");
        eg_leaf_clear(victim);
        if (victim == &eg_tls.leaves[eg_tls.nleaves - 1]) {
            eg_tls.nleaves--;
        }
        return NULL;
    }
    snprintf(victim->host, sizeof(victim->host), "%s", host);
    victim->not_after = now + EG_TLS_LEAF_DAYS * 86400L;
    victim->used = ++eg_tls.clock;
    eg_tls.minted++;
    eg_log(EG_LOG_DEBUG, "minted a leaf certificate for %s", host);
    return victim;
}


SSL *
eg_tls_server(const char *host, char *err, size_t errlen)
{
    eg_leaf_t  *l;
    SSL        *ssl;

    l = eg_tls_leaf(host, err, errlen);
    if (l == NULL) {
        return NULL;
    }
    ssl = SSL_new(eg_tls.server);
    if (ssl == NULL || SSL_use_certificate(ssl, l->cert) != 1
        || SSL_use_PrivateKey(ssl, l->key) != 1
        || SSL_add1_chain_cert(ssl, eg_tls.ca) != 1)
    {
        eg_tls_errstr(err, errlen, "server SSL");
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}


SSL *
eg_tls_client(const char *host, char *err, size_t errlen)
{
    static const unsigned char  h11[] = "\x08http/1.1";
    SSL                        *ssl;

    ssl = SSL_new(eg_tls.client);
    if (ssl == NULL || SSL_set_tlsext_host_name(ssl, host) != 1
        || SSL_set1_host(ssl, host) != 1
        || SSL_set_alpn_protos(ssl, h11, sizeof(h11) - 1) != 0)
    {
        eg_tls_errstr(err, errlen, "client SSL");
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}


void
eg_tls_shutdown(void)
{
    unsigned  i;

    for (i = 0; i < eg_tls.nleaves; i++) {
        eg_leaf_clear(&eg_tls.leaves[i]);
    }
    free(eg_tls.leaves);
    SSL_CTX_free(eg_tls.server);
    SSL_CTX_free(eg_tls.client);
    X509_free(eg_tls.ca);
    EVP_PKEY_free(eg_tls.ca_key);
    memset(&eg_tls, 0, sizeof(eg_tls));
}
