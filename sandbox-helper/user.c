/*
 * User namespace mapping (helper side) and credential switches (child
 * side).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vsb_config.h"
#include "vsb_user.h"


static int
vsb_user_write(pid_t pid, const char *file, const char *text, char *err,
    size_t errlen)
{
    int      fd;
    char     path[64];
    size_t   len;
    ssize_t  n;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);

    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "user: open %s: %s", path, strerror(errno));
        return -1;
    }

    /* the map files take the whole map in one write */
    len = strlen(text);
    n = write(fd, text, len);
    if (n != (ssize_t) len) {
        snprintf(err, errlen, "user: write %s: %s", path,
                 n == -1 ? strerror(errno) : "short write");
        close(fd);
        return -1;
    }

    if (close(fd) != 0) {
        snprintf(err, errlen, "user: close %s: %s", path, strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_user_map(pid_t pid, uid_t host_uid, char *err, size_t errlen)
{
    char  map[64];

    if (host_uid == 0 || host_uid > (uid_t) -1 - VSB_UID_RANGE) {
        snprintf(err, errlen, "user: bad host uid %u", (unsigned) host_uid);
        return -1;
    }

    snprintf(map, sizeof(map), "0 %u %u\n", (unsigned) host_uid,
             (unsigned) VSB_UID_RANGE);

    if (vsb_user_write(pid, "gid_map", map, err, errlen) != 0) {
        return -1;
    }

    return vsb_user_write(pid, "uid_map", map, err, errlen);
}


int
vsb_user_become(uid_t uid, gid_t gid, char *err, size_t errlen)
{
    uid_t  r, e, s;
    gid_t  rg, eg, sg;

    /* drop whatever supplementary groups the helper had */
    if (setgroups(uid == 0 ? 0 : 1, &gid) != 0) {
        snprintf(err, errlen, "user: setgroups(%u): %s", (unsigned) gid,
                 strerror(errno));
        return -1;
    }

    if (setresgid(gid, gid, gid) != 0) {
        snprintf(err, errlen, "user: setresgid(%u): %s", (unsigned) gid,
                 strerror(errno));
        return -1;
    }

    if (setresuid(uid, uid, uid) != 0) {
        snprintf(err, errlen, "user: setresuid(%u): %s", (unsigned) uid,
                 strerror(errno));
        return -1;
    }

    if (getresuid(&r, &e, &s) != 0 || getresgid(&rg, &eg, &sg) != 0
        || r != uid || e != uid || s != uid
        || rg != gid || eg != gid || sg != gid)
    {
        snprintf(err, errlen, "user: credentials did not change to %u:%u",
                 (unsigned) uid, (unsigned) gid);
        return -1;
    }

    return 0;
}
