/* Layers and manifests (snap_tree.c): the bounded walk over a real tree
 * (hashes, modes, symlinks kept as symlinks, fifos, whiteouts, device
 * nodes refused, ceilings), what a layer hides, the merge of a layer over
 * its base, and the manifest's JSON round trip. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "vsb_rmtree.h"
#include "vsb_snap_tree.h"

static char  base_dir[64];


static int
dir_fd(const char *sub)
{
    char  path[128];
    int   fd;

    snprintf(path, sizeof(path), "%s/%s", base_dir, sub);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}


static void
put(int dfd, const char *name, const char *text, mode_t mode)
{
    int  fd;

    fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}


static int
setup(void **state)
{
    char  path[128];

    (void) state;
    snprintf(base_dir, sizeof(base_dir), "/tmp/vsb-unit-snap-XXXXXX");
    assert_non_null(mkdtemp(base_dir));
    snprintf(path, sizeof(path), "%s/src", base_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/dst", base_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    return 0;
}


static int
teardown(void **state)
{
    int  fd;

    (void) state;
    fd = open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void) vsb_rm_tree(fd, VSB_MF_RM_DEPTH);
        close(fd);
    }
    (void) rmdir(base_dir);
    return 0;
}


static vsb_mf_bounds_t
bounds(void)
{
    vsb_mf_bounds_t  b;

    memset(&b, 0, sizeof(b));
    b.max_files = 1000;
    b.max_bytes = 1 << 20;
    b.host_uid = 0;
    return b;
}


/* A tree with a file, a subdirectory, a link out, a fifo: walked and
 * copied, nothing followed. */
