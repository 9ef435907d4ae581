/*
 * Frame codec.  The body buffer grows with the bytes actually received,
 * not with the length a peer claims, so a client that announces 64 MiB
 * and sends nothing costs nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_frame.h"

#define VSB_FRAME_MIN_CAP  4096


void
vsb_frame_init(vsb_frame_parser_t *p, uint32_t max_json, uint32_t max_payload)
{
    memset(p, 0, sizeof(*p));
    p->max_json = max_json > VSB_MAX_JSON ? VSB_MAX_JSON : max_json;
    p->max_payload = max_payload;
}


void
vsb_frame_reset(vsb_frame_parser_t *p)
{
    uint32_t  mj = p->max_json, mp = p->max_payload;
    unsigned  split = p->split;

    free(p->buf);
    memset(p, 0, sizeof(*p));
    p->max_json = mj;
    p->max_payload = mp;
    p->split = split;
}


unsigned char *
vsb_frame_steal(vsb_frame_parser_t *p)
{
    unsigned char  *b = p->buf;

    p->buf = NULL;
    p->buf_cap = 0;
    return b;
}


static vsb_frame_rc_t
vsb_frame_fail(vsb_frame_parser_t *p, const char *error, const char *detail)
{
    p->error = error;
    snprintf(p->detail, sizeof(p->detail), "%s", detail);
    return VSB_FRAME_ERROR;
}


static vsb_frame_rc_t
vsb_frame_check_head(vsb_frame_parser_t *p)
{
    if (memcmp(p->head, VSB_FRAME_MAGIC, VSB_FRAME_MAGIC_LEN) != 0) {
        return vsb_frame_fail(p, VSB_E_BAD_FRAME, "bad magic, expected VSB1");
    }

    p->json_len = vsb_frame_get_u32(p->head + 4);
    p->payload_len = vsb_frame_get_u32(p->head + 8);

    if (p->json_len == 0) {
        return vsb_frame_fail(p, VSB_E_BAD_FRAME, "JSON header length is 0");
    }

    if (p->json_len > p->max_json) {
        p->error = VSB_E_FRAME_TOO_LARGE;
        snprintf(p->detail, sizeof(p->detail),
                 "JSON header of %u bytes exceeds %u", p->json_len,
                 p->max_json);
        return VSB_FRAME_ERROR;
    }

    if (p->payload_len > p->max_payload) {
        p->error = VSB_E_FRAME_TOO_LARGE;
        snprintf(p->detail, sizeof(p->detail),
                 "payload of %u bytes exceeds %u", p->payload_len,
                 p->max_payload);
        return VSB_FRAME_ERROR;
    }

    return VSB_FRAME_NEED_MORE;
}


size_t
vsb_frame_need(const vsb_frame_parser_t *p)
{
    if (p->done || p->error != NULL) {
        return 0;
    }

    if (p->head_len < VSB_FRAME_HEADER_LEN) {
        return VSB_FRAME_HEADER_LEN - p->head_len;
    }

    if (p->split && !p->json_seen) {
        return (size_t) p->json_len - p->body_len;
    }

    return (size_t) p->json_len + p->payload_len - p->body_len;
}


static int
vsb_frame_grow(vsb_frame_parser_t *p, size_t want)
{
    size_t          total, cap;
    unsigned char  *nb;

    /* json + NUL + payload */
    total = (size_t) p->json_len + 1 + p->payload_len;

    if (want <= p->buf_cap) {
        return 0;
    }

    cap = p->buf_cap ? p->buf_cap : VSB_FRAME_MIN_CAP;
    while (cap < want) {
        cap *= 2;
    }
    if (cap > total) {
        cap = total;
    }

    nb = realloc(p->buf, cap);
    if (nb == NULL) {
        return -1;
    }

    p->buf = nb;
    p->buf_cap = cap;
    return 0;
}


vsb_frame_rc_t
vsb_frame_feed(vsb_frame_parser_t *p, const unsigned char *data, size_t len,
    size_t *consumed)
{
    size_t  n, off, pos;

    *consumed = 0;

    if (p->error != NULL) {
        return VSB_FRAME_ERROR;
    }

    if (p->done) {
        return VSB_FRAME_DONE;
    }

    if (p->head_len < VSB_FRAME_HEADER_LEN) {
        n = VSB_FRAME_HEADER_LEN - p->head_len;
        if (n > len) {
            n = len;
        }

        memcpy(p->head + p->head_len, data, n);
        p->head_len += n;
        *consumed += n;
        data += n;
        len -= n;

        /* Reject a bad magic as soon as its bytes are in. */
        if (memcmp(p->head, VSB_FRAME_MAGIC,
                   p->head_len < VSB_FRAME_MAGIC_LEN
                   ? p->head_len : VSB_FRAME_MAGIC_LEN) != 0)
        {
            return vsb_frame_fail(p, VSB_E_BAD_FRAME,
                                  "bad magic, expected VSB1");
        }

        if (p->head_len < VSB_FRAME_HEADER_LEN) {
            return VSB_FRAME_NEED_MORE;
        }

        if (vsb_frame_check_head(p) == VSB_FRAME_ERROR) {
            return VSB_FRAME_ERROR;
        }
    }

    n = vsb_frame_need(p);
    if (n > len) {
        n = len;
    }

    if (n > 0) {
        /* Offset in buf: the JSON, then a NUL gap, then the payload. */
        if (vsb_frame_grow(p, p->body_len + n + 1) != 0) {
            return vsb_frame_fail(p, VSB_E_FRAME_TOO_LARGE,
                                  "out of memory for the frame");
        }

        pos = p->body_len;
        off = 0;

        if (pos < p->json_len) {
            off = p->json_len - pos;
            if (off > n) {
                off = n;
            }
            memcpy(p->buf + pos, data, off);
            pos += off;
        }

        if (off < n) {
            memcpy(p->buf + pos + 1, data + off, n - off);
        }

        p->body_len += n;
        *consumed += n;
    }

    if (p->split && !p->json_seen && p->body_len == p->json_len) {
        p->json_seen = 1;

        if (p->payload_len > 0) {
            if (vsb_frame_grow(p, (size_t) p->json_len + 1) != 0) {
                return vsb_frame_fail(p, VSB_E_FRAME_TOO_LARGE,
                                      "out of memory for the frame");
            }
            p->buf[p->json_len] = '\0';
            return VSB_FRAME_JSON;
        }
    }

    if (vsb_frame_need(p) > 0) {
        return VSB_FRAME_NEED_MORE;
    }

    if (vsb_frame_grow(p, (size_t) p->json_len + 1 + p->payload_len) != 0) {
        return vsb_frame_fail(p, VSB_E_FRAME_TOO_LARGE,
                              "out of memory for the frame");
    }

    p->buf[p->json_len] = '\0';
    p->done = 1;
    return VSB_FRAME_DONE;
}


unsigned char *
vsb_frame_encode_head(const char *json, size_t json_len, size_t payload_len,
    size_t *out_len)
{
    unsigned char  *b;

    if (json_len == 0 || json_len > VSB_MAX_JSON
        || payload_len > VSB_MAX_PAYLOAD)
    {
        return NULL;
    }

    b = malloc(VSB_FRAME_HEADER_LEN + json_len);
    if (b == NULL) {
        return NULL;
    }

    vsb_frame_header_encode(b, (uint32_t) json_len, (uint32_t) payload_len);
    memcpy(b + VSB_FRAME_HEADER_LEN, json, json_len);
    *out_len = VSB_FRAME_HEADER_LEN + json_len;
    return b;
}
