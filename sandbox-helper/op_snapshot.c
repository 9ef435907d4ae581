/*
 * Snapshots and change sets: snapshot_create, snapshot_list,
 * snapshot_get, snapshot_delete, changes, and what create's
 * from_snapshot needs (vsb_snapshot_fork()).  The store is
 * snap_store.c, the layers and manifests snap_tree.c, the comparison
 * snap_changes.c; the file work runs in a worker (worker.c) so the
 * helper serves others meanwhile.  One snapshot or changes worker runs
 * per sandbox at a time (busy, limit "snapshots").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_overlay.h"
#include "vsb_registry.h"
#include "vsb_rmtree.h"
#include "vsb_snap_changes.h"
#include "vsb_snap_store.h"
#include "vsb_snap_tree.h"
#include "vsb_worker.h"

#define VSB_SNAP_MANIFEST_MAX  (256u << 20)

typedef struct vsb_snap_work_s {
    vsb_pending_t        p;
    vsb_worker_t        *w;
    int                  changes;       /* 0: snapshot_create */
    vsb_snap_t          *s;             /* the new record (create) */
    uint64_t             quota_count, quota_bytes;

    /* what the child reads (it has a copy of this memory) */
    char                 layer[PATH_MAX];
    char                 dst[PATH_MAX];
    char                 base_tree[PATH_MAX];
    char                 base_mf[PATH_MAX];
    vsb_mf_bounds_t      b;
    vsb_changes_req_t    cq;
} vsb_snap_work_t;

typedef struct {
    vsb_pending_t        p;
    char                 id[VSB_SNAPSHOT_ID_LEN + 1];
} vsb_snap_del_op_t;


/* ---- what every snapshot op shares ---- */

static int
vsb_req_snapshot_id(json_t *root, const char *name, int required,
    const char **out, vsb_error_t *e)
{
    if (vsb_req_string(root, name, required, VSB_SNAPSHOT_ID_LEN, out, e)
        != 0)
    {
        return -1;
    }

    if (*out != NULL && !vsb_snap_id_ok(*out)) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, name, "\"%s\" must be "
                             "\"snap-\" and 24 lowercase hex digits", name);
    }

    return 0;
}


/* The sandbox's own layer: the overlay's upper layer, or its root. */
static int
vsb_snap_layer(const vsb_sandbox_t *sb, char *out, size_t len)
{
    int  n;

    n = snprintf(out, len, "%s/%s", sb->dir,
                 sb->overlay != NULL || sb->from_snap != NULL
                 ? "upper" : "root");
    return (n < 0 || (size_t) n >= len) ? -1 : 0;
}


static void
vsb_snap_bounds(const vsb_sandbox_t *sb, vsb_mf_bounds_t *b)
{
    memset(b, 0, sizeof(*b));
    b->max_files = vsb_cf.snapshot_max_files;
    b->max_bytes = vsb_cf.snapshot_max_bytes;
    b->host_uid = sb->host_uid;
    b->overlay = vsb_profile_is_image(sb->profile) ? 1 : 0;
}


static void
vsb_snap_work_detach(vsb_pending_t *p)
{
    (void) p;                   /* the worker ends on its own */
}


static const vsb_pending_hooks_t  vsb_snap_work_hooks = {
    .detach = vsb_snap_work_detach,
};


static vsb_snap_work_t *
vsb_snap_work_new(vsb_conn_t *c, const vsb_request_t *r, vsb_sandbox_t *sb,
    vsb_error_t *e)
{
    vsb_snap_work_t  *sw;

    if (sb->snap_work != NULL) {
        vsb_error_set(e, VSB_E_BUSY, "id", "sandbox %s: a snapshot or a "
                      "change set of it is being made", sb->id);
        e->limit = VSB_LIMIT_SNAPSHOTS;
        return NULL;
    }

    sw = calloc(1, sizeof(*sw));
    if (sw == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }

    sw->p.kind = VSB_PENDING_SNAPSHOT;
    sw->p.conn = c;
    if (r->request_id != NULL) {
        snprintf(sw->p.request_id, sizeof(sw->p.request_id), "%s",
                 r->request_id);
        sw->p.has_request_id = 1;
    }
    sw->p.sb = sb;
    sw->p.hooks = &vsb_snap_work_hooks;

    if (vsb_snap_layer(sb, sw->layer, sizeof(sw->layer)) != 0) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "path too long");
        free(sw);
        return NULL;
    }

    vsb_snap_bounds(sb, &sw->b);

    if (sb->from_snap != NULL
        && (vsb_snap_path(sb->from_snap, "tree", sw->base_tree,
                          sizeof(sw->base_tree)) != 0
            || vsb_snap_path(sb->from_snap, "manifest.json", sw->base_mf,
                             sizeof(sw->base_mf)) != 0))
    {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "path too long");
        free(sw);
        return NULL;
    }

    return sw;
}


