/*
 * The helper's configuration file: "key = value" lines, '#' comments.
 * Anything unknown or out of range is an error naming file and line; the
 * helper refuses to start rather than guess.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include "vsb_config.h"
#include "vsb_log.h"
#include "vsb_protocol.h"

#define VSB_CONF_MAX_LINE  4096

vsb_config_t  vsb_cf;

typedef enum {
    VSB_K_SOCKET, VSB_K_SOCKET_GROUP, VSB_K_SOCKET_MODE, VSB_K_ALLOWED_UIDS,
    VSB_K_STATE_DIR, VSB_K_CGROUP_NAME, VSB_K_CGROUP_MODE, VSB_K_UID_BASE,
    VSB_K_MAX_MEMORY, VSB_K_MAX_PIDS, VSB_K_MAX_CPU, VSB_K_MAX_DISK,
    VSB_K_MAX_TIMEOUT, VSB_K_MAX_OUTPUT, VSB_K_MAX_TTL, VSB_K_MAX_SANDBOXES,
    VSB_K_MAX_FILE, VSB_K_MAX_EXECS, VSB_K_MAX_ARCHIVE, VSB_K_MAX_BACKGROUND,
    VSB_K_DEF_MEMORY, VSB_K_DEF_PIDS, VSB_K_DEF_CPU, VSB_K_DEF_DISK,
    VSB_K_DEF_TIMEOUT, VSB_K_DEF_OUTPUT, VSB_K_DEF_TTL,
    VSB_K_MAX_IDLE, VSB_K_DEF_IDLE, VSB_K_ENDED_RETENTION, VSB_K_ENDED_MAX,
    VSB_K_PROFILE, VSB_K_LOG_LEVEL,
    VSB_K_EGRESS, VSB_K_EGRESS_PROXY, VSB_K_EGRESS_USER, VSB_K_EGRESS_NETNS,
    VSB_K_EGRESS_NFT, VSB_K_EGRESS_RESOLVER, VSB_K_EGRESS_RANGE,
    VSB_K_EGRESS_ENTRIES, VSB_K_EGRESS_CONNS, VSB_K_EGRESS_OUT,
    VSB_K_EGRESS_IN, VSB_K_EGRESS_CREDS, VSB_K_EGRESS_UPCA,
    VSB_K_EGRESS_ROOTS,
    VSB_K_IMAGE_PROFILE, VSB_K_IMAGE_STORE,
    VSB_K_SNAP_COUNT, VSB_K_SNAP_BYTES, VSB_K_SNAP_FILES, VSB_K_SNAP_MAX_TTL,
    VSB_K_SNAP_DEF_TTL, VSB_K_TEST_CLOCK,
    VSB_K_COUNT
} vsb_key_t;

typedef struct {
    const char  *name;
    vsb_key_t    key;
    uint64_t     abs_max;      /* numeric keys: compiled ceiling, else 0 */
    size_t       offset;       /* numeric keys: uint64_t in vsb_config_t */
} vsb_conf_key_t;

#define VSB_OFF(f)  offsetof(vsb_config_t, f)

