/*
 * Network egress in the helper: the schema of a sandbox's network, the
 * per-sandbox state (allowlist, the helper's copies of its sockets), and
 * keeping the proxy's view in step with it: add at create, update,
 * remove at destroy, and after every proxy (re)start a sync and an add
 * of every live allowlist sandbox.  See vsb_egress.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_allow.h"
#include "vsb_egress_cred.h"
#include "vsb_egress_ctl.h"
#include "vsb_egress_int.h"
#include "vsb_egress_proxy.h"
#include "vsb_fdio.h"
#include "vsb_log.h"
#include "vsb_snap_tree.h"

static vsb_egress_sb_t  *vsb_egress_list;

/* Written over the rootfs's defaults at create. */
static const char  vsb_egress_none_resolv[] =
    "# Veto Sandbox: this sandbox was created with network \"none\": it has\n"
    "# loopback only, and no name but localhost resolves (hosts: files in\n"
    "# /etc/nsswitch.conf).  Lookups fail at once (\"Name or service not\n"
    "# known\", ENOTFOUND, \"Could not resolve host\"): that is the sandbox's\n"
    "# policy, not a transient fault.  A sandbox created with a network\n"
    "# allowlist reaches the hosts it names.\n"
    "options attempts:1 timeout:1\n";

static const char  vsb_egress_none_nsswitch[] =
    "passwd: files\n"
    "group: files\n"
    "shadow: files\n"
    "hosts: files\n"
    "networks: files\n"
    "protocols: files\n"
    "services: files\n";


vsb_egress_sb_t *
vsb_egress_first(void)
{
    return vsb_egress_list;
}


vsb_egress_sb_t *
vsb_egress_find(const char *id)
{
    vsb_egress_sb_t  *es;

    for (es = vsb_egress_list; es != NULL; es = es->next) {
        if (strcmp(es->sb->id, id) == 0) {
            return es;
        }
    }
    return NULL;
}


/* ---- the schema ------------------------------------------------------ */


int
vsb_egress_req_entries(json_t *arr, const char *field, const vsb_config_t *cf,
    size_t already, size_t already_bytes, vsb_error_t *e)
{
    eg_allow_entry_t  ent;
    json_t           *v;
    size_t            i, len, bytes = already_bytes;
    char              why[300];

    if (!json_is_array(arr)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, field,
                             "\"%s\" must be an array of \"host[:port]\" or "
                             "\"*.suffix[:port]\" strings", field);
    }

    if (already + json_array_size(arr) > cf->egress.max_entries) {
        vsb_req_over(e, field, VSB_LIMIT_NETWORK_ENTRIES,
                     already + json_array_size(arr), cf->egress.max_entries);
        snprintf(e->detail, sizeof(e->detail), "a sandbox's network may "
                 "name at most %llu entries (allow and ask together); this "
                 "would make %zu", (unsigned long long) cf->egress.max_entries,
                 already + json_array_size(arr));
        return -1;
    }

    json_array_foreach(arr, i, v) {
        if (!json_is_string(v)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, field,
                                 "\"%s\"[%zu] must be a string", field, i);
        }
        len = json_string_length(v);
        if (len == 0 || len > VSB_MAX_NETWORK_ENTRY
            || strlen(json_string_value(v)) != len)
        {
            return vsb_error_set(e, VSB_E_BAD_VALUE, field,
                                 "\"%s\"[%zu] must be 1 to %d bytes, no NUL",
                                 field, i, VSB_MAX_NETWORK_ENTRY);
        }
        if (eg_allow_parse(json_string_value(v), &ent, why, sizeof(why))
            != 0)
        {
            return vsb_error_set(e, VSB_E_BAD_VALUE, field,
                                 "\"%s\"[%zu] \"%.*s\": %s", field, i,
                                 (int) (len > 64 ? 64 : len),
                                 json_string_value(v), why);
        }
        bytes += len;
    }

    if (bytes > VSB_MAX_NETWORK_BYTES) {
        vsb_req_over(e, field, VSB_LIMIT_NETWORK_BYTES, bytes,
                     VSB_MAX_NETWORK_BYTES);
        snprintf(e->detail, sizeof(e->detail), "a sandbox's network entries "
                 "may take at most %d bytes together; this would make %zu",
                 VSB_MAX_NETWORK_BYTES, bytes);
        return -1;
    }
    return 0;
}


