/*
 * Change sets (vsb_snap_changes.h): two views resolved path by path, and
 * the three forms of the result (a JSON list, a unified diff, a tar).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_hex.h"
#include "vsb_snap_changes.h"
#include "vsb_worker.h"

#define VSB_NOBODY  65534

typedef struct {
    vsb_mf_t   *base;       /* NULL: none, or read from its tree */
    int         basefd;
    unsigned    base_tree:1;    /* the base is read from its tree at
                                   basefd, entry by entry, not from its
                                   manifest (a fork since its create) */
    vsb_mf_t   *layer;
    int         layerfd;    /* -1: its content is not kept (baseline) */
    int         imagefd;    /* -1: nothing beneath */
} vsb_view_t;

/* A path resolved in a view. */
typedef struct {
    int            present;
    vsb_mf_ent_t   e;        /* borrowed strings, or img's */
    int            fd;       /* where its content is: a root fd, -1 */
    char           target[PATH_MAX + 1];
} vsb_res_t;

typedef struct {
    char     **p;
    size_t     n, cap;
    size_t     owned_from;  /* p[i] for i in added are malloc'd: see own */
    char     **own;
    size_t     nown, capown;
} vsb_paths_t;

typedef struct {
    const vsb_changes_req_t  *q;
    vsb_error_t               e;
    unsigned                  added, modified, deleted, mode_changed;
    uint64_t                  out;         /* payload bytes so far */
    int                       pfd;
    unsigned char            *buf;
} vsb_cx_t;


/* ---- paths ---- */

static int
vsb_paths_add(vsb_paths_t *ps, char *p)
{
    char  **n;

    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 1024;
        n = realloc(ps->p, ps->cap * sizeof(*n));
        if (n == NULL) {
            return -1;
        }
        ps->p = n;
    }

    ps->p[ps->n++] = p;
    return 0;
}


static int
vsb_paths_own(vsb_paths_t *ps, const char *p)
{
    char   *d, **n;

    d = strdup(p);
    if (d == NULL) {
        return -1;
    }

    if (ps->nown == ps->capown) {
        ps->capown = ps->capown ? ps->capown * 2 : 64;
        n = realloc(ps->own, ps->capown * sizeof(*n));
        if (n == NULL) {
            free(d);
            return -1;
        }
        ps->own = n;
    }

    ps->own[ps->nown++] = d;
    return vsb_paths_add(ps, d);
}


static int
vsb_paths_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}


static void
vsb_paths_free(vsb_paths_t *ps)
{
    size_t  i;

    for (i = 0; i < ps->nown; i++) {
        free(ps->own[i]);
    }
    free(ps->own);
    free(ps->p);
}


static int
vsb_paths_of(vsb_paths_t *ps, const vsb_mf_t *m)
{
    size_t  i;

    for (i = 0; m != NULL && i < m->n; i++) {
        if (vsb_paths_add(ps, m->e[i].path) != 0) {
            return -1;
        }
    }

    return 0;
}


/* m's entries strictly below dir. */
static int
vsb_paths_below(vsb_paths_t *ps, const vsb_mf_t *m, const char *dir)
{
    char    key[VSB_MAX_PATH + 2];
    size_t  i, kl;

    if (m == NULL) {
        return 0;
    }

    kl = (size_t) snprintf(key, sizeof(key), "%s/", dir);
    if (kl >= sizeof(key)) {
        return 0;
    }

    for (i = vsb_mf_lower(m, key); i < m->n; i++) {
        if (strncmp(m->e[i].path, key, kl) != 0) {
            break;
        }
        if (vsb_paths_add(ps, m->e[i].path) != 0) {
            return -1;
        }
    }

    return 0;
}


/* The image's entries below dir (walked without following links). */
static int
vsb_paths_image(vsb_cx_t *cx, vsb_paths_t *ps, int imagefd, const char *dir)
{
    vsb_mf_t         m;
    vsb_mf_bounds_t  b;
    vsb_error_t      e;
    int              fd, rc = 0;
    size_t           i;
    char             full[VSB_MAX_PATH * 2 + 2];

    fd = vsb_mf_open(imagefd, dir, O_RDONLY | O_DIRECTORY);
    if (fd == -1) {
        return 0;               /* not a directory there: nothing below */
    }

    memset(&m, 0, sizeof(m));
    memset(&e, 0, sizeof(e));
    b = cx->q->b;
    b.max_files = cx->q->b.max_files > ps->n ? cx->q->b.max_files - ps->n : 0;
    b.host_uid = 0;
    b.names_only = 1;

    /* the paths only: each is resolved (and hashed) on its own later */
    if (vsb_mf_walk(fd, -1, &b, &m, &e) != 0) {
        cx->e = e;
        close(fd);
        vsb_mf_free(&m);
        return -1;
    }
    close(fd);

    for (i = 0; i < m.n; i++) {
        snprintf(full, sizeof(full), "%s/%s", dir, m.e[i].path);
        if (vsb_paths_own(ps, full) != 0) {
            rc = -1;
            break;
        }
    }

    vsb_mf_free(&m);
    return rc;
}


