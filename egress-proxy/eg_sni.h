/*
 * TLS ClientHello server_name extraction (RFC 8446 4.1.2, RFC 6066 3),
 * pure and incremental: call again with more bytes on EG_SNI_NEED_MORE.
 * The ClientHello may span several TLS records; it is reassembled up to
 * EG_SNI_MAX_HELLO bytes, which bounds what a hostile client can make
 * the proxy hold.
 */
#ifndef EG_SNI_H
#define EG_SNI_H

#include <stddef.h>

#define EG_SNI_MAX_HELLO   (16 * 1024)

typedef enum {
    EG_SNI_FOUND = 0,
    EG_SNI_NEED_MORE,
    EG_SNI_NONE,             /* a valid ClientHello without server_name */
    EG_SNI_ERROR             /* not TLS, malformed, or too large */
} eg_sni_rc_t;

/* On EG_SNI_FOUND, name/name_len point into a copy the parser keeps in
 * scratch (EG_SNI_MAX_HELLO bytes the caller provides); on EG_SNI_ERROR
 * *why says what was wrong. */
eg_sni_rc_t eg_sni_parse(const unsigned char *data, size_t len,
    unsigned char *scratch, const char **name, size_t *name_len,
    const char **why);

#endif
