/*
 * libFuzzer target: the frame parser.  The first byte picks a chunk size
 * so split deliveries are explored too; frames are parsed back to back
 * until the input ends or the parser reports an error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vsb_frame_parser_t  p;
    vsb_frame_rc_t      rc;
    size_t              chunk, n, used;
    const char         *json;

    if (size < 1) {
        return 0;
    }

    chunk = (size_t) data[0] + 1;
    data++;
    size--;

    /* Small limits so oversize paths are reachable by the fuzzer. */
    vsb_frame_init(&p, 4096, 8192);

    while (size > 0) {
        n = size < chunk ? size : chunk;
        rc = vsb_frame_feed(&p, data, n, &used);

        if (used > n) {
            abort();
        }

        data += used;
        size -= used;

        if (rc == VSB_FRAME_ERROR) {
            if (p.error == NULL) {
                abort();
            }
            break;
        }

        if (rc == VSB_FRAME_DONE) {
            json = vsb_frame_json(&p);
            if (strlen(json) > p.json_len || p.json_len == 0
                || p.json_len > 4096 || p.payload_len > 8192)
            {
                /* JSON may hold NULs, never be longer than announced. */
                abort();
            }
            /* Touch the whole payload for ASan. */
            if (p.payload_len > 0) {
                volatile unsigned char x = vsb_frame_payload(&p)[0];
                x ^= vsb_frame_payload(&p)[p.payload_len - 1];
                (void) x;
            }
            vsb_frame_reset(&p);
            continue;
        }

        if (used == 0 && n > 0) {
            abort();    /* no progress on non-empty input */
        }
    }

    vsb_frame_reset(&p);
    return 0;
}