static const vsb_conf_key_t  vsb_conf_keys[] = {
    { "socket", VSB_K_SOCKET, 0, 0 },
    { "socket_group", VSB_K_SOCKET_GROUP, 0, 0 },
    { "socket_mode", VSB_K_SOCKET_MODE, 0, 0 },
    { "allowed_uids", VSB_K_ALLOWED_UIDS, 0, 0 },
    { "state_dir", VSB_K_STATE_DIR, 0, 0 },
    { "cgroup_name", VSB_K_CGROUP_NAME, 0, 0 },
    { "cgroup_mode", VSB_K_CGROUP_MODE, 0, 0 },
    { "uid_base", VSB_K_UID_BASE, 0, 0 },
    { "max_memory_mb", VSB_K_MAX_MEMORY, VSB_ABS_MEMORY_MB,
      VSB_OFF(max.memory_mb) },
    { "max_pids", VSB_K_MAX_PIDS, VSB_ABS_PIDS, VSB_OFF(max.pids) },
    { "max_cpu_percent", VSB_K_MAX_CPU, VSB_ABS_CPU_PERCENT,
      VSB_OFF(max.cpu_percent) },
    { "max_disk_mb", VSB_K_MAX_DISK, VSB_ABS_DISK_MB, VSB_OFF(max.disk_mb) },
    { "max_timeout_s", VSB_K_MAX_TIMEOUT, VSB_ABS_TIMEOUT_S,
      VSB_OFF(max.timeout_s) },
    { "max_output_bytes", VSB_K_MAX_OUTPUT, VSB_ABS_OUTPUT_BYTES,
      VSB_OFF(max.output_bytes) },
    { "max_ttl_s", VSB_K_MAX_TTL, VSB_ABS_TTL_S, VSB_OFF(max_ttl_s) },
    { "max_sandboxes", VSB_K_MAX_SANDBOXES, VSB_ABS_SANDBOXES,
      VSB_OFF(max_sandboxes) },
    { "max_file_bytes", VSB_K_MAX_FILE, VSB_ABS_FILE_BYTES,
      VSB_OFF(max_file_bytes) },
    { "max_execs_per_sandbox", VSB_K_MAX_EXECS, 1024,
      VSB_OFF(max_execs_per_sandbox) },
    { "max_archive_bytes", VSB_K_MAX_ARCHIVE, VSB_ABS_ARCHIVE_BYTES,
      VSB_OFF(max_archive_bytes) },
    { "max_background_execs", VSB_K_MAX_BACKGROUND, VSB_ABS_BACKGROUND,
      VSB_OFF(max_background_execs) },
    { "default_memory_mb", VSB_K_DEF_MEMORY, VSB_ABS_MEMORY_MB,
      VSB_OFF(def.memory_mb) },
    { "default_pids", VSB_K_DEF_PIDS, VSB_ABS_PIDS, VSB_OFF(def.pids) },
    { "default_cpu_percent", VSB_K_DEF_CPU, VSB_ABS_CPU_PERCENT,
      VSB_OFF(def.cpu_percent) },
    { "default_disk_mb", VSB_K_DEF_DISK, VSB_ABS_DISK_MB,
      VSB_OFF(def.disk_mb) },
    { "default_timeout_s", VSB_K_DEF_TIMEOUT, VSB_ABS_TIMEOUT_S,
      VSB_OFF(def.timeout_s) },
    { "default_output_bytes", VSB_K_DEF_OUTPUT, VSB_ABS_OUTPUT_BYTES,
      VSB_OFF(def.output_bytes) },
    { "default_ttl_s", VSB_K_DEF_TTL, VSB_ABS_TTL_S, VSB_OFF(default_ttl_s) },
    { "max_idle_s", VSB_K_MAX_IDLE, VSB_ABS_IDLE_S, VSB_OFF(max_idle_s) },
    { "default_idle_s", VSB_K_DEF_IDLE, VSB_ABS_IDLE_S,
      VSB_OFF(default_idle_s) },
    { "ended_retention_s", VSB_K_ENDED_RETENTION, VSB_ABS_ENDED_RETENTION_S,
      VSB_OFF(ended_retention_s) },
    { "ended_max", VSB_K_ENDED_MAX, VSB_ABS_ENDED, VSB_OFF(ended_max) },
    { "profile", VSB_K_PROFILE, 0, 0 },
    { "log_level", VSB_K_LOG_LEVEL, 0, 0 },
    { "egress", VSB_K_EGRESS, 0, 0 },
    { "egress_proxy", VSB_K_EGRESS_PROXY, 0, 0 },
    { "egress_user", VSB_K_EGRESS_USER, 0, 0 },
    { "egress_netns", VSB_K_EGRESS_NETNS, 0, 0 },
    { "egress_nft", VSB_K_EGRESS_NFT, 0, 0 },
    { "egress_resolver", VSB_K_EGRESS_RESOLVER, 0, 0 },
    { "egress_allow_range", VSB_K_EGRESS_RANGE, 0, 0 },
    { "egress_credentials", VSB_K_EGRESS_CREDS, 0, 0 },
    { "egress_upstream_ca", VSB_K_EGRESS_UPCA, 0, 0 },
    { "egress_trust_roots", VSB_K_EGRESS_ROOTS, 0, 0 },
    { "egress_max_entries", VSB_K_EGRESS_ENTRIES, VSB_ABS_EGRESS_ENTRIES,
      VSB_OFF(egress.max_entries) },
    { "egress_max_connections", VSB_K_EGRESS_CONNS, VSB_ABS_EGRESS_CONNS,
      VSB_OFF(egress.max_connections) },
    { "egress_max_bytes_out", VSB_K_EGRESS_OUT, VSB_ABS_EGRESS_BYTES,
      VSB_OFF(egress.max_bytes_out) },
    { "egress_max_bytes_in", VSB_K_EGRESS_IN, VSB_ABS_EGRESS_BYTES,
      VSB_OFF(egress.max_bytes_in) },
    { "image_profile", VSB_K_IMAGE_PROFILE, 0, 0 },
    { "image_store", VSB_K_IMAGE_STORE, 0, 0 },
    { "snapshot_max_count", VSB_K_SNAP_COUNT, VSB_ABS_SNAPSHOTS,
      VSB_OFF(snapshot_max_count) },
    { "snapshot_max_bytes", VSB_K_SNAP_BYTES, VSB_ABS_SNAPSHOT_BYTES,
      VSB_OFF(snapshot_max_bytes) },
    { "snapshot_max_files", VSB_K_SNAP_FILES, VSB_ABS_SNAPSHOT_FILES,
      VSB_OFF(snapshot_max_files) },
    { "snapshot_max_ttl_s", VSB_K_SNAP_MAX_TTL, VSB_ABS_SNAPSHOT_TTL_S,
      VSB_OFF(snapshot_max_ttl_s) },
    { "snapshot_default_ttl_s", VSB_K_SNAP_DEF_TTL, VSB_ABS_SNAPSHOT_TTL_S,
      VSB_OFF(snapshot_default_ttl_s) },
    { "test_clock", VSB_K_TEST_CLOCK, 0, 0 },
};

