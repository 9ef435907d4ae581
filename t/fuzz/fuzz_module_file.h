/*
 * A configuration file the module reads by name (a PEM key, a JWKS, a
 * policy) whose bytes a module target sets: a memfd, named by its
 * /proc/self/fd path.  fuzz_file_open() makes it (once, from
 * LLVMFuzzerInitialize) and names it in *path; fuzz_file_put() replaces
 * its bytes.  Each aborts on failure: no target runs without its file.
 */

#ifndef _FUZZ_MODULE_FILE_H_INCLUDED_
#define _FUZZ_MODULE_FILE_H_INCLUDED_


#include <sys/mman.h>
#include <unistd.h>


static int
fuzz_file_open(const char *name, ngx_str_t *path)
{
    int            fd;
    static u_char  buf[64];

    fd = memfd_create(name, 0);
    if (fd == -1) {
        abort();
    }

    path->data = buf;
    path->len = ngx_snprintf(buf, sizeof(buf) - 1, "/proc/self/fd/%d%Z", fd)
                - buf - 1;

    return fd;
}


static void
fuzz_file_put(int fd, const void *data, size_t size)
{
    if (ftruncate(fd, 0) != 0
        || pwrite(fd, data, size, 0) != (ssize_t) size)
    {
        abort();
    }
}


#endif /* _FUZZ_MODULE_FILE_H_INCLUDED_ */
