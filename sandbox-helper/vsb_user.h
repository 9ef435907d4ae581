/*
 * The exec's user namespace: inside uids/gids 0 .. VSB_UID_RANGE-1 map to
 * the sandbox's host range sb->host_uid ...
 *
 * vsb_user_map() runs in the helper (host root) on the new child.  It
 * leaves /proc/<pid>/setgroups at "allow": the helper is privileged, so
 * "deny" is not needed for the map, and the child must be able to drop
 * the supplementary groups it inherited from the helper.
 *
 * vsb_user_become() runs in the child: setgroups to just gid (none for
 * root), setresgid, setresuid.  The init becomes inside root (until then
 * it still runs as host root's kuid, unmapped); the workload becomes
 * VSB_WORKLOAD_UID.
 */
#ifndef VSB_USER_H
#define VSB_USER_H

#include <stddef.h>
#include <sys/types.h>

int vsb_user_map(pid_t pid, uid_t host_uid, char *err, size_t errlen);
int vsb_user_become(uid_t uid, gid_t gid, char *err, size_t errlen);

#endif
