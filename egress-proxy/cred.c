/*
 * The credential store (eg_cred.h).  Values live in memory only, wiped
 * when freed; nothing here logs a value or a placeholder.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "eg_cred.h"
#include "eg_cred_file.h"
#include "eg_log.h"

static eg_cred_t  *eg_creds;
static size_t      eg_ncreds;


eg_cred_t *
eg_cred_find(const char *name)
{
    size_t  i;

    for (i = 0; i < eg_ncreds; i++) {
        if (strcmp(eg_creds[i].b.name, name) == 0) {
            return &eg_creds[i];
        }
    }
    return NULL;
}


size_t
eg_cred_count(void)
{
    return eg_ncreds;
}


eg_cred_t *
eg_cred_at(size_t i)
{
    return i < eg_ncreds ? &eg_creds[i] : NULL;
}


const eg_cred_att_t *
eg_cred_placeholder_in(const eg_cred_att_t *atts, size_t n, const char *buf,
    size_t len)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (memmem(buf, len, atts[i].placeholder,
                   EG_CRED_PLACEHOLDER_LEN) != NULL)
        {
            return &atts[i];
        }
    }
    return NULL;
}


const eg_cred_att_t *
eg_cred_bound(const eg_cred_att_t *atts, size_t n, const char *host,
    uint16_t port)
{
    size_t  i;

    if (port != 443) {
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (eg_cred_host_match(&atts[i].cred->b, host)) {
            return &atts[i];
        }
    }
    return NULL;
}


/* Reads one secret; on a fault, c->refused says why. */
static void
eg_cred_read_value(eg_cred_t *c, const char *dir, uid_t proxy_uid)
{
    char           path[4096];
    unsigned char  buf[EG_CRED_VALUE_MAX + 2];
    struct stat    st;
    ssize_t        n;
    size_t         len = 0;
    const char    *why;
    int            fd;

    snprintf(path, sizeof(path), "%s/secrets/%s", dir, c->b.name);
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        snprintf(c->refused, sizeof(c->refused), "open %.200s: %s", path,
                 strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(c->refused, sizeof(c->refused), "%.200s is not a regular "
                 "file", path);
        close(fd);
        return;
    }
    if ((st.st_mode & 077) != 0
        || (st.st_uid != 0 && st.st_uid != proxy_uid))
    {
        snprintf(c->refused, sizeof(c->refused), "%.200s is readable by group "
                 "or others, or owned by another user than root or the "
                 "proxy's (mode 0600 or 0400, owner root)", path);
        close(fd);
        return;
    }
    for (;;) {
        n = read(fd, buf + len, sizeof(buf) - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t) n;
        if (len == sizeof(buf)) {
            break;
        }
    }
    close(fd);
    if (n < 0) {
        snprintf(c->refused, sizeof(c->refused), "read %.200s: %s", path,
                 strerror(errno));
        OPENSSL_cleanse(buf, sizeof(buf));
        return;
    }
    if (len > 0 && buf[len - 1] == '\n') {
        len--;                      /* "echo token > file" */
    }
    if (eg_cred_value_ok(buf, len, &why) != 0) {
        snprintf(c->refused, sizeof(c->refused), "its value %s", why);
        OPENSSL_cleanse(buf, sizeof(buf));
        return;
    }
    c->value = malloc(len + 1);
    if (c->value == NULL) {
        snprintf(c->refused, sizeof(c->refused), "out of memory");
        OPENSSL_cleanse(buf, sizeof(buf));
        return;
    }
    memcpy(c->value, buf, len);
    c->value[len] = '\0';
    c->vlen = len;
    OPENSSL_cleanse(buf, sizeof(buf));
}


int
eg_cred_load(const char *dir, const char *user, char *err, size_t errlen)
{
    char                path[4096], perr[900];
    eg_cred_binding_t  *bs;
    struct passwd      *pw;
    uid_t               proxy_uid = 0;
    size_t              i, n;

    if (dir[0] == '\0') {
        return 0;
    }
    if (user[0] != '\0' && (pw = getpwnam(user)) != NULL) {
        proxy_uid = pw->pw_uid;
    }

    eg_creds = calloc(EG_CRED_MAX, sizeof(*eg_creds));
    bs = calloc(EG_CRED_MAX, sizeof(*bs));
    if (eg_creds == NULL || bs == NULL) {
        free(bs);
        snprintf(err, errlen, "credentials: out of memory");
        return -1;
    }

    snprintf(path, sizeof(path), "%s/bindings", dir);
    if (eg_cred_bindings_read(path, bs, &n, perr, sizeof(perr)) != 0) {
        snprintf(err, errlen, "credentials: %s", perr);
        free(bs);
        return -1;
    }
    for (i = 0; i < n; i++) {
        eg_creds[i].b = bs[i];
    }
    eg_ncreds = n;
    free(bs);

    for (i = 0; i < eg_ncreds; i++) {
        eg_cred_read_value(&eg_creds[i], dir, proxy_uid);
        if (eg_creds[i].value == NULL) {
            eg_log(EG_LOG_ERROR, "credential %s refused: %s",
                   eg_creds[i].b.name, eg_creds[i].refused);
        } else {
            eg_log(EG_LOG_INFO, "credential %s loaded: header %s for %s%s%s",
                   eg_creds[i].b.name, eg_creds[i].b.header,
                   eg_creds[i].b.host.wildcard ? "*." : "",
                   eg_creds[i].b.host.host, eg_creds[i].b.path);
        }
    }
    return 0;
}


void
eg_cred_free_all(void)
{
    size_t  i;

    for (i = 0; i < eg_ncreds; i++) {
        if (eg_creds[i].value != NULL) {
            OPENSSL_cleanse(eg_creds[i].value, eg_creds[i].vlen);
            free(eg_creds[i].value);
        }
    }
    free(eg_creds);
    eg_creds = NULL;
    eg_ncreds = 0;
}


void
eg_cred_free_agent(eg_cred_t *c)
{
    if (c == NULL) {
        return;
    }
    if (c->value != NULL) {
        OPENSSL_cleanse(c->value, c->vlen);
        free(c->value);
    }
    OPENSSL_cleanse(c, sizeof(*c));
    free(c);
}
