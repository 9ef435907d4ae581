/*
 * The snapshot store (vsb_snap_store.h): records in memory, directories
 * under state_dir/snapshots, commits by rename, removals in a worker.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_hex.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_overlay.h"
#include "vsb_rmtree.h"
#include "vsb_snap_store.h"
#include "vsb_snap_tree.h"
#include "vsb_storage.h"
#include "vsb_worker.h"

#define VSB_SNAP_META_MAX   (VSB_MAX_METADATA_JSON + 4096)
#define VSB_SNAP_SWEEP_MS   (60 * 1000)

static char          vsb_snap_dir[PATH_MAX - 512];
static vsb_snap_t   *vsb_snaps;
static vsb_timer_t   vsb_snap_sweep;
static char          vsb_snap_no_forks[512];    /* "": forks can be made */

typedef struct {
    char                  path[PATH_MAX];
    vsb_snap_deleted_pt   done;
    void                 *data;
} vsb_snap_del_t;


const char *
vsb_snap_store_dir(void)
{
    return vsb_snap_dir;
}


const char *
vsb_snap_forks_unavailable(void)
{
    return vsb_snap_no_forks[0] != '\0' ? vsb_snap_no_forks : NULL;
}


int
vsb_snap_path(const vsb_snap_t *s, const char *sub, char *out, size_t len)
{
    int  n;

    n = snprintf(out, len, "%s/%s%s%s", vsb_snap_dir, s->id,
                 sub ? "/" : "", sub ? sub : "");
    return (n < 0 || (size_t) n >= len) ? -1 : 0;
}


int
vsb_snap_id_ok(const char *s)
{
    size_t  i;

    if (strncmp(s, "snap-", 5) != 0 || strlen(s) != VSB_SNAPSHOT_ID_LEN) {
        return 0;
    }

    for (i = 5; i < VSB_SNAPSHOT_ID_LEN; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }

    return 1;
}


int
vsb_snap_new_id(char id[VSB_SNAPSHOT_ID_LEN + 1])
{
    memcpy(id, "snap-", 5);
    return vsb_random_hex(id + 5, (VSB_SNAPSHOT_ID_LEN - 5) / 2);
}


vsb_snap_t *
vsb_snap_first(void)
{
    vsb_snap_expire();
    return vsb_snaps;
}


vsb_snap_t *
vsb_snap_find(const char *tenant, const char *agent, const char *id,
    const char *field, vsb_error_t *e)
{
    vsb_snap_t  *s;

    vsb_snap_expire();          /* an expired one is gone, not late */

    for (s = vsb_snaps; s != NULL; s = s->next) {
        if (strcmp(s->id, id) == 0) {
            break;
        }
    }

    /* another owner's snapshot is indistinguishable from none */
    if (s == NULL || s->deleting || strcmp(s->tenant, tenant) != 0
        || strcmp(s->agent, agent) != 0)
    {
        vsb_error_set(e, VSB_E_NOT_FOUND, field, "no snapshot %s", id);
        return NULL;
    }

    return s;
}


void
vsb_snap_usage(const char *tenant, uint64_t *count, uint64_t *bytes)
{
    vsb_snap_t  *s;

    *count = 0;
    *bytes = 0;

    vsb_snap_expire();

    for (s = vsb_snaps; s != NULL; s = s->next) {
        if (strcmp(s->tenant, tenant) == 0) {
            (*count)++;
            *bytes += s->bytes;
        }
    }
}


json_t *
vsb_snap_json(const vsb_snap_t *s)
{
    json_t  *j;

    j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, "
                  "s:I, s:I}",
                  "id", s->id, "digest", s->digest, "tenant", s->tenant,
                  "agent", s->agent, "sandbox", s->sandbox,
                  "profile", s->profile,
                  "created_at", (json_int_t) s->created_at,
                  "expires_at", (json_int_t) s->expires_at,
                  "ttl_s", (json_int_t) s->ttl_s,
                  "bytes", (json_int_t) s->bytes,
                  "files", (json_int_t) s->files,
                  "forks", (json_int_t) s->forks);
    if (j == NULL) {
        return NULL;
    }

    json_object_set_new(j, "image_digest", s->image_digest[0]
                        ? json_string(s->image_digest) : json_null());
    if (s->metadata != NULL) {
        json_object_set(j, "metadata", s->metadata);
    }

    return j;
}


