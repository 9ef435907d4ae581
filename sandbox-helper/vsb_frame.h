/*
 * The frame codec (see vsb_protocol.h), free of I/O so it can be unit
 * tested and fuzzed.  The parser is incremental: feed it whatever bytes
 * arrived; it consumes at most one frame and says how many bytes it still
 * needs, so a reader never reads past the end of a frame.
 */
#ifndef VSB_FRAME_H
#define VSB_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "vsb_protocol.h"

typedef enum {
    VSB_FRAME_NEED_MORE = 0,
    VSB_FRAME_DONE = 1,           /* a whole frame: json, payload valid */
    VSB_FRAME_JSON = 2,           /* split: the JSON is in, payload follows */
    VSB_FRAME_ERROR = -1          /* error, detail name what; stop */
} vsb_frame_rc_t;

typedef struct {
    /* Limits, set before feeding. */
    uint32_t        max_json;       /* <= VSB_MAX_JSON */
    uint32_t        max_payload;    /* a payload over it: frame_too_large */
    /* split: stop once the JSON header is in (VSB_FRAME_JSON), so the
     * caller can decide, from the op, whether to buffer the payload
     * (feed on) or to take it over itself (read it directly) */
    unsigned        split:1;
    unsigned        json_seen:1;

    unsigned char   head[VSB_FRAME_HEADER_LEN];
    size_t          head_len;

    uint32_t        json_len;
    uint32_t        payload_len;

    /* json_len bytes of JSON, a NUL, then the payload. */
    unsigned char  *buf;
    size_t          buf_cap;
    size_t          body_len;       /* bytes of json+payload received */

    int             done;
    const char     *error;          /* VSB_E_BAD_FRAME / _FRAME_TOO_LARGE */
    char            detail[128];
} vsb_frame_parser_t;

void vsb_frame_init(vsb_frame_parser_t *p, uint32_t max_json,
    uint32_t max_payload);
/* Frees the buffer and readies p for the next frame; limits are kept. */
void vsb_frame_reset(vsb_frame_parser_t *p);

/* Consumes up to len bytes of data, *consumed says how many.  In split
 * mode a frame with a payload first answers VSB_FRAME_JSON (the JSON is
 * complete and NUL-terminated), and never consumes past the JSON before
 * that. */
vsb_frame_rc_t vsb_frame_feed(vsb_frame_parser_t *p,
    const unsigned char *data, size_t len, size_t *consumed);

/* Bytes still needed to finish the current frame (>= 1 unless done). */
size_t vsb_frame_need(const vsb_frame_parser_t *p);

/* After VSB_FRAME_DONE.  json is NUL-terminated. */
#define vsb_frame_json(p)      ((const char *) (p)->buf)
#define vsb_frame_payload(p)   ((p)->buf + (p)->json_len + 1)

/* Takes the completed buffer away from p (caller frees it); the payload
 * starts at offset json_len + 1. */
unsigned char *vsb_frame_steal(vsb_frame_parser_t *p);

/* Builds the 12-byte prefix plus JSON into a new buffer of
 * VSB_FRAME_HEADER_LEN + json_len bytes; the payload is sent separately.
 * NULL if json is empty or too long, or on allocation failure. */
unsigned char *vsb_frame_encode_head(const char *json, size_t json_len,
    size_t payload_len, size_t *out_len);

#endif
