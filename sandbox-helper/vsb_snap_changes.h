/*
 * What differs between two views of a sandbox's file system, computed by
 * the helper from the files (never by anything run in the sandbox).
 *
 * A view is a layer over an optional base over the profile's image (none
 * for a directory profile): the sandbox now is its layer (walked and
 * hashed now) over the snapshot it was forked from; "created" is the
 * manifest of its layer taken when the create finished (baseline.json
 * in its directory, outside its root) over that same snapshot; a
 * snapshot is its manifest over the image.  Every path either view names
 * (and, below a whiteout or an opaque directory, what the base and the
 * image hold) is resolved in both the way overlayfs would and compared:
 * type, content (sha256; a symlink's target) and mode.  Times are never
 * looked at: a rewritten mtime changes nothing, a same-size file with
 * other bytes is modified.
 *
 * Runs in a worker (vsb_worker.h); its reply header and payload:
 *   {ok, since, format, added, modified, deleted, mode_changed, changes}
 *   format "json": {"changes": [CHANGE...]} sorted by path
 *   format "diff": a unified diff of the changed text files (binary ones
 *                  named, not diffed)
 *   format "tar":  the changed entries as they are now (a tar of
 *                  members named by path; deletions are not in it)
 */
#ifndef VSB_SNAP_CHANGES_H
#define VSB_SNAP_CHANGES_H

#include <limits.h>
#include <stdint.h>

#include "vsb_snap_tree.h"

/* a file larger than this is not diffed (named as too large) */
#define VSB_DIFF_MAX_FILE  (1024 * 1024)

typedef struct {
    char              layer[PATH_MAX];      /* the sandbox's layer */
    char              base_tree[PATH_MAX];  /* the snapshot it was forked */
    char              base_mf[PATH_MAX];    /* from ("": not a fork) */
    char              ref_tree[PATH_MAX];   /* since a snapshot */
    char              ref_mf[PATH_MAX];
    char              baseline[PATH_MAX];   /* since "created" */
    char              image[PATH_MAX];      /* "": a directory profile */
    char              since[VSB_SNAPSHOT_ID_LEN + 8];
    char              format[8];            /* json, diff, tar */
    vsb_mf_bounds_t   b;
    uint64_t          max_out;              /* payload bytes */
} vsb_changes_req_t;

/* The worker's function (vsb_worker_fn_pt). */
int vsb_changes_work(void *arg, int hfd, int pfd);

/* Writes the layer's manifest of a sandbox just created: its baseline. */
int vsb_changes_baseline(const char *layer, const char *out,
    const vsb_mf_bounds_t *b, char *err, size_t errlen);

#endif
