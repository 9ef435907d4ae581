/* libFuzzer: the egress proxy's TLS ClientHello SNI parser. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "eg_allow.h"
#include "eg_sni.h"

static unsigned char  scratch[EG_SNI_MAX_HELLO];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char  *name, *why;
    size_t       nl;
    eg_host_t    h;

    if (eg_sni_parse(data, size, scratch, &name, &nl, &why) == EG_SNI_FOUND) {
        /* the name must lie within scratch and be checkable */
        if ((const unsigned char *) name < scratch
            || (const unsigned char *) name + nl > scratch + sizeof(scratch))
        {
            __builtin_trap();
        }
        (void) eg_host_parse(name, nl, &h, &why);
    }
    return 0;
}
