/*
 * The helper's snapshot store: state_dir/snapshots, root only (0700).
 *
 *   snapshots/<snap id>/meta.json      the record (SNAPSHOT, below)
 *   snapshots/<snap id>/manifest.json  the manifest (vsb_snap_tree.h)
 *   snapshots/<snap id>/tree/          the files, owners as the sandbox
 *                                      saw them (inside uids), read-only
 *                                      from the moment it is committed
 *   snapshots/.new-<snap id>/          one being made (a worker's)
 *   snapshots/.del-<snap id>/          one being removed
 *
 * A snapshot is committed by renaming its finished directory into place,
 * once its files are on disk (syncfs), so the store never lists half of
 * one; at start, .new- and .del-
 * leftovers of a previous run are removed and expired snapshots too.
 * Each snapshot belongs to the (tenant, agent) that made it: any other
 * owner is told not_found, as for an unknown id.  While a fork of it
 * lives (its tree is the fork's lower layer), it is neither deleted
 * (busy) nor expired (its expiry waits for the last fork's end).
 */
#ifndef VSB_SNAP_STORE_H
#define VSB_SNAP_STORE_H

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "vsb_config.h"
#include "vsb_protocol.h"
#include "vsb_request.h"

typedef struct vsb_snap_s  vsb_snap_t;

struct vsb_snap_s {
    char          id[VSB_SNAPSHOT_ID_LEN + 1];
    char          digest[72];                 /* "sha256:" + manifest's */
    char          tenant[VSB_MAX_ID_LEN + 1];
    char          agent[VSB_MAX_ID_LEN + 1];
    char          sandbox[VSB_SANDBOX_ID_LEN + 1];  /* made of */
    char          profile[VSB_PROFILE_NAME_LEN + 1];
    char          image_digest[VSB_IMAGE_DIGEST_LEN + 1];  /* "": none */
    time_t        created_at;
    time_t        expires_at;
    uint64_t      ttl_s;
    uint64_t      bytes;                      /* files' content */
    uint64_t      files;                      /* manifest entries */
    json_t       *metadata;                   /* object or NULL */
    unsigned      forks;                      /* live sandboxes on it */
    unsigned      deleting:1;
    vsb_snap_t   *next;
};

/* At start: opens (makes) the store, removes leftovers and expired
 * snapshots, loads the records.  -1 with err. */
int vsb_snap_store_init(char *err, size_t errlen);

/* NULL when forks can be made; else why not (checked at start: the
 * store's file system must support idmapped mounts). */
const char *vsb_snap_forks_unavailable(void);

/* state_dir/snapshots, and one snapshot's directory. */
const char *vsb_snap_store_dir(void);
int vsb_snap_path(const vsb_snap_t *s, const char *sub, char *out,
    size_t len);

/* The snapshot id names, owned by tenant and agent; NULL with e
 * (not_found, field) otherwise, or when it is being deleted. */
vsb_snap_t *vsb_snap_find(const char *tenant, const char *agent,
    const char *id, const char *field, vsb_error_t *e);
vsb_snap_t *vsb_snap_first(void);

/* A tenant's snapshots and their bytes (committed ones). */
void vsb_snap_usage(const char *tenant, uint64_t *count, uint64_t *bytes);

/* A new id ("snap-" + 24 hex); -1 if no randomness. */
int vsb_snap_new_id(char id[VSB_SNAPSHOT_ID_LEN + 1]);
/* "snap-" + 24 lowercase hex. */
int vsb_snap_id_ok(const char *s);

/* Commits .new-<id> (whose tree and manifest a worker made): writes
 * meta.json, renames it into place, adds s (taken over) to the store.
 * -1 with err (s is not taken then). */
int vsb_snap_commit(vsb_snap_t *s, char *err, size_t errlen);

/* SNAPSHOT as JSON. */
json_t *vsb_snap_json(const vsb_snap_t *s);

/*
 * Removes s: out of the store at once (renamed to .del-<id>), then its
 * files in a worker; done(data, NULL) once they are confirmed gone, or
 * done(data, why).  s is freed before done is called.
 */
typedef void (*vsb_snap_deleted_pt)(void *data, const char *why);
int vsb_snap_delete(vsb_snap_t *s, vsb_snap_deleted_pt done, void *data,
    char *err, size_t errlen);

/* Removes .new-<id>, a snapshot not committed, in a worker. */
int vsb_snap_discard(const char *id, vsb_snap_deleted_pt done, void *data,
    char *err, size_t errlen);

/* A fork holds s (its tree is the fork's lower layer) / lets it go. */
void vsb_snap_hold(vsb_snap_t *s);
void vsb_snap_release(vsb_snap_t *s);

/* Expired snapshots without forks are deleted; called by a timer. */
void vsb_snap_expire(void);

#endif
