/* libFuzzer: IP literal parsing (odd IPv4 spellings), classification and
 * allowlist entries. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "eg_addr.h"
#include "eg_allow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    eg_addr_t         a, b;
    char              buf[EG_ADDR_STRLEN], s[600], err[400];
    eg_allow_entry_t  e;
    eg_host_t         h;
    const char       *why;

    if (size >= sizeof(s)) {
        return 0;
    }
    if (eg_addr_parse_literal((const char *) data, size, &a) == 1) {
        (void) eg_addr_special(&a);
        /* canonical text parses back to the same address */
        eg_addr_format(&a, buf, sizeof(buf));
        if (eg_addr_parse_literal(buf, strlen(buf), &b) != 1
            || !eg_addr_equal(&a, &b))
        {
            __builtin_trap();
        }
    }
    memcpy(s, data, size);
    s[size] = '\0';
    if (eg_allow_parse(s, &e, err, sizeof(err)) == 0) {
        (void) eg_allow_match(&e, 1, "a.example.test", 443);
    }
    (void) eg_host_parse((const char *) data, size, &h, &why);
    return 0;
}