static void
test_walk_copy(void **state)
{
    int                  src, dst, sub;
    vsb_mf_t             m;
    vsb_mf_bounds_t      b = bounds();
    vsb_error_t          e;
    const vsb_mf_ent_t  *x;
    struct stat          st;
    char                 buf[64];

    (void) state;
    src = dir_fd("src");
    dst = dir_fd("dst");

    put(src, "a.txt", "hello\n", 0640);
    assert_int_equal(mkdirat(src, "d", 0750), 0);
    sub = openat(src, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(sub >= 0);
    put(sub, "b", "", 0600);
    close(sub);
    assert_int_equal(symlinkat("/etc/shadow", src, "out"), 0);
    assert_int_equal(mkfifoat(src, "fifo", 0620), 0);

    memset(&m, 0, sizeof(m));
    memset(&e, 0, sizeof(e));
    assert_int_equal(vsb_mf_walk(src, dst, &b, &m, &e), 0);
    vsb_mf_sort(&m);

    assert_int_equal(m.n, 5);
    assert_string_equal(m.e[0].path, "a.txt");
    assert_string_equal(m.e[1].path, "d");
    assert_string_equal(m.e[2].path, "d/b");
    assert_int_equal(m.bytes, 6);

    x = vsb_mf_find(&m, "a.txt");
    assert_non_null(x);
    assert_int_equal(x->type, VSB_MF_FILE);
    assert_int_equal(x->mode, 0640);
    assert_string_equal(x->sha256, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7"
                        "163af34d08286a2e846f6be03");
    x = vsb_mf_find(&m, "out");
    assert_non_null(x);
    assert_int_equal(x->type, VSB_MF_LINK);
    assert_string_equal(x->target, "/etc/shadow");
    assert_int_equal(vsb_mf_find(&m, "fifo")->type, VSB_MF_FIFO);
    assert_int_equal(vsb_mf_find(&m, "d")->mode, 0750);

    /* the copy: the link a link, the fifo a fifo, the modes kept */
    assert_int_equal(fstatat(dst, "out", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(readlinkat(dst, "out", buf, sizeof(buf)), 11);
    assert_int_equal(fstatat(dst, "fifo", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(fstatat(dst, "d", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(st.st_mode & 07777, 0750);
    assert_int_equal(fstatat(dst, "a.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(st.st_size, 6);

    vsb_mf_free(&m);
    close(src);
    close(dst);
}


/* A device node is refused; a whiteout (0:0) is kept as one. */
static void
test_devices(void **state)
{
    int              src;
    vsb_mf_t         m;
    vsb_mf_bounds_t  b = bounds();
    vsb_error_t      e;

    (void) state;
    src = dir_fd("src");

    assert_int_equal(mknodat(src, "wh", S_IFCHR | 0, makedev(0, 0)), 0);
    memset(&m, 0, sizeof(m));
    memset(&e, 0, sizeof(e));
    assert_int_equal(vsb_mf_walk(src, -1, &b, &m, &e), 0);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.e[0].type, VSB_MF_WHITEOUT);
    vsb_mf_free(&m);

    assert_int_equal(mknodat(src, "null", S_IFCHR | 0666, makedev(1, 3)), 0);
    memset(&m, 0, sizeof(m));
    assert_int_equal(vsb_mf_walk(src, -1, &b, &m, &e), -1);
    assert_string_equal(e.error, VSB_E_UNSUPPORTED_FILE);
    assert_string_equal(e.field, "path");
    vsb_mf_free(&m);
    close(src);
}


/* The ceilings: entries and bytes. */
static void
test_bounds(void **state)
{
    int              src, i;
    char             name[16];
    vsb_mf_t         m;
    vsb_mf_bounds_t  b = bounds();
    vsb_error_t      e;

    (void) state;
    src = dir_fd("src");
    for (i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        put(src, name, "0123456789", 0644);
    }

    b.max_files = 9;
    memset(&m, 0, sizeof(m));
    memset(&e, 0, sizeof(e));
    assert_int_equal(vsb_mf_walk(src, -1, &b, &m, &e), -1);
    assert_string_equal(e.error, VSB_E_OVER_CEILING);
    assert_string_equal(e.limit, "snapshot_files");
    vsb_mf_free(&m);

    b = bounds();
    b.max_bytes = 99;
    memset(&e, 0, sizeof(e));
    assert_int_equal(vsb_mf_walk(src, -1, &b, &m, &e), -1);
    assert_string_equal(e.limit, "snapshot_bytes");
    vsb_mf_free(&m);

    b.max_bytes = 100;
    assert_int_equal(vsb_mf_walk(src, -1, &b, &m, &e), 0);
    assert_int_equal(m.bytes, 100);
    vsb_mf_free(&m);
    close(src);
}


static vsb_mf_ent_t *
ent(vsb_mf_t *m, const char *path, char type, int opaque)
{
    vsb_mf_ent_t  *x;

    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->e = realloc(m->e, m->cap * sizeof(*m->e));
        assert_non_null(m->e);
    }
    x = &m->e[m->n++];
    memset(x, 0, sizeof(*x));
    x->path = strdup(path);
    x->type = type;
    x->opaque = opaque ? 1 : 0;
    x->mode = type == VSB_MF_DIR ? 0755 : 0644;
    return x;
}


/* What a layer hides of what is beneath it. */
static void
test_hides(void **state)
{
    vsb_mf_t  l;

    (void) state;
    memset(&l, 0, sizeof(l));
    ent(&l, "a", VSB_MF_WHITEOUT, 0);
    ent(&l, "b", VSB_MF_DIR, 1);
    ent(&l, "c", VSB_MF_FILE, 0);
    ent(&l, "e", VSB_MF_DIR, 0);
    ent(&l, "e/f", VSB_MF_LINK, 0);
    vsb_mf_sort(&l);

    assert_true(vsb_mf_hides(&l, "a"));
    assert_true(vsb_mf_hides(&l, "a/x/y"));
    assert_true(vsb_mf_hides(&l, "b/y"));
    assert_true(vsb_mf_hides(&l, "c/z"));
    assert_true(vsb_mf_hides(&l, "e/f/g"));
    assert_false(vsb_mf_hides(&l, "e/g"));
    assert_false(vsb_mf_hides(&l, "d"));
    assert_false(vsb_mf_hides(&l, "ab"));
    vsb_mf_free(&l);
}


/* A fork's layer over its base: the base's files linked, what the layer
 * deletes left out (a directory profile), the result sorted. */
static void
test_merge(void **state)
{
    int              basefd, dst, layerfd, sub;
    vsb_mf_t         base, layer, out;
    vsb_mf_bounds_t  b = bounds();
    vsb_error_t      e;
    struct stat      a, c;
    size_t           i;
    static const char *const  want[] = { "d", "d/y", "f", "g" };

    (void) state;
    basefd = dir_fd("src");
    dst = dir_fd("dst");

    /* the base: d/x, d/y, f */
    assert_int_equal(mkdirat(basefd, "d", 0755), 0);
    sub = openat(basefd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    put(sub, "x", "x\n", 0644);
    put(sub, "y", "y\n", 0644);
    close(sub);
    put(basefd, "f", "f\n", 0600);
    memset(&base, 0, sizeof(base));
    memset(&e, 0, sizeof(e));
    assert_int_equal(vsb_mf_walk(basefd, -1, &b, &base, &e), 0);
    vsb_mf_sort(&base);

    /* the layer, copied into dst: d (a directory), d/x deleted, g new */
    assert_int_equal(mkdirat(basefd, "layer", 0755), 0);
    layerfd = openat(basefd, "layer", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(mkdirat(layerfd, "d", 0755), 0);
    sub = openat(layerfd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(mknodat(sub, "x", S_IFCHR | 0, makedev(0, 0)), 0);
    close(sub);
    put(layerfd, "g", "g\n", 0644);
    memset(&layer, 0, sizeof(layer));
    assert_int_equal(vsb_mf_walk(layerfd, dst, &b, &layer, &e), 0);

    memset(&out, 0, sizeof(out));
    assert_int_equal(vsb_mf_merge(&base, basefd, &layer, dst, &b, &out, &e),
                     0);
    assert_int_equal(out.n, 4);
    for (i = 0; i < 4; i++) {
        assert_string_equal(out.e[i].path, want[i]);
    }
    assert_int_equal(out.bytes, 6);

    /* the base's file is the same inode; the deleted one is not there */
    assert_int_equal(fstatat(basefd, "f", &a, 0), 0);
    assert_int_equal(fstatat(dst, "f", &c, 0), 0);
    assert_int_equal(a.st_ino, c.st_ino);
    assert_int_equal(fstatat(dst, "d/x", &c, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(fstatat(dst, "d/y", &c, AT_SYMLINK_NOFOLLOW), 0);

    vsb_mf_free(&base);
    vsb_mf_free(&layer);
    vsb_mf_free(&out);
    close(layerfd);
    close(basefd);
    close(dst);
}


/* The JSON form: a round trip keeps every field and the digest; the
 * loader refuses what the dumper never writes. */
static void
test_json(void **state)
{
    vsb_mf_t       m, n;
    vsb_mf_ent_t  *x;
    char          *t1, *t2, d1[72], d2[72], why[256];
    size_t         l1, l2, i;
    static const char *const  bad[] = {
        "{\"version\":2,\"entries\":[]}",
        "{\"version\":1}",
        "{\"version\":1,\"entries\":[{\"path\":\"a\",\"type\":\"file\","
        "\"mode\":4096,\"uid\":0,\"gid\":0,\"size\":0}]}",
        "{\"version\":1,\"entries\":[{\"path\":\"a\",\"type\":\"dev\","
        "\"mode\":0,\"uid\":0,\"gid\":0,\"size\":0}]}",
        "{\"version\":1,\"entries\":[{\"path\":\"a\",\"type\":\"file\","
        "\"mode\":0,\"uid\":0,\"gid\":0,\"size\":0,\"x\":1}]}",
        "{\"version\":1,\"entries\":[{\"path\":\"\",\"type\":\"file\","
        "\"mode\":0,\"uid\":0,\"gid\":0,\"size\":0}]}",
        "{\"version\":1,\"entries\":[{\"path\":\"a\",\"type\":\"file\","
        "\"mode\":0,\"uid\":65536,\"gid\":0,\"size\":0}]}",
    };

    (void) state;
    memset(&m, 0, sizeof(m));
    x = ent(&m, "w/a", VSB_MF_FILE, 0);
    x->size = 3;
    x->uid = 1000;
    x->gid = 1000;
    memset(x->sha256, 'a', 64);
    m.bytes = 3;
    x = ent(&m, "w", VSB_MF_DIR, 1);
    x = ent(&m, "w/l", VSB_MF_LINK, 0);
    x->target = strdup("../x");
    x->size = 4;
    ent(&m, "w/gone", VSB_MF_WHITEOUT, 0);
    vsb_mf_sort(&m);

    t1 = vsb_mf_dump(&m, &l1, d1);
    assert_non_null(t1);
    assert_int_equal(vsb_mf_load(t1, l1, &n, why, sizeof(why)), 0);
    assert_int_equal(n.n, m.n);
    assert_int_equal(n.bytes, 3);
    for (i = 0; i < n.n; i++) {
        assert_string_equal(n.e[i].path, m.e[i].path);
        assert_int_equal(n.e[i].type, m.e[i].type);
        assert_int_equal(n.e[i].opaque, m.e[i].opaque);
        assert_int_equal(n.e[i].uid, m.e[i].uid);
    }
    t2 = vsb_mf_dump(&n, &l2, d2);
    assert_non_null(t2);
    assert_string_equal(d1, d2);
    assert_int_equal(strncmp(d1, "sha256:", 7), 0);

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vsb_mf_t  z;

        assert_int_equal(vsb_mf_load(bad[i], strlen(bad[i]), &z, why,
                                     sizeof(why)), -1);
    }

    free(t1);
    free(t2);
    vsb_mf_free(&m);
    vsb_mf_free(&n);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(test_walk_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
        cmocka_unit_test(test_hides),
        cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
        cmocka_unit_test(test_json),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