/* ---- resolution ---- */

/* 1: found in m (e set, whiteout: absent), 2: hidden (absent), 0: look
 * beneath */
static int
vsb_res_layer(const vsb_mf_t *m, const char *path, const vsb_mf_ent_t **e)
{
    char                 buf[VSB_MAX_PATH + 1];
    char                *slash;
    const vsb_mf_ent_t  *a;

    *e = NULL;
    if (m == NULL) {
        return 0;
    }

    a = vsb_mf_find(m, path);
    if (a != NULL) {
        if (a->type == VSB_MF_WHITEOUT) {
            return 2;
        }
        *e = a;
        return 1;
    }

    snprintf(buf, sizeof(buf), "%s", path);
    while ((slash = strrchr(buf, '/')) != NULL) {
        *slash = '\0';
        a = vsb_mf_find(m, buf);
        if (a != NULL && (a->type != VSB_MF_DIR || a->opaque)) {
            return 2;
        }
    }

    return 0;
}


static int
vsb_hash_fd(int fd, unsigned char *buf, uint64_t max, char out[65],
    uint64_t *size)
{
    EVP_MD_CTX     *md;
    unsigned char   h[32];
    unsigned int    hl;
    ssize_t         n;
    uint64_t        total = 0;

    md = EVP_MD_CTX_new();
    if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return -1;
    }

    for ( ;; ) {
        n = read(fd, buf, 65536);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        total += (uint64_t) n;
        if (total > max || EVP_DigestUpdate(md, buf, (size_t) n) != 1) {
            n = -1;
            errno = EFBIG;
            break;
        }
    }

    if (n == -1 || EVP_DigestFinal_ex(md, h, &hl) != 1
        || vsb_sha256_md_hex(h, hl, out) != 0)
    {
        EVP_MD_CTX_free(md);
        return -1;
    }

    EVP_MD_CTX_free(md);
    *size = total;
    return 0;
}


static int
vsb_res_image(vsb_cx_t *cx, int imagefd, const char *path, vsb_res_t *r)
{
    int          fd;
    struct stat  st;
    ssize_t      n;

    fd = vsb_mf_open(imagefd, path, O_PATH);
    if (fd == -1) {
        return 0;               /* not in the image */
    }

    if (fstat(fd, &st) != 0) {
        close(fd);
        return 0;
    }

    r->present = 1;
    r->fd = imagefd;
    r->e.path = (char *) path;
    r->e.uid = st.st_uid < VSB_UID_RANGE ? st.st_uid : VSB_NOBODY;
    r->e.gid = st.st_gid < VSB_UID_RANGE ? st.st_gid : VSB_NOBODY;
    r->e.mode = (uint16_t) (st.st_mode & 07777);

    if (S_ISDIR(st.st_mode)) {
        r->e.type = VSB_MF_DIR;
    } else if (S_ISLNK(st.st_mode)) {
        r->e.type = VSB_MF_LINK;
        n = readlinkat(fd, "", r->target, sizeof(r->target) - 1);
        r->target[n < 0 ? 0 : n] = '\0';
        r->e.target = r->target;
        r->e.size = n < 0 ? 0 : (uint64_t) n;
    } else if (S_ISFIFO(st.st_mode)) {
        r->e.type = VSB_MF_FIFO;
    } else if (S_ISREG(st.st_mode)) {
        int  rfd;

        r->e.type = VSB_MF_FILE;
        rfd = vsb_mf_open(imagefd, path, O_RDONLY);
        if (rfd == -1
            || vsb_hash_fd(rfd, cx->buf, cx->q->b.max_bytes, r->e.sha256,
                           &r->e.size) != 0)
        {
            if (rfd != -1) {
                close(rfd);
            }
            close(fd);
            return vsb_error_set(&cx->e, VSB_E_IO, "path", "read \"%.200s\" "
                                 "of the image: %s", path, strerror(errno));
        }
        close(rfd);
    } else {
        r->e.type = VSB_MF_FIFO;    /* a device of the image: named only */
    }

    close(fd);
    return 0;
}


/*
 * path in a snapshot's tree as overlayfs sees that layer: 1 (r filled)
 * when there; 2 when hidden (a whiteout there or above, a non-directory
 * above, or an opaque directory above it that does not hold it); 0 when
 * not there (look beneath); -1 with cx->e.
 */