/* default_* key -> its max_* key, for the "default <= max" check. */
static const vsb_key_t  vsb_conf_pairs[][2] = {
    { VSB_K_DEF_MEMORY, VSB_K_MAX_MEMORY },
    { VSB_K_DEF_PIDS, VSB_K_MAX_PIDS },
    { VSB_K_DEF_CPU, VSB_K_MAX_CPU },
    { VSB_K_DEF_DISK, VSB_K_MAX_DISK },
    { VSB_K_DEF_TIMEOUT, VSB_K_MAX_TIMEOUT },
    { VSB_K_DEF_OUTPUT, VSB_K_MAX_OUTPUT },
    { VSB_K_DEF_TTL, VSB_K_MAX_TTL },
    { VSB_K_DEF_IDLE, VSB_K_MAX_IDLE },
    { VSB_K_SNAP_DEF_TTL, VSB_K_SNAP_MAX_TTL },
};


static void
vsb_conf_defaults(vsb_config_t *cf)
{
    memset(cf, 0, sizeof(*cf));

    snprintf(cf->socket_path, sizeof(cf->socket_path), "%s",
             "/run/veto-sandbox/helper.sock");
    cf->socket_gid = (gid_t) -1;
    cf->socket_mode = 0660;
    cf->allowed_uids[0] = 0;
    cf->n_allowed_uids = 1;

    snprintf(cf->state_dir, sizeof(cf->state_dir), "%s",
             "/var/lib/veto-sandbox");
    snprintf(cf->cgroup_name, sizeof(cf->cgroup_name), "%s", "veto-sandbox");
    snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "%s", "auto");
    cf->uid_base = 1000000000;

    cf->max.memory_mb = 4096;
    cf->max.pids = 1024;
    cf->max.cpu_percent = 200;
    cf->max.disk_mb = 2048;
    cf->max.timeout_s = 3600;
    cf->max.output_bytes = 16 * 1024 * 1024;

    cf->def.memory_mb = 512;
    cf->def.pids = 256;
    cf->def.cpu_percent = 100;
    cf->def.disk_mb = 256;
    cf->def.timeout_s = 60;
    cf->def.output_bytes = 1024 * 1024;

    cf->max_ttl_s = 86400;
    cf->default_ttl_s = 3600;
    cf->max_idle_s = 86400;
    cf->default_idle_s = 1800;
    cf->ended_retention_s = 86400;
    cf->ended_max = 1024;
    cf->max_sandboxes = 64;
    cf->max_file_bytes = 16 * 1024 * 1024;
    cf->max_execs_per_sandbox = 8;
    cf->max_archive_bytes = 256 * 1024 * 1024;
    cf->max_background_execs = 4;
    cf->snapshot_max_count = 16;
    cf->snapshot_max_bytes = 1024ULL * 1024 * 1024;
    cf->snapshot_max_files = 200000;
    cf->snapshot_max_ttl_s = 7 * 86400;
    cf->snapshot_default_ttl_s = 86400;

    snprintf(cf->profiles[0].name, sizeof(cf->profiles[0].name), "default");
    snprintf(cf->profiles[0].root, sizeof(cf->profiles[0].root), "/");
    cf->n_profiles = 1;

    cf->log_level = VSB_LOG_INFO;

    snprintf(cf->egress.proxy, sizeof(cf->egress.proxy), "%s",
             "/usr/lib/veto-sandbox/egress-proxy");
    snprintf(cf->egress.nft, sizeof(cf->egress.nft), "%s", "/usr/sbin/nft");
    snprintf(cf->egress.trust_roots, sizeof(cf->egress.trust_roots), "%s",
             "/etc/ssl/certs/ca-certificates.crt");
    cf->egress.max_entries = 64;
    cf->egress.max_connections = 128;
    cf->egress.max_bytes_out = 1ULL << 30;
    cf->egress.max_bytes_in = 8ULL << 30;
}


