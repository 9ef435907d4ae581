/*
 * The proxy's credentials: the operator's bindings and the secret values
 * (read once at start, as root, before the privilege drop; see
 * docs/operations.md), and the credentials attached to each sandbox.
 *
 *   credentials_dir/bindings        one binding a line (eg_cred_parse.h)
 *   credentials_dir/secrets/NAME    the value of NAME (one trailing
 *                                   newline is dropped)
 *
 * A bindings file that does not parse stops the proxy (a named error);
 * a secret whose file is missing, readable by group or others, owned by
 * another user than root or the proxy's, or whose value is not printable
 * ASCII (CR, LF, any control byte) is refused alone: its log line names
 * it and why, and attaching it is an error naming it.
 */
#ifndef EG_CRED_H
#define EG_CRED_H

#include <stddef.h>
#include <stdint.h>

#include "eg_cred_parse.h"

typedef struct {
    eg_cred_binding_t  b;
    char              *value;       /* NULL: refused at load */
    size_t             vlen;
    char               refused[320];
    unsigned           agent;       /* an agent's own secret (its sandbox
                                     * holds it; freed with it) */
    char               agent_placeholder[EG_CRED_PLACEHOLDER_LEN + 1];
    uint64_t           injections;
    uint64_t           placeholders_refused;
} eg_cred_t;

/* An attachment: a credential and the placeholder its sandbox holds. */
typedef struct {
    eg_cred_t         *cred;
    char               placeholder[EG_CRED_PLACEHOLDER_LEN + 1];
} eg_cred_att_t;

/* dir "" loads nothing.  -1 with err: the proxy must not start. */
int eg_cred_load(const char *dir, const char *user, char *err, size_t errlen);
eg_cred_t *eg_cred_find(const char *name);
size_t eg_cred_count(void);
eg_cred_t *eg_cred_at(size_t i);
void eg_cred_free_all(void);
/* Wipes and frees an agent's own secret (eg_cred_t.agent). */
void eg_cred_free_agent(eg_cred_t *c);

/* The attachment among atts whose placeholder is in buf, or NULL. */
const eg_cred_att_t *eg_cred_placeholder_in(const eg_cred_att_t *atts,
    size_t n, const char *buf, size_t len);

/* The attachment covering host:port among atts, or NULL. */
const eg_cred_att_t *eg_cred_bound(const eg_cred_att_t *atts, size_t n,
    const char *host, uint16_t port);

#endif
