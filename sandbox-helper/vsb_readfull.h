/*
 * Reading a descriptor to the end of what the caller has room for: the
 * loop over read(2) that a bounded file's reader needs (a short read is
 * not the end, EINTR is tried again).  Each reader keeps its own checks
 * (the file's type, owner and size bound) and its own error words.
 */
#ifndef VSB_READFULL_H
#define VSB_READFULL_H

#include <sys/types.h>

/* Reads fd into buf until len bytes are read or the file ends: the
 * count read (less than len only at the end of the file), or -1 with
 * errno set when a read failed (what came before it is not counted). */
ssize_t vsb_read_full(int fd, void *buf, size_t len);

#endif