static size_t
vsb_egress_bytes(json_t *arr)
{
    json_t  *v;
    size_t   i, n = 0;

    json_array_foreach(arr, i, v) {
        n += json_string_length(v);
    }
    return n;
}


int
vsb_egress_req_network(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "allow", "ask", "credentials", NULL
    };
    json_t                   *net, *allow, *ask, *creds;

    r->network = NULL;
    net = json_object_get(root, "network");
    if (net == NULL) {
        return 0;
    }
    if (json_is_string(net)) {
        if (strcmp(json_string_value(net), "none") != 0) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "network",
                                 "\"network\" is \"none\" or an object "
                                 "{\"allow\": [...], \"ask\": [...]}");
        }
        return 0;
    }
    if (!json_is_object(net)) {
        return vsb_error_set(e, VSB_E_BAD_TYPE, "network",
                             "\"network\" is \"none\" or an object "
                             "{\"allow\": [...], \"ask\": [...]}");
    }
    if (vsb_req_fields(net, allowed, "network", e) != 0) {
        return -1;
    }
    if (!cf->egress.enabled) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "network",
                             "network allowlists are not enabled on this "
                             "helper (egress = off): only \"none\"");
    }

    allow = json_object_get(net, "allow");
    if (allow == NULL) {
        return vsb_error_set(e, VSB_E_MISSING_FIELD, "network",
                             "\"network\" needs \"allow\" (an array, may "
                             "be empty)");
    }
    if (vsb_egress_req_entries(allow, "network.allow", cf, 0, 0, e) != 0) {
        return -1;
    }
    ask = json_object_get(net, "ask");
    if (ask != NULL
        && vsb_egress_req_entries(ask, "network.ask", cf,
                                  json_array_size(allow),
                                  vsb_egress_bytes(allow), e) != 0)
    {
        return -1;
    }
    creds = json_object_get(net, "credentials");
    if (creds != NULL
        && vsb_ecred_req(creds, "network.credentials", NULL, e) != 0)
    {
        return -1;
    }

    r->network = net;
    return 0;
}


/* ---- create ---------------------------------------------------------- */


/* Replaces a file the rootfs laid out.  Nothing of the workload has
 * run in this sandbox yet, but a fork's root is a snapshot of one where
 * a workload did: no link is followed, on the way or at the end. */
static int
vsb_egress_write_etc(const vsb_sandbox_t *sb, const char *name,
    const char *text, vsb_error_t *e)
{
    char    path[PATH_MAX + 32], rel[64];
    int     fd, rfd;
    size_t  len = strlen(text);

    snprintf(path, sizeof(path), "%s/root", sb->dir);
    rfd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    snprintf(path, sizeof(path), "%s/root/etc/%s", sb->dir, name);
    snprintf(rel, sizeof(rel), "etc/%s", name);
    fd = rfd == -1 ? -1 : vsb_mf_open(rfd, rel, O_WRONLY | O_TRUNC);
    if (rfd != -1) {
        close(rfd);
    }
    if (fd == -1) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "network: open %s: %s",
                             path, strerror(errno));
    }
    if (vsb_write_full(fd, text, len) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "network: write %s: %s",
                      path, strerror(errno));
        close(fd);
        return -1;
    }
    if (close(fd) != 0) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "network: close %s: %s",
                             path, strerror(errno));
    }
    return 0;
}