static int
vsb_res_tree(vsb_cx_t *cx, int treefd, const char *path, vsb_res_t *r)
{
    char         buf[VSB_MAX_PATH + 1], opq[2];
    char        *slash;
    struct stat  st;
    int          fd, opaque = 0;

    snprintf(buf, sizeof(buf), "%s", path);

    for (slash = strchr(buf, '/'); ; slash = strchr(slash + 1, '/')) {
        if (slash != NULL) {
            *slash = '\0';
        }

        fd = vsb_mf_open(treefd, buf, O_PATH);
        if (fd == -1) {
            if (errno == ENOENT) {
                return opaque ? 2 : 0;
            }
            if (errno == ELOOP || errno == ENOTDIR) {
                return 2;           /* a link or a file above it */
            }
            return vsb_error_set(&cx->e, VSB_E_IO, "path", "open \"%.200s\" "
                                 "in the snapshot: %s", buf, strerror(errno));
        }
        if (fstat(fd, &st) != 0) {
            close(fd);
            return vsb_error_set(&cx->e, VSB_E_IO, "path", "stat \"%.200s\" "
                                 "in the snapshot: %s", buf, strerror(errno));
        }
        close(fd);

        if (S_ISCHR(st.st_mode) && st.st_rdev == 0) {
            return 2;               /* a whiteout */
        }

        if (slash == NULL) {
            break;
        }

        if (!S_ISDIR(st.st_mode)) {
            return 2;
        }

        fd = vsb_mf_open(treefd, buf, O_RDONLY | O_DIRECTORY);
        if (fd != -1) {
            if (fgetxattr(fd, "trusted.overlay.opaque", opq, sizeof(opq)) == 1
                && opq[0] == 'y')
            {
                opaque = 1;
            }
            close(fd);
        }

        *slash = '/';
    }

    if (vsb_res_image(cx, treefd, path, r) != 0) {
        return -1;
    }

    return r->present ? 1 : 0;
}


static int
vsb_resolve(vsb_cx_t *cx, const vsb_view_t *v, const char *path,
    vsb_res_t *r)
{
    const vsb_mf_ent_t  *e;
    int                  k;

    memset(r, 0, sizeof(*r));
    r->fd = -1;

    k = vsb_res_layer(v->layer, path, &e);
    if (k == 1) {
        r->present = 1;
        r->e = *e;
        r->fd = v->layerfd;
        return 0;
    }
    if (k == 2) {
        return 0;
    }

    if (v->base_tree) {
        k = vsb_res_tree(cx, v->basefd, path, r);
        if (k != 0 || r->present || v->imagefd == -1) {
            return k == -1 ? -1 : 0;
        }
        return vsb_res_image(cx, v->imagefd, path, r);
    }

    k = vsb_res_layer(v->base, path, &e);
    if (k == 1) {
        r->present = 1;
        r->e = *e;
        r->fd = v->basefd;
        return 0;
    }
    if (k == 2 || v->imagefd == -1) {
        return 0;
    }

    return vsb_res_image(cx, v->imagefd, path, r);
}


/* ---- output ---- */

static int
vsb_cx_out(vsb_cx_t *cx, const void *data, size_t len)
{
    if (cx->out + len > cx->q->max_out) {
        vsb_error_set(&cx->e, VSB_E_FILE_TOO_LARGE, NULL, "the changes come "
                      "to more than %llu bytes",
                      (unsigned long long) cx->q->max_out);
        cx->e.limit = VSB_LIMIT_CHANGES_BYTES;
        return -1;
    }

    if (vsb_write_full(cx->pfd, data, len) != 0) {
        return vsb_error_set(&cx->e, VSB_E_IO, NULL, "write the result: %s",
                             strerror(errno));
    }

    cx->out += len;
    return 0;
}


const char *vsb_mf_type_str(char t);

static void
vsb_cx_fields(json_t *o, const vsb_mf_ent_t *e, const char *pre)
{
    char  k[32];

    snprintf(k, sizeof(k), "%stype", pre);
    json_object_set_new(o, k, json_string(vsb_mf_type_str(e->type)));
    snprintf(k, sizeof(k), "%smode", pre);
    json_object_set_new(o, k, json_integer(e->mode));
    snprintf(k, sizeof(k), "%ssize", pre);
    json_object_set_new(o, k, json_integer((json_int_t) e->size));
    if (e->type == VSB_MF_FILE) {
        snprintf(k, sizeof(k), "%ssha256", pre);
        json_object_set_new(o, k, json_string(e->sha256));
    }
    if (e->type == VSB_MF_LINK && e->target != NULL) {
        json_t  *t = json_string(e->target);

        snprintf(k, sizeof(k), "%starget", pre);
        json_object_set_new(o, k, t ? t : json_string("?"));
    }
}