/* Replies header (ok or error, from the worker) with payload. */
static void
vsb_snap_work_reply(vsb_snap_work_t *sw, json_t *header,
    unsigned char *payload, size_t len)
{
    vsb_conn_t  *c = sw->p.conn;

    if (c == NULL) {
        json_decref(header);
        free(payload);
        return;
    }

    c->op = NULL;
    sw->p.conn = NULL;

    if (sw->p.has_request_id) {
        json_object_set_new(header, "request_id",
                            json_string(sw->p.request_id));
    }

    vsb_conn_reply(c, header, payload, len);
}


static void
vsb_snap_work_error(vsb_snap_work_t *sw, const vsb_error_t *e)
{
    vsb_conn_t  *c = sw->p.conn;

    if (c != NULL) {
        c->op = NULL;
        sw->p.conn = NULL;
        vsb_conn_reply_error(c, vsb_pending_rid(&sw->p), e);
    }
}


static void
vsb_snap_work_free(vsb_snap_work_t *sw)
{
    if (sw->p.sb != NULL && sw->p.sb->snap_work == sw) {
        sw->p.sb->snap_work = NULL;
    }

    if (sw->s != NULL) {
        json_decref(sw->s->metadata);
        free(sw->s);
    }

    vsb_pending_free(&sw->p);
}


void
vsb_snapshot_sandbox_ending(vsb_sandbox_t *sb)
{
    if (sb->snap_work != NULL && sb->snap_work->w != NULL) {
        /* done runs (and frees it) before this returns */
        vsb_worker_cancel(sb->snap_work->w);
    }
}


/* ---- snapshot_create ---- */

static int
vsb_req_snapshot_create(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "ttl_s",
        "metadata", "max_snapshots", "max_bytes", NULL
    };

    if (vsb_req_sandbox_ref(root, allowed, VSB_OP_SNAPSHOT_CREATE, r, e) != 0)
    {
        return -1;
    }

    r->ttl_s = cf->snapshot_default_ttl_s;
    if (vsb_req_uint(root, "ttl_s", 0, &r->ttl_s, e) != 0) {
        return -1;
    }
    if (r->ttl_s == 0) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "ttl_s", "\"ttl_s\" must be "
                             "at least 1");
    }
    if (r->ttl_s > cf->snapshot_max_ttl_s) {
        return vsb_req_over(e, "ttl_s", VSB_LIMIT_SNAPSHOT_TTL_S, r->ttl_s,
                            cf->snapshot_max_ttl_s);
    }

    /* the tenant's quotas as the gateway's policy has them: lower only */
    r->snap_count = cf->snapshot_max_count;
    if (vsb_req_uint(root, "max_snapshots", 0, &r->snap_count, e) != 0) {
        return -1;
    }
    if (r->snap_count > cf->snapshot_max_count) {
        return vsb_req_over(e, "max_snapshots", VSB_LIMIT_SNAPSHOTS,
                            r->snap_count, cf->snapshot_max_count);
    }

    r->snap_bytes = cf->snapshot_max_bytes;
    if (vsb_req_uint(root, "max_bytes", 0, &r->snap_bytes, e) != 0) {
        return -1;
    }
    if (r->snap_bytes > cf->snapshot_max_bytes) {
        return vsb_req_over(e, "max_bytes", VSB_LIMIT_SNAPSHOT_BYTES,
                            r->snap_bytes, cf->snapshot_max_bytes);
    }

    if (vsb_req_metadata(root, &r->metadata, e) != 0) {
        return -1;
    }

    return 0;
}


static int
vsb_snap_create_fail(vsb_snap_work_t *sw, vsb_error_t *e, int hfd)
{
    json_t  *h;
    int      fd;

    fd = open(sw->dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd != -1) {
        (void) vsb_rm_tree(fd, VSB_MF_RM_DEPTH);
        close(fd);
        (void) rmdir(sw->dst);
    }

    h = json_pack("{s:b, s:s, s:s}", "ok", 0, "error",
                  e->error ? e->error : VSB_E_INTERNAL, "detail", e->detail);
    if (h != NULL) {
        if (e->field != NULL) {
            json_object_set_new(h, "field", json_string(e->field));
        }
        if (e->limit != NULL) {
            json_object_set_new(h, "limit", json_string(e->limit));
        }
        (void) vsb_worker_json(hfd, h);
        json_decref(h);
    }

    return -1;
}


