/*
 * A sandbox's files on the host: state_dir/sb/<id>, a tmpfs of the
 * sandbox's disk_mb (and 256 inodes per MiB) mounted nodev,nosuid (so
 * the writable layer, /workspace and /tmp share one hard size limit),
 * owned by the sandbox's inside-root.  Deletion unmounts and removes it
 * and verifies both; destroy runs it in a teardown process (teardown.c).
 */
#ifndef VSB_STORAGE_H
#define VSB_STORAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vsb_sandbox.h"

/* state_dir/<name>: created with mode if missing; an existing one must
 * be a root-owned directory only root can write.  Its path in out. */
int vsb_storage_state_subdir(const char *name, mode_t mode, char *out,
    size_t len, char *err, size_t errlen);

/* At start: creates state_dir/sb and checks sandbox uids can reach it. */
int vsb_storage_init(char *err, size_t errlen);
int vsb_storage_create(vsb_sandbox_t *sb, char *err, size_t errlen);
/* Returns 0 when unmounted and removed (verified); -1 with err naming the
 * step ("mounts" or "files") otherwise. */
int vsb_storage_delete(vsb_sandbox_t *sb, const char **step, char *err,
    size_t errlen);
/* Bytes used on the sandbox's tmpfs. */
uint64_t vsb_storage_used(const vsb_sandbox_t *sb);
/* At start: unmount and remove whatever a previous run left in
 * state_dir/sb.  Returns the number removed, -1 if one could not be. */
int vsb_storage_cleanup_stale(void);

#endif