static int
vsb_conf_err(char *err, size_t errlen, const char *file, unsigned line,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int
vsb_conf_err(char *err, size_t errlen, const char *file, unsigned line,
    const char *fmt, ...)
{
    va_list  ap;
    int      n;

    n = snprintf(err, errlen, "%s:%u: ", file, line);
    if (n < 0 || (size_t) n >= errlen) {
        return -1;
    }

    va_start(ap, fmt);
    vsnprintf(err + n, errlen - n, fmt, ap);
    va_end(ap);
    return -1;
}


/* Decimal, no sign, no junk, no overflow. */
static int
vsb_conf_u64(const char *s, uint64_t *out)
{
    uint64_t  v = 0;

    if (*s == '\0') {
        return -1;
    }

    for (; *s; s++) {
        if (*s < '0' || *s > '9') {
            return -1;
        }
        if (v > (UINT64_MAX - (uint64_t) (*s - '0')) / 10) {
            return -1;
        }
        v = v * 10 + (uint64_t) (*s - '0');
    }

    *out = v;
    return 0;
}


static int
vsb_conf_name_ok(const char *s, size_t max)
{
    size_t  n = strlen(s);

    if (n == 0 || n > max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
        return 0;
    }

    for (; *s; s++) {
        if (!isalnum((unsigned char) *s) && *s != '_' && *s != '-'
            && *s != '.')
        {
            return 0;
        }
    }

    return 1;
}


/* A uid: a number, or a name in the passwd database.  vsb_conf_gid()
 * below is its twin for the group database: the two stay apart, each
 * typed as what it fills (uid_t, gid_t) and asking its own database. */
static int
vsb_conf_uid(const char *s, uid_t *out)
{
    uint64_t        v;
#ifndef VSB_FUZZING
    struct passwd  *pw;
#endif

    if (vsb_conf_u64(s, &v) == 0) {
        if (v >= (uid_t) -1) {
            return -1;
        }
        *out = (uid_t) v;
        return 0;
    }

#ifndef VSB_FUZZING
    errno = 0;
    pw = getpwnam(s);
    if (pw != NULL) {
        *out = pw->pw_uid;
        return 0;
    }
#endif

    return -1;
}


static int
vsb_conf_gid(const char *s, gid_t *out)
{
    uint64_t       v;
#ifndef VSB_FUZZING
    struct group  *gr;
#endif

    if (vsb_conf_u64(s, &v) == 0) {
        if (v >= (gid_t) -1) {
            return -1;
        }
        *out = (gid_t) v;
        return 0;
    }

#ifndef VSB_FUZZING
    gr = getgrnam(s);
    if (gr != NULL) {
        *out = gr->gr_gid;
        return 0;
    }
#endif

    return -1;
}


/*
 * An absolute path shorter than len with no "." or ".." component: the
 * helper builds paths by appending to it, so what it names must be what
 * it says ("/..", "/x/." and "/x/../y" all are refused).
 */
static int
vsb_conf_path_ok(const char *v, size_t len)
{
    const char  *p, *end;
    size_t       n;

    if (v[0] != '/' || strlen(v) >= len) {
        return 0;
    }

    for (p = v; *p != '\0'; p = end) {
        while (*p == '/') {
            p++;
        }
        end = strchr(p, '/');
        if (end == NULL) {
            end = p + strlen(p);
        }
        n = (size_t) (end - p);
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
            return 0;
        }
    }

    return 1;
}


/* "a.b.c.d/n" or "v6/n": the proxy checks it again when it starts. */
static int
vsb_conf_cidr_ok(const char *v)
{
    char           addr[64];
    const char    *slash;
    unsigned char  buf[16];
    uint64_t       bits;
    int            v6;

    slash = strchr(v, '/');
    if (slash == NULL || (size_t) (slash - v) >= sizeof(addr)
        || vsb_conf_u64(slash + 1, &bits) != 0)
    {
        return 0;
    }
    memcpy(addr, v, (size_t) (slash - v));
    addr[slash - v] = '\0';
    v6 = strchr(addr, ':') != NULL;
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, buf) != 1) {
        return 0;
    }
    return bits <= (v6 ? 128 : 32);
}


