/*
 * Requests on an intercepted connection (intercept.c): the head of each
 * request, checked and rewritten, and the end of its body found
 * (Content-Length or chunked).  Pure and bounded: the fuzz target
 * t/fuzz/fuzz_egress_ireq.c drives all of it.
 */
#ifndef EG_IREQ_H
#define EG_IREQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "eg_cred_parse.h"
#include "eg_http.h"

/* A rewritten head: the original (EG_HTTP_MAX_HEAD) plus the credential
 * lines added. */
#define EG_IREQ_OUT_MAX  (EG_HTTP_MAX_HEAD + 2 * EG_CRED_PER_SANDBOX \
                          * (EG_CRED_HEADER_MAX + EG_CRED_TEMPLATE_MAX \
                             + EG_CRED_VALUE_MAX + 8))

typedef struct {
    eg_str_t   target;          /* origin-form */
    int        chunked;
    uint64_t   content_length;  /* when !chunked */
} eg_ireq_t;

/* Checks a complete head (eg_http_head_len) for a connection intercepted
 * for host: origin-form target, Host naming host (no port, or 443), no
 * Upgrade, Transfer-Encoding only "chunked".  0 ok; -1 with *why. */
int eg_ireq_parse(const char *buf, size_t hl, const char *host,
    eg_ireq_t *r, const char **why);

/* Does the head carry a header named name (case-insensitive)? */
int eg_ireq_has_header(const char *buf, size_t hl, const char *name);

/* Copies the head to out without the header lines named in drop[] and
 * with the lines add[] (each "Name: value\r\n") before the blank line.
 * The new length, or 0 if out is too small. */
size_t eg_ireq_rewrite(const char *buf, size_t hl, const char *const *drop,
    size_t ndrop, const eg_str_t *add, size_t nadd, char *out, size_t cap);

/* The first of the placeholders found in buf, or -1. */
int eg_ireq_find(const char *buf, size_t len, const char *const *needles,
    size_t n);

/* A chunked body's framing, fed as it streams by (the bytes themselves
 * are forwarded unchanged). */
typedef struct {
    int        state;
    uint64_t   left;            /* of the current chunk's data */
    unsigned   digits;
    unsigned   line;            /* bytes of an extension or trailer line */
    unsigned   trailers;
} eg_chunk_t;

void eg_chunk_init(eg_chunk_t *st);
/* Consumes bytes of p up to the body's end.  Returns how many (the rest
 * is the next request), with *done set when the body ended; -1 with
 * *why when the framing is malformed. */
ssize_t eg_chunk_feed(eg_chunk_t *st, const unsigned char *p, size_t len,
    int *done, const char **why);

#endif
