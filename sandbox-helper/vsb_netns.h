/*
 * One network namespace per sandbox, for its whole life.  The helper
 * creates it at sandbox create (loopback up, unprivileged ports from 0),
 * holds it by a descriptor and by a bind mount at state_dir/netns/<id>
 * (so a restart finds what a crashed run left), and every exec of the
 * sandbox joins it while getting its own user, pid, mount, ipc, uts and
 * cgroup namespaces: execs of one sandbox share loopback, two sandboxes
 * never see each other.
 *
 * The namespace belongs to the initial user namespace, so nothing inside
 * the sandbox holds CAP_NET_ADMIN over it: interfaces, addresses, routes
 * and rules are the helper's alone (vsb_netns_run()).  A process in a new
 * user namespace cannot join it, which is why the helper joins it around
 * clone() instead (vsb_netns_enter()/vsb_netns_leave()).
 */
#ifndef VSB_NETNS_H
#define VSB_NETNS_H

#include <stddef.h>

#include "vsb_sandbox.h"

/* At start: remembers the helper's own network namespace and creates
 * state_dir/netns. */
int vsb_netns_init(char *err, size_t errlen);

/* Creates, configures and pins sb's namespace (sb->netns_fd).  On
 * failure nothing is left and err says what failed. */
int vsb_netns_create(vsb_sandbox_t *sb, char *err, size_t errlen);

/*
 * Runs fn inside sb's network namespace, on the helper's thread, and
 * returns to the helper's own namespace before returning fn's result.
 * For work that must happen there: configuring interfaces and rules
 * (netlink sockets opened inside talk to that namespace), creating
 * sockets that belong to it (a listening socket made inside stays in it
 * after the return).  fn must not block.  -1 with err filled if the
 * namespace cannot be entered.
 */
typedef int (*vsb_netns_fn_pt)(void *data, char *err, size_t errlen);

int vsb_netns_run(const vsb_sandbox_t *sb, vsb_netns_fn_pt fn, void *data,
    char *err, size_t errlen);

/* Around clone() of an exec's init: the child inherits the namespace the
 * helper is in.  leave() returns to the helper's own namespace; it cannot
 * fail short of a broken kernel, and then it aborts rather than serve
 * from a sandbox's namespace. */
int vsb_netns_enter(const vsb_sandbox_t *sb, char *err, size_t errlen);
void vsb_netns_leave(void);

/* Drops the helper's descriptor (before the teardown, which must not
 * inherit it). */
void vsb_netns_release(vsb_sandbox_t *sb);

/* Removes sb's pin (bind mount and file) and verifies it is gone.  With
 * the descriptor released and no process left, nothing holds the
 * namespace and the kernel frees it.  -1 with err filled otherwise. */
int vsb_netns_remove(const vsb_sandbox_t *sb, char *err, size_t errlen);

/* At start: removes every pin a previous run left.  Returns how many,
 * -1 if one could not be removed. */
int vsb_netns_cleanup_stale(void);

#endif
