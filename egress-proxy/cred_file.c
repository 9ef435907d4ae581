/*
 * The bindings file's reader (eg_cred_file.h).  The file holds no
 * secret (the values are files of their own, read by the proxy only).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eg_cred_file.h"


int
eg_cred_bindings_read(const char *path, eg_cred_binding_t out[EG_CRED_MAX],
    size_t *n, char *err, size_t errlen)
{
    char         perr[480], *text;
    struct stat  st;
    ssize_t      r = 0;
    size_t       len = 0;
    int          fd, rc;

    *n = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "fstat %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return -1;
    }
    text = malloc(EG_CRED_FILE_MAX + 1);
    if (text == NULL) {
        snprintf(err, errlen, "read %s: out of memory", path);
        close(fd);
        return -1;
    }
    /* one byte more than the bound tells a file that passes it */
    while (len < EG_CRED_FILE_MAX + 1) {
        r = read(fd, text + len, EG_CRED_FILE_MAX + 1 - len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        len += (size_t) r;
    }
    if (r < 0) {
        snprintf(err, errlen, "read %s: %s", path, strerror(errno));
        close(fd);
        free(text);
        return -1;
    }
    close(fd);
    if (len > EG_CRED_FILE_MAX) {
        snprintf(err, errlen, "%s: larger than %d bytes", path,
                 EG_CRED_FILE_MAX);
        free(text);
        return -1;
    }
    rc = eg_cred_bindings_parse(text, len, out, n, perr, sizeof(perr));
    free(text);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, perr);
        *n = 0;
        return -1;
    }
    return 0;
}
