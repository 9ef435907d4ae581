/*
 * The mount namespace an exec's init is cloned from: the host's mounts
 * without the sandboxes' (spawn_ns.c says why).
 */
#ifndef VSB_SPAWN_NS_H
#define VSB_SPAWN_NS_H

#include <stddef.h>

#include "vsb_sandbox.h"

/* At start, after recovery: makes the namespace and refreshes it from
 * the host's mounts every VSB_SPAWN_NS_REFRESH_MS.  Failing (a kernel
 * without open_tree, no CAP_SYS_CHROOT) is not fatal: execs are then
 * cloned from the helper's own namespace, as before. */
#define VSB_SPAWN_NS_REFRESH_MS  60000

void vsb_spawn_ns_init(void);

/* In the helper, around the clone: the sandbox's tree as a detached
 * copy (*tree -1 when there is no spawn namespace), then into the spawn
 * namespace and back out. */
int vsb_spawn_ns_tree(const vsb_sandbox_t *sb, int *tree, char *err,
    size_t errlen);
int vsb_spawn_ns_enter(char *err, size_t errlen);
void vsb_spawn_ns_leave(void);

/* In the init: the tree attached where it was in the host's namespace. */
int vsb_spawn_ns_attach(int tree, const vsb_sandbox_t *sb);

/* mounts in the spawn namespace when last made; -1: there is none */
long vsb_spawn_ns_mounts(void);

#endif
