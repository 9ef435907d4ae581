/*
 * What the tools' presenters share (a presenter makes a tool's result
 * when its REST twin succeeded): a text an agent reads and the data as
 * structuredContent.  File content and exec output are bounded
 * (veto_sandbox_mcp_reply_bytes per stream or file: its head and tail
 * kept, the middle counted), kept as text when it is UTF-8 without NUL,
 * as base64 otherwise.  The presenters themselves are in their op
 * groups' files, beside their tools.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"


/* the content: one text block */
ngx_int_t
ngx_http_veto_sandbox_mcp_text(json_t *result, const char *text, size_t len)
{
    json_t  *content;

    content = json_pack("[{s:s, s:s%}]", "type", "text", "text", text, len);
    if (content == NULL) {
        return NGX_ERROR;
    }

    return json_object_set_new(result, "content", content) == 0
           ? NGX_OK : NGX_ERROR;
}


/* the content: one text block; the REST answer as structuredContent */
ngx_int_t
ngx_http_veto_sandbox_mcp_text_rest(json_t *result, const char *text,
    size_t len, json_t *rest)
{
    if (ngx_http_veto_sandbox_mcp_text(result, text, len) != NGX_OK) {
        return NGX_ERROR;
    }

    return json_object_set(result, "structuredContent", rest) == 0
           ? NGX_OK : NGX_ERROR;
}


/* the same, the text formatted as ngx_slprintf() does, at most size bytes
 * (from r's pool): the one text of most presenters */
ngx_int_t
ngx_http_veto_sandbox_mcp_text_restf(ngx_http_request_t *r, json_t *result,
    json_t *rest, size_t size, const char *fmt, ...)
{
    u_char   *text, *p;
    va_list   args;

    text = ngx_pnalloc(r->pool, size);
    if (text == NULL) {
        return NGX_ERROR;
    }

    va_start(args, fmt);
    p = ngx_vslprintf(text, text + size, fmt, args);
    va_end(args);

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}


json_t *
ngx_http_veto_sandbox_mcp_error_result(const char *text)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
                     "text", text, "isError", 1);
}


/* unix seconds as 2026-01-31T12:00:00Z; buf holds 21 bytes */
u_char *
ngx_http_veto_sandbox_mcp_time(u_char *buf, time_t t)
{
    ngx_tm_t  tm;

    ngx_gmtime(t, &tm);

    return ngx_sprintf(buf, "%4d-%02d-%02dT%02d:%02d:%02dZ%Z", tm.ngx_tm_year,
                       tm.ngx_tm_mon, tm.ngx_tm_mday, tm.ngx_tm_hour,
                       tm.ngx_tm_min, tm.ngx_tm_sec);
}


/* ---- bounded content ------------------------------------------------ */


static size_t
ngx_http_veto_sandbox_mcp_utf8_back(u_char *data, size_t n)
{
    size_t  i;

    /* a cut before a continuation byte moves back to its lead byte */
    for (i = 0; i < 3 && n > 0 && (data[n] & 0xc0) == 0x80; i++) {
        n--;
    }

    return n;
}


static json_t *
ngx_http_veto_sandbox_mcp_text_or_base64(ngx_http_request_t *r, u_char *data,
    size_t len, ngx_uint_t text)
{
    ngx_str_t  src, dst;

    if (text) {
        return json_stringn((char *) data, len);
    }

    src.data = data;
    src.len = len;

    dst.data = ngx_pnalloc(r->pool, ngx_base64_encoded_length(len) + 1);
    if (dst.data == NULL) {
        return NULL;
    }

    ngx_encode_base64(&dst, &src);

    return json_stringn((char *) dst.data, dst.len);
}


/*
 * data (len bytes) within max: whole, or its head and tail with the
 * middle counted.  Text when the kept bytes are UTF-8 without NUL, else
 * base64.  structured gets "<name>" (the text, or "head" and "tail"
 * objects when cut) and "<name>_encoding", "<name>_bytes",
 * "<name>_omitted_bytes"; text gets a rendering for the agent to read.
 */