int
vsb_egress_sandbox_create(vsb_sandbox_t *sb, json_t *network, vsb_error_t *e)
{
    vsb_egress_sb_t  *es;
    json_t           *ask;
    char              err[512];

    if (network == NULL) {
        return vsb_egress_write_etc(sb, "resolv.conf", vsb_egress_none_resolv,
                                    e) != 0
               || vsb_egress_write_etc(sb, "nsswitch.conf",
                                       vsb_egress_none_nsswitch, e) != 0
               ? -1 : 0;
    }

    if (!vsb_eproxy_up()) {
        json_t  *h = vsb_eproxy_health();
        const char  *d = json_string_value(json_object_get(h, "detail"));

        vsb_error_set(e, VSB_E_UNAVAILABLE, "network", "the egress proxy is "
                      "%s%s%s; retry later, or create with network \"none\"",
                      json_string_value(json_object_get(h, "state")),
                      d ? ": " : "", d ? d : "");
        json_decref(h);
        return -1;
    }

    if (vsb_egress_write_etc(sb, "resolv.conf", vsb_egress_resolv_conf(), e)
        != 0)
    {
        return -1;
    }

    es = calloc(1, sizeof(*es));
    if (es == NULL) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
    }
    vsb_egress_socks_init(&es->socks);
    es->sb = sb;
    es->allow = json_deep_copy(json_object_get(network, "allow"));
    ask = json_object_get(network, "ask");
    es->ask = ask ? json_deep_copy(ask) : json_array();
    if (es->allow == NULL || es->ask == NULL) {
        json_decref(es->allow);
        json_decref(es->ask);
        free(es);
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
    }
    es->bytes = vsb_egress_bytes(es->allow) + vsb_egress_bytes(es->ask);
    es->done_timer.data = es;
    es->creds = json_array();

    sb->egress = es;
    es->next = vsb_egress_list;
    vsb_egress_list = es;

    if (es->creds == NULL) {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
    }
    if (json_object_get(network, "credentials") != NULL
        && vsb_ecred_attach(es->creds, json_object_get(network,
                                                       "credentials"), e)
           != 0)
    {
        return -1;
    }
    /* with credentials configured, every allowlist sandbox trusts the
     * proxy's CA (so that one can be attached later) */
    if (vsb_ecred_enabled()) {
        if (vsb_ecred_bundle(sb, e) != 0) {
            return -1;
        }
        es->env = vsb_ecred_env(vsb_egress_env(), es->creds);
        if (es->env == NULL) {
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        }
    }

    if (vsb_egress_netns_setup(sb->netns_fd, vsb_cf.egress.nft, &es->socks,
                               err, sizeof(err)) != 0)
    {
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "network: %s", err);
    }
    return 0;
}


/* ---- the proxy's view ------------------------------------------------ */


static void
vsb_egress_done_fire(vsb_timer_t *t)
{
    vsb_egress_sb_t     *es = t->data;
    vsb_egress_done_pt   done = es->done;
    void                *data = es->done_data;

    es->done = NULL;
    es->done_data = NULL;
    if (done != NULL) {
        done(es->sb, data, es->done_error,
             es->done_error ? es->done_detail : NULL);
    }
}


/* Calls the waiting done from the loop (never from inside a request). */
static void
vsb_egress_done_later(vsb_egress_sb_t *es, const char *error,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
vsb_egress_done_later(vsb_egress_sb_t *es, const char *error,
    const char *fmt, ...)
{
    va_list  ap;

    es->done_error = error;
    es->done_detail[0] = '\0';
    if (fmt != NULL) {
        va_start(ap, fmt);
        vsnprintf(es->done_detail, sizeof(es->done_detail), fmt, ap);
        va_end(ap);
    }
    es->done_timer.handler = vsb_egress_done_fire;
    vsb_timer_add(&es->done_timer, 0);
}


static json_t *
vsb_egress_add_req(vsb_egress_sb_t *es, int *fds, size_t *nfds)
{
    const struct { int fd; const char *kind; } all[] = {
        { es->socks.http_fd, "http" },
        { es->socks.transparent_fd, "transparent" },
        { es->socks.transparent6_fd, "transparent" },
        { es->socks.dns_udp_fd, "dns_udp" },
        { es->socks.dns_tcp_fd, "dns_tcp" },
    };
    json_t  *req, *kinds;
    size_t   i;

    if (!vsb_egress_tenant_ok(es->sb->tenant)) {
        vsb_log(VSB_LOG_ERR, "egress: sandbox %s: its tenant is not one "
                "the proxy takes (1 .. %d bytes of printable ASCII)",
                es->sb->id, VSB_EGRESS_MAX_TENANT);
        return NULL;
    }
    kinds = json_array();
    req = json_pack("{s:s, s:s, s:s, s:O, s:O}", "op", VSB_EGRESS_OP_ADD,
                    "sandbox", es->sb->id, "tenant", es->sb->tenant,
                    "allow", es->allow, "ask", es->ask);
    if (req != NULL && json_array_size(es->creds) > 0) {
        json_object_set(req, "credentials", es->creds);
    }
    if (req == NULL || kinds == NULL) {
        json_decref(req);
        json_decref(kinds);
        return NULL;
    }
    *nfds = 0;
    for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (all[i].fd >= 0) {
            fds[(*nfds)++] = all[i].fd;
            json_array_append_new(kinds, json_string(all[i].kind));
        }
    }
    json_object_set_new(req, "listeners", kinds);
    return req;
}