static void
vsb_snap_free(vsb_snap_t *s)
{
    json_decref(s->metadata);
    free(s);
}


static void
vsb_snap_unlink(vsb_snap_t *s)
{
    vsb_snap_t  **pp;

    for (pp = &vsb_snaps; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            return;
        }
    }
}


/* meta.json of s into dir (atomically: a temporary file renamed). */
static int
vsb_snap_write_meta(const vsb_snap_t *s, const char *dir, char *err,
    size_t errlen)
{
    json_t  *j;
    char    *text, tmp[PATH_MAX], path[PATH_MAX];
    int      fd, rc = -1;

    j = vsb_snap_json(s);
    if (j == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    json_object_del(j, "forks");
    text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (text == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    snprintf(tmp, sizeof(tmp), "%.3800s/meta.json.tmp", dir);
    snprintf(path, sizeof(path), "%.3800s/meta.json", dir);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd == -1) {
        snprintf(err, errlen, "create %s: %s", tmp, strerror(errno));
        free(text);
        return -1;
    }

    if (vsb_write_full(fd, text, strlen(text)) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "write %s: %s", tmp, strerror(errno));
    } else if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
    } else {
        rc = 0;
    }

    close(fd);
    free(text);
    return rc;
}


int
vsb_snap_commit(vsb_snap_t *s, char *err, size_t errlen)
{
    char  from[PATH_MAX], to[PATH_MAX];

    snprintf(from, sizeof(from), "%s/.new-%s", vsb_snap_dir, s->id);
    if (vsb_snap_path(s, NULL, to, sizeof(to)) != 0) {
        snprintf(err, errlen, "path too long");
        return -1;
    }

    if (vsb_snap_write_meta(s, from, err, errlen) != 0) {
        return -1;
    }

    if (rename(from, to) != 0) {
        snprintf(err, errlen, "rename %s: %s", from, strerror(errno));
        return -1;
    }

    s->next = vsb_snaps;
    vsb_snaps = s;

    vsb_log(VSB_LOG_INFO, "snapshot %s of sandbox %s for tenant %s agent %s: "
            "%llu files, %llu bytes, %s", s->id, s->sandbox, s->tenant,
            s->agent, (unsigned long long) s->files,
            (unsigned long long) s->bytes, s->digest);
    return 0;
}


/* ---- removal ---- */

static int
vsb_snap_rm_work(void *arg, int hfd, int pfd)
{
    vsb_snap_del_t  *d = arg;
    int              fd, rc;
    json_t          *h;

    (void) pfd;

    fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    rc = (fd == -1 && errno == ENOENT) ? 0
         : (fd == -1 || vsb_rm_tree(fd, VSB_MF_RM_DEPTH) != 0) ? -1 : 0;
    if (fd != -1) {
        close(fd);
    }
    if (rc == 0 && rmdir(d->path) != 0 && errno != ENOENT) {
        rc = -1;
    }

    h = json_pack("{s:b, s:s}", "ok", rc == 0, "detail",
                  rc == 0 ? "" : strerror(errno));
    if (h == NULL || vsb_worker_json(hfd, h) != 0) {
        json_decref(h);
        return -1;
    }
    json_decref(h);
    return 0;
}


static void
vsb_snap_rm_done(void *data, json_t *header, unsigned char *payload,
    size_t payload_len, const char *why)
{
    vsb_snap_del_t  *d = data;
    char             detail[256];

    (void) payload_len;
    free(payload);

    detail[0] = '\0';
    if (header == NULL) {
        snprintf(detail, sizeof(detail), "%s", why);
    } else if (!json_is_true(json_object_get(header, "ok"))) {
        snprintf(detail, sizeof(detail), "removing %.200s: %s", d->path,
                 json_string_value(json_object_get(header, "detail")));
    } else if (access(d->path, F_OK) == 0 || errno != ENOENT) {
        snprintf(detail, sizeof(detail), "%.200s still exists after its removal "
                 "was reported", d->path);
    }

    if (detail[0] != '\0') {
        vsb_log(VSB_LOG_ERR, "snapshot removal: %s", detail);
    }

    if (d->done != NULL) {
        d->done(d->data, detail[0] ? detail : NULL);
    }
    free(d);
}


