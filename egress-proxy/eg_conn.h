/*
 * One proxied connection: from the sandbox's first byte to the end of the
 * relay.  conn.c decides (parse, policy, resolve, classify, dial),
 * relay.c moves bytes, refuse.c answers refusals.
 */
#ifndef EG_CONN_H
#define EG_CONN_H

#include "egress.h"
#include "eg_resolve.h"
#include "eg_sni.h"

#define EG_C2U_CAP   (36 * 1024)    /* request head + its rewrite */
#define EG_U2C_CAP   (16 * 1024)
#define EG_SNIFF_MAX (EG_SNI_MAX_HELLO + 4 * 1024)  /* record headers */
#define EG_REFUSE_LINGER_MS  2000
#define EG_REFUSE_DISCARD    (64 * 1024)

typedef enum {
    EG_CS_HEAD = 0,          /* explicit: reading the request head */
    EG_CS_SNIFF,             /* transparent: ClientHello or HTTP head */
    EG_CS_RESOLVING,
    EG_CS_CONNECTING,
    EG_CS_RELAY,
    EG_CS_REFUSING           /* writing a refusal, then closing */
} eg_conn_state_t;

typedef struct eg_icpt_s  eg_icpt_t;

struct eg_conn_s {
    vsb_event_t        client;
    vsb_event_t        upstream;
    eg_sandbox_t      *sb;
    eg_conn_t         *next;
    eg_conn_t         *prev;
    eg_listen_kind_t   via;
    eg_conn_state_t    state;
    const char        *kind;        /* "http", "connect", "tls" */

    eg_host_t          host;
    uint16_t           port;
    int                have_host;
    int                is_connect;
    int                absolute;    /* plain HTTP: rewrite the head, and
                                       relay one request (body_left) */
    int                in_head;     /* counted in sb->heads */
    uint64_t           body_left;   /* plain HTTP: request body to relay */
    int                request_done;/* ... then client bytes are dropped */

    int                orig_valid;
    eg_addr_t          orig_dst;
    uint16_t           orig_port;

    eg_addr_t          addrs[EG_RESOLVE_MAX_ADDRS];
    size_t             naddrs;
    size_t             next_addr;
    eg_addr_t          dialled;
    int                have_dialled;
    eg_resolve_req_t  *resolve;

    unsigned char     *c2u;         /* sandbox -> upstream */
    size_t             c2u_off, c2u_len;
    unsigned char     *u2c;         /* upstream -> sandbox */
    size_t             u2c_off, u2c_len;
    int                client_eof, upstream_eof;
    int                upstream_shut, client_shut;
    size_t             discarded;

    uint64_t           start_wall_ms;
    uint64_t           start_ms;
    uint64_t           deadline_ms;
    uint64_t           bytes_out, bytes_in;

    const char        *decision;
    char               reason[192];
    int                askable;

    int                intercept;   /* a credential is bound to the host */
    eg_icpt_t         *icpt;        /* intercept.c, once relaying */
    char               cred_name[EG_CRED_NAME_MAX + 1];  /* the credential
                                     * used or refused ("": none) */
    int                exfil;       /* a placeholder sent where unbound */
    unsigned           injections;
};

/* conn.c */
void eg_conn_accepted(eg_sandbox_t *sb, eg_listen_kind_t via, int fd);
void eg_conn_sweep(eg_sandbox_t *sb, uint64_t now);
void eg_conn_finish(eg_conn_t *c);
void eg_conn_close_all(eg_sandbox_t *sb, const char *reason);
/* The head is complete (or refused): out of the sandbox's head count. */
void eg_conn_head_done(eg_conn_t *c);

/* relay.c */
void eg_relay_start(eg_conn_t *c);
void eg_relay_client_event(eg_conn_t *c, uint32_t events);
void eg_relay_upstream_event(eg_conn_t *c, uint32_t events);
void eg_relay_update(eg_conn_t *c);
/* read(2) from fd of at most cap bytes, within the byte budget of dir
 * (a plain relay's and an intercepted connection's): what is read counts
 * against the sandbox's budget and c's bytes.  read(2)'s return (errno
 * set on -1), or -3 when the budget is spent (nothing read). */
ssize_t eg_relay_budget_read(eg_conn_t *c, int fd, unsigned char *buf,
    size_t cap, eg_dir_t dir);

/* intercept.c: TLS terminated at the proxy for a host a credential of
 * the sandbox is bound to (docs/security.md "Credentials"). */
void eg_icpt_start(eg_conn_t *c);
void eg_icpt_event(eg_conn_t *c);
int eg_icpt_closing(const eg_conn_t *c);
void eg_icpt_free(eg_conn_t *c);
/* A placeholder of sb in buf: refuses c (403, recorded as an
 * exfiltration attempt) and returns -1; 0 when there is none. */
int eg_conn_placeholder_check(eg_conn_t *c, const unsigned char *buf,
    size_t len);
/* c carried cred's placeholder where it is not bound (or after it was
 * detached): its record names cred as an exfiltration attempt, and the
 * sandbox's and the credential's refusals count it.  The caller refuses
 * c, saying which. */
void eg_conn_exfil(eg_conn_t *c, eg_cred_t *cred);

/* refuse.c: status 0 means "close without an HTTP answer" (TLS gets an
 * access_denied alert instead). */
void eg_refuse(eg_conn_t *c, int status, const char *decision,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void eg_refuse_client_event(eg_conn_t *c, uint32_t events);

#endif