static void vsb_egress_send_remove(vsb_egress_sb_t *es);


static void
vsb_egress_remove_finish(vsb_egress_sb_t *es)
{
    vsb_egress_socks_close(&es->socks);
    es->served = 0;
    vsb_egress_done_later(es, NULL, NULL);
}


static void
vsb_egress_added(void *data, json_t *reply, const char *why)
{
    vsb_egress_sb_t  *es = data;
    const char       *err, *detail;
    int               create = es->done != NULL && !es->removing;

    es->adding = 0;

    if (reply != NULL && json_is_true(json_object_get(reply, "ok"))) {
        es->served = 1;
        if (es->removing) {
            vsb_egress_send_remove(es);
        } else if (create) {
            vsb_egress_done_later(es, NULL, NULL);
        } else {
            vsb_log(VSB_LOG_INFO, "sandbox %s: egress: the proxy serves it "
                    "again", es->sb->id);
        }
        return;
    }

    err = reply ? json_string_value(json_object_get(reply, "error")) : NULL;
    detail = reply ? json_string_value(json_object_get(reply, "detail"))
                   : why;
    vsb_log(VSB_LOG_ERR, "sandbox %s: egress: the proxy did not take it: "
            "%s: %s", es->sb->id, err ? err : "no reply",
            detail ? detail : "");

    if (es->removing) {
        if (vsb_eproxy_dead() || reply != NULL) {
            vsb_egress_remove_finish(es);
        }
        /* else: the proxy is being killed; vsb_egress_proxy_dead()
         * finishes */
        return;
    }
    if (create) {
        vsb_egress_done_later(es,
                              reply == NULL ? VSB_E_UNAVAILABLE
                              : err && strcmp(err, "capacity") == 0
                                ? VSB_E_CAPACITY
                              : err && strcmp(err, VSB_E_CREDENTIAL_UNAVAILABLE)
                                       == 0
                                ? VSB_E_CREDENTIAL_UNAVAILABLE : VSB_E_INTERNAL,
                              "egress proxy: %s%s%s", err ? err : "",
                              err ? ": " : "", detail ? detail : "no reply");
    }
}


static int
vsb_egress_send_add(vsb_egress_sb_t *es)
{
    int      fds[VSB_EGRESS_MAX_FDS];
    size_t   nfds;
    json_t  *req;
    int      rc;

    req = vsb_egress_add_req(es, fds, &nfds);
    if (req == NULL) {
        return -1;
    }
    rc = vsb_ectl_send(req, fds, nfds, VSB_EGRESS_REQ_MS, vsb_egress_added,
                       es);
    json_decref(req);
    if (rc == 0) {
        es->adding = 1;
    }
    return rc;
}


void
vsb_egress_sandbox_add(vsb_sandbox_t *sb, vsb_egress_done_pt done,
    void *data)
{
    vsb_egress_sb_t  *es = sb->egress;

    es->done = done;
    es->done_data = data;

    if (!vsb_eproxy_up() || vsb_egress_send_add(es) != 0) {
        vsb_egress_done_later(es, VSB_E_UNAVAILABLE, "the egress proxy is "
                              "not running; retry later");
    }
}


static void
vsb_egress_removed(void *data, json_t *reply, const char *why)
{
    vsb_egress_sb_t  *es = data;
    const char       *err;

    if (reply != NULL) {
        err = json_string_value(json_object_get(reply, "error"));
        if (!json_is_true(json_object_get(reply, "ok"))
            && (err == NULL || strcmp(err, "not_found") != 0))
        {
            /* it cannot be trusted to have closed them: kill it */
            vsb_log(VSB_LOG_ERR, "sandbox %s: egress: the proxy refused to "
                    "remove it: %s", es->sb->id, err ? err : "?");
            vsb_eproxy_restart("the proxy refused a remove");
            if (!vsb_eproxy_dead()) {
                return;         /* vsb_egress_proxy_dead() finishes */
            }
        }
        vsb_egress_remove_finish(es);
        return;
    }

    /* no answer: done once the proxy is confirmed dead */
    if (vsb_eproxy_dead()) {
        vsb_egress_remove_finish(es);
    }
}


