/*
 * Privilege drop, checked afterwards: after it the process must be
 * unable to get root back (setuid(0) fails) and must hold no capability.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "eg_privdrop.h"


static int
eg_caps_empty(char *err, size_t errlen)
{
    struct __user_cap_header_struct  hdr;
    struct __user_cap_data_struct    data[2];

    memset(&hdr, 0, sizeof(hdr));
    memset(data, 0, sizeof(data));
    hdr.version = _LINUX_CAPABILITY_VERSION_3;

    if (syscall(SYS_capget, &hdr, data) != 0) {
        snprintf(err, errlen, "capget: %s", strerror(errno));
        return -1;
    }
    if (data[0].effective | data[1].effective | data[0].permitted
        | data[1].permitted | data[0].inheritable | data[1].inheritable)
    {
        /* drop them (possible without privilege: only lowering) */
        memset(data, 0, sizeof(data));
        if (syscall(SYS_capset, &hdr, data) != 0) {
            snprintf(err, errlen, "capset (drop all): %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}


int
eg_privdrop(const char *user, char *err, size_t errlen)
{
    struct passwd  *pw;
    struct rlimit   rl;
    uid_t           ru, eu, su;
    int             cap;

    /* As many descriptors as allowed: each connection costs two. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
    }

    if (geteuid() == 0) {
        if (user == NULL || user[0] == '\0') {
            snprintf(err, errlen, "started as root without \"user\" in the "
                     "config: the proxy never runs as root");
            return -1;
        }
        errno = 0;
        pw = getpwnam(user);
        if (pw == NULL) {
            snprintf(err, errlen, "user %s: %s", user,
                     errno ? strerror(errno) : "no such user");
            return -1;
        }
        if (pw->pw_uid == 0) {
            snprintf(err, errlen, "user %s is root", user);
            return -1;
        }

        for (cap = 0; cap <= CAP_LAST_CAP; cap++) {
            if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
                snprintf(err, errlen, "PR_CAPBSET_DROP %d: %s", cap,
                         strerror(errno));
                return -1;
            }
        }
        if (setgroups(0, NULL) != 0) {
            snprintf(err, errlen, "setgroups: %s", strerror(errno));
            return -1;
        }
        if (setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) != 0) {
            snprintf(err, errlen, "setresgid %u: %s", (unsigned) pw->pw_gid,
                     strerror(errno));
            return -1;
        }
        if (setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) != 0) {
            snprintf(err, errlen, "setresuid %u: %s", (unsigned) pw->pw_uid,
                     strerror(errno));
            return -1;
        }
        if (getresuid(&ru, &eu, &su) != 0 || ru == 0 || eu == 0 || su == 0
            || setuid(0) == 0)
        {
            snprintf(err, errlen, "privileges were not dropped");
            return -1;
        }
    }

    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0
        && errno != EINVAL)
    {
        snprintf(err, errlen, "clear ambient capabilities: %s",
                 strerror(errno));
        return -1;
    }
    if (eg_caps_empty(err, errlen) != 0) {
        return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(err, errlen, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        return -1;
    }
#ifndef EG_SANITIZER
    /* (the sanitized build stays dumpable: the leak checker reads its
     * own /proc/self/task at exit) */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        snprintf(err, errlen, "PR_SET_DUMPABLE: %s", strerror(errno));
        return -1;
    }
#endif
    return 0;
}
