/* libFuzzer: the egress DNS stub's query parser and answer builder. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "eg_dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    eg_dns_query_t       q;
    int                  rcode;
    const char          *why;
    unsigned char        out[EG_DNS_MAX_MSG];
    static const unsigned char  a4[4] = { 198, 18, 0, 1 };
    size_t               n;

    if (eg_dns_parse_query(data, size, &q, &rcode, &why) == 0) {
        n = eg_dns_build_answer(&q, EG_DNS_NOERROR, a4, 5, 0, NULL, out,
                                sizeof(out));
        if (n > sizeof(out)) {
            __builtin_trap();
        }
        n = eg_dns_build_answer(&q, EG_DNS_NXDOMAIN, NULL, 0,
                                EG_DNS_EDE_BLOCKED, q.name, out, sizeof(out));
        if (n > sizeof(out)) {
            __builtin_trap();
        }
    } else if (rcode >= 0) {
        (void) eg_dns_build_error(data, size, rcode, out, sizeof(out));
    }
    return 0;
}
