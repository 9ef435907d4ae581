/*
 * DNS query parser and answer builder for the stub.  A query has one
 * question; answer/authority sections must be empty; the only
 * additional record allowed is one OPT (EDNS).  The answer echoes the
 * question verbatim and points at it (0xc00c) from its A record.
 */
#include <string.h>

#include "eg_dns.h"

#define DNS_HDR        12
#define DNS_QR         0x8000
#define DNS_OPCODE     0x7800
#define DNS_AA         0x0400
#define DNS_RD         0x0100
#define DNS_RA         0x0080


static uint16_t
eg_get16(const unsigned char *p)
{
    return (uint16_t) ((p[0] << 8) | p[1]);
}


static void
eg_put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char) (v >> 8);
    p[1] = (unsigned char) v;
}


int
eg_dns_parse_query(const unsigned char *msg, size_t len, eg_dns_query_t *q,
    int *rcode, const char **why)
{
    size_t    off = DNS_HDR, nlen = 0;
    unsigned  lab, qd, an, ns, ar;

    memset(q, 0, sizeof(*q));
    *rcode = -1;

    if (len < DNS_HDR) {
        *why = "shorter than a DNS header";
        return -1;
    }
    if (len > EG_DNS_MAX_MSG) {
        *why = "query larger than 512 bytes";
        *rcode = EG_DNS_FORMERR;
        return -1;
    }

    q->id = eg_get16(msg);
    q->flags = eg_get16(msg + 2);
    qd = eg_get16(msg + 4);
    an = eg_get16(msg + 6);
    ns = eg_get16(msg + 8);
    ar = eg_get16(msg + 10);

    if (q->flags & DNS_QR) {
        *why = "a response, not a query";
        return -1;                     /* never answer an answer */
    }

    *rcode = EG_DNS_FORMERR;
    if ((q->flags & DNS_OPCODE) != 0) {
        *rcode = EG_DNS_NOTIMP;
        *why = "opcode is not QUERY";
        return -1;
    }
    if (qd != 1 || an != 0 || ns != 0 || ar > 1) {
        *why = "not exactly one question";
        return -1;
    }

    for ( ;; ) {
        if (off >= len) {
            *why = "question name runs past the message";
            return -1;
        }
        lab = msg[off++];
        if (lab == 0) {
            break;
        }
        if (lab > 63) {
            *why = "compressed or extended label in a question";
            return -1;
        }
        if (off + lab > len || nlen + lab + 1 > EG_DNS_MAX_NAME) {
            *why = "question name too long";
            return -1;
        }
        if (nlen > 0) {
            q->name[nlen++] = '.';
        }
        for (unsigned i = 0; i < lab; i++) {
            unsigned char  c = msg[off + i];
            if (c == '.' || c == '\0') {
                *why = "dot or NUL inside a label";
                return -1;
            }
            if (c >= 'A' && c <= 'Z') {
                c = (unsigned char) (c - 'A' + 'a');
            }
            q->name[nlen++] = (char) c;
        }
        off += lab;
    }
    q->name[nlen] = '\0';

    if (off + 4 > len) {
        *why = "question truncated";
        return -1;
    }
    q->qtype = eg_get16(msg + off);
    q->qclass = eg_get16(msg + off + 2);
    off += 4;
    q->question = msg + DNS_HDR;
    q->question_len = off - DNS_HDR;

    if (ar == 1) {
        /* OPT: root name, type 41, class, ttl, rdlen, rdata */
        if (off + 11 > len || msg[off] != 0
            || eg_get16(msg + off + 1) != EG_DNS_OPT)
        {
            *why = "additional record is not an OPT";
            return -1;
        }
        unsigned  rdlen = eg_get16(msg + off + 9);
        if (off + 11 + rdlen != len) {
            *why = "OPT record length mismatch";
            return -1;
        }
        q->edns = 1;
        off += 11 + rdlen;
    }

    if (off != len) {
        *why = "trailing bytes after the question";
        return -1;
    }

    if (q->qclass != 1 && q->qclass != 255) {
        *rcode = EG_DNS_REFUSED;
        *why = "question class is not IN";
        return -1;
    }

    *rcode = EG_DNS_NOERROR;
    return 0;
}


size_t
eg_dns_build_answer(const eg_dns_query_t *q, int rcode,
    const unsigned char *addr4, uint32_t ttl, int ede_code,
    const char *ede_text, unsigned char *out, size_t cap)
{
    size_t    off = DNS_HDR, tlen = 0;
    unsigned  ancount = 0, arcount = 0;
    int       answer = addr4 != NULL && rcode == EG_DNS_NOERROR
                       && (q->qtype == EG_DNS_A || q->qtype == 255);

    if (cap < EG_DNS_MAX_MSG || q->question_len + DNS_HDR + 16 > cap) {
        return 0;
    }

    eg_put16(out, q->id);
    eg_put16(out + 2, DNS_QR | DNS_AA | DNS_RA | (q->flags & DNS_RD)
                      | ((unsigned) rcode & 0xf));
    eg_put16(out + 4, 1);

    memcpy(out + off, q->question, q->question_len);
    off += q->question_len;

    if (answer) {
        eg_put16(out + off, 0xc00c);
        eg_put16(out + off + 2, EG_DNS_A);
        eg_put16(out + off + 4, 1);
        out[off + 6] = (unsigned char) (ttl >> 24);
        out[off + 7] = (unsigned char) (ttl >> 16);
        out[off + 8] = (unsigned char) (ttl >> 8);
        out[off + 9] = (unsigned char) ttl;
        eg_put16(out + off + 10, 4);
        memcpy(out + off + 12, addr4, 4);
        off += 16;
        ancount = 1;
    }

    if (q->edns) {
        if (ede_text != NULL) {
            tlen = strlen(ede_text);
            if (tlen > 200) {
                tlen = 200;
            }
        }
        if (off + 11 + (ede_text ? 6 + tlen : 0) > cap) {
            return 0;
        }
        out[off] = 0;
        eg_put16(out + off + 1, EG_DNS_OPT);
        eg_put16(out + off + 3, 1232);          /* our UDP payload size */
        memset(out + off + 5, 0, 4);            /* ext rcode, version, flags */
        eg_put16(out + off + 9, ede_text ? (unsigned) (6 + tlen) : 0);
        off += 11;
        if (ede_text != NULL) {
            eg_put16(out + off, 15);            /* option: Extended DNS Error */
            eg_put16(out + off + 2, (unsigned) (2 + tlen));
            eg_put16(out + off + 4, (unsigned) ede_code);
            memcpy(out + off + 6, ede_text, tlen);
            off += 6 + tlen;
        }
        arcount = 1;
    }

    eg_put16(out + 6, ancount);
    eg_put16(out + 8, 0);
    eg_put16(out + 10, arcount);
    return off;
}


size_t
eg_dns_build_error(const unsigned char *msg, size_t len, int rcode,
    unsigned char *out, size_t cap)
{
    if (len < DNS_HDR || cap < DNS_HDR) {
        return 0;
    }
    memset(out, 0, DNS_HDR);
    out[0] = msg[0];
    out[1] = msg[1];
    eg_put16(out + 2, DNS_QR | DNS_RA | (eg_get16(msg + 2) & DNS_RD)
                      | ((unsigned) rcode & 0xf));
    return DNS_HDR;
}
