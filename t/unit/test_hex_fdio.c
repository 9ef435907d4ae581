/*
 * The helper's hex encoder, whole-file read and whole write
 * (sandbox-helper/hex.c, fdio.c), which every digest, random id, bounded
 * file reader and file, pipe or report writer of the helper goes through: a SHA-256 digest's hex is the known one for
 * "abc" and a digest of another length is refused; random hex is 2n
 * lowercase digits, differs between draws, and more than 32 bytes is
 * EINVAL; a read through a pipe written in small pieces gets every byte
 * up to the room given and stops there, a read past the end returns what
 * there was, and a failed read is -1 with errno; a write of more than a
 * pipe holds, read by a slow child, arrives whole and in order, and a
 * write into a pipe whose reader is gone is -1 with EPIPE; an openat2
 * of "sub/../f" with RESOLVE_IN_ROOT, while a child renames a file
 * elsewhere without pause, opens every time through vsb_openat2(),
 * where the bare syscall is seen to answer EAGAIN (the race the kernel
 * asks its callers to try again on: an image's etc/os-release, a link
 * to ../usr/lib/os-release, read while the host renamed something).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "vsb_hex.h"
#include "vsb_fdio.h"


static void
test_sha256_hex(void **state)
{
    unsigned char  md[EVP_MAX_MD_SIZE];
    unsigned int   mdlen = 0;
    char           out[VSB_SHA256_HEX_LEN + 1];

    (void) state;

    assert_int_equal(EVP_Digest("abc", 3, md, &mdlen, EVP_sha256(), NULL), 1);
    assert_int_equal(vsb_sha256_md_hex(md, mdlen, out), 0);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223"
                             "b00361a396177a9cb410ff61f20015ad");

    memset(out, 'x', sizeof(out));
    assert_int_equal(vsb_sha256_md_hex(md, 20, out), -1);
    assert_int_equal(out[0], 'x');
}


static void
test_hex(void **state)
{
    static const unsigned char  b[] = { 0x00, 0x0f, 0xf0, 0xff, 0x5a };
    char                        out[2 * sizeof(b) + 1];

    (void) state;

    vsb_hex(out, b, sizeof(b));
    assert_string_equal(out, "000ff0ff5a");
    vsb_hex(out, b, 0);
    assert_string_equal(out, "");
}


static void
test_random_hex(void **state)
{
    char    a[65], b[65];
    size_t  i;

    (void) state;

    assert_int_equal(vsb_random_hex(a, 32), 0);
    assert_int_equal(strlen(a), 64);
    assert_int_equal(strspn(a, "0123456789abcdef"), 64);

    assert_int_equal(vsb_random_hex(b, 32), 0);
    assert_string_not_equal(a, b);

    memset(a, 'x', sizeof(a));
    assert_int_equal(vsb_random_hex(a, 8), 0);
    assert_int_equal(strlen(a), 16);
    for (i = 17; i < sizeof(a); i++) {
        assert_int_equal(a[i], 'x');        /* nothing past its room */
    }

    errno = 0;
    assert_int_equal(vsb_random_hex(a, 33), -1);
    assert_int_equal(errno, EINVAL);
}


/* A child writes 3000 bytes in pieces of 7, then closes its end. */
static int
pipe_of_pieces(pid_t *pid)
{
    int            p[2];
    unsigned char  piece[7];
    size_t         sent, n, i;

    assert_int_equal(pipe(p), 0);
    *pid = fork();
    assert_true(*pid != -1);

    if (*pid == 0) {
        close(p[0]);
        for (sent = 0; sent < 3000; sent += n) {
            n = 3000 - sent < sizeof(piece) ? 3000 - sent : sizeof(piece);
            for (i = 0; i < n; i++) {
                piece[i] = (unsigned char) ((sent + i) % 251);
            }
            if (write(p[1], piece, n) != (ssize_t) n) {
                _exit(1);
            }
            usleep(100);
        }
        _exit(0);
    }

    close(p[1]);
    return p[0];
}


