/*
 * Veto Sandbox: an exec's output streams in the JSON reply.  Each goes as
 * a JSON string when it is UTF-8 and its escaped form is no larger than
 * its base64 (4/3 of the bytes), else as base64: a reply is never more
 * than 4/3 of the output it carries, whatever the bytes (8 MiB of \x01
 * would be 48 MiB as \u0001).  Pure functions of their input, linear in
 * it; nothing here knows a request.
 */

#ifndef _NGX_HTTP_VSB_OUTPUT_H_INCLUDED_
#define _NGX_HTTP_VSB_OUTPUT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


typedef struct {
    u_char                      *data;      /* the raw bytes */
    size_t                       len;
    size_t                       size;      /* the encoded bytes, without
                                               the JSON string's quotes */
    unsigned                     base64:1;
} ngx_http_veto_sandbox_output_t;


/* Sets o->base64 and o->size from o->data, o->len. */
void ngx_http_veto_sandbox_output_choose(ngx_http_veto_sandbox_output_t *o);

/* Writes the o->size encoded bytes at dst; returns dst + o->size. */
u_char *ngx_http_veto_sandbox_output_write(u_char *dst,
    ngx_http_veto_sandbox_output_t *o);

/* The raw bytes are their own encoding (UTF-8, nothing to escape). */
#define ngx_http_veto_sandbox_output_verbatim(o)                              \
    (!(o)->base64 && (o)->size == (o)->len)


#endif /* _NGX_HTTP_VSB_OUTPUT_H_INCLUDED_ */