static void
vsb_egress_send_remove(vsb_egress_sb_t *es)
{
    json_t  *req;

    req = json_pack("{s:s, s:s}", "op", VSB_EGRESS_OP_REMOVE, "sandbox",
                    es->sb->id);
    if (req != NULL
        && vsb_ectl_send(req, NULL, 0, VSB_EGRESS_REQ_MS, vsb_egress_removed,
                         es) == 0)
    {
        json_decref(req);
        return;
    }
    json_decref(req);

    /* the link is down: the proxy holds nothing once it is dead */
    if (vsb_eproxy_dead()) {
        vsb_egress_remove_finish(es);
    } else {
        vsb_eproxy_restart("cannot send a remove");
    }
}


static void
vsb_egress_remove_go(vsb_egress_sb_t *es)
{
    if (es->adding || es->updating) {
        return;                 /* their callbacks go on with it */
    }
    if (!es->served) {
        vsb_egress_remove_finish(es);
        return;
    }
    vsb_egress_send_remove(es);
}


void
vsb_egress_sandbox_remove(vsb_sandbox_t *sb, vsb_egress_done_pt done,
    void *data)
{
    vsb_egress_sb_t     *es = sb->egress;
    vsb_egress_done_pt   create = es->done;
    void                *cdata = es->done_data;

    /* a create still waiting for the proxy learns the sandbox ended */
    vsb_timer_del(&es->done_timer);
    es->done = NULL;
    if (create != NULL) {
        create(sb, cdata, VSB_E_BUSY, "the sandbox was destroyed before "
               "the egress proxy took it");
    }

    es->removing = 1;
    es->done = done;
    es->done_data = data;
    vsb_egress_remove_go(es);
}


/* From the loop (a reply or a failed link): the update op's done may
 * run here. */
static void
vsb_egress_updated(void *data, json_t *reply, const char *why)
{
    vsb_egress_sb_t     *es = data;
    vsb_egress_done_pt   udone = es->udone;
    void                *udata = es->udone_data;
    const char          *err, *detail;
    char                 msg[256];

    es->updating = 0;
    es->udone = NULL;
    es->udone_data = NULL;

    if (reply != NULL && json_is_true(json_object_get(reply, "ok"))) {
        json_decref(es->allow);
        es->allow = es->pending;
        es->pending = NULL;
        if (es->pending_creds != NULL) {
            json_decref(es->creds);
            es->creds = es->pending_creds;
            es->pending_creds = NULL;
            if (es->env != NULL) {
                char  **env = vsb_ecred_env(vsb_egress_env(), es->creds);
                if (env != NULL) {
                    vsb_ecred_env_free(es->env);
                    es->env = env;
                } else {
                    vsb_log(VSB_LOG_ERR, "sandbox %s: out of memory for "
                            "the credentials' variables", es->sb->id);
                }
            }
        }
        es->bytes = vsb_egress_bytes(es->allow) + vsb_egress_bytes(es->ask);
        if (udone != NULL) {
            udone(es->sb, udata, NULL, NULL);
        }

    } else {
        json_decref(es->pending);
        es->pending = NULL;
        json_decref(es->pending_creds);
        es->pending_creds = NULL;
        err = reply ? json_string_value(json_object_get(reply, "error"))
                    : NULL;
        detail = reply ? json_string_value(json_object_get(reply, "detail"))
                       : why;
        snprintf(msg, sizeof(msg), "egress proxy: %s%s%s", err ? err : "",
                 err ? ": " : "", detail ? detail : "no reply");
        if (udone != NULL) {
            udone(es->sb, udata,
                  reply == NULL ? VSB_E_UNAVAILABLE
                  : err && strcmp(err, VSB_E_CREDENTIAL_UNAVAILABLE) == 0
                    ? VSB_E_CREDENTIAL_UNAVAILABLE : VSB_E_INTERNAL, msg);
        }
    }

    if (es->removing && es->done != NULL && !es->done_timer.armed) {
        vsb_egress_remove_go(es);
    }
}