static int
vsb_snap_rm_path(const char *path, vsb_snap_deleted_pt done, void *data,
    char *err, size_t errlen)
{
    vsb_snap_del_t  *d;

    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    snprintf(d->path, sizeof(d->path), "%s", path);
    d->done = done;
    d->data = data;

    if (vsb_worker_start("vsb-snap-rm", vsb_snap_rm_work, d, 0,
                         vsb_snap_rm_done, d, err, errlen) == NULL)
    {
        free(d);
        return -1;
    }

    return 0;
}


int
vsb_snap_discard(const char *id, vsb_snap_deleted_pt done, void *data,
    char *err, size_t errlen)
{
    char  path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/.new-%.32s", vsb_snap_dir, id);
    return vsb_snap_rm_path(path, done, data, err, errlen);
}


int
vsb_snap_delete(vsb_snap_t *s, vsb_snap_deleted_pt done, void *data,
    char *err, size_t errlen)
{
    char  from[PATH_MAX], to[PATH_MAX];

    if (vsb_snap_path(s, NULL, from, sizeof(from)) != 0) {
        snprintf(err, errlen, "path too long");
        return -1;
    }
    snprintf(to, sizeof(to), "%s/.del-%s", vsb_snap_dir, s->id);

    /* out of the store at once: no fork can start on it from here on */
    if (rename(from, to) != 0) {
        snprintf(err, errlen, "rename %s: %s", from, strerror(errno));
        return -1;
    }

    vsb_log(VSB_LOG_INFO, "snapshot %s of tenant %s agent %s: deleting",
            s->id, s->tenant, s->agent);

    vsb_snap_unlink(s);
    vsb_snap_free(s);

    return vsb_snap_rm_path(to, done, data, err, errlen);
}


void
vsb_snap_hold(vsb_snap_t *s)
{
    s->forks++;
}


void
vsb_snap_release(vsb_snap_t *s)
{
    if (s->forks > 0) {
        s->forks--;
    }
}


void
vsb_snap_expire(void)
{
    vsb_snap_t  *s, *next;
    time_t       now = time(NULL);
    char         err[256];

    for (s = vsb_snaps; s != NULL; s = next) {
        next = s->next;
        if (s->expires_at > now || s->forks > 0 || s->deleting) {
            continue;
        }
        vsb_log(VSB_LOG_INFO, "snapshot %s expired (ttl_s %llu)", s->id,
                (unsigned long long) s->ttl_s);
        if (vsb_snap_delete(s, NULL, NULL, err, sizeof(err)) != 0) {
            vsb_log(VSB_LOG_ERR, "expiring a snapshot: %s", err);
        }
    }
}


static void
vsb_snap_sweep_handler(vsb_timer_t *t)
{
    vsb_snap_expire();
    vsb_timer_add(t, VSB_SNAP_SWEEP_MS);
}


/* ---- start ---- */

static vsb_snap_t *
vsb_snap_load(const char *name, char *why, size_t wlen)
{
    char          path[PATH_MAX], buf[VSB_SNAP_META_MAX + 1];
    int           fd;
    ssize_t       n;
    json_t       *j, *md;
    json_error_t  jerr;
    vsb_snap_t   *s;
    const char   *digest, *tenant, *agent, *sandbox, *profile, *id;
    json_t       *image;
    json_int_t    created, expires, ttl, bytes, files;

    snprintf(path, sizeof(path), "%s/%.64s/meta.json", vsb_snap_dir, name);
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1) {
        snprintf(why, wlen, "open %.300s: %s", path, strerror(errno));
        return NULL;
    }
    n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n <= 0 || n >= (ssize_t) sizeof(buf)) {
        snprintf(why, wlen, "%.300s: empty, unreadable or too large", path);
        return NULL;
    }

    j = json_loadb(buf, (size_t) n, JSON_REJECT_DUPLICATES, &jerr);
    md = NULL;
    image = NULL;
    if (j == NULL
        || json_unpack(j, "{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:I, "
                       "s:I, s:I, s:I, s?o}",
                       "id", &id, "digest", &digest, "tenant", &tenant,
                       "agent", &agent, "sandbox", &sandbox,
                       "profile", &profile, "image_digest", &image,
                       "created_at", &created, "expires_at", &expires,
                       "ttl_s", &ttl, "bytes", &bytes, "files", &files,
                       "metadata", &md) != 0
        || strcmp(id, name) != 0 || strlen(digest) >= 72
        || strlen(tenant) > VSB_MAX_ID_LEN || strlen(agent) > VSB_MAX_ID_LEN
        || strlen(sandbox) > VSB_SANDBOX_ID_LEN
        || strlen(profile) > VSB_PROFILE_NAME_LEN
        || !(json_is_null(image) || (json_is_string(image)
             && strlen(json_string_value(image)) <= VSB_IMAGE_DIGEST_LEN)))
    {
        snprintf(why, wlen, "%.300s: not a snapshot record", path);
        json_decref(j);
        return NULL;
    }

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(why, wlen, "out of memory");
        json_decref(j);
        return NULL;
    }

    snprintf(s->id, sizeof(s->id), "%s", id);
    snprintf(s->digest, sizeof(s->digest), "%s", digest);
    snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
    snprintf(s->agent, sizeof(s->agent), "%s", agent);
    snprintf(s->sandbox, sizeof(s->sandbox), "%s", sandbox);
    snprintf(s->profile, sizeof(s->profile), "%s", profile);
    if (json_is_string(image)) {
        snprintf(s->image_digest, sizeof(s->image_digest), "%s",
                 json_string_value(image));
    }
    s->created_at = (time_t) created;
    s->expires_at = (time_t) expires;
    s->ttl_s = (uint64_t) ttl;
    s->bytes = (uint64_t) bytes;
    s->files = (uint64_t) files;
    if (json_is_object(md)) {
        s->metadata = json_incref(md);
    }

    json_decref(j);
    return s;
}


