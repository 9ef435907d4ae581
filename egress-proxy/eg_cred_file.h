/*
 * The bindings file's one reader, shared by the proxy (eg_cred.h) and
 * the helper (vsb_egress_cred.h), so both see the same bindings or both
 * refuse the file with the same error.
 */
#ifndef EG_CRED_FILE_H
#define EG_CRED_FILE_H

#include <stddef.h>

#include "eg_cred_parse.h"

/* Reads path (a regular file of at most EG_CRED_FILE_MAX bytes) and
 * parses it (eg_cred_bindings_parse) into out[0 .. *n).  0; or -1 with
 * err naming the file, and the line or the step that failed. */
int eg_cred_bindings_read(const char *path,
    eg_cred_binding_t out[EG_CRED_MAX], size_t *n, char *err, size_t errlen);

#endif