/* ---- tar ---- */

/* v in len - 1 octal digits and a NUL (v fits: sizes are bounded) */
static void
vsb_tar_octal(char *f, size_t len, uint64_t v)
{
    size_t  i;

    f[len - 1] = '\0';
    for (i = len - 1; i > 0; i--) {
        f[i - 1] = (char) ('0' + (v & 7));
        v >>= 3;
    }
}


static int
vsb_tar_header(vsb_cx_t *cx, const char *name, char type, unsigned mode,
    uint32_t uid, uint32_t gid, uint64_t size, const char *link)
{
    unsigned char  h[512];
    unsigned       sum = 0, i;

    memset(h, 0, sizeof(h));
    snprintf((char *) h, 100, "%s", name);
    vsb_tar_octal((char *) h + 100, 8, mode);
    vsb_tar_octal((char *) h + 108, 8, uid);
    vsb_tar_octal((char *) h + 116, 8, gid);
    vsb_tar_octal((char *) h + 124, 12, size);
    vsb_tar_octal((char *) h + 136, 12, 0);
    memset(h + 148, ' ', 8);
    h[156] = (unsigned char) type;
    if (link != NULL) {
        snprintf((char *) h + 157, 100, "%s", link);
    }
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);

    for (i = 0; i < 512; i++) {
        sum += h[i];
    }
    snprintf((char *) h + 148, 8, "%06o", sum);
    h[155] = ' ';

    return vsb_cx_out(cx, h, sizeof(h));
}


static int
vsb_tar_pad(vsb_cx_t *cx, uint64_t size)
{
    static const unsigned char  zero[512];
    size_t                      pad = (size_t) ((512 - size % 512) % 512);

    return pad ? vsb_cx_out(cx, zero, pad) : 0;
}


/* A pax record "len key=value\n". */
static size_t
vsb_pax_record(char *out, size_t room, const char *key, const char *val)
{
    size_t  body = strlen(key) + strlen(val) + 3, len, digits;

    for (digits = 1, len = body + 1; ; digits++) {
        len = body + digits;
        if (snprintf(NULL, 0, "%zu", len) == (int) digits) {
            break;
        }
    }

    if (len >= room) {
        return 0;
    }

    snprintf(out, room, "%zu %s=%s\n", len, key, val);
    return len;
}


static int
vsb_tar_entry(vsb_cx_t *cx, const vsb_res_t *r)
{
    char      pax[2 * VSB_MAX_PATH + 128];
    size_t    pl = 0;
    char      type;
    uint64_t  size = 0;
    int       fd = -1;
    ssize_t   n;
    uint64_t  left;

    if (strlen(r->e.path) >= 100) {
        pl += vsb_pax_record(pax + pl, sizeof(pax) - pl, "path", r->e.path);
    }
    if (r->e.type == VSB_MF_LINK && r->e.target != NULL
        && strlen(r->e.target) >= 100)
    {
        pl += vsb_pax_record(pax + pl, sizeof(pax) - pl, "linkpath",
                             r->e.target);
    }

    if (pl > 0) {
        if (vsb_tar_header(cx, "././@PaxHeader", 'x', 0644, 0, 0, pl, NULL)
            != 0 || vsb_cx_out(cx, pax, pl) != 0 || vsb_tar_pad(cx, pl) != 0)
        {
            return -1;
        }
    }

    switch (r->e.type) {
    case VSB_MF_DIR:
        type = '5';
        break;
    case VSB_MF_LINK:
        type = '2';
        break;
    case VSB_MF_FIFO:
        type = '6';
        break;
    default:
        type = '0';
        if (r->fd == -1) {
            return 0;
        }
        fd = vsb_mf_open(r->fd, r->e.path, O_RDONLY | O_NONBLOCK);
        if (fd == -1) {
            return vsb_error_set(&cx->e, VSB_E_IO, "path", "open \"%.200s\": "
                                 "%s", r->e.path, strerror(errno));
        }
        size = r->e.size;
    }

    if (vsb_tar_header(cx, r->e.path, type, r->e.mode, r->e.uid, r->e.gid,
                       size, r->e.type == VSB_MF_LINK ? r->e.target : NULL)
        != 0)
    {
        goto failed;
    }

    /* exactly the size hashed: a file that changed since is cut or padded
     * with zeros (the member's size is what the list said) */
    for (left = size; left > 0; left -= (uint64_t) n) {
        n = read(fd, cx->buf, left < 65536 ? (size_t) left : 65536);
        if (n == -1 && errno == EINTR) {
            n = 0;
            continue;
        }
        if (n <= 0) {
            n = (ssize_t) (left < 65536 ? left : 65536);
            memset(cx->buf, 0, (size_t) n);
        }
        if (vsb_cx_out(cx, cx->buf, (size_t) n) != 0) {
            goto failed;
        }
    }

    if (fd != -1) {
        close(fd);
    }
    return vsb_tar_pad(cx, size);

failed:

    if (fd != -1) {
        close(fd);
    }
    return -1;
}


