/*
 * Credential bindings (docs/security.md "Credentials", docs/operations.md):
 * the operator's description of a secret the proxy adds to requests, and
 * the pure checks around it.  Shared by the proxy (which also holds the
 * values) and the helper (which reads the bindings, never the values).
 *
 * A binding is one line of the bindings file:
 *
 *   NAME host=HOST [port=443] [header=NAME] template="TEXT" env=VAR
 *        [path=/PREFIX]
 *
 *   NAME      1 .. 64 bytes of [a-z0-9._-], starting with [a-z0-9]
 *   host      an exact DNS name or "*.suffix" (names strictly below the
 *             suffix, never the suffix itself); no IP literal, no port
 *   port      443, the only one (TLS is what the proxy can intercept)
 *   header    Authorization (the default) or another header name, except
 *             Host, Content-Length, Transfer-Encoding, Connection,
 *             Keep-Alive, Proxy-*, Upgrade, TE, Trailer, Cookie, Expect
 *   template  printable ASCII holding "{{secret}}" exactly once, e.g.
 *             "Bearer {{secret}}" or "Basic {{secret}}"
 *   env       the variable that holds the placeholder in the sandbox:
 *             [A-Z_][A-Z0-9_]*, not PATH, HOME, LD_*, a proxy or a CA
 *             variable
 *   path      optional: the header is added only to requests whose target
 *             starts with this prefix (and has no dot segment and no
 *             percent-encoded dot or slash)
 *
 * Unknown keys, repeated keys and missing required ones are errors.
 */
#ifndef EG_CRED_PARSE_H
#define EG_CRED_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "eg_allow.h"

#define EG_CRED_NAME_MAX        64
#define EG_CRED_HEADER_MAX      64
#define EG_CRED_TEMPLATE_MAX    256
#define EG_CRED_ENV_MAX         64
#define EG_CRED_PATH_MAX        256
#define EG_CRED_VALUE_MAX       4096
#define EG_CRED_LINE_MAX        1024
#define EG_CRED_MAX             64      /* bindings in the file */
#define EG_CRED_PER_SANDBOX     16      /* attached to one sandbox */
/* an agent's own secrets a sandbox keeps at once: attached, detached
 * (16 each) and those one update hands over */
#define EG_CRED_OWN_MAX         (3 * EG_CRED_PER_SANDBOX)
#define EG_CRED_FILE_MAX        (256 * 1024)    /* the bindings file */
#define EG_CRED_PLACEHOLDER_PREFIX  "veto-cred-"
#define EG_CRED_PLACEHOLDER_LEN (sizeof(EG_CRED_PLACEHOLDER_PREFIX) - 1 + 32)

typedef struct {
    char              name[EG_CRED_NAME_MAX + 1];
    eg_allow_entry_t  host;             /* port 443 */
    char              header[EG_CRED_HEADER_MAX + 1];
    char              tmpl[EG_CRED_TEMPLATE_MAX + 1];
    char              env[EG_CRED_ENV_MAX + 1];
    char              path[EG_CRED_PATH_MAX + 1];   /* "": any */
} eg_cred_binding_t;

/* One line (no newline).  1 parsed into *b; 0 blank or comment; -1 with
 * err. */
int eg_cred_binding_parse(const char *line, eg_cred_binding_t *b, char *err,
    size_t errlen);

/* A binding from its parts (an agent's own secret, handed over the
 * proxy's control channel): the same rules as a line of the file (header
 * and path may be NULL: Authorization, any path; env may be NULL: an
 * agent's binding names its variable in the helper only); a part holding
 * '"', a blank (but the template's) or a control byte is refused.  0; or
 * -1 with err. */
int eg_cred_binding_from(const char *name, const char *host,
    const char *header, const char *tmpl, const char *env, const char *path,
    eg_cred_binding_t *b, char *err, size_t errlen);

/* The bindings file's text (len bytes; a NUL byte is an error): one
 * binding a line, none named twice, at most EG_CRED_MAX, each line at most
 * EG_CRED_LINE_MAX bytes.  The bindings into out[0 .. *n).  0; or -1 with
 * err "line N: why" (*n is then undefined). */
int eg_cred_bindings_parse(const char *text, size_t len,
    eg_cred_binding_t out[EG_CRED_MAX], size_t *n, char *err, size_t errlen);

int eg_cred_name_ok(const char *s, size_t len);
/* 0 if name may carry a credential; -1 with *why. */
int eg_cred_header_ok(const char *name, size_t len, const char **why);
int eg_cred_env_ok(const char *s, const char **why);

/* A secret's value: 1 .. EG_CRED_VALUE_MAX bytes of printable ASCII
 * (0x20 .. 0x7e): no CR, LF or other control byte.  0 ok; -1 with *why. */
int eg_cred_value_ok(const unsigned char *v, size_t len, const char **why);

/* "veto-cred-" and 32 lower-case hex digits. */
int eg_cred_placeholder_ok(const char *s, size_t len);

/* Does the binding cover this canonical host name (port 443)? */
int eg_cred_host_match(const eg_cred_binding_t *b, const char *host);
/* Does the binding cover this request target (origin-form)? */
int eg_cred_path_match(const eg_cred_binding_t *b, const char *target,
    size_t len);

/* "Header: template-with-secret\r\n" into out.  The length, or 0 if it
 * does not fit. */
size_t eg_cred_render(const eg_cred_binding_t *b, const char *secret,
    size_t slen, char *out, size_t cap);

#endif