static int
vsb_conf_egress(vsb_config_t *cf, const vsb_conf_key_t *k, char *val,
    const char *file, unsigned line, char *err, size_t errlen)
{
    vsb_egress_config_t  *eg = &cf->egress;
    const char           *p;

    switch (k->key) {

    case VSB_K_EGRESS:
        if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"egress\" must be on or off");
        }
        eg->enabled = strcmp(val, "on") == 0;
        return 0;

    case VSB_K_EGRESS_PROXY:
    case VSB_K_EGRESS_NETNS:
    case VSB_K_EGRESS_NFT:
        if (!vsb_conf_path_ok(val, sizeof(eg->proxy))) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\" must be an absolute path", k->name);
        }
        snprintf(k->key == VSB_K_EGRESS_PROXY ? eg->proxy
                 : k->key == VSB_K_EGRESS_NETNS ? eg->netns : eg->nft,
                 sizeof(eg->proxy), "%s", val);
        return 0;

    case VSB_K_EGRESS_CREDS:
    case VSB_K_EGRESS_UPCA:
    case VSB_K_EGRESS_ROOTS:
        if (!vsb_conf_path_ok(val, sizeof(eg->credentials))) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\" must be an absolute path shorter "
                                "than %zu bytes", k->name,
                                sizeof(eg->credentials));
        }
        snprintf(k->key == VSB_K_EGRESS_CREDS ? eg->credentials
                 : k->key == VSB_K_EGRESS_UPCA ? eg->upstream_ca
                 : eg->trust_roots, sizeof(eg->credentials), "%s", val);
        return 0;

    case VSB_K_EGRESS_USER:
        if (!vsb_conf_name_ok(val, sizeof(eg->user) - 1)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"egress_user\": \"%s\" is not a user "
                                "name", val);
        }
        snprintf(eg->user, sizeof(eg->user), "%s", val);
        return 0;

    case VSB_K_EGRESS_RESOLVER:
        for (p = val; *p; p++) {
            if (!isxdigit((unsigned char) *p) && strchr(".:,[]", *p) == NULL)
            {
                break;
            }
        }
        if (*p != '\0' || strlen(val) >= sizeof(eg->resolver)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"egress_resolver\" takes addr[:port] "
                                "lists, comma separated (IP addresses only)");
        }
        snprintf(eg->resolver, sizeof(eg->resolver), "%s", val);
        return 0;

    case VSB_K_EGRESS_RANGE:
        if (eg->n_allow_ranges == VSB_EGRESS_MAX_RANGES) {
            return vsb_conf_err(err, errlen, file, line,
                                "more than %d \"egress_allow_range\" lines",
                                VSB_EGRESS_MAX_RANGES);
        }
        if (!vsb_conf_cidr_ok(val)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"egress_allow_range\": \"%s\" is not a "
                                "CIDR range (addr/bits)", val);
        }
        snprintf(eg->allow_ranges[eg->n_allow_ranges++],
                 sizeof(eg->allow_ranges[0]), "%s", val);
        return 0;

    default:
        break;
    }

    return vsb_conf_err(err, errlen, file, line, "unhandled key \"%s\"",
                        k->name);
}


/* The slot of profile `name`: a new one, or the built-in default, which
 * either kind of profile may redefine.  NULL with err filled. */
static vsb_profile_t *
vsb_conf_profile_slot(vsb_config_t *cf, const char *name, const char *file,
    unsigned line, char *err, size_t errlen)
{
    size_t  i;

    if (!vsb_conf_name_ok(name, VSB_PROFILE_NAME_LEN)) {
        vsb_conf_err(err, errlen, file, line, "profile name \"%s\" must be "
                     "1-63 of [A-Za-z0-9_.-]", name);
        return NULL;
    }

    for (i = 0; i < cf->n_profiles; i++) {
        if (strcmp(cf->profiles[i].name, name) == 0) {
            if (i != 0) {
                vsb_conf_err(err, errlen, file, line,
                             "profile \"%s\" is duplicate", name);
                return NULL;
            }
            return &cf->profiles[0];
        }
    }

    if (cf->n_profiles == VSB_MAX_PROFILES) {
        vsb_conf_err(err, errlen, file, line, "more than %d profiles",
                     VSB_MAX_PROFILES);
        return NULL;
    }

    return &cf->profiles[cf->n_profiles++];
}


