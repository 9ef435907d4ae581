/*
 * cgroup file and tree helpers shared by the facade (cgroup.c) and the
 * two backends (cgroup1.c, cgroup2.c): paths, control-file reads and
 * writes, walks, kills by cgroup.procs, the helper's own cgroup.  They
 * call nothing above them, so the backends depend on this file and the
 * facade on the backends, never in a circle.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "vsb_cgroup_fs.h"
#include "vsb_fdio.h"
#include "vsb_log.h"

vsb_cg_ctx_t  vsb_cg;


int
vsb_cg_path(char *buf, size_t len, const vsb_cg_hier_t *h, const char *rel,
    const char *file)
{
    int  n;

    n = snprintf(buf, len, "%s%s%s%s%s", h->base,
                 rel ? "/" : "", rel ? rel : "",
                 file ? "/" : "", file ? file : "");
    if (n < 0 || (size_t) n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }

    return 0;
}


/* path = dir/file; ENAMETOOLONG when it does not fit PATH_MAX */
static int
vsb_cg_file(char path[PATH_MAX], const char *dir, const char *file)
{
    int  n;

    n = snprintf(path, PATH_MAX, "%s/%s", dir, file);
    if (n < 0 || n >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }

    return 0;
}


int
vsb_cg_write(const char *dir, const char *file, const char *val, char *err,
    size_t errlen)
{
    int      fd;
    char     path[PATH_MAX];
    size_t   len;
    ssize_t  w;

    if (vsb_cg_file(path, dir, file) == -1) {
        snprintf(err, errlen, "cgroup: path too long: %s/%s", dir, file);
        return -1;
    }

    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "cgroup: open %s: %s", path, strerror(errno));
        return -1;
    }

    len = strlen(val);
    w = write(fd, val, len);
    if (w != (ssize_t) len) {
        int  e = (w == -1) ? errno : EIO;

        snprintf(err, errlen, "cgroup: write \"%s\" to %s: %s", val, path,
                 strerror(e));
        close(fd);
        errno = e;
        return -1;
    }

    if (close(fd) == -1) {
        snprintf(err, errlen, "cgroup: close %s: %s", path, strerror(errno));
        return -1;
    }

    return 0;
}


int
vsb_cg_read(const char *dir, const char *file, char *buf, size_t len)
{
    int      fd, e;
    char     path[PATH_MAX];
    ssize_t  got;

    if (vsb_cg_file(path, dir, file) == -1) {
        return -1;
    }

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return -1;
    }

    got = vsb_read_full(fd, buf, len - 1);
    if (got == -1) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }

    buf[got] = '\0';
    close(fd);

    return 0;
}


int
vsb_cg_read_u64(const char *dir, const char *file, uint64_t *v)
{
    char  buf[64], *end;

    if (vsb_cg_read(dir, file, buf, sizeof(buf)) == -1) {
        return -1;
    }

    if (strncmp(buf, "max", 3) == 0) {
        *v = UINT64_MAX;
        return 0;
    }

    errno = 0;
    *v = strtoull(buf, &end, 10);
    if (errno != 0 || end == buf) {
        errno = EINVAL;
        return -1;
    }

    return 0;
}


/* "key value" lines (cpu.stat, memory.events, memory.oom_control) */
int
vsb_cg_read_key(const char *dir, const char *file, const char *key,
    uint64_t *v)
{
    char    buf[4096], *p, *line, *end;
    size_t  klen;

    if (vsb_cg_read(dir, file, buf, sizeof(buf)) == -1) {
        return -1;
    }

    klen = strlen(key);

    for (line = buf; line != NULL && *line != '\0'; line = p) {
        p = strchr(line, '\n');
        if (p != NULL) {
            *p++ = '\0';
        }

        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            errno = 0;
            *v = strtoull(line + klen + 1, &end, 10);
            if (errno != 0 || end == line + klen + 1) {
                errno = EINVAL;
                return -1;
            }
            return 0;
        }
    }

    errno = ENOENT;
    return -1;
}


void
vsb_cg_sleep_ms(unsigned ms)
{
    struct timespec  ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long) (ms % 1000) * 1000000L;

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        /* rest of the interval */
    }
}


/* Pre-order (pre) and post-order (post) visit of dir and every cgroup
 * below it; stops at the first callback returning non-zero. */
int
vsb_cg_walk(const char *dir, int depth, vsb_cg_visit_pt pre,
    vsb_cg_visit_pt post, void *data)
{
    int             rc, n;
    DIR            *d;
    char            sub[PATH_MAX];
    struct dirent  *de;

    if (pre != NULL && (rc = pre(dir, data)) != 0) {
        return rc;
    }

    if (depth > VSB_CG_MAX_DEPTH) {
        vsb_log(VSB_LOG_WARN, "cgroup: %s: deeper than %d levels, not "
                "walked further", dir, VSB_CG_MAX_DEPTH);
        errno = ELOOP;
        return -1;
    }

    d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT) {
            return 0;           /* removed meanwhile */
        }
        return -1;
    }

    rc = 0;

    for ( ;; ) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                rc = -1;
            }
            break;
        }

        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0
            || strcmp(de->d_name, "..") == 0)
        {
            continue;
        }

        n = snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
        if (n < 0 || (size_t) n >= sizeof(sub)) {
            errno = ENAMETOOLONG;
            rc = -1;
            break;
        }

        rc = vsb_cg_walk(sub, depth + 1, pre, post, data);
        if (rc != 0) {
            break;
        }
    }

    if (closedir(d) == -1 && rc == 0) {
        rc = -1;
    }

    if (rc == 0 && post != NULL) {
        rc = post(dir, data);
    }

    return rc;
}


