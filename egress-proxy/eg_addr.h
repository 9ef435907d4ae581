/*
 * Address classification: which addresses the proxy may dial.  Pure
 * functions, no I/O, unit tested and fuzzed.
 *
 * Every address a name resolves to, and every IP literal a sandbox names
 * (in any spelling: dotted, decimal, octal, hex, fewer than four parts,
 * bracketed IPv6), is classified; anything not plainly global unicast
 * is refused unless an operator range explicitly allows it.
 */
#ifndef EG_ADDR_H
#define EG_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct {
    int            family;         /* AF_INET or AF_INET6 */
    unsigned char  a[16];          /* network order; IPv4 in a[0..3] */
} eg_addr_t;

typedef struct {
    eg_addr_t      net;
    unsigned       prefix;
} eg_cidr_t;

#define EG_ADDR_STRLEN  48

/* Literal parsing of a host (already without brackets for IPv6).
 *   1   s is an IP literal, *out is the address
 *   0   s is not an IP literal (a name)
 *  -1   s looks like an IPv4 literal (its last label is a number) but is
 *       not a valid one: never a name to resolve either. */
int eg_addr_parse_literal(const char *s, size_t len, eg_addr_t *out);

/* NULL for a global unicast address, else the name of the special range
 * ("loopback", "private", "link-local", "ipv4-mapped", ...). */
const char *eg_addr_special(const eg_addr_t *a);

int eg_cidr_parse(const char *s, eg_cidr_t *out);
int eg_cidr_contains(const eg_cidr_t *c, const eg_addr_t *a);

void eg_addr_format(const eg_addr_t *a, char *buf, size_t len);
int eg_addr_equal(const eg_addr_t *x, const eg_addr_t *y);

/* sockaddr <-> eg_addr_t; the port is in host order. */
socklen_t eg_addr_to_sockaddr(const eg_addr_t *a, uint16_t port,
    struct sockaddr_storage *ss);
int eg_addr_from_sockaddr(const struct sockaddr *sa, eg_addr_t *a,
    uint16_t *port);

#endif