static int
vsb_conf_set(vsb_config_t *cf, const vsb_conf_key_t *k, char *val,
    const char *file, unsigned line, char *err, size_t errlen)
{
    uint64_t        v;
    char           *p, *tok, *save, *dir;
    vsb_profile_t  *pr;
    size_t          i;
    char            usr[PATH_MAX + 8], why[160];
    struct stat     st;

    if (k->abs_max != 0) {
        if (vsb_conf_u64(val, &v) != 0) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\": \"%s\" is not a number", k->name,
                                val);
        }
        if (v == 0) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\" must be at least 1", k->name);
        }
        if (v > k->abs_max) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\" %llu exceeds the compiled ceiling "
                                "%llu", k->name, (unsigned long long) v,
                                (unsigned long long) k->abs_max);
        }
        *(uint64_t *) ((char *) cf + k->offset) = v;
        return 0;
    }

    switch (k->key) {

    case VSB_K_SOCKET:
        if (val[0] != '/' || strlen(val) >= sizeof(cf->socket_path)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"socket\" must be an absolute path shorter "
                                "than %zu bytes", sizeof(cf->socket_path));
        }
        snprintf(cf->socket_path, sizeof(cf->socket_path), "%s", val);
        return 0;

    case VSB_K_SOCKET_GROUP:
        if (vsb_conf_gid(val, &cf->socket_gid) != 0) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"socket_group\": unknown group \"%s\"",
                                val);
        }
        return 0;

    case VSB_K_SOCKET_MODE:
        v = 0;
        for (p = val; *p; p++) {
            if (*p < '0' || *p > '7' || v > 07777) {
                break;
            }
            v = v * 8 + (uint64_t) (*p - '0');
        }
        if (*val == '\0' || *p != '\0' || v > 0777 || (v & 0600) != 0600
            || (v & 0007) != 0)
        {
            return vsb_conf_err(err, errlen, file, line,
                                "\"socket_mode\": \"%s\" is not an octal "
                                "mode with owner rw and no access for "
                                "others", val);
        }
        cf->socket_mode = (mode_t) v;
        return 0;

    case VSB_K_ALLOWED_UIDS:
        cf->n_allowed_uids = 0;
        for (tok = strtok_r(val, " \t", &save); tok != NULL;
             tok = strtok_r(NULL, " \t", &save))
        {
            if (cf->n_allowed_uids == VSB_MAX_ALLOWED_UIDS) {
                return vsb_conf_err(err, errlen, file, line,
                                    "\"allowed_uids\": more than %d users",
                                    VSB_MAX_ALLOWED_UIDS);
            }
            if (vsb_conf_uid(tok, &cf->allowed_uids[cf->n_allowed_uids])
                != 0)
            {
                return vsb_conf_err(err, errlen, file, line,
                                    "\"allowed_uids\": unknown user \"%s\"",
                                    tok);
            }
            cf->n_allowed_uids++;
        }
        return 0;

    case VSB_K_STATE_DIR:
        if (!vsb_conf_path_ok(val, sizeof(cf->state_dir) - 64)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"state_dir\" must be an absolute path");
        }
        snprintf(cf->state_dir, sizeof(cf->state_dir), "%s", val);
        /* No trailing slash: paths are built as state_dir + "/sb/..." */
        for (i = strlen(cf->state_dir); i > 1 && cf->state_dir[i - 1] == '/';
             i--)
        {
            cf->state_dir[i - 1] = '\0';
        }
        if (strcmp(cf->state_dir, "/") == 0) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"state_dir\" must not be \"/\"");
        }
        return 0;

    case VSB_K_CGROUP_NAME:
        if (!vsb_conf_name_ok(val, sizeof(cf->cgroup_name) - 1)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"cgroup_name\": \"%s\" must be 1-63 of "
                                "[A-Za-z0-9_.-]", val);
        }
        snprintf(cf->cgroup_name, sizeof(cf->cgroup_name), "%s", val);
        return 0;

    case VSB_K_CGROUP_MODE:
        if (strcmp(val, "auto") != 0 && strcmp(val, "v1") != 0
            && strcmp(val, "v2") != 0)
        {
            return vsb_conf_err(err, errlen, file, line,
                                "\"cgroup_mode\" must be auto, v1 or v2");
        }
        snprintf(cf->cgroup_mode, sizeof(cf->cgroup_mode), "%s", val);
        return 0;

    case VSB_K_UID_BASE:
        if (vsb_conf_u64(val, &v) != 0 || v < 100000 || v >= (uid_t) -1) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"uid_base\" must be a number from 100000 "
                                "up");
        }
        cf->uid_base = (uid_t) v;
        return 0;

    case VSB_K_LOG_LEVEL:
        if (strcmp(val, "error") == 0) {
            cf->log_level = VSB_LOG_ERR;
        } else if (strcmp(val, "warn") == 0) {
            cf->log_level = VSB_LOG_WARN;
        } else if (strcmp(val, "info") == 0) {
            cf->log_level = VSB_LOG_INFO;
        } else if (strcmp(val, "debug") == 0) {
            cf->log_level = VSB_LOG_DEBUG;
        } else {
            return vsb_conf_err(err, errlen, file, line,
                                "\"log_level\" must be error, warn, info or "
                                "debug");
        }
        return 0;

    case VSB_K_PROFILE:
        dir = NULL;
        tok = strtok_r(val, " \t", &save);
        if (tok != NULL) {
            dir = strtok_r(NULL, " \t", &save);
        }
        if (tok == NULL || dir == NULL || strtok_r(NULL, " \t", &save)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"profile\" takes NAME DIR");
        }
        if (dir[0] != '/' || strlen(dir) >= sizeof(pr->root)) {
            return vsb_conf_err(err, errlen, file, line,
                                "profile \"%s\": \"%s\" is not an absolute "
                                "path", tok, dir);
        }
        snprintf(usr, sizeof(usr), "%s/usr", dir);
        if (stat(usr, &st) == -1 || !S_ISDIR(st.st_mode)) {
            return vsb_conf_err(err, errlen, file, line,
                                "profile \"%s\": \"%s\" has no usr/ "
                                "directory", tok, dir);
        }

        pr = vsb_conf_profile_slot(cf, tok, file, line, err, errlen);
        if (pr == NULL) {
            return -1;
        }
        memset(pr, 0, sizeof(*pr));
        snprintf(pr->name, sizeof(pr->name), "%s", tok);
        snprintf(pr->root, sizeof(pr->root), "%s", dir);
        return 0;

    case VSB_K_EGRESS:
    case VSB_K_EGRESS_PROXY:
    case VSB_K_EGRESS_USER:
    case VSB_K_EGRESS_NETNS:
    case VSB_K_EGRESS_NFT:
    case VSB_K_EGRESS_RESOLVER:
    case VSB_K_EGRESS_RANGE:
    case VSB_K_EGRESS_CREDS:
    case VSB_K_EGRESS_UPCA:
    case VSB_K_EGRESS_ROOTS:
        return vsb_conf_egress(cf, k, val, file, line, err, errlen);
    case VSB_K_IMAGE_PROFILE:
        dir = NULL;
        tok = strtok_r(val, " \t", &save);
        if (tok != NULL) {
            dir = strtok_r(NULL, " \t", &save);
        }
        if (tok == NULL || dir == NULL || strtok_r(NULL, " \t", &save)) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"image_profile\" takes NAME sha256:DIGEST");
        }
        if (vsb_image_digest_parse(dir, NULL, why, sizeof(why)) != 0) {
            return vsb_conf_err(err, errlen, file, line,
                                "image_profile \"%.63s\": %s", tok, why);
        }

        pr = vsb_conf_profile_slot(cf, tok, file, line, err, errlen);
        if (pr == NULL) {
            return -1;
        }
        memset(pr, 0, sizeof(*pr));
        snprintf(pr->name, sizeof(pr->name), "%s", tok);
        snprintf(pr->digest, sizeof(pr->digest), "%s", dir);
        return 0;

    case VSB_K_IMAGE_STORE:
        if (!vsb_conf_path_ok(val, sizeof(cf->image_store) - 128)
            || strcmp(val, "/") == 0)
        {
            return vsb_conf_err(err, errlen, file, line,
                                "\"image_store\" must be an absolute path "
                                "other than \"/\"");
        }
        snprintf(cf->image_store, sizeof(cf->image_store), "%s", val);
        return 0;

    case VSB_K_TEST_CLOCK:
        if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0) {
            return vsb_conf_err(err, errlen, file, line,
                                "\"test_clock\" must be on or off");
        }
        cf->test_clock = strcmp(val, "on") == 0;
        return 0;

    default:
        break;
    }

    return vsb_conf_err(err, errlen, file, line, "unhandled key \"%s\"",
                        k->name);
}


