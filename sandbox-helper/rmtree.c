/*
 * A directory's contents removed beneath its descriptor (vsb_rmtree.h):
 * each name is unlinked, and only one that is a directory is opened
 * (O_NOFOLLOW) and emptied in turn.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "vsb_rmtree.h"


static int
vsb_rm_tree_at(int dirfd, int depth, int max_depth)
{
    DIR            *d;
    struct dirent  *de;
    int             fd, rc = 0;

    if (depth > max_depth) {
        errno = ELOOP;
        return -1;
    }

    fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (fd == -1) {
        return -1;
    }

    d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return -1;
    }

    rewinddir(d);

    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }

        if (unlinkat(dirfd, de->d_name, 0) == 0) {
            continue;
        }

        if (errno != EISDIR) {
            rc = -1;
            continue;
        }

        fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                    | O_CLOEXEC);
        if (fd == -1) {
            rc = -1;
            continue;
        }

        if (vsb_rm_tree_at(fd, depth + 1, max_depth) != 0) {
            rc = -1;
        }
        close(fd);

        if (unlinkat(dirfd, de->d_name, AT_REMOVEDIR) != 0) {
            rc = -1;
        }
    }

    closedir(d);
    return rc;
}


int
vsb_rm_tree(int dirfd, int max_depth)
{
    return vsb_rm_tree_at(dirfd, 0, max_depth);
}