int
vsb_snap_store_init(char *err, size_t errlen)
{
    DIR            *d;
    struct dirent  *de;
    vsb_snap_t     *s;
    char            why[512], path[PATH_MAX + 300];
    unsigned        loaded = 0;

    if (vsb_storage_state_subdir("snapshots", 0700, vsb_snap_dir,
                                 sizeof(vsb_snap_dir), err, errlen) != 0)
    {
        return -1;
    }

    /* a fork mounts a snapshot's tree idmapped: can it be, here? */
    if (vsb_overlay_probe_tree(vsb_snap_dir, vsb_cf.uid_base, why,
                               sizeof(why)) != 0)
    {
        snprintf(vsb_snap_no_forks, sizeof(vsb_snap_no_forks), "the "
                 "snapshot store's file system cannot be mounted idmapped "
                 "(ext4, xfs, btrfs can; tmpfs from Linux 6.3): %.300s", why);
        vsb_log(VSB_LOG_WARN, "snapshot store %s: snapshots work, forks of "
                "them will not: %s", vsb_snap_dir, vsb_snap_no_forks);
    } else {
        vsb_snap_no_forks[0] = '\0';
    }

    d = opendir(vsb_snap_dir);
    if (d == NULL) {
        snprintf(err, errlen, "opendir %s: %s", vsb_snap_dir,
                 strerror(errno));
        return -1;
    }

    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }

        snprintf(path, sizeof(path), "%s/%s", vsb_snap_dir, de->d_name);

        if (strncmp(de->d_name, ".new-", 5) == 0
            || strncmp(de->d_name, ".del-", 5) == 0)
        {
            vsb_log(VSB_LOG_INFO, "snapshot store: removing %s, left by a "
                    "previous run", path);
            if (vsb_snap_rm_path(path, NULL, NULL, why, sizeof(why)) != 0) {
                vsb_log(VSB_LOG_ERR, "snapshot store: %s", why);
            }
            continue;
        }

        if (!vsb_snap_id_ok(de->d_name)) {
            vsb_log(VSB_LOG_WARN, "snapshot store: ignoring %s", path);
            continue;
        }

        s = vsb_snap_load(de->d_name, why, sizeof(why));
        if (s == NULL) {
            vsb_log(VSB_LOG_ERR, "snapshot store: %s; left in place", why);
            continue;
        }

        s->next = vsb_snaps;
        vsb_snaps = s;
        loaded++;
    }

    closedir(d);

    vsb_log(VSB_LOG_INFO, "snapshot store %s: %u snapshots", vsb_snap_dir,
            loaded);

    vsb_snap_expire();

    vsb_snap_sweep.handler = vsb_snap_sweep_handler;
    vsb_timer_add(&vsb_snap_sweep, VSB_SNAP_SWEEP_MS);
    return 0;
}