int
vsb_egress_sandbox_allow(vsb_sandbox_t *sb, json_t *add, json_t *creds,
    json_t *secret, json_t *gone, vsb_egress_done_pt done, void *data,
    vsb_error_t *e)
{
    vsb_egress_sb_t  *es = sb->egress;
    json_t           *list, *v, *w, *req, *atts = NULL;
    size_t            i, j;

    if (es == NULL) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "id", "sandbox %s was "
                             "created with network \"none\": its namespace "
                             "has no way out to add hosts to; create a "
                             "sandbox with a network allowlist", sb->id);
    }
    if (es->updating || es->removing || es->adding) {
        return vsb_error_set(e, VSB_E_BUSY, "id", "sandbox %s: another "
                             "network change is in progress", sb->id);
    }
    if ((add != NULL
         && vsb_egress_req_entries(add, "add", &vsb_cf,
                                   json_array_size(es->allow)
                                   + json_array_size(es->ask), es->bytes, e)
            != 0)
        || (creds != NULL
            && vsb_ecred_req(creds, "credentials", es->creds, e) != 0)
        || (gone != NULL
            && vsb_ecred_detach_req(gone, es->creds, e) != 0))
    {
        return -1;
    }
    if (!vsb_eproxy_up() || !es->served) {
        return vsb_error_set(e, VSB_E_UNAVAILABLE, NULL, "the egress proxy "
                             "is not serving sandbox %s now (restarting); "
                             "retry later", sb->id);
    }

    list = json_deep_copy(es->allow);
    if (creds != NULL || gone != NULL || secret != NULL) {
        atts = json_deep_copy(es->creds);
        if (atts == NULL
            || (creds != NULL && vsb_ecred_attach(atts, creds, e) != 0)
            || (secret != NULL && vsb_ecred_put(atts, secret, e) != 0)
            || (gone != NULL && vsb_ecred_detach(atts, gone, e) != 0))
        {
            json_decref(atts);
            json_decref(list);
            return -1;
        }
    }
    if (list == NULL) {
        json_decref(atts);
        return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
    }
    json_array_foreach(add, i, v) {
        json_array_foreach(list, j, w) {
            if (strcmp(json_string_value(v), json_string_value(w)) == 0) {
                break;
            }
        }
        if (j == json_array_size(list)) {
            json_array_append(list, v);
        }
    }

    req = json_pack("{s:s, s:s, s:O, s:O}", "op", VSB_EGRESS_OP_UPDATE,
                    "sandbox", sb->id, "allow", list, "ask", es->ask);
    if (req != NULL && atts != NULL) {
        json_object_set(req, "credentials", atts);
    }
    if (req == NULL
        || vsb_ectl_send(req, NULL, 0, VSB_EGRESS_REQ_MS, vsb_egress_updated,
                         es) != 0)
    {
        json_decref(req);
        json_decref(list);
        json_decref(atts);
        return vsb_error_set(e, VSB_E_UNAVAILABLE, NULL, "cannot reach the "
                             "egress proxy; retry later");
    }
    json_decref(req);

    es->pending = list;
    es->pending_creds = atts;
    es->updating = 1;
    es->udone = done;
    es->udone_data = data;
    return 0;
}


void
vsb_egress_sandbox_free(vsb_sandbox_t *sb)
{
    vsb_egress_sb_t   *es = sb->egress, **pp;

    if (es == NULL) {
        return;
    }
    sb->egress = NULL;

    for (pp = &vsb_egress_list; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == es) {
            *pp = es->next;
            break;
        }
    }

    vsb_ectl_forget(es);
    vsb_timer_del(&es->done_timer);
    vsb_egress_records_free(es);
    vsb_egress_socks_close(&es->socks);
    json_decref(es->allow);
    json_decref(es->ask);
    json_decref(es->pending);
    json_decref(es->pending_creds);
    json_decref(es->creds);
    vsb_ecred_env_free(es->env);
    free(es);
}