/* ---- diff ---- */

/* The content of a resolved file into a memory file, at most
 * VSB_DIFF_MAX_FILE; -2: binary, -3: too large, -4: not kept. */
static int
vsb_diff_side(vsb_cx_t *cx, const vsb_res_t *r)
{
    int       fd, mfd;
    ssize_t   n;
    uint64_t  total = 0;

    mfd = memfd_create("vsb-diff", 0);
    if (mfd == -1) {
        return -1;
    }

    if (!r->present) {
        return mfd;             /* empty: /dev/null's part */
    }

    if (r->fd == -1) {
        close(mfd);
        return -4;
    }

    if (r->e.size > VSB_DIFF_MAX_FILE) {
        close(mfd);
        return -3;
    }

    fd = vsb_mf_open(r->fd, r->e.path, O_RDONLY | O_NONBLOCK);
    if (fd == -1) {
        close(mfd);
        return -1;
    }

    for ( ;; ) {
        n = read(fd, cx->buf, 65536);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        total += (uint64_t) n;
        if (total > VSB_DIFF_MAX_FILE) {
            close(fd);
            close(mfd);
            return -3;
        }
        if (memchr(cx->buf, '\0', (size_t) n) != NULL) {
            close(fd);
            close(mfd);
            return -2;
        }
        if (vsb_write_full(mfd, cx->buf, (size_t) n) != 0) {
            close(fd);
            close(mfd);
            return -1;
        }
    }

    close(fd);
    return mfd;
}


/* diff -u of two memory files, run as nobody with nothing else open;
 * its output appended to the payload. */
static int
vsb_diff_run(vsb_cx_t *cx, int a, int b, const char *la, const char *lb)
{
    int     p[2];
    pid_t   pid;
    ssize_t n;
    int     st, rc = 0;

    if (pipe2(p, O_CLOEXEC) != 0) {
        return vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "pipe: %s",
                             strerror(errno));
    }

    pid = fork();
    if (pid == -1) {
        close(p[0]);
        close(p[1]);
        return vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "fork: %s",
                             strerror(errno));
    }

    if (pid == 0) {
        int  nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

        if (nul == -1 || dup2(nul, 0) == -1 || dup2(p[1], 1) == -1
            || dup2(p[1], 2) == -1 || dup2(a, 3) == -1 || dup2(b, 4) == -1
            || close_range(5, ~0U, 0) != 0
            || setgroups(0, NULL) != 0 || setresgid(VSB_NOBODY, VSB_NOBODY,
                                                    VSB_NOBODY) != 0
            || setresuid(VSB_NOBODY, VSB_NOBODY, VSB_NOBODY) != 0)
        {
            _exit(126);
        }
        execl("/usr/bin/diff", "diff", "-u", "--label", la, "--label", lb,
              "/dev/fd/3", "/dev/fd/4", (char *) NULL);
        _exit(127);
    }

    close(p[1]);

    for ( ;; ) {
        n = read(p[0], cx->buf, 65536);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        if (rc == 0 && vsb_cx_out(cx, cx->buf, (size_t) n) != 0) {
            rc = -1;
            (void) kill(pid, SIGKILL);
        }
    }

    close(p[0]);
    while (waitpid(pid, &st, 0) == -1 && errno == EINTR) {
        /* void */
    }

    if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) > 1)) {
        return vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "diff ended with "
                             "status %d", WIFEXITED(st) ? WEXITSTATUS(st)
                             : 128 + WTERMSIG(st));
    }

    return rc;
}