json_t *
ngx_http_veto_sandbox_mcp_bounded(ngx_http_request_t *r, u_char *data,
    size_t len, size_t max, const char *name, json_t *structured,
    ngx_str_t *text)
{
    u_char      *p, *last;
    size_t       head, tail, omitted;
    json_t      *h, *t;
    ngx_uint_t   utf8, i;
    char         key[64];

    if (len == 0) {
        data = (u_char *) "";       /* empty content may have no memory */
    }

    head = len;
    tail = 0;

    if (len > max) {
        /* cut between characters: the head ends before a lead byte, the
         * tail starts at one */
        head = ngx_http_veto_sandbox_mcp_utf8_back(data, max / 2);
        tail = max - max / 2;

        for (i = 0; i < 3 && tail > 0 && (data[len - tail] & 0xc0) == 0x80;
             i++)
        {
            tail--;
        }
    }

    omitted = len - head - tail;

    utf8 = ngx_strlchr(data, data + head, '\0') == NULL
           && ngx_strlchr(data + len - tail, data + len, '\0') == NULL;

    h = ngx_http_veto_sandbox_mcp_text_or_base64(r, data, head, utf8);

    if (utf8 && h == NULL) {
        /* not UTF-8 after all */
        utf8 = 0;
        h = ngx_http_veto_sandbox_mcp_text_or_base64(r, data, head, 0);
    }

    t = NULL;

    if (tail) {
        t = ngx_http_veto_sandbox_mcp_text_or_base64(r, data + len - tail,
                                                     tail, utf8);
        if (utf8 && t == NULL) {
            json_decref(h);
            utf8 = 0;
            h = ngx_http_veto_sandbox_mcp_text_or_base64(r, data, head, 0);
            t = ngx_http_veto_sandbox_mcp_text_or_base64(r, data + len - tail,
                                                         tail, 0);
        }

        if (t == NULL) {
            json_decref(h);
            return NULL;
        }
    }

    if (h == NULL) {
        return NULL;
    }

    /* the rendering: the text itself, or base64 said to be so */
    text->len = json_string_length(h) + (t ? json_string_length(t) : 0) + 160;
    text->data = ngx_pnalloc(r->pool, text->len);
    if (text->data == NULL) {
        json_decref(h);
        json_decref(t);
        return NULL;
    }

    p = text->data;
    last = p + text->len;

    if (!utf8) {
        p = ngx_slprintf(p, last, "(binary, %uz bytes, as base64)\n", len);
    }

    p = ngx_slprintf(p, last, "%s", json_string_value(h));

    if (t) {
        p = ngx_slprintf(p, last, "\n[... %uz bytes left out here ...]\n%s",
                         omitted, json_string_value(t));
    }

    text->len = p - text->data;

    /* the same, as data */
    if (t) {
        ngx_snprintf((u_char *) key, sizeof(key), "%s%Z", name);
        json_object_set_new(structured, key,
                            json_pack("{s:o, s:o}", "head", h, "tail", t));
    } else {
        ngx_snprintf((u_char *) key, sizeof(key), "%s%Z", name);
        json_object_set_new(structured, key, h);
    }

    ngx_snprintf((u_char *) key, sizeof(key), "%s_encoding%Z", name);
    json_object_set_new(structured, key,
                        json_string(utf8 ? "utf-8" : "base64"));

    ngx_snprintf((u_char *) key, sizeof(key), "%s_bytes%Z", name);
    json_object_set_new(structured, key, json_integer((json_int_t) len));

    ngx_snprintf((u_char *) key, sizeof(key), "%s_omitted_bytes%Z", name);
    json_object_set_new(structured, key, json_integer((json_int_t) omitted));

    return structured;
}


/* ---- presenters: a 2xx of the twin ---------------------------------- */


