/*
 * Listening sockets handed over by the helper (created inside the
 * sandbox's network namespace).  The proxy only accepts (TCP) or
 * receives (UDP DNS) on them; it checks that each one is what its kind
 * says (type, listening) before using it.
 */
#ifndef EG_LISTEN_H
#define EG_LISTEN_H

#include "egress.h"

const char *eg_listen_kind_name(eg_listen_kind_t k);
int eg_listen_kind_parse(const char *s, eg_listen_kind_t *k);

/* Takes ownership of fd (closed on failure). 0 ok; -1 with err. */
int eg_listen_attach(eg_sandbox_t *sb, eg_listen_kind_t kind, int fd,
    char *err, size_t errlen);
void eg_listen_close_all(eg_sandbox_t *sb);
/* Re-arms listeners paused when descriptors ran out. */
void eg_listen_resume(eg_sandbox_t *sb);

#endif