static char *
vsb_conf_trim(char *s)
{
    char  *e;

    while (*s == ' ' || *s == '\t') {
        s++;
    }

    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) {
        *--e = '\0';
    }

    return s;
}


/* Parses text (NUL-terminated) as the contents of `file`. */
static int
vsb_conf_parse(vsb_config_t *cf, char *text, const char *file, char *err,
    size_t errlen)
{
    unsigned                line, lines[VSB_K_COUNT];
    char                   *p, *next, *key, *val, *eq;
    const vsb_conf_key_t   *k;
    size_t                  i;
    uint64_t                d, m, span;

    memset(lines, 0, sizeof(lines));

    for (p = text, line = 1; p != NULL; p = next, line++) {
        next = strchr(p, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }

        if (strlen(p) > VSB_CONF_MAX_LINE) {
            return vsb_conf_err(err, errlen, file, line, "line too long");
        }

        for (i = 0; p[i]; i++) {
            if ((unsigned char) p[i] < 0x20 && p[i] != '\t' && p[i] != '\r') {
                return vsb_conf_err(err, errlen, file, line,
                                    "control character in line");
            }
        }

        if ((eq = strchr(p, '#')) != NULL) {
            *eq = '\0';
        }

        key = vsb_conf_trim(p);
        if (*key == '\0') {
            continue;
        }

        eq = strchr(key, '=');
        if (eq == NULL) {
            return vsb_conf_err(err, errlen, file, line,
                                "expected \"key = value\"");
        }

        *eq = '\0';
        key = vsb_conf_trim(key);
        val = vsb_conf_trim(eq + 1);

        k = NULL;
        for (i = 0; i < sizeof(vsb_conf_keys) / sizeof(vsb_conf_keys[0]);
             i++)
        {
            if (strcmp(vsb_conf_keys[i].name, key) == 0) {
                k = &vsb_conf_keys[i];
                break;
            }
        }

        if (k == NULL) {
            return vsb_conf_err(err, errlen, file, line,
                                "unknown key \"%s\"", key);
        }

        if (*val == '\0') {
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\" has no value", key);
        }

        if (lines[k->key] != 0 && k->key != VSB_K_PROFILE
            && k->key != VSB_K_EGRESS_RANGE
            && k->key != VSB_K_IMAGE_PROFILE)
        {
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\" is duplicate (first on line %u)",
                                key, lines[k->key]);
        }
        lines[k->key] = line;

        if (vsb_conf_set(cf, k, val, file, line, err, errlen) != 0) {
            return -1;
        }
    }

    /* Cross-key checks name the line of the key at fault, or the last. */
    for (i = 0; i < sizeof(vsb_conf_pairs) / sizeof(vsb_conf_pairs[0]);
         i++)
    {
        d = *(uint64_t *) ((char *) cf
                           + vsb_conf_keys[vsb_conf_pairs[i][0]].offset);
        m = *(uint64_t *) ((char *) cf
                           + vsb_conf_keys[vsb_conf_pairs[i][1]].offset);
        if (d > m) {
            line = lines[vsb_conf_pairs[i][0]];
            if (line == 0) {
                line = lines[vsb_conf_pairs[i][1]];
            }
            return vsb_conf_err(err, errlen, file, line,
                                "\"%s\" %llu exceeds \"%s\" %llu",
                                vsb_conf_keys[vsb_conf_pairs[i][0]].name,
                                (unsigned long long) d,
                                vsb_conf_keys[vsb_conf_pairs[i][1]].name,
                                (unsigned long long) m);
        }
    }

    /* stdout and stderr share one reply payload. */
    if (cf->max.output_bytes * 2 > VSB_MAX_PAYLOAD) {
        return vsb_conf_err(err, errlen, file, lines[VSB_K_MAX_OUTPUT],
                            "\"max_output_bytes\" must be at most %d (two "
                            "streams share one %d-byte reply payload)",
                            VSB_MAX_PAYLOAD / 2, VSB_MAX_PAYLOAD);
    }

    if (cf->egress.enabled && cf->egress.user[0] == '\0') {
        return vsb_conf_err(err, errlen, file, lines[VSB_K_EGRESS],
                            "\"egress = on\" needs \"egress_user\" (the "
                            "unprivileged user the egress proxy runs as)");
    }

    /* a background exec is a running exec too; the default follows a
     * lower max_execs_per_sandbox */
    if (cf->max_background_execs > cf->max_execs_per_sandbox
        && lines[VSB_K_MAX_BACKGROUND] == 0)
    {
        cf->max_background_execs = cf->max_execs_per_sandbox;
    }

    if (cf->max_background_execs > cf->max_execs_per_sandbox) {
        line = lines[VSB_K_MAX_BACKGROUND];
        return vsb_conf_err(err, errlen, file, line,
                            "\"max_background_execs\" %llu exceeds "
                            "\"max_execs_per_sandbox\" %llu",
                            (unsigned long long) cf->max_background_execs,
                            (unsigned long long) cf->max_execs_per_sandbox);
    }

    span = cf->max_sandboxes * (uint64_t) VSB_UID_RANGE;
    if ((uint64_t) cf->uid_base + span >= (uint64_t) (uid_t) -1) {
        line = lines[VSB_K_UID_BASE] ? lines[VSB_K_UID_BASE]
                                     : lines[VSB_K_MAX_SANDBOXES];
        return vsb_conf_err(err, errlen, file, line,
                            "\"uid_base\" %u + max_sandboxes * %d overflows "
                            "the uid range", (unsigned) cf->uid_base,
                            VSB_UID_RANGE);
    }

    return 0;
}


