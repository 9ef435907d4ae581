/*
 * A tar stream read from memory, for the layer tar reader's unit test
 * (t/unit/test_image_tar.c) and fuzz target (t/fuzz/fuzz_image_tar.c):
 * tar_mem_read() is the vsb_tar_init() reader over a tar_mem_t, and
 * refuses a block cut short ("truncated") as a layer file's reader does.
 */

#ifndef _TAR_MEM_H_INCLUDED_
#define _TAR_MEM_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>


typedef struct {
    const uint8_t  *p;
    size_t          len, off;
} tar_mem_t;


static ssize_t
tar_mem_read(void *ctx, void *buf, size_t len, char *err, size_t errlen)
{
    tar_mem_t  *m = ctx;
    size_t      n = m->len - m->off;

    if (n == 0) {
        return 0;
    }
    if (n < len) {
        snprintf(err, errlen, "truncated");
        return -1;
    }
    memcpy(buf, m->p + m->off, len);
    m->off += len;
    return (ssize_t) len;
}


#endif /* _TAR_MEM_H_INCLUDED_ */