/* In the worker: the copy, the merge over the base, the manifest. */
static int
vsb_snap_create_work(void *arg, int hfd, int pfd)
{
    vsb_snap_work_t  *sw = arg;
    vsb_error_t       e;
    vsb_mf_t          layer, base, out;
    int               src = -1, dst = -1, tree = -1, basefd = -1;
    char              why[256], digest[72], *text;
    size_t            len;
    json_t           *h;

    (void) pfd;
    memset(&e, 0, sizeof(e));
    memset(&layer, 0, sizeof(layer));
    memset(&base, 0, sizeof(base));
    memset(&out, 0, sizeof(out));

    if (mkdir(sw->dst, 0700) != 0) {
        vsb_error_set(&e, VSB_E_IO, NULL, "mkdir %.200s: %s", sw->dst,
                      strerror(errno));
        return vsb_snap_create_fail(sw, &e, hfd);
    }

    dst = open(sw->dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dst == -1 || mkdirat(dst, "tree", 0755) != 0
        || (tree = openat(dst, "tree", O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                          | O_CLOEXEC)) == -1)
    {
        vsb_error_set(&e, VSB_E_IO, NULL, "make the tree in %.200s: %s",
                      sw->dst, strerror(errno));
        goto failed;
    }

    src = open(sw->layer, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (src == -1) {
        vsb_error_set(&e, VSB_E_IO, NULL, "open the sandbox's layer: %s",
                      strerror(errno));
        goto failed;
    }

    if (vsb_mf_walk(src, tree, &sw->b, &layer, &e) != 0) {
        goto failed;
    }

    if (sw->base_mf[0] != '\0') {
        if (vsb_mf_load_file(AT_FDCWD, sw->base_mf, VSB_SNAP_MANIFEST_MAX,
                             &base, why, sizeof(why)) != 0)
        {
            vsb_error_set(&e, VSB_E_IO, NULL, "the snapshot it was forked "
                          "from: %s", why);
            goto failed;
        }
        basefd = open(sw->base_tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                      | O_CLOEXEC);
        if (basefd == -1) {
            vsb_error_set(&e, VSB_E_IO, NULL, "the snapshot it was forked "
                          "from: %s", strerror(errno));
            goto failed;
        }
    }

    if (vsb_mf_merge(sw->base_mf[0] ? &base : NULL, basefd, &layer, tree,
                     &sw->b, &out, &e) != 0)
    {
        goto failed;
    }

    text = vsb_mf_dump(&out, &len, digest);
    if (text == NULL) {
        vsb_error_set(&e, VSB_E_BAD_VALUE, "path", "a name or a symlink "
                      "target is not UTF-8: the snapshot cannot list it");
        goto failed;
    }

    {
        int  mf = openat(dst, "manifest.json", O_WRONLY | O_CREAT | O_EXCL
                         | O_NOFOLLOW | O_CLOEXEC, 0600);

        if (mf == -1 || vsb_write_full(mf, text, len) != 0
            || fsync(mf) != 0)
        {
            vsb_error_set(&e, VSB_E_IO, NULL, "write the manifest: %s",
                          strerror(errno));
            free(text);
            if (mf != -1) {
                close(mf);
            }
            goto failed;
        }
        close(mf);
    }
    free(text);

    /* on disk before it is committed: a host crash never leaves a listed
     * snapshot with files missing (one syncfs, not one fsync a file) */
    if (syncfs(tree) != 0) {
        vsb_error_set(&e, VSB_E_IO, NULL, "sync the snapshot: %s",
                      strerror(errno));
        goto failed;
    }

    h = json_pack("{s:b, s:s, s:I, s:I}", "ok", 1, "digest", digest,
                  "bytes", (json_int_t) out.bytes,
                  "files", (json_int_t) out.n);
    if (h == NULL || vsb_worker_json(hfd, h) != 0) {
        json_decref(h);
        return -1;
    }
    json_decref(h);
    return 0;

failed:

    if (src != -1) {
        close(src);
    }
    if (tree != -1) {
        close(tree);
    }
    if (dst != -1) {
        close(dst);
    }
    return vsb_snap_create_fail(sw, &e, hfd);
}


static void
vsb_snap_discarded(void *data, const char *why)
{
    (void) data;
    (void) why;
}


static void
vsb_snap_create_done(void *data, json_t *header, unsigned char *payload,
    size_t payload_len, const char *why)
{
    vsb_snap_work_t  *sw = data;
    vsb_snap_t       *s = sw->s;
    vsb_error_t       e;
    uint64_t          count, bytes;
    json_int_t        b, f;
    const char       *digest;
    char              err[512];
    json_t           *reply;

    (void) payload_len;
    free(payload);
    memset(&e, 0, sizeof(e));
    sw->w = NULL;

    if (header == NULL) {
        vsb_error_set(&e, VSB_E_INTERNAL, NULL, "snapshot of %s: %s",
                      s->sandbox, why);
        if (strcmp(why, "cancelled") == 0) {
            vsb_error_set(&e, VSB_E_BUSY, "id", "sandbox %s ended while its "
                          "snapshot was being made", s->sandbox);
        }
        (void) vsb_snap_discard(s->id, vsb_snap_discarded, NULL, err,
                                sizeof(err));
        vsb_snap_work_error(sw, &e);
        vsb_snap_work_free(sw);
        return;
    }

    if (!json_is_true(json_object_get(header, "ok"))) {
        vsb_log(VSB_LOG_INFO, "snapshot of %s refused: %s", s->sandbox,
                json_string_value(json_object_get(header, "detail")));
        vsb_snap_work_reply(sw, json_incref(header), NULL, 0);
        vsb_snap_work_free(sw);
        return;
    }

    if (json_unpack(header, "{s:s, s:I, s:I}", "digest", &digest,
                    "bytes", &b, "files", &f) != 0)
    {
        vsb_error_set(&e, VSB_E_INTERNAL, NULL, "the snapshot worker's "
                      "report is malformed");
        goto discard;
    }

    snprintf(s->digest, sizeof(s->digest), "%s", digest);
    s->bytes = (uint64_t) b;
    s->files = (uint64_t) f;

    /* the tenant's quota, counting every snapshot committed meanwhile */
    vsb_snap_usage(s->tenant, &count, &bytes);
    if (count + 1 > sw->quota_count) {
        vsb_error_set(&e, VSB_E_OVER_CEILING, NULL, "tenant %s has %llu "
                      "snapshots, the most it may keep", s->tenant,
                      (unsigned long long) count);
        e.limit = VSB_LIMIT_SNAPSHOTS;
        goto discard;
    }
    if (bytes + s->bytes > sw->quota_bytes) {
        vsb_error_set(&e, VSB_E_OVER_CEILING, NULL, "tenant %s's snapshots "
                      "would come to %llu bytes, over %llu", s->tenant,
                      (unsigned long long) (bytes + s->bytes),
                      (unsigned long long) sw->quota_bytes);
        e.limit = VSB_LIMIT_SNAPSHOT_BYTES;
        goto discard;
    }

    s->created_at = time(NULL);
    s->expires_at = s->created_at + (time_t) s->ttl_s;

    if (vsb_snap_commit(s, err, sizeof(err)) != 0) {
        vsb_error_set(&e, VSB_E_IO, NULL, "commit the snapshot: %s", err);
        goto discard;
    }

    sw->s = NULL;               /* the store's now */

    reply = vsb_ok(NULL);
    if (reply != NULL) {
        json_object_set_new(reply, "snapshot", vsb_snap_json(s));
    }
    vsb_snap_work_reply(sw, reply, NULL, 0);
    vsb_snap_work_free(sw);
    return;

discard:

    vsb_log(VSB_LOG_INFO, "snapshot of %s: %s", s->sandbox, e.detail);
    (void) vsb_snap_discard(s->id, vsb_snap_discarded, NULL, err,
                            sizeof(err));
    vsb_snap_work_error(sw, &e);
    vsb_snap_work_free(sw);
}


/* Snapshots of tenant being made now. */
static uint64_t
vsb_snap_in_flight(const char *tenant)
{
    vsb_sandbox_t  *sb;
    uint64_t        n = 0;

    for (sb = vsb_registry_first(); sb != NULL; sb = sb->next) {
        if (sb->snap_work != NULL && !sb->snap_work->changes
            && strcmp(sb->tenant, tenant) == 0)
        {
            n++;
        }
    }

    return n;
}


static void
vsb_op_snapshot_create(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t    *sb;
    vsb_snap_work_t  *sw;
    vsb_snap_t       *s;
    uint64_t          count, bytes;
    char              err[512];

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    vsb_snap_usage(r->tenant, &count, &bytes);
    count += vsb_snap_in_flight(r->tenant);

    if (count >= r->snap_count) {
        vsb_error_set(e, VSB_E_OVER_CEILING, NULL, "tenant %s has %llu "
                      "snapshots (made or being made), the most it may keep",
                      r->tenant, (unsigned long long) count);
        e->limit = VSB_LIMIT_SNAPSHOTS;
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (bytes >= r->snap_bytes) {
        vsb_error_set(e, VSB_E_OVER_CEILING, NULL, "tenant %s's snapshots "
                      "hold %llu bytes, the most they may", r->tenant,
                      (unsigned long long) bytes);
        e->limit = VSB_LIMIT_SNAPSHOT_BYTES;
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    sw = vsb_snap_work_new(c, r, sb, e);
    if (sw == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    sw->quota_count = r->snap_count;
    sw->quota_bytes = r->snap_bytes;
    if (sw->b.max_bytes > r->snap_bytes - bytes) {
        sw->b.max_bytes = r->snap_bytes - bytes;
    }

    s = calloc(1, sizeof(*s));
    if (s == NULL || vsb_snap_new_id(s->id) != 0) {
        free(s);
        vsb_pending_free(&sw->p);
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory or randomness");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    sw->s = s;
    snprintf(s->tenant, sizeof(s->tenant), "%s", sb->tenant);
    snprintf(s->agent, sizeof(s->agent), "%s", sb->agent);
    snprintf(s->sandbox, sizeof(s->sandbox), "%s", sb->id);
    snprintf(s->profile, sizeof(s->profile), "%s", sb->profile->name);
    snprintf(s->image_digest, sizeof(s->image_digest), "%s",
             sb->profile->digest);
    s->ttl_s = r->ttl_s;
    s->metadata = r->metadata ? json_deep_copy(r->metadata) : NULL;

    snprintf(sw->dst, sizeof(sw->dst), "%.3800s/.new-%s",
             vsb_snap_store_dir(), s->id);

    sw->w = vsb_worker_start("vsb-snapshot", vsb_snap_create_work, sw, 0,
                             vsb_snap_create_done, sw, err, sizeof(err));
    if (sw->w == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "snapshot worker: %s", err);
        vsb_snap_work_free(sw);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    sb->snap_work = sw;
    c->op = &sw->p;
    vsb_log(VSB_LOG_INFO, "sandbox %s: snapshot %s being made", sb->id,
            s->id);
}


/* ---- snapshot_list, snapshot_get ---- */

static int
vsb_req_snapshot_list(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", NULL
    };

    return vsb_req_fields(root, allowed, VSB_OP_SNAPSHOT_LIST, e) != 0
           || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
           || vsb_req_owner(root, "agent", 0, &r->agent, e) != 0 ? -1 : 0;
}


static void
vsb_op_snapshot_list(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_snap_t  *s;
    json_t      *list, *reply, *j;
    uint64_t     count, bytes;
    size_t       md = 0, total = 0;
    char        *dump;
    int          truncated = 0;

    list = json_array();
    reply = vsb_ok(r->request_id);
    if (list == NULL || reply == NULL) {
        json_decref(list);
        json_decref(reply);
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    for (s = vsb_snap_first(); s != NULL; s = s->next) {
        if (strcmp(s->tenant, r->tenant) != 0
            || (r->agent != NULL && strcmp(s->agent, r->agent) != 0))
        {
            continue;
        }

        j = vsb_snap_json(s);
        if (j == NULL) {
            continue;
        }

        /* the reply fits VSB_MAX_JSON: metadata while there is room */
        if (s->metadata != NULL) {
            dump = json_dumps(s->metadata, JSON_COMPACT);
            md += dump ? strlen(dump) : VSB_LIST_METADATA_BYTES;
            free(dump);
            if (md > VSB_LIST_METADATA_BYTES) {
                json_object_del(j, "metadata");
                json_object_set_new(j, "metadata_omitted", json_true());
            }
        }

        /* and the whole within VSB_MAX_JSON: the rest left out */
        dump = json_dumps(j, JSON_COMPACT);
        total += dump ? strlen(dump) + 1 : VSB_MAX_JSON;
        free(dump);
        if (total > VSB_MAX_JSON - 1024) {
            json_decref(j);
            truncated = 1;
            break;
        }

        json_array_append_new(list, j);
    }

    if (truncated) {
        json_object_set_new(reply, "truncated", json_true());
    }

    vsb_snap_usage(r->tenant, &count, &bytes);
    json_object_set_new(reply, "snapshots", list);
    json_object_set_new(reply, "tenant_snapshots", json_integer(
                        (json_int_t) count));
    json_object_set_new(reply, "tenant_bytes", json_integer(
                        (json_int_t) bytes));
    vsb_conn_reply(c, reply, NULL, 0);
}


static int
vsb_req_snapshot_get(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "snapshot", "manifest", NULL
    };

    unsigned  m;

    if (vsb_req_fields(root, allowed, VSB_OP_SNAPSHOT_GET, e) != 0
        || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
        || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
        || vsb_req_snapshot_id(root, "snapshot", 1, &r->snapshot, e) != 0
        || vsb_req_bool(root, "manifest", &m, e) != 0)
    {
        return -1;
    }

    r->manifest = m;
    return 0;
}


static void
vsb_op_snapshot_get(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_snap_t     *s;
    json_t         *reply;
    char            path[PATH_MAX];
    unsigned char  *buf = NULL;
    struct stat     st;
    size_t          got = 0;
    int             fd;

    s = vsb_snap_find(r->tenant, r->agent, r->snapshot, "snapshot", e);
    if (s == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (r->manifest) {
        if (vsb_snap_path(s, "manifest.json", path, sizeof(path)) != 0) {
            vsb_error_set(e, VSB_E_INTERNAL, NULL, "path too long");
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }

        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd == -1 || fstat(fd, &st) != 0) {
            vsb_error_set(e, VSB_E_IO, NULL, "the manifest of %s: %s", s->id,
                          strerror(errno));
            if (fd != -1) {
                close(fd);
            }
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }

        if ((uint64_t) st.st_size > vsb_cf.max_file_bytes) {
            close(fd);
            vsb_error_set(e, VSB_E_FILE_TOO_LARGE, "manifest", "the manifest "
                          "of %s is %lld bytes, over %llu", s->id,
                          (long long) st.st_size,
                          (unsigned long long) vsb_cf.max_file_bytes);
            e->limit = VSB_LIMIT_FILE_BYTES;
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }

        buf = malloc((size_t) st.st_size + 1);
        if (buf != NULL
            && vsb_read_full(fd, buf, (size_t) st.st_size)
               != (ssize_t) st.st_size)
        {
            free(buf);
            buf = NULL;
        }
        close(fd);

        if (buf == NULL) {
            vsb_error_set(e, VSB_E_IO, NULL, "read the manifest of %s",
                          s->id);
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }
        got = (size_t) st.st_size;
    }

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "snapshot", vsb_snap_json(s));
        if (r->manifest) {
            json_object_set_new(reply, "manifest_len",
                                json_integer((json_int_t) got));
        }
    }

    vsb_conn_reply(c, reply, buf, got);
}


/* ---- snapshot_delete ---- */

static int
vsb_req_snapshot_delete(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "snapshot", NULL
    };

    return vsb_req_fields(root, allowed, VSB_OP_SNAPSHOT_DELETE, e) != 0
           || vsb_req_owner(root, "tenant", 1, &r->tenant, e) != 0
           || vsb_req_owner(root, "agent", 1, &r->agent, e) != 0
           || vsb_req_snapshot_id(root, "snapshot", 1, &r->snapshot, e) != 0
           ? -1 : 0;
}


static void
vsb_snap_deleted(void *data, const char *why)
{
    vsb_snap_del_op_t  *d = data;
    vsb_conn_t         *c = d->p.conn;
    vsb_error_t         e;
    json_t             *reply;

    if (c != NULL) {
        c->op = NULL;
        if (why != NULL) {
            memset(&e, 0, sizeof(e));
            vsb_error_set(&e, VSB_E_TERMINATION_FAILED, "snapshot", "%s",
                          why);
            e.step = "files";
            vsb_conn_reply_error(c, vsb_pending_rid(&d->p), &e);
        } else {
            reply = vsb_ok(vsb_pending_rid(&d->p));
            if (reply != NULL) {
                json_object_set_new(reply, "snapshot", json_string(d->id));
                json_object_set_new(reply, "deleted", json_true());
                json_object_set_new(reply, "confirmed",
                                    json_pack("{s:b}", "files", 1));
            }
            vsb_conn_reply(c, reply, NULL, 0);
        }
    }

    vsb_pending_free(&d->p);
}


static void
vsb_op_snapshot_delete(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_snap_t         *s;
    vsb_snap_del_op_t  *d;
    char                err[512];

    s = vsb_snap_find(r->tenant, r->agent, r->snapshot, "snapshot", e);
    if (s == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (s->forks > 0) {
        vsb_error_set(e, VSB_E_BUSY, "snapshot", "snapshot %s is the lower "
                      "layer of %u live sandboxes: destroy them first",
                      s->id, s->forks);
        e->limit = "forks";
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    d->p.kind = VSB_PENDING_SNAPSHOT;
    d->p.conn = c;
    d->p.hooks = &vsb_snap_work_hooks;
    if (r->request_id != NULL) {
        snprintf(d->p.request_id, sizeof(d->p.request_id), "%s",
                 r->request_id);
        d->p.has_request_id = 1;
    }
    snprintf(d->id, sizeof(d->id), "%s", s->id);

    c->op = &d->p;
    if (vsb_snap_delete(s, vsb_snap_deleted, d, err, sizeof(err)) != 0) {
        c->op = NULL;
        vsb_error_set(e, VSB_E_TERMINATION_FAILED, "snapshot", "%s", err);
        e->step = "files";
        vsb_conn_reply_error(c, r->request_id, e);
        free(d);
    }
}


/* ---- changes ---- */

static int
vsb_req_changes(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "since",
        "format", "max_bytes", NULL
    };

    if (vsb_req_sandbox_ref(root, allowed, VSB_OP_CHANGES, r, e) != 0
        || vsb_req_string(root, "since", 0, VSB_SNAPSHOT_ID_LEN, &r->since,
                          e) != 0
        || vsb_req_string(root, "format", 0, 8, &r->format, e) != 0)
    {
        return -1;
    }

    if (r->since == NULL) {
        r->since = "created";
    }
    if (strcmp(r->since, "created") != 0 && !vsb_snap_id_ok(r->since)) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "since", "\"since\" must be "
                             "\"created\" or a snapshot id");
    }

    if (r->format == NULL) {
        r->format = "json";
    }
    if (strcmp(r->format, "json") != 0 && strcmp(r->format, "diff") != 0
        && strcmp(r->format, "tar") != 0)
    {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "format", "\"format\" must "
                             "be \"json\", \"diff\" or \"tar\"");
    }

    r->max_bytes = cf->max_file_bytes;
    if (vsb_req_uint(root, "max_bytes", 0, &r->max_bytes, e) != 0) {
        return -1;
    }
    if (r->max_bytes == 0) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "max_bytes", "\"max_bytes\" "
                             "must be at least 1");
    }
    if (r->max_bytes > cf->max_file_bytes) {
        return vsb_req_over(e, "max_bytes", VSB_LIMIT_FILE_BYTES,
                            r->max_bytes, cf->max_file_bytes);
    }

    return 0;
}