static void
test_read_full(void **state)
{
    static unsigned char  buf[4096];
    pid_t                 pid;
    int                   fd, status;
    size_t                i;

    (void) state;

    /* room for less than there is: exactly the room, in order */
    fd = pipe_of_pieces(&pid);
    assert_int_equal(vsb_read_full(fd, buf, 1000), 1000);
    for (i = 0; i < 1000; i++) {
        assert_int_equal(buf[i], i % 251);
    }
    /* the rest, then the end: fewer than asked */
    assert_int_equal(vsb_read_full(fd, buf, sizeof(buf)), 2000);
    assert_int_equal(buf[0], 1000 % 251);
    assert_int_equal(vsb_read_full(fd, buf, sizeof(buf)), 0);
    close(fd);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* a failed read */
    errno = 0;
    assert_int_equal(vsb_read_full(fd, buf, sizeof(buf)), -1);
    assert_int_equal(errno, EBADF);
}


static void
test_write_full(void **state)
{
    static unsigned char  out[256 * 1024], in[4096];
    int                   p[2], status;
    pid_t                 pid;
    size_t                i, got;
    ssize_t               n;

    (void) state;

    for (i = 0; i < sizeof(out); i++) {
        out[i] = (unsigned char) (i % 253);
    }

    /* the child reads slowly and checks every byte: exit 0 if all came */
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid != -1);
    if (pid == 0) {
        close(p[1]);
        for (got = 0; ; got += (size_t) n) {
            usleep(200);
            n = read(p[0], in, sizeof(in));
            if (n <= 0) {
                break;
            }
            for (i = 0; i < (size_t) n; i++) {
                if (in[i] != (unsigned char) ((got + i) % 253)) {
                    _exit(2);
                }
            }
        }
        _exit(n == 0 && got == sizeof(out) ? 0 : 1);
    }
    close(p[0]);
    assert_int_equal(vsb_write_full(p[1], out, sizeof(out)), 0);
    close(p[1]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    /* no reader: EPIPE (SIGPIPE ignored, as the helper does) */
    assert_true(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
    assert_int_equal(pipe(p), 0);
    close(p[0]);
    errno = 0;
    assert_int_equal(vsb_write_full(p[1], out, 16), -1);
    assert_int_equal(errno, EPIPE);
    close(p[1]);
}


static void
test_openat2_race(void **state)
{
    int              root, fd, i, bare_eagain, failed;
    char             dir[] = "/tmp/vsb-openat2-XXXXXX", path[64], a[64],
                     b[64];
    pid_t            child;
    time_t           until;
    struct open_how  how;

    (void) state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/f", dir);
    fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    assert_true(fd != -1);
    close(fd);
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    fd = open(a, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    assert_true(fd != -1);
    close(fd);

    child = fork();
    assert_true(child != -1);
    if (child == 0) {
        for ( ;; ) {
            (void) rename(a, b);
            (void) rename(b, a);
        }
    }

    root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(root != -1);

    memset(&how, 0, sizeof(how));
    how.flags = O_RDONLY | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT;

    /* until the bare call met the race a few times (or 20 s went by),
     * each bare call followed by one through vsb_openat2() */
    bare_eagain = 0;
    failed = 0;
    until = time(NULL) + 20;

    for (i = 0; bare_eagain < 20 && time(NULL) < until; i++) {
        fd = (int) syscall(SYS_openat2, root, "sub/../f", &how, sizeof(how));
        if (fd == -1 && errno == EAGAIN) {
            bare_eagain++;
        } else if (fd != -1) {
            close(fd);
        }

        fd = vsb_openat2(root, "sub/../f", O_RDONLY, 0, RESOLVE_IN_ROOT);
        if (fd == -1) {
            failed++;
        } else {
            close(fd);
        }
    }

    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(root);
    (void) unlink(a);
    (void) unlink(b);
    snprintf(path, sizeof(path), "%s/f", dir);
    (void) unlink(path);
    snprintf(path, sizeof(path), "%s/sub", dir);
    (void) rmdir(path);
    (void) rmdir(dir);

    print_message("openat2 race: %d calls, the bare one EAGAIN %d times\n",
                  i, bare_eagain);
    assert_true(bare_eagain > 0);
    assert_int_equal(failed, 0);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_sha256_hex),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_random_hex),
        cmocka_unit_test(test_read_full),
        cmocka_unit_test(test_write_full),
        cmocka_unit_test(test_openat2_race),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