static int
vsb_diff_entry(vsb_cx_t *cx, const char *path, const vsb_res_t *old,
    const vsb_res_t *now)
{
    char  la[VSB_MAX_PATH + 8], lb[VSB_MAX_PATH + 8], line[2 * VSB_MAX_PATH
          + 128];
    int   a, b, rc;

    if ((old->present && old->e.type != VSB_MF_FILE)
        || (now->present && now->e.type != VSB_MF_FILE))
    {
        return 0;               /* directories, links: in the list only */
    }

    snprintf(la, sizeof(la), old->present ? "a/%s" : "/dev/null", path);
    snprintf(lb, sizeof(lb), now->present ? "b/%s" : "/dev/null", path);

    /* a name with a newline could forge the diff's own lines: named with
     * '?' for its control characters, not diffed (the list and the tar
     * have it as it is) */
    if (strcspn(path, "\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r"
                "\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a"
                "\x1b\x1c\x1d\x1e\x1f\x7f") != strlen(path))
    {
        char  *c;

        for (c = la; *c != '\0'; c++) {
            if ((unsigned char) *c < 0x20 || *c == 0x7f) {
                *c = '?';
            }
        }
        for (c = lb; *c != '\0'; c++) {
            if ((unsigned char) *c < 0x20 || *c == 0x7f) {
                *c = '?';
            }
        }
        snprintf(line, sizeof(line), "Files %s and %s differ (a name with "
                 "control characters: not diffed)\n", la, lb);
        return vsb_cx_out(cx, line, strlen(line));
    }

    a = vsb_diff_side(cx, old);
    b = a < 0 && a != -1 ? -1 : vsb_diff_side(cx, now);

    if (a == -1 || (b == -1 && a >= 0)) {
        if (a >= 0) {
            close(a);
        }
        return vsb_error_set(&cx->e, VSB_E_IO, "path", "read \"%.200s\" for "
                             "the diff: %s", path, strerror(errno));
    }

    if (a < 0 || b < 0) {
        int  why = a < 0 ? a : b;

        if (a >= 0) {
            close(a);
        }
        if (b >= 0) {
            close(b);
        }
        snprintf(line, sizeof(line), why == -2 ? "Binary files %s and %s "
                 "differ\n" : why == -3 ? "Files %s and %s differ (larger "
                 "than 1 MiB: not diffed)\n" : "Files %s and %s differ (the "
                 "content at create is not kept: not diffed)\n", la, lb);
        return vsb_cx_out(cx, line, strlen(line));
    }

    rc = vsb_diff_run(cx, a, b, la, lb);
    close(a);
    close(b);
    return rc;
}


/* ---- compare ---- */

static int
vsb_same_content(const vsb_mf_ent_t *a, const vsb_mf_ent_t *b)
{
    if (a->type != b->type) {
        return 0;
    }

    switch (a->type) {
    case VSB_MF_FILE:
        return a->size == b->size && strcmp(a->sha256, b->sha256) == 0;
    case VSB_MF_LINK:
        return a->target != NULL && b->target != NULL
               && strcmp(a->target, b->target) == 0;
    default:
        return 1;
    }
}


static int
vsb_compare(vsb_cx_t *cx, const vsb_view_t *ref, const vsb_view_t *cur,
    const vsb_paths_t *ps, json_t *list)
{
    size_t       i;
    vsb_res_t    old, now;
    const char  *kind;
    json_t      *o;

    for (i = 0; i < ps->n; i++) {
        if (i > 0 && strcmp(ps->p[i], ps->p[i - 1]) == 0) {
            continue;
        }

        if (vsb_resolve(cx, ref, ps->p[i], &old) != 0
            || vsb_resolve(cx, cur, ps->p[i], &now) != 0)
        {
            return -1;
        }

        if (!old.present && !now.present) {
            continue;
        }

        if (!old.present) {
            kind = "added";
            cx->added++;
        } else if (!now.present) {
            kind = "deleted";
            cx->deleted++;
        } else if (!vsb_same_content(&old.e, &now.e)) {
            kind = "modified";
            cx->modified++;
        } else if (old.e.mode != now.e.mode) {
            kind = "mode_changed";
            cx->mode_changed++;
        } else {
            continue;
        }

        if (strcmp(cx->q->format, "tar") == 0) {
            if (now.present && vsb_tar_entry(cx, &now) != 0) {
                return -1;
            }
            continue;
        }

        if (strcmp(cx->q->format, "diff") == 0) {
            if (strcmp(kind, "mode_changed") != 0
                && vsb_diff_entry(cx, ps->p[i], &old, &now) != 0)
            {
                return -1;
            }
            continue;
        }

        o = json_pack("{s:s, s:s}", "path", ps->p[i], "change", kind);
        if (o == NULL) {
            return vsb_error_set(&cx->e, VSB_E_BAD_VALUE, "path", "a path "
                                 "that is not UTF-8 changed: use format "
                                 "\"tar\"");
        }
        vsb_cx_fields(o, now.present ? &now.e : &old.e, "");
        if (old.present && now.present) {
            vsb_cx_fields(o, &old.e, "old_");
        }
        if (json_array_append_new(list, o) != 0) {
            return vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "out of memory");
        }
    }

    return 0;
}