int
vsb_config_load(const char *path, vsb_config_t *cf, char *err, size_t errlen)
{
    FILE    *f;
    char    *text;
    size_t   n;
    int      rc;

    vsb_conf_defaults(cf);

    if (path == NULL) {
        return 0;
    }

    f = fopen(path, "re");
    if (f == NULL) {
        snprintf(err, errlen, "open(\"%s\"): %s", path, strerror(errno));
        return -1;
    }

    /* Bounded read: a config larger than 1 MiB is a mistake. */
    text = malloc(1024 * 1024 + 1);
    if (text == NULL) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }

    n = fread(text, 1, 1024 * 1024 + 1, f);
    if (ferror(f)) {
        snprintf(err, errlen, "read(\"%s\"): %s", path, strerror(errno));
        fclose(f);
        free(text);
        return -1;
    }
    fclose(f);

    if (n > 1024 * 1024) {
        snprintf(err, errlen, "%s: larger than 1 MiB", path);
        free(text);
        return -1;
    }

    if (memchr(text, '\0', n) != NULL) {
        snprintf(err, errlen, "%s: contains a NUL byte", path);
        free(text);
        return -1;
    }

    text[n] = '\0';
    rc = vsb_conf_parse(cf, text, path, err, errlen);
    free(text);
    return rc;
}


int
vsb_config_parse_buffer(const char *buf, size_t len, vsb_config_t *cf,
    char *err, size_t errlen)
{
    char  *text;
    int    rc;

    vsb_conf_defaults(cf);

    if (memchr(buf, '\0', len) != NULL) {
        snprintf(err, errlen, "buffer: contains a NUL byte");
        return -1;
    }

    text = malloc(len + 1);
    if (text == NULL) {
        snprintf(err, errlen, "buffer: out of memory");
        return -1;
    }

    memcpy(text, buf, len);
    text[len] = '\0';
    rc = vsb_conf_parse(cf, text, "buffer", err, errlen);
    free(text);
    return rc;
}


const vsb_profile_t *
vsb_config_profile(const vsb_config_t *cf, const char *name)
{
    size_t  i;

    for (i = 0; i < cf->n_profiles; i++) {
        if (strcmp(cf->profiles[i].name, name) == 0) {
            return &cf->profiles[i];
        }
    }

    return NULL;
}