static int
vsb_cg_kill_visit(const char *dir, void *data)
{
    int   pid, *count = data;
    char  path[PATH_MAX];
    FILE *f;

    if (vsb_cg_file(path, dir, "cgroup.procs") == -1) {
        return -1;
    }

    f = fopen(path, "re");
    if (f == NULL) {
        return (errno == ENOENT) ? 0 : -1;
    }

    while (fscanf(f, "%d", &pid) == 1) {
        if (pid <= 1) {
            continue;           /* never: a pid from another pid ns reads 0 */
        }
        if (kill(pid, SIGKILL) == -1) {
            if (errno != ESRCH) {
                vsb_log_errno(VSB_LOG_WARN, "cgroup: kill %d in %s", pid, dir);
            }
            continue;
        }
        (*count)++;
    }

    fclose(f);
    return 0;
}


int
vsb_cg_kill_procs(const char *dir)
{
    int  count = 0;

    if (vsb_cg_walk(dir, 0, vsb_cg_kill_visit, NULL, &count) != 0) {
        return -1;
    }

    return count;
}


static int
vsb_cg_procs_visit(const char *dir, void *data)
{
    char  buf[64];

    if (vsb_cg_read(dir, "cgroup.procs", buf, sizeof(buf)) == -1) {
        return (errno == ENOENT) ? 0 : -1;
    }

    return (buf[0] != '\0') ? 1 : 0;
}


int
vsb_cg_has_procs(const char *dir)
{
    return vsb_cg_walk(dir, 0, vsb_cg_procs_visit, NULL, NULL);
}


int
vsb_cg_walk_pre(const char *dir, int (*visit)(const char *dir, void *data),
    void *data)
{
    return vsb_cg_walk(dir, 0, visit, NULL, data);
}


/*
 * The helper's own cgroup in a hierarchy, as a directory: the path from
 * /proc/self/cgroup (controller "" means the v2 line "0::") made relative
 * to the mount's root (they differ inside a container).
 */
int
vsb_cg_own_cgroup(const char *controller, const char *mount_root,
    const char *mount, char *out, size_t len, char *err, size_t errlen)
{
    int      found, n;
    char    *line, *ctrls, *path, *tok, *save;
    FILE    *f;
    size_t   cap, rlen;
    ssize_t  r;

    f = fopen("/proc/self/cgroup", "re");
    if (f == NULL) {
        snprintf(err, errlen, "cgroup: open /proc/self/cgroup: %s",
                 strerror(errno));
        return -1;
    }

    line = NULL;
    cap = 0;
    found = 0;
    path = NULL;

    while ((r = getline(&line, &cap, f)) != -1) {
        if (r > 0 && line[r - 1] == '\n') {
            line[r - 1] = '\0';
        }

        ctrls = strchr(line, ':');
        if (ctrls == NULL) {
            continue;
        }
        ctrls++;
        path = strchr(ctrls, ':');
        if (path == NULL) {
            continue;
        }
        *path++ = '\0';

        if (controller[0] == '\0') {
            if (ctrls[0] == '\0' && strncmp(line, "0:", 2) == 0) {
                found = 1;
                break;
            }
            continue;
        }

        for (tok = strtok_r(ctrls, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save))
        {
            if (strcmp(tok, controller) == 0) {
                found = 1;
                break;
            }
        }
        if (found) {
            break;
        }
    }

    fclose(f);

    if (!found) {
        free(line);
        snprintf(err, errlen, "cgroup: no \"%s\" line in /proc/self/cgroup",
                 controller[0] ? controller : "0::");
        return -1;
    }

    rlen = strlen(mount_root);
    if (strcmp(mount_root, "/") != 0) {
        if (strncmp(path, mount_root, rlen) == 0
            && (path[rlen] == '/' || path[rlen] == '\0'))
        {
            path += rlen;
        } else {
            vsb_log(VSB_LOG_WARN, "cgroup: own cgroup %s is outside the root "
                    "%s of %s, using the mount's root", path, mount_root,
                    mount);
            path = "";
        }
    }

    /* " (deleted)" or similar would not be a directory: checked by mkdir */
    while (*path == '/') {
        path++;
    }

    n = snprintf(out, len, "%s%s%s", mount, path[0] ? "/" : "", path);
    free(line);

    if (n < 0 || (size_t) n >= len) {
        snprintf(err, errlen, "cgroup: own cgroup path too long in %s", mount);
        return -1;
    }

    return 0;
}


int
vsb_cg_mkdir_base(vsb_cg_hier_t *h, char *err, size_t errlen)
{
    int          n;
    struct stat  st;

    n = snprintf(h->base, sizeof(h->base), "%s/%s", h->own, vsb_cg.name);
    if (n < 0 || (size_t) n >= sizeof(h->base)) {
        snprintf(err, errlen, "cgroup: parent cgroup path too long in %s",
                 h->own);
        return -1;
    }

    if (mkdir(h->base, 0755) == -1 && errno != EEXIST) {
        snprintf(err, errlen, "cgroup: mkdir %s: %s", h->base,
                 strerror(errno));
        return -1;
    }

    if (stat(h->base, &st) == -1 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cgroup: %s is not a directory", h->base);
        return -1;
    }

    return 0;
}
