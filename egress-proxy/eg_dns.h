/*
 * DNS messages for the stub (RFC 1035, RFC 6891 EDNS, RFC 8914 extended
 * errors): parse one query, build its answer.  Pure and bounded: a query
 * is at most EG_DNS_MAX_MSG bytes, one question, no compression in it.
 */
#ifndef EG_DNS_H
#define EG_DNS_H

#include <stddef.h>
#include <stdint.h>

#define EG_DNS_MAX_MSG     512      /* a query; answers fit in 512 too */
#define EG_DNS_MAX_NAME    255

#define EG_DNS_A           1
#define EG_DNS_AAAA        28
#define EG_DNS_OPT         41

#define EG_DNS_NOERROR     0
#define EG_DNS_FORMERR     1
#define EG_DNS_SERVFAIL    2
#define EG_DNS_NXDOMAIN    3
#define EG_DNS_NOTIMP      4
#define EG_DNS_REFUSED     5

#define EG_DNS_EDE_BLOCKED     15  /* RFC 8914 */
#define EG_DNS_EDE_PROHIBITED  18

typedef struct {
    uint16_t       id;
    uint16_t       flags;
    uint16_t       qtype;
    uint16_t       qclass;
    char           name[EG_DNS_MAX_NAME + 1];  /* dotted, no trailing dot */
    const unsigned char *question;             /* raw question, for echo */
    size_t         question_len;
    int            edns;                       /* query had an OPT record */
} eg_dns_query_t;

/* 0 ok; -1 with *why (and *rcode for a reply, or -1: drop silently). */
int eg_dns_parse_query(const unsigned char *msg, size_t len,
    eg_dns_query_t *q, int *rcode, const char **why);

/* Builds the answer in out (cap bytes, at least EG_DNS_MAX_MSG):
 * rcode, and when addr4 is non-NULL and the query is for A, one A record
 * (ttl seconds).  ede_text non-NULL adds an Extended DNS Error (code
 * ede_code) when the query had EDNS.  Returns the length, 0 on error. */
size_t eg_dns_build_answer(const eg_dns_query_t *q, int rcode,
    const unsigned char *addr4, uint32_t ttl, int ede_code,
    const char *ede_text, unsigned char *out, size_t cap);

/* An error reply for a query whose question could not be parsed: the
 * header only (id echoed).  Returns the length, 0 when msg is shorter
 * than a header. */
size_t eg_dns_build_error(const unsigned char *msg, size_t len, int rcode,
    unsigned char *out, size_t cap);

#endif
