/*
 * The helper's configuration and its hard ceilings.  The file format is
 * "key = value" lines, '#' comments; see conf/sandbox-helper.conf.  The
 * compiled-in VSB_ABS_* bound what a config file may set; the config's
 * max_* bound what any request may ask for.
 */
#ifndef VSB_CONFIG_H
#define VSB_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_image.h"
#include "vsb_protocol.h"

#define VSB_ABS_MEMORY_MB      (64 * 1024)
#define VSB_ABS_PIDS           32768
#define VSB_ABS_CPU_PERCENT    (100 * 256)
#define VSB_ABS_DISK_MB        (64 * 1024)
#define VSB_ABS_TIMEOUT_S      (24 * 3600)
#define VSB_ABS_OUTPUT_BYTES   (64 * 1024 * 1024)
#define VSB_ABS_TTL_S          (7 * 24 * 3600)
#define VSB_ABS_IDLE_S         VSB_ABS_TTL_S
#define VSB_ABS_ENDED_RETENTION_S  (30 * 24 * 3600)
#define VSB_ABS_ENDED          16384    /* ENDED records kept (2 KiB each) */
#define VSB_ABS_SANDBOXES      1024
#define VSB_ABS_FILE_BYTES     (64 * 1024 * 1024)
#define VSB_ABS_ARCHIVE_BYTES  VSB_MAX_STREAM_PAYLOAD
#define VSB_ABS_BACKGROUND     64      /* background execs per sandbox */
#define VSB_ABS_SNAPSHOTS      4096    /* a tenant's snapshots */
#define VSB_ABS_SNAPSHOT_BYTES (1ULL << 40)  /* a tenant's snapshot bytes */
#define VSB_ABS_SNAPSHOT_FILES 4000000 /* entries of one snapshot */
#define VSB_ABS_SNAPSHOT_TTL_S (90 * 24 * 3600)

#define VSB_ABS_EGRESS_ENTRIES 256      /* = VSB_EGRESS_MAX_ENTRIES */
#define VSB_ABS_EGRESS_CONNS   100000
#define VSB_ABS_EGRESS_BYTES   (1ULL << 50)

#define VSB_MAX_ALLOWED_UIDS   32
#define VSB_EGRESS_MAX_RANGES  64      /* egress_allow_range lines */
#define VSB_MAX_PROFILES       16
#define VSB_PROFILE_NAME_LEN   63

/* Inside every sandbox, uids/gids 0 .. VSB_UID_RANGE-1 are mapped to a
 * host range of its own: host = sandbox->host_uid + inside. */
#define VSB_UID_RANGE          65536
#define VSB_WORKLOAD_UID       1000     /* the non-root user workloads run as */
#define VSB_WORKLOAD_GID       1000

typedef struct {
    uint64_t   memory_mb;
    uint64_t   pids;
    uint64_t   cpu_percent;     /* 100 = one full core */
    uint64_t   disk_mb;         /* size of the sandbox's writable tmpfs */
    uint64_t   timeout_s;       /* default exec timeout */
    uint64_t   output_bytes;    /* per stream, per exec */
} vsb_limits_t;

/*
 * A directory profile ("profile = NAME DIR") has root: DIR's usr/ becomes
 * the sandbox's /usr, read-only; an image profile ("image_profile = NAME
 * sha256:...") has digest: the store's image is the read-only lower
 * layer of a writable overlay root (overlay.c).  Exactly one is set.
 */
typedef struct {
    char       name[VSB_PROFILE_NAME_LEN + 1];
    char       root[PATH_MAX];
    char       digest[VSB_IMAGE_DIGEST_LEN + 1];
} vsb_profile_t;

#define vsb_profile_is_image(p)  ((p)->digest[0] != '\0')

/* Network egress (allowlist mode): the egress proxy the helper starts
 * and supervises, see docs/egress.md. */
typedef struct {
    int            enabled;             /* egress = on */
    char           proxy[PATH_MAX];     /* the egress-proxy binary */
    char           user[64];            /* the proxy drops to it */
    char           netns[PATH_MAX];     /* run it there; "": the helper's */
    char           nft[PATH_MAX];
    char           resolver[256];       /* "addr[:port],..."; "": host's */
    char           allow_ranges[VSB_EGRESS_MAX_RANGES][64];
    size_t         n_allow_ranges;
    uint64_t       max_entries;         /* allow + ask, per sandbox */
    uint64_t       max_connections;     /* proxy ceilings, per sandbox */
    uint64_t       max_bytes_out;
    uint64_t       max_bytes_in;
    char           credentials[256];    /* bindings + secrets; "": none */
    char           upstream_ca[256];    /* "": the proxy's default roots */
    char           trust_roots[256];    /* sandboxes' bundle: these + CA */
} vsb_egress_config_t;

typedef struct {
    char           socket_path[108];
    gid_t          socket_gid;          /* (gid_t) -1: leave root's group */
    mode_t         socket_mode;         /* default 0660 */
    uid_t          allowed_uids[VSB_MAX_ALLOWED_UIDS];
    size_t         n_allowed_uids;

    char           state_dir[PATH_MAX]; /* sandboxes live in state_dir/sb */
    char           image_store[PATH_MAX]; /* "": state_dir/images */
    char           cgroup_name[64];     /* parent cgroup, e.g. "veto-sandbox" */
    char           cgroup_mode[8];      /* "auto", "v1" or "v2" */
    uid_t          uid_base;            /* first host uid handed out */

    vsb_limits_t   max;                 /* ceilings: no request exceeds */
    vsb_limits_t   def;                 /* defaults for omitted limits */
    uint64_t       max_ttl_s;
    uint64_t       default_ttl_s;
    uint64_t       max_idle_s;
    uint64_t       default_idle_s;
    uint64_t       ended_retention_s;   /* ENDED records kept this long */
    uint64_t       ended_max;           /* and at most this many */
    uint64_t       max_sandboxes;
    uint64_t       max_file_bytes;
    uint64_t       max_archive_bytes;   /* an upload, an export */
    uint64_t       max_execs_per_sandbox;
    uint64_t       max_background_execs;  /* per sandbox, running */

    /* the snapshot store (state_dir/snapshots): per tenant, at most
     * snapshot_max_count snapshots of snapshot_max_bytes in all; one
     * snapshot at most snapshot_max_files entries; kept ttl_s, at most
     * snapshot_max_ttl_s.  A request may only lower them. */
    uint64_t       snapshot_max_count;
    uint64_t       snapshot_max_bytes;
    uint64_t       snapshot_max_files;
    uint64_t       snapshot_max_ttl_s;
    uint64_t       snapshot_default_ttl_s;

    vsb_profile_t  profiles[VSB_MAX_PROFILES];
    size_t         n_profiles;          /* profiles[0] is "default" */

    vsb_egress_config_t  egress;

    int            log_level;

    /* test_clock = on: the clock_advance op moves lifetimes ahead
     * (vsb_lifeclock.h); tests only, never in production */
    unsigned       test_clock:1;
} vsb_config_t;

extern vsb_config_t  vsb_cf;

/* Defaults, then the file (if path is not NULL).  On error fills err
 * with "file:line: what is wrong" and returns -1. */
int vsb_config_load(const char *path, vsb_config_t *cf, char *err,
    size_t errlen);

/* The same on an in-memory buffer, named "buffer" in errors (tests,
 * fuzzing). */
int vsb_config_parse_buffer(const char *buf, size_t len, vsb_config_t *cf,
    char *err, size_t errlen);

const vsb_profile_t *vsb_config_profile(const vsb_config_t *cf,
    const char *name);

#endif