static void
vsb_changes_done(void *data, json_t *header, unsigned char *payload,
    size_t payload_len, const char *why)
{
    vsb_snap_work_t  *sw = data;
    vsb_error_t       e;

    sw->w = NULL;

    if (header == NULL) {
        free(payload);
        memset(&e, 0, sizeof(e));
        if (strcmp(why, "cancelled") == 0) {
            vsb_error_set(&e, VSB_E_BUSY, "id", "the sandbox ended while its "
                          "changes were being computed");
        } else {
            vsb_error_set(&e, VSB_E_INTERNAL, NULL, "changes: %s", why);
        }
        vsb_snap_work_error(sw, &e);
        vsb_snap_work_free(sw);
        return;
    }

    vsb_snap_work_reply(sw, json_incref(header), payload, payload_len);
    vsb_snap_work_free(sw);
}


static void
vsb_op_changes(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t      *sb;
    vsb_snap_work_t    *sw;
    vsb_snap_t         *s = NULL;
    vsb_changes_req_t  *q;
    char                err[512];

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (strcmp(r->since, "created") != 0) {
        s = vsb_snap_find(r->tenant, r->agent, r->since, "since", e);
        if (s == NULL) {
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }
        if (strcmp(s->image_digest, sb->profile->digest) != 0) {
            vsb_error_set(e, VSB_E_BAD_VALUE, "since", "snapshot %s is of "
                          "another image (%s) than sandbox %s (%s)", s->id,
                          s->image_digest[0] ? s->image_digest : "none",
                          sb->id, sb->profile->digest[0]
                          ? sb->profile->digest : "none");
            vsb_conn_reply_error(c, r->request_id, e);
            return;
        }
    }

    sw = vsb_snap_work_new(c, r, sb, e);
    if (sw == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    sw->changes = 1;
    q = &sw->cq;
    memcpy(q->layer, sw->layer, sizeof(q->layer));
    memcpy(q->base_tree, sw->base_tree, sizeof(q->base_tree));
    memcpy(q->base_mf, sw->base_mf, sizeof(q->base_mf));
    q->b = sw->b;
    q->b.max_bytes = VSB_ABS_SNAPSHOT_BYTES;   /* read and hashed only */
    q->max_out = r->max_bytes;
    snprintf(q->since, sizeof(q->since), "%s", r->since);
    snprintf(q->format, sizeof(q->format), "%s", r->format);

    if (vsb_overlay_image_root(sb) != NULL) {
        snprintf(q->image, sizeof(q->image), "%s",
                 vsb_overlay_image_root(sb));
    }

    if (s != NULL) {
        (void) vsb_snap_path(s, "tree", q->ref_tree, sizeof(q->ref_tree));
        (void) vsb_snap_path(s, "manifest.json", q->ref_mf,
                             sizeof(q->ref_mf));
    } else {
        snprintf(q->baseline, sizeof(q->baseline), "%.3800s/baseline.json",
                 sb->dir);
    }

    sw->w = vsb_worker_start("vsb-changes", vsb_changes_work, q,
                             (size_t) r->max_bytes, vsb_changes_done, sw,
                             err, sizeof(err));
    if (sw->w == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "changes worker: %s", err);
        vsb_snap_work_free(sw);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    sb->snap_work = sw;
    c->op = &sw->p;
}


/* ---- create's from_snapshot ---- */

int
vsb_snapshot_fork(vsb_sandbox_t *sb, const vsb_request_t *r,
    vsb_error_t *e)
{
    vsb_snap_t           *s;
    const vsb_profile_t  *p;

    s = vsb_snap_find(r->tenant, r->agent, r->snapshot, "from_snapshot", e);
    if (s == NULL) {
        return -1;
    }

    if (vsb_snap_forks_unavailable() != NULL) {
        return vsb_error_set(e, VSB_E_UNAVAILABLE, "from_snapshot", "this "
                             "host makes no forks: %s",
                             vsb_snap_forks_unavailable());
    }

    /* the snapshot lies over its profile's image: that profile, with
     * that image, or nothing */
    p = vsb_config_profile(&vsb_cf, s->profile);
    if (p == NULL || strcmp(p->digest, s->image_digest) != 0) {
        vsb_error_set(e, VSB_E_SNAPSHOT_PROFILE, "from_snapshot", "snapshot "
                      "%s was made on profile \"%s\" (image %s), which %s",
                      s->id, s->profile,
                      s->image_digest[0] ? s->image_digest : "none",
                      p == NULL ? "no longer exists"
                                : "now has another image");
        return -1;
    }

    if (r->profile_set && r->profile != p) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "profile", "snapshot %s "
                             "is of profile \"%s\", not \"%s\"", s->id,
                             s->profile, r->profile->name);
    }

    sb->profile = p;
    sb->from_snap = s;
    vsb_snap_hold(s);
    return 0;
}


/* The rows ops.c dispatches on, one per op: alike by design (a table's
 * rows), each naming its own parser and handler. */
const vsb_op_t  vsb_snapshot_create_op = {
    .name = VSB_OP_SNAPSHOT_CREATE,
    .parse = vsb_req_snapshot_create,
    .handler = vsb_op_snapshot_create,
};

const vsb_op_t  vsb_snapshot_list_op = {
    .name = VSB_OP_SNAPSHOT_LIST,
    .parse = vsb_req_snapshot_list,
    .handler = vsb_op_snapshot_list,
};

const vsb_op_t  vsb_snapshot_get_op = {
    .name = VSB_OP_SNAPSHOT_GET,
    .parse = vsb_req_snapshot_get,
    .handler = vsb_op_snapshot_get,
};

const vsb_op_t  vsb_snapshot_delete_op = {
    .name = VSB_OP_SNAPSHOT_DELETE,
    .parse = vsb_req_snapshot_delete,
    .handler = vsb_op_snapshot_delete,
};

const vsb_op_t  vsb_changes_op = {
    .name = VSB_OP_CHANGES,
    .parse = vsb_req_changes,
    .handler = vsb_op_changes,
};