/* Paths below every entry of m that hides what is beneath it. */
static int
vsb_paths_hidden(vsb_cx_t *cx, vsb_paths_t *ps, const vsb_mf_t *m,
    const vsb_mf_t *base, int basefd, int imagefd)
{
    size_t  i;

    for (i = 0; m != NULL && i < m->n; i++) {
        const vsb_mf_ent_t  *x = &m->e[i];

        if (x->type == VSB_MF_DIR && !x->opaque) {
            continue;
        }
        if (vsb_paths_below(ps, base, x->path) != 0) {
            return vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "out of memory");
        }
        if (basefd != -1 && vsb_paths_image(cx, ps, basefd, x->path) != 0) {
            if (cx->e.error == NULL) {
                vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "out of memory");
            }
            return -1;
        }
        if (imagefd != -1 && vsb_paths_image(cx, ps, imagefd, x->path) != 0) {
            if (cx->e.error == NULL) {
                vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "out of memory");
            }
            return -1;
        }
    }

    return 0;
}


static int
vsb_open_dir(const char *path)
{
    return path[0] == '\0' ? -1
           : open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}


static int
vsb_changes_run(vsb_cx_t *cx, vsb_mf_t *cur_layer, vsb_mf_t *base,
    vsb_mf_t *ref_layer, json_t *list)
{
    const vsb_changes_req_t  *q = cx->q;
    vsb_view_t                ref, cur;
    vsb_paths_t               ps;
    char                      why[256];
    int                       layerfd, rc = -1;

    memset(&ps, 0, sizeof(ps));
    memset(&ref, 0, sizeof(ref));
    memset(&cur, 0, sizeof(cur));

    cur.layerfd = cur.basefd = cur.imagefd = -1;
    ref.layerfd = ref.basefd = ref.imagefd = -1;

    layerfd = vsb_open_dir(q->layer);
    if (layerfd == -1) {
        return vsb_error_set(&cx->e, VSB_E_IO, NULL, "open the layer: %s",
                             strerror(errno));
    }

    if (vsb_mf_walk(layerfd, -1, &q->b, cur_layer, &cx->e) != 0) {
        close(layerfd);
        return -1;
    }
    vsb_mf_sort(cur_layer);

    cur.layer = cur_layer;
    cur.layerfd = layerfd;
    cur.imagefd = vsb_open_dir(q->image);

    if (q->base_mf[0] != '\0' && q->baseline[0] != '\0') {
        /* a fork since its create: both sides have its snapshot beneath,
         * read where a layer names something, never whole */
        cur.base_tree = 1;
        cur.basefd = vsb_open_dir(q->base_tree);
        if (cur.basefd == -1) {
            vsb_error_set(&cx->e, VSB_E_IO, NULL, "the snapshot it was forked "
                          "from: %s", strerror(errno));
            goto done;
        }

    } else if (q->base_mf[0] != '\0') {
        if (vsb_mf_load_file(AT_FDCWD, q->base_mf, 256u << 20, base, why,
                             sizeof(why)) != 0)
        {
            vsb_error_set(&cx->e, VSB_E_IO, NULL, "%s", why);
            goto done;
        }
        cur.base = base;
        cur.basefd = vsb_open_dir(q->base_tree);
    }

    ref.imagefd = cur.imagefd;

    if (q->baseline[0] != '\0') {
        if (vsb_mf_load_file(AT_FDCWD, q->baseline, 256u << 20, ref_layer,
                             why, sizeof(why)) != 0)
        {
            vsb_error_set(&cx->e, VSB_E_IO, NULL, "the baseline: %s", why);
            goto done;
        }
        ref.layer = ref_layer;
        ref.base = cur.base;
        ref.basefd = cur.basefd;
        ref.base_tree = cur.base_tree;

    } else {
        if (vsb_mf_load_file(AT_FDCWD, q->ref_mf, 256u << 20, ref_layer,
                             why, sizeof(why)) != 0)
        {
            vsb_error_set(&cx->e, VSB_E_IO, NULL, "%s", why);
            goto done;
        }
        ref.layer = ref_layer;
        ref.layerfd = vsb_open_dir(q->ref_tree);
    }

    /* every path either side names; a base both share is the same on
     * both sides except where a layer hides some of it */
    if (vsb_paths_of(&ps, cur.layer) != 0 || vsb_paths_of(&ps, ref.layer) != 0
        || (ref.base != cur.base && (vsb_paths_of(&ps, ref.base) != 0
                                     || vsb_paths_of(&ps, cur.base) != 0)))
    {
        vsb_error_set(&cx->e, VSB_E_INTERNAL, NULL, "out of memory");
        goto done;
    }

    /* below what hides: what the base and the image hold there; below
     * what a base hides, what the image holds (a base both share hides
     * the same on both sides) */
    if (vsb_paths_hidden(cx, &ps, cur.layer, cur.base,
                         cur.base_tree ? cur.basefd : -1, cur.imagefd) != 0
        || vsb_paths_hidden(cx, &ps, ref.layer, ref.base,
                            ref.base_tree ? ref.basefd : -1, ref.imagefd)
           != 0
        || (ref.base != cur.base
            && (vsb_paths_hidden(cx, &ps, cur.base, NULL, -1, cur.imagefd)
                != 0
                || vsb_paths_hidden(cx, &ps, ref.base, NULL, -1,
                                    ref.imagefd) != 0)))
    {
        goto done;
    }

    if (ps.n > 0) {
        qsort(ps.p, ps.n, sizeof(ps.p[0]), vsb_paths_cmp);
    }

    rc = vsb_compare(cx, &ref, &cur, &ps, list);

done:

    vsb_paths_free(&ps);
    close(layerfd);
    if (cur.imagefd != -1) {
        close(cur.imagefd);
    }
    if (cur.basefd != -1) {
        close(cur.basefd);
    }
    if (ref.layerfd != -1) {
        close(ref.layerfd);
    }
    return rc;
}


