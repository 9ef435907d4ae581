/* libFuzzer: the egress proxy's HTTP request head parser and the host:port
 * parsing of what it returns. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "eg_allow.h"
#include "eg_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    eg_http_req_t  r;
    const char    *why;
    size_t         hl;
    eg_host_t      h;
    uint16_t       port;
    unsigned       i;

    if (size > EG_HTTP_MAX_HEAD) {
        return 0;
    }
    hl = eg_http_head_len((const char *) data, size);
    if (hl == 0 || eg_http_parse((const char *) data, hl, &r, &why) != 0) {
        return 0;
    }
    for (i = 0; i < r.ndrop; i++) {
        if (r.drop[i][0] < r.headers_start || r.drop[i][1] > hl
            || r.drop[i][0] >= r.drop[i][1])
        {
            __builtin_trap();
        }
    }
    if (r.has_cl && r.has_te) {
        __builtin_trap();          /* refused together (smuggling) */
    }
    if (r.has_cl && r.content_length > 999999999999999999ULL) {
        __builtin_trap();          /* at most 18 digits */
    }
    if (r.authority.p != NULL) {
        (void) eg_hostport_parse(r.authority.p, r.authority.len, 80, &h, &port,
                                 &why);
    }
    if (r.host.p != NULL) {
        (void) eg_hostport_parse(r.host.p, r.host.len, 80, &h, &port, &why);
    }
    return 0;
}
