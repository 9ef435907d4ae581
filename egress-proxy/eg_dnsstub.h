/*
 * The sandbox's DNS stub (its resolv.conf names it): names the sandbox
 * may reach answer A with the proxy's sentinel address (TCP to it on 80
 * or 443 is redirected to the proxy in the sandbox's namespace); every
 * other name answers NXDOMAIN at once, with an Extended DNS Error
 * ("Blocked") saying why when the query has EDNS.  Never a timeout.
 */
#ifndef EG_DNSSTUB_H
#define EG_DNSSTUB_H

#include <stddef.h>
#include <stdint.h>

#include "egress.h"

#define EG_DNS_TCP_MAX_PER_SANDBOX  16
#define EG_DNS_TCP_TIMEOUT_MS       5000
#define EG_DNS_UDP_BATCH            64

void eg_dnsstub_udp_ready(eg_sandbox_t *sb, int fd);
void eg_dnsstub_tcp_accepted(eg_sandbox_t *sb, int fd);
void eg_dnsstub_sweep(eg_sandbox_t *sb, uint64_t now);
void eg_dnsstub_close_all(eg_sandbox_t *sb);

/* The answer to one query message (0: send nothing). */
size_t eg_dnsstub_answer(eg_sandbox_t *sb, const unsigned char *msg,
    size_t len, unsigned char *out, size_t cap);

#endif