static int
vsb_changes_fail(vsb_cx_t *cx, int hfd)
{
    json_t  *h;

    h = json_pack("{s:b, s:s, s:s}", "ok", 0, "error",
                  cx->e.error ? cx->e.error : VSB_E_INTERNAL,
                  "detail", cx->e.detail);
    if (h == NULL) {
        return -1;
    }
    if (cx->e.field != NULL) {
        json_object_set_new(h, "field", json_string(cx->e.field));
    }
    if (cx->e.limit != NULL) {
        json_object_set_new(h, "limit", json_string(cx->e.limit));
    }
    (void) vsb_worker_json(hfd, h);
    json_decref(h);
    return -1;
}


int
vsb_changes_work(void *arg, int hfd, int pfd)
{
    vsb_cx_t   cx;
    vsb_mf_t   cur, base, ref;
    json_t    *list, *h, *doc;
    char      *text;
    int        rc;
    static const unsigned char  end[1024];

    memset(&cx, 0, sizeof(cx));
    memset(&cur, 0, sizeof(cur));
    memset(&base, 0, sizeof(base));
    memset(&ref, 0, sizeof(ref));
    cx.q = arg;
    cx.pfd = pfd;
    cx.buf = malloc(65536);
    list = json_array();

    if (cx.buf == NULL || list == NULL) {
        vsb_error_set(&cx.e, VSB_E_INTERNAL, NULL, "out of memory");
        return vsb_changes_fail(&cx, hfd);
    }

    rc = vsb_changes_run(&cx, &cur, &base, &ref, list);

    if (rc == 0 && strcmp(cx.q->format, "tar") == 0) {
        rc = vsb_cx_out(&cx, end, sizeof(end));
    }

    if (rc == 0 && strcmp(cx.q->format, "json") == 0) {
        doc = json_pack("{s:O}", "changes", list);
        text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        json_decref(doc);
        if (text == NULL) {
            rc = vsb_error_set(&cx.e, VSB_E_INTERNAL, NULL, "out of memory");
        } else {
            rc = vsb_cx_out(&cx, text, strlen(text));
            free(text);
        }
    }

    json_decref(list);

    if (rc != 0) {
        return vsb_changes_fail(&cx, hfd);
    }

    h = json_pack("{s:b, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I}",
                  "ok", 1, "since", cx.q->since, "format", cx.q->format,
                  "added", cx.added, "modified", cx.modified,
                  "deleted", cx.deleted, "mode_changed", cx.mode_changed,
                  "changes", cx.added + cx.modified + cx.deleted
                             + cx.mode_changed,
                  "bytes", (json_int_t) cx.out);
    if (h == NULL || vsb_worker_json(hfd, h) != 0) {
        json_decref(h);
        return -1;
    }

    json_decref(h);
    return 0;
}


int
vsb_changes_baseline(const char *layer, const char *out,
    const vsb_mf_bounds_t *b, char *err, size_t errlen)
{
    vsb_mf_t     m;
    vsb_error_t  e;
    int          fd;
    char        *text, digest[72];
    size_t       len;

    memset(&m, 0, sizeof(m));
    memset(&e, 0, sizeof(e));

    fd = open(layer, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "open %s: %s", layer, strerror(errno));
        return -1;
    }

    if (vsb_mf_walk(fd, -1, b, &m, &e) != 0) {
        snprintf(err, errlen, "%s", e.detail);
        close(fd);
        vsb_mf_free(&m);
        return -1;
    }
    close(fd);

    vsb_mf_sort(&m);
    text = vsb_mf_dump(&m, &len, digest);
    vsb_mf_free(&m);
    if (text == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd == -1 || vsb_write_full(fd, text, len) != 0) {
        snprintf(err, errlen, "write %s: %s", out, strerror(errno));
        if (fd != -1) {
            close(fd);
        }
        free(text);
        return -1;
    }

    close(fd);
    free(text);
    return 0;
}
