/*
 * Host names and allowlist entries.  An entry is "host[:port]" where host
 * is a DNS name, "*.suffix" (any name strictly below suffix: "*.a.test"
 * matches "x.a.test" and "x.y.a.test", not "a.test", "xa.test" or
 * "a.test.evil"), or an IP literal; no port means 80 and 443.  Names are
 * compared in canonical form: lower case, no trailing dot, IP literals
 * in inet_ntop() form.
 */
#ifndef EG_ALLOW_H
#define EG_ALLOW_H

#include <stddef.h>
#include <stdint.h>

#include "eg_addr.h"

#define EG_HOST_MAX        253
#define EG_ALLOW_MAX       256       /* entries per list */

typedef struct {
    char       host[EG_HOST_MAX + 1];   /* canonical; suffix for wildcard */
    int        wildcard;
    uint16_t   port;                    /* 0: 80 and 443 */
} eg_allow_entry_t;

typedef struct {
    char       host[EG_HOST_MAX + 1];   /* canonical */
    int        is_literal;
    eg_addr_t  addr;                    /* when is_literal */
} eg_host_t;

/* Canonicalizes a host as a client named it (brackets around IPv6 allowed).
 * 0 ok; -1 with *why naming the fault. */
int eg_host_parse(const char *s, size_t len, eg_host_t *h, const char **why);

/* Splits "host:port", "[v6]:port" or a bare host (default_port, 0 meaning
 * a port is required).  0 ok; -1 with *why. */
int eg_hostport_parse(const char *s, size_t len, uint16_t default_port,
    eg_host_t *h, uint16_t *port, const char **why);

int eg_allow_parse(const char *s, eg_allow_entry_t *e, char *err,
    size_t errlen);

/* port 0: any port (the DNS stub asks whether a name is served at all). */
int eg_allow_match(const eg_allow_entry_t *list, size_t n, const char *host,
    uint16_t port);

#endif
