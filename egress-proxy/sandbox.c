/*
 * Sandboxes as the proxy knows them, and the one question every dial
 * asks: may this address be dialled?  Special ranges are refused unless
 * an operator range allows them; the host's own addresses are refused
 * always (no operator range can open the host's services to a sandbox).
 */
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "eg_conn.h"
#include "eg_dnsstub.h"
#include "eg_listen.h"
#include "eg_log.h"
#include "egress.h"

#define EG_LOCAL_MAX  256


eg_sandbox_t *
eg_sandbox_find(const char *id)
{
    eg_sandbox_t  *sb;

    for (sb = eg_proxy.sandboxes; sb != NULL; sb = sb->next) {
        if (strcmp(sb->id, id) == 0) {
            return sb;
        }
    }
    return NULL;
}


int
eg_sandbox_allows(const eg_sandbox_t *sb, const char *host, uint16_t port)
{
    return eg_allow_match(sb->allow, sb->nallow, host, port)
           || eg_cred_bound(sb->creds, sb->ncreds, host,
                            port == 0 ? 443 : port) != NULL;
}


eg_tenant_t *
eg_tenant_get(const char *id)
{
    eg_tenant_t  *t;

    for (t = eg_proxy.tenants; t != NULL; t = t->next) {
        if (strcmp(t->id, id) == 0) {
            t->nsandboxes++;
            return t;
        }
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    snprintf(t->id, sizeof(t->id), "%s", id);
    t->nsandboxes = 1;
    t->next = eg_proxy.tenants;
    eg_proxy.tenants = t;
    return t;
}


/* Its sandbox's connections are closed already. */
void
eg_tenant_put(eg_tenant_t *t)
{
    eg_tenant_t  **pp;

    if (t == NULL || --t->nsandboxes > 0) {
        return;
    }
    for (pp = &eg_proxy.tenants; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    free(t);
}


/* The agents' secrets of sb: a value no attachment holds is wiped, a
 * secret nothing refers to is freed (all: every one, the sandbox goes). */
void
eg_sandbox_own_gc(eg_sandbox_t *sb, int all)
{
    size_t     i, j, k = 0;
    eg_cred_t  *c;
    int        attached, detached;

    for (i = 0; i < sb->nown; i++) {
        c = sb->own[i];
        attached = detached = 0;
        for (j = 0; !all && j < sb->ncreds; j++) {
            attached |= (sb->creds[j].cred == c);
        }
        for (j = 0; !all && j < sb->ndetached; j++) {
            detached |= (sb->detached[j].cred == c);
        }
        if (!attached && c->value != NULL) {
            OPENSSL_cleanse(c->value, c->vlen);
            free(c->value);
            c->value = NULL;
            c->vlen = 0;
        }
        if (!attached && !detached) {
            eg_cred_free_agent(c);
            continue;
        }
        sb->own[k++] = c;
    }
    sb->nown = k;
}


void
eg_sandbox_unlink_free(eg_sandbox_t *sb, unsigned *closed_conns,
    unsigned *closed_listeners)
{
    eg_sandbox_t  **pp;
    eg_conn_t      *c;
    unsigned        n = 0;

    for (c = sb->conns; c != NULL; c = c->next) {
        n++;
    }
    if (closed_conns) {
        *closed_conns = n;
    }
    if (closed_listeners) {
        *closed_listeners = sb->nlisteners;
    }

    eg_conn_close_all(sb, "sandbox removed");
    eg_dnsstub_close_all(sb);
    eg_listen_close_all(sb);

    for (pp = &eg_proxy.sandboxes; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == sb) {
            *pp = sb->next;
            break;
        }
    }
    eg_proxy.nsandboxes--;
    eg_tenant_put(sb->tenant);
    sb->tenant = NULL;
    eg_sandbox_own_gc(sb, 1);
    free(sb->allow);
    free(sb->ask);
    eg_loop_defer_free(sb);
}


void
eg_sandbox_refresh_local(void)
{
    struct ifaddrs  *ifa, *i;
    eg_addr_t       *list;
    size_t           n = 0;
    uint16_t         port;

    eg_proxy.local_refreshed_ms = vsb_loop_time_ms();

    if (getifaddrs(&ifa) != 0) {
        /* keep the previous list: stale is safer than empty */
        eg_log(EG_LOG_ERROR, "getifaddrs failed; keeping %zu known host "
               "addresses", eg_proxy.nlocal);
        return;
    }

    list = calloc(EG_LOCAL_MAX, sizeof(*list));
    if (list == NULL) {
        freeifaddrs(ifa);
        return;
    }

    for (i = ifa; i != NULL && n < EG_LOCAL_MAX; i = i->ifa_next) {
        if (i->ifa_addr != NULL
            && eg_addr_from_sockaddr(i->ifa_addr, &list[n], &port) == 0)
        {
            n++;
        }
    }
    freeifaddrs(ifa);

    free(eg_proxy.local_addrs);
    eg_proxy.local_addrs = list;
    eg_proxy.nlocal = n;
}


int
eg_sandbox_may_dial(const eg_addr_t *a, const char **why)
{
    const char  *special;
    size_t       i;
    int          operator_ok = 0;

    special = eg_addr_special(a);
    if (special != NULL) {
        for (i = 0; i < eg_proxy.cf.nallow_ranges; i++) {
            if (eg_cidr_contains(&eg_proxy.cf.allow_ranges[i], a)) {
                operator_ok = 1;
                break;
            }
        }
        if (!operator_ok) {
            *why = special;
            return -1;
        }
    }

    for (i = 0; i < eg_proxy.nlocal; i++) {
        if (eg_addr_equal(&eg_proxy.local_addrs[i], a)) {
            *why = "one of the host's own addresses";
            return -1;
        }
    }
    return 0;
}
