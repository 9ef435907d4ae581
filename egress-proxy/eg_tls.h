/*
 * TLS for intercepted connections: the proxy's CA (made at first start
 * if missing, its key readable by root only), leaf certificates minted
 * from it on demand (P-256, cached, bounded), and the two contexts: the
 * sandbox-facing server (TLS 1.2+, ALPN http/1.1 only) and the upstream
 * client (verifies the chain against upstream_ca_file and the name;
 * fails closed).
 *
 *   ca_dir/ca.pem   the CA certificate (0644): the helper adds it to the
 *                   bundle sandboxes trust
 *   ca_dir/ca.key   its key (0600, root; the proxy reads it before it
 *                   drops privileges)
 */
#ifndef EG_TLS_H
#define EG_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "eg_config.h"

#define EG_TLS_LEAF_DAYS   7

/* At start, before the privilege drop; nothing when no credential is
 * configured.  -1 with err. */
int eg_tls_init(const eg_config_t *cf, char *err, size_t errlen);
int eg_tls_enabled(void);
void eg_tls_shutdown(void);

/* A server-side SSL presenting a leaf for host; SNI must name host. */
SSL *eg_tls_server(const char *host, char *err, size_t errlen);
/* A client-side SSL for host: SNI, ALPN http/1.1, name verified. */
SSL *eg_tls_client(const char *host, char *err, size_t errlen);

/* Leaves minted since start, and in the cache now. */
unsigned long eg_tls_minted(void);
unsigned eg_tls_cached(void);

#endif
