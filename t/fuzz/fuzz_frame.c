/*
 * libFuzzer target: the frame parser (sandbox-helper/frame.c).
 *
 * Input: byte 0 picks the chunk size (1 .. 256) in which the rest is
 * delivered, so splits at every offset are explored; byte 1 bit 0 picks
 * the limits (0: small ones, so the oversize paths are cheap to reach;
 * 1: the server's, VSB_MAX_JSON and the default 16 MiB payload), bit 1
 * picks how a finished frame is released (reset, or steal and free as
 * the helperctl does), bit 2 the server's split mode (the parser stops
 * once the JSON is in, then goes on with the payload).  Frames are parsed
 * back to back until the input ends or the parser reports an error.
 *
 * Checked on every call: progress and consumption, memory that grows with
 * the bytes received rather than with the lengths announced, a finished
 * frame holding exactly the bytes sent, and the encoder giving back the
 * same 12-byte prefix (and refusing the lengths the parser refuses); in
 * split mode, a stop exactly at the JSON's end, once per frame with a
 * payload, never a byte of the payload consumed before it.
 *
 * FUZZ-COVERS: sandbox-helper/frame.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_frame.h"

#define SMALL_JSON     4096
#define SMALL_PAYLOAD  8192
#define SERVER_PAYLOAD (16 * 1024 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* The buffer never outgrows what arrived: at most twice the bytes
 * received, or the initial 4 KiB. */
static void
check_memory(const vsb_frame_parser_t *p)
{
    size_t  bound = 2 * (p->body_len + 1);

    if (bound < 4096) {
        bound = 4096;
    }

    if (p->buf_cap > bound) {
        abort();
    }
}


/* A finished frame: its JSON, NUL and payload are the bytes sent, and
 * encoding the JSON again gives the same prefix. */
static void
check_frame(vsb_frame_parser_t *p, const uint8_t *frame, size_t frame_len)
{
    const unsigned char  *json, *payload;
    unsigned char        *head;
    size_t                head_len;

    if (p->json_len == 0 || p->json_len > p->max_json
        || p->payload_len > p->max_payload
        || frame_len != VSB_FRAME_HEADER_LEN + (size_t) p->json_len
                        + p->payload_len
        || vsb_frame_need(p) != 0)
    {
        abort();
    }

    json = (const unsigned char *) vsb_frame_json(p);
    payload = vsb_frame_payload(p);

    if (memcmp(json, frame + VSB_FRAME_HEADER_LEN, p->json_len) != 0
        || json[p->json_len] != '\0'
        || memcmp(payload, frame + VSB_FRAME_HEADER_LEN + p->json_len,
                  p->payload_len) != 0)
    {
        abort();
    }

    head = vsb_frame_encode_head((const char *) json, p->json_len,
                                 p->payload_len, &head_len);
    if (head == NULL
        || head_len != VSB_FRAME_HEADER_LEN + (size_t) p->json_len
        || memcmp(head, frame, head_len) != 0)
    {
        abort();
    }

    free(head);

    /* The encoder refuses what the parser refuses. */
    if (vsb_frame_encode_head((const char *) json, 0, 0, &head_len) != NULL
        || vsb_frame_encode_head((const char *) json, VSB_MAX_JSON + 1, 0,
                                 &head_len) != NULL
        || vsb_frame_encode_head((const char *) json, p->json_len,
                                 (size_t) VSB_MAX_PAYLOAD + 1, &head_len)
           != NULL)
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vsb_frame_parser_t  p;
    vsb_frame_rc_t      rc;
    size_t              chunk, n, used, frame_len;
    const uint8_t      *frame;
    unsigned char      *stolen;
    int                 steal, json_stops;

    if (size < 2) {
        return 0;
    }

    chunk = (size_t) data[0] + 1;
    steal = data[1] & 2;
    json_stops = 0;

    if (data[1] & 1) {
        vsb_frame_init(&p, VSB_MAX_JSON, SERVER_PAYLOAD);
    } else {
        vsb_frame_init(&p, SMALL_JSON, SMALL_PAYLOAD);
    }
    p.split = (data[1] & 4) != 0;

    data += 2;
    size -= 2;

    frame = data;
    frame_len = 0;

    while (size > 0) {
        n = size < chunk ? size : chunk;
        rc = vsb_frame_feed(&p, data, n, &used);

        if (used > n) {
            abort();
        }

        data += used;
        size -= used;
        frame_len += used;

        check_memory(&p);

        if (rc == VSB_FRAME_ERROR) {
            if (p.error == NULL || p.detail[0] == '\0'
                || vsb_frame_need(&p) != 0)
            {
                abort();
            }
            /* An error is final. */
            if (vsb_frame_feed(&p, data, size, &used) != VSB_FRAME_ERROR
                || used != 0)
            {
                abort();
            }
            break;
        }

        if (rc == VSB_FRAME_JSON) {
            /* the JSON whole and NUL-terminated, nothing of the payload */
            if (!p.split || json_stops++ != 0 || p.payload_len == 0
                || p.body_len != p.json_len
                || frame_len != VSB_FRAME_HEADER_LEN + (size_t) p.json_len
                || vsb_frame_json(&p)[p.json_len] != '\0'
                || memcmp(vsb_frame_json(&p), frame + VSB_FRAME_HEADER_LEN,
                          p.json_len) != 0
                || vsb_frame_need(&p) != p.payload_len)
            {
                abort();
            }
            continue;
        }

        if (rc == VSB_FRAME_DONE) {
            check_frame(&p, frame, frame_len);

            /* split: a frame with a payload stopped at its JSON first */
            if (p.split && (json_stops == 1) != (p.payload_len > 0)) {
                abort();
            }
            json_stops = 0;

            /* Done is sticky until reset: nothing more is consumed. */
            if (vsb_frame_feed(&p, data, size, &used) != VSB_FRAME_DONE
                || used != 0)
            {
                abort();
            }

            if (steal) {
                stolen = vsb_frame_steal(&p);
                if (stolen == NULL || p.buf != NULL) {
                    abort();
                }
                free(stolen);
            }

            vsb_frame_reset(&p);
            frame = data;
            frame_len = 0;
            continue;
        }

        /* Needing more, the parser took everything it was given. */
        if (used != n || vsb_frame_need(&p) == 0) {
            abort();
        }
    }

    vsb_frame_reset(&p);
    return 0;
}