json_t *
vsb_egress_sandbox_json(const vsb_sandbox_t *sb, int full)
{
    vsb_egress_sb_t  *es = sb->egress;
    json_t           *j;

    if (es == NULL) {
        return json_string("none");
    }
    if (!full) {
        return json_string("allowlist");
    }
    j = json_pack("{s:O}", "allow", es->allow);
    if (j != NULL && json_array_size(es->ask) > 0) {
        json_object_set(j, "ask", es->ask);
    }
    if (j != NULL && json_array_size(es->creds) > 0) {
        json_object_set_new(j, "credentials", vsb_ecred_json(es->creds));
    }
    return j;
}


const char *const *
vsb_egress_sandbox_env(const vsb_sandbox_t *sb)
{
    if (sb->egress == NULL) {
        return NULL;
    }
    return sb->egress->env != NULL
           ? (const char *const *) sb->egress->env : vsb_egress_env();
}


/* ---- the proxy's life ------------------------------------------------ */


static void
vsb_egress_synced(void *data, json_t *reply, const char *why)
{
    json_t  *removed, *v;
    size_t   i;

    if (reply == NULL || !json_is_true(json_object_get(reply, "ok"))) {
        vsb_log(VSB_LOG_ERR, "egress: sync with the proxy failed: %s",
                why ? why : "refused");
        return;
    }
    removed = json_object_get(reply, "removed");
    json_array_foreach(removed, i, v) {
        if (json_is_string(v)) {
            vsb_log(VSB_LOG_INFO, "egress: cleaned up stale proxy state of "
                    "%.64s", json_string_value(v));
        }
    }
}


/* A (re)started proxy is up: it keeps only the live sandboxes (sync) and
 * gets every one of them again, with the sockets the helper kept. */
static void
vsb_egress_proxy_up(void)
{
    vsb_egress_sb_t  *es;
    json_t           *ids, *req;
    unsigned          n = 0;

    ids = json_array();
    for (es = vsb_egress_list; ids != NULL && es != NULL; es = es->next) {
        if (!es->removing) {
            json_array_append_new(ids, json_string(es->sb->id));
        }
    }
    req = json_pack("{s:s, s:o}", "op", VSB_EGRESS_OP_SYNC, "sandboxes",
                    ids);
    if (req == NULL
        || vsb_ectl_send(req, NULL, 0, VSB_EGRESS_REQ_MS, vsb_egress_synced,
                         NULL) != 0)
    {
        json_decref(req);
        vsb_eproxy_restart("cannot send the sync");
        return;
    }
    json_decref(req);

    for (es = vsb_egress_list; es != NULL; es = es->next) {
        if (es->removing || es->adding) {
            continue;
        }
        if (vsb_egress_send_add(es) != 0) {
            vsb_log(VSB_LOG_ERR, "sandbox %s: egress: cannot queue its add",
                    es->sb->id);
            continue;
        }
        n++;
    }
    if (n > 0) {
        vsb_log(VSB_LOG_INFO, "egress: handing %u sandboxes to the proxy "
                "again", n);
    }
}


/* The proxy process is gone: it holds nothing any more. */
static void
vsb_egress_proxy_dead(void)
{
    vsb_egress_sb_t  *es;

    for (es = vsb_egress_list; es != NULL; es = es->next) {
        es->served = 0;
        if (es->removing && es->done != NULL && !es->done_timer.armed
            && !es->adding && !es->updating)
        {
            vsb_egress_remove_finish(es);
        }
    }
}


static void
vsb_egress_link_down(const char *why)
{
    vsb_eproxy_restart(why);
}


int
vsb_egress_init(char *err, size_t errlen)
{
    if (vsb_ecred_init(&vsb_cf, err, errlen) != 0) {
        return -1;
    }
    vsb_ectl_init(vsb_egress_on_event, vsb_egress_link_down);
    return vsb_eproxy_init(&vsb_cf, vsb_egress_proxy_up,
                           vsb_egress_proxy_dead, err, errlen);
}


void
vsb_egress_shutdown(void)
{
    vsb_eproxy_stop();
}


json_t *
vsb_egress_health(void)
{
    return vsb_eproxy_health();
}


json_t *
vsb_egress_stats_json(void)
{
    json_t    *j = vsb_eproxy_health();
    uint64_t   inj, ref;

    vsb_egress_cred_counts(&inj, &ref);
    if (j != NULL) {
        json_object_set_new(j, "injections", json_integer((json_int_t) inj));
        json_object_set_new(j, "placeholders_refused",
                            json_integer((json_int_t) ref));
    }
    return j;
}
