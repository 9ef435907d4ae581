/*
 * egress-linkctl: drives the helper's egress seam (sandbox-helper/
 * egress_link.c) by hand and from the tests, without the helper's ops.
 *
 *   egress-linkctl setup   --netns PATH --proxy SOCK --sandbox ID
 *                          --tenant T
 *                          [--allow E]... [--ask E]... [--limit K=V]...
 *                          [--credential NAME=PLACEHOLDER]...
 *                          [--nft PATH]
 *   egress-linkctl update  --proxy SOCK --sandbox ID [--allow E]... [--ask E]...
 *   egress-linkctl remove  --proxy SOCK --sandbox ID
 *   egress-linkctl stats   --proxy SOCK [--sandbox ID]
 *   egress-linkctl records --proxy SOCK [--wait MS]
 *   egress-linkctl sync    --proxy SOCK [--keep ID]...
 *   egress-linkctl raw     --proxy SOCK JSON
 *   egress-linkctl ruleset | env | resolv
 *
 * Prints the proxy's reply as one JSON line, then every event received
 * as one JSON line each ({"event": ...}).  Exit 0 on an ok reply.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vsb_egress_link.h"

#define MAX_ENTRIES  256

typedef struct {
    const char  *cmd;
    const char  *netns;
    const char  *proxy;
    const char  *sandbox;
    const char  *tenant;
    const char  *nft;
    const char  *allow[MAX_ENTRIES];
    size_t       nallow;
    const char  *creds[MAX_ENTRIES];
    size_t       ncreds;
    const char  *ask[MAX_ENTRIES];
    size_t       nask;
    const char  *keep[MAX_ENTRIES];
    size_t       nkeep;
    vsb_egress_limits_t  limits;
    int          wait_ms;
    const char  *raw;
} opts_t;


static void
usage(void)
{
    fprintf(stderr, "usage: egress-linkctl setup|update|remove|stats|records|"
            "sync|raw|ruleset|env|resolv [options] (see the source)\n");
    exit(2);
}


static int
set_limit(opts_t *o, const char *kv)
{
    const char          *eq = strchr(kv, '=');
    char                *end;
    unsigned long long   v;

    if (eq == NULL) {
        return -1;
    }
    errno = 0;
    v = strtoull(eq + 1, &end, 10);
    if (errno || *end || end == eq + 1) {
        return -1;
    }
#define L(name)                                                         \
    if ((size_t) (eq - kv) == strlen(#name)                             \
        && strncmp(kv, #name, strlen(#name)) == 0)                      \
    {                                                                   \
        o->limits.name = v;                                             \
        return 0;                                                       \
    }
    L(max_connections) L(max_bytes_out) L(max_bytes_in)
    L(connect_timeout_ms) L(idle_timeout_ms)
#undef L
    return -1;
}


static void
parse(opts_t *o, int argc, char **argv)
{
    int  i;

    memset(o, 0, sizeof(*o));
    o->wait_ms = 300;
    if (argc < 2) {
        usage();
    }
    o->cmd = argv[1];
    for (i = 2; i < argc; i++) {
        const char  *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--netns") == 0 && v) {
            o->netns = v;
        } else if (strcmp(a, "--proxy") == 0 && v) {
            o->proxy = v;
        } else if (strcmp(a, "--sandbox") == 0 && v) {
            o->sandbox = v;
        } else if (strcmp(a, "--tenant") == 0 && v) {
            o->tenant = v;
        } else if (strcmp(a, "--nft") == 0 && v) {
            o->nft = v;
        } else if (strcmp(a, "--allow") == 0 && v && o->nallow < MAX_ENTRIES) {
            o->allow[o->nallow++] = v;
        } else if (strcmp(a, "--credential") == 0 && v
                   && o->ncreds < MAX_ENTRIES)
        {
            o->creds[o->ncreds++] = v;
        } else if (strcmp(a, "--ask") == 0 && v && o->nask < MAX_ENTRIES) {
            o->ask[o->nask++] = v;
        } else if (strcmp(a, "--keep") == 0 && v && o->nkeep < MAX_ENTRIES) {
            o->keep[o->nkeep++] = v;
        } else if (strcmp(a, "--limit") == 0 && v) {
            if (set_limit(o, v) != 0) {
                fprintf(stderr, "egress-linkctl: bad --limit %s\n", v);
                exit(2);
            }
        } else if (strcmp(a, "--wait") == 0 && v) {
            o->wait_ms = atoi(v);
        } else if (o->raw == NULL && strcmp(o->cmd, "raw") == 0 && a[0] == '{') {
            o->raw = a;
            continue;
        } else {
            usage();
        }
        i++;
    }
}


static int
finish(vsb_egress_link_t *l, json_t *reply, int rc, const char *err)
{
    json_t    *ev, *e;
    size_t     i;
    uint64_t   dropped;
    char       perr[256];

    if (reply != NULL) {
        char  *s = json_dumps(reply, JSON_COMPACT);
        printf("%s\n", s ? s : "{}");
        free(s);
        json_decref(reply);
    }
    if (rc != 0) {
        fprintf(stderr, "egress-linkctl: %s\n", err);
    }
    if (l != NULL) {
        (void) vsb_egress_poll_events(l, 0, perr, sizeof(perr));
        ev = vsb_egress_take_events(l, &dropped);
        json_array_foreach(ev, i, e) {
            char  *s = json_dumps(e, JSON_COMPACT);
            printf("%s\n", s ? s : "{}");
            free(s);
        }
        if (dropped > 0) {
            printf("{\"event\":\"records_dropped\",\"count\":%llu}\n",
                   (unsigned long long) dropped);
        }
        json_decref(ev);
        vsb_egress_close(l);
    }
    fflush(stdout);
    return rc == 0 ? 0 : 1;
}


int
main(int argc, char **argv)
{
    opts_t               o;
    vsb_egress_link_t   *l;
    vsb_egress_socks_t   socks;
    vsb_egress_policy_t  p;
    json_t              *reply = NULL, *req;
    json_error_t         je;
    char                 err[1024];
    int                  rc, nsfd;
    const char *const   *env;

    parse(&o, argc, argv);

    if (strcmp(o.cmd, "ruleset") == 0) {
        fputs(vsb_egress_nft_ruleset(), stdout);
        return 0;
    }
    if (strcmp(o.cmd, "env") == 0) {
        for (env = vsb_egress_env(); *env; env++) {
            printf("%s\n", *env);
        }
        return 0;
    }
    if (strcmp(o.cmd, "resolv") == 0) {
        fputs(vsb_egress_resolv_conf(), stdout);
        return 0;
    }

    if (o.proxy == NULL) {
        usage();
    }

    memset(&p, 0, sizeof(p));
    p.sandbox = o.sandbox;
    p.tenant = o.tenant;
    p.allow = o.allow;
    p.nallow = o.nallow;
    p.ask = o.ask;
    p.nask = o.nask;
    p.limits = o.limits;
    p.creds = o.ncreds > 0 ? o.creds : NULL;
    p.ncreds = o.ncreds;

    if (strcmp(o.cmd, "setup") == 0) {
        if (o.netns == NULL || o.sandbox == NULL || o.tenant == NULL) {
            usage();
        }
        nsfd = open(o.netns, O_RDONLY | O_CLOEXEC);
        if (nsfd == -1) {
            fprintf(stderr, "egress-linkctl: open %s: %s\n", o.netns,
                    strerror(errno));
            return 1;
        }
        if (vsb_egress_netns_setup(nsfd, o.nft, &socks, err, sizeof(err))
            != 0)
        {
            fprintf(stderr, "egress-linkctl: %s\n", err);
            close(nsfd);
            return 1;
        }
        close(nsfd);
        l = vsb_egress_connect(o.proxy, 5000, err, sizeof(err));
        if (l == NULL) {
            vsb_egress_socks_close(&socks);
            fprintf(stderr, "egress-linkctl: %s\n", err);
            return 1;
        }
        rc = vsb_egress_add(l, &p, &socks, &reply, err, sizeof(err));
        vsb_egress_socks_close(&socks);
        return finish(l, reply, rc, err);
    }

    l = vsb_egress_connect(o.proxy, 5000, err, sizeof(err));
    if (l == NULL) {
        fprintf(stderr, "egress-linkctl: %s\n", err);
        return 1;
    }

    if (strcmp(o.cmd, "update") == 0 && o.sandbox) {
        rc = vsb_egress_update(l, &p, &reply, err, sizeof(err));
    } else if (strcmp(o.cmd, "remove") == 0 && o.sandbox) {
        rc = vsb_egress_remove(l, o.sandbox, &reply, err, sizeof(err));
    } else if (strcmp(o.cmd, "stats") == 0) {
        rc = vsb_egress_stats(l, o.sandbox, &reply, err, sizeof(err));
    } else if (strcmp(o.cmd, "records") == 0) {
        /* a reply is a barrier: every record made before it is in */
        rc = vsb_egress_poll_events(l, o.wait_ms, err, sizeof(err));
        if (rc == 0) {
            rc = vsb_egress_ping(l, NULL, err, sizeof(err));
        }
    } else if (strcmp(o.cmd, "sync") == 0) {
        rc = vsb_egress_sync(l, o.keep, o.nkeep, &reply, err, sizeof(err));
    } else if (strcmp(o.cmd, "raw") == 0 && o.raw) {
        req = json_loads(o.raw, 0, &je);
        if (req == NULL) {
            fprintf(stderr, "egress-linkctl: bad JSON: %s\n", je.text);
            vsb_egress_close(l);
            return 2;
        }
        rc = vsb_egress_request(l, req, NULL, 0, &reply, err, sizeof(err));
        json_decref(req);
    } else {
        vsb_egress_close(l);
        usage();
        return 2;
    }
    return finish(l, reply, rc, err);
}
