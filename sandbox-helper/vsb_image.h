/*
 * The image store: what every image file shares.  An image is named by
 * the sha256 digest of its manifest ("sha256:" and 64 lowercase hex
 * digits); tags are never accepted.  The bounds below are compiled-in
 * ceilings: an operator may lower them per import, never raise them.
 */
#ifndef VSB_IMAGE_H
#define VSB_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define VSB_IMAGE_DIGEST_PREFIX   "sha256:"
#define VSB_IMAGE_HEX_LEN         64
#define VSB_IMAGE_DIGEST_LEN      (7 + VSB_IMAGE_HEX_LEN)

/* compiled ceilings (what an operator may ask for at most) */
#define VSB_IMAGE_ABS_ENTRIES     (4 * 1000 * 1000ULL)
#define VSB_IMAGE_ABS_FILE_BYTES  (64ULL << 30)
#define VSB_IMAGE_ABS_BYTES       (256ULL << 30)
#define VSB_IMAGE_ABS_LAYERS      256
#define VSB_IMAGE_ABS_SECONDS     (6 * 3600)

/* defaults of one import */
#define VSB_IMAGE_DEF_ENTRIES     (500 * 1000ULL)
#define VSB_IMAGE_DEF_FILE_BYTES  (4ULL << 30)
#define VSB_IMAGE_DEF_BYTES       (32ULL << 30)
#define VSB_IMAGE_DEF_LAYERS      128
#define VSB_IMAGE_DEF_SECONDS     1800

/* fixed bounds of the formats */
#define VSB_IMAGE_JSON_MAX        (4 << 20)   /* index, manifest, config */
#define VSB_IMAGE_PATH_MAX        4096        /* one path in a layer */
#define VSB_IMAGE_NAME_MAX        255         /* one path component */
#define VSB_IMAGE_DEPTH_MAX       128         /* components in a path */
#define VSB_IMAGE_META_MAX        (256 << 10) /* image.json */

/* The unpacker's uids: a host range of VSB_UID_RANGE ids just below
 * uid_base, never handed to a sandbox. */
#define VSB_IMAGE_ID_MAX          65535       /* larger ids become nobody */
#define VSB_IMAGE_NOBODY          65534

typedef struct {
    uint64_t  max_entries;      /* entries of all layers together */
    uint64_t  max_file_bytes;   /* one regular file */
    uint64_t  max_bytes;        /* regular-file bytes of all layers, and
                                 * the blobs of a tarball source */
    uint64_t  max_layers;
    uint64_t  max_seconds;      /* wall clock of the unpacking child */
} vsb_image_limits_t;

/* What unpacking neutralised or applied; recorded in image.json. */
typedef struct {
    uint64_t  entries;
    uint64_t  bytes;
    uint64_t  setid_dropped;     /* setuid/setgid bits removed */
    uint64_t  specials_dropped;  /* device nodes and fifos not created */
    uint64_t  ids_squashed;      /* uid/gid above 65535 made nobody */
    uint64_t  xattrs_dropped;    /* PAX xattr records (file caps too) */
    uint64_t  whiteouts;         /* files removed by whiteouts */
    uint64_t  opaque_dirs;       /* directories emptied as opaque */
    uint64_t  hardlinks;
    uint64_t  mount_points;      /* mount points created */
} vsb_image_stats_t;

void vsb_image_limits_default(vsb_image_limits_t *l);

/* "sha256:<64 lowercase hex>" -> hex (65 bytes with NUL).  Anything
 * else, a tag in particular, is refused with a reason in err. */
int vsb_image_digest_parse(const char *s, char *hex, char *err,
    size_t errlen);

/* A SHA-256 digest md of mdlen bytes as "sha256:<hex>"
 * (VSB_IMAGE_DIGEST_LEN + 1); -1 if mdlen is not 32. */
int vsb_image_digest_md(const unsigned char *md, unsigned int mdlen,
    char *digest);
/* sha256 of a buffer as "sha256:<hex>" (VSB_IMAGE_DIGEST_LEN + 1). */
int vsb_image_sha256_buf(const void *p, size_t len, char *digest);

#endif
