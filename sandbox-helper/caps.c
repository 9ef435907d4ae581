/*
 * Capability dropping without libcap: prctl for securebits, bounding and
 * ambient sets, raw capset for the rest.  Everything is checked, and the
 * final state is read back, because a silently kept capability is a
 * sandbox escape.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_caps.h"

/* well above any kernel's CAP_LAST_CAP; PR_CAPBSET_DROP says EINVAL past
 * the last one */
#define VSB_CAPS_PROBE_MAX  128


int
vsb_caps_lock(char *err, size_t errlen)
{
    int  cap;

    /* root gains nothing at execve, setuid never keeps capabilities,
     * nothing can be raised into the ambient set; all locked */
    if (prctl(PR_SET_SECUREBITS,
              SECBIT_NOROOT | SECBIT_NOROOT_LOCKED
              | SECBIT_NO_SETUID_FIXUP_LOCKED
              | SECBIT_KEEP_CAPS_LOCKED
              | SECBIT_NO_CAP_AMBIENT_RAISE
              | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0, 0, 0) != 0)
    {
        snprintf(err, errlen, "caps: set securebits: %s", strerror(errno));
        return -1;
    }

    for (cap = 0; cap < VSB_CAPS_PROBE_MAX; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            if (errno == EINVAL) {
                break;
            }

            snprintf(err, errlen, "caps: drop %d from bounding set: %s", cap,
                     strerror(errno));
            return -1;
        }
    }

    if (cap == 0) {
        snprintf(err, errlen, "caps: drop from bounding set: %s",
                 strerror(errno));
        return -1;
    }

    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
        snprintf(err, errlen, "caps: clear ambient set: %s", strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_caps_drop(char *err, size_t errlen)
{
    struct __user_cap_header_struct  hdr;
    struct __user_cap_data_struct    data[2];

    memset(&hdr, 0, sizeof(hdr));
    memset(data, 0, sizeof(data));
    hdr.version = _LINUX_CAPABILITY_VERSION_3;
    hdr.pid = 0;

    if (syscall(SYS_capset, &hdr, data) != 0) {
        snprintf(err, errlen, "caps: capset to empty: %s", strerror(errno));
        return -1;
    }

    if (syscall(SYS_capget, &hdr, data) != 0) {
        snprintf(err, errlen, "caps: capget: %s", strerror(errno));
        return -1;
    }

    if (data[0].effective | data[0].permitted | data[0].inheritable
        | data[1].effective | data[1].permitted | data[1].inheritable)
    {
        snprintf(err, errlen, "caps: capabilities remain after capset");
        return -1;
    }

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(err, errlen, "caps: set no_new_privs: %s", strerror(errno));
        return -1;
    }

    return 0;
}
