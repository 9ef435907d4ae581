/*
 * A descriptor read to the end of the room given, or written whole
 * (fdio.c): the loops over read(2) and write(2) that the helper's
 * bounded file readers and its writers of files, pipes and reports need
 * (a short read or write is not the end, EINTR is tried again); and
 * openat2(2), tried again where the kernel asks it.  Each
 * caller keeps its own checks (the file's type, owner and size bound)
 * and its own error words.
 */
#ifndef VSB_FDIO_H
#define VSB_FDIO_H

#include <stdint.h>
#include <sys/types.h>

/* Reads fd into buf until len bytes are read or the file ends: the
 * count read (less than len only at the end of the file), or -1 with
 * errno set when a read failed (what came before it is not counted). */
ssize_t vsb_read_full(int fd, void *buf, size_t len);

/* Writes all len bytes of buf to fd: 0, or -1 with errno set (EIO for a
 * write that took nothing); how much went before a failure is unsaid. */
int vsb_write_full(int fd, const void *buf, size_t len);

/* openat2(2) of path below dirfd, O_CLOEXEC added, mode only with O_CREAT
 * or O_TMPFILE, resolve as given (RESOLVE_*): the descriptor, or -1 with
 * errno set.  EAGAIN (a rename or mount elsewhere raced a "..") and
 * EINTR are tried again, a bounded number of times. */
int vsb_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode,
    uint64_t resolve);

#endif
