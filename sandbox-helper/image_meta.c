/*
 * What an image says about itself (vsb_image_meta.h).  The databases are
 * the image's own files, so they are hostile input: every parser walks
 * a bounded buffer and keeps bounded strings.
 */
#include <stdio.h>
#include <string.h>

#include "vsb_image_meta.h"

#define VSB_META_VALUE_MAX   256
#define VSB_META_STR_MAX     4096
#define VSB_META_DEPTH_MAX   4

/* packages whose versions tell an agent what a profile can run */
static const char  *vsb_meta_notable_names[] = {
    "python3", "python3-pip", "python3-venv", "python3-minimal",
    "nodejs", "npm", "gcc", "g++", "make", "cmake", "git", "perl",
    "ruby", "golang-go", "go", "rustc", "cargo", "default-jdk",
    "openjdk-17-jdk-headless", "libc6", "musl", "bash", "busybox",
    "curl", "build-essential",
};

static const char  *vsb_meta_keys[] = {
    "digest", "manifest_digest", "config_digest", "layers", "config",
    "os_release", "tools", "stats", "unpacked_bytes",
};


int
vsb_meta_notable(const char *name, size_t len)
{
    size_t  i;

    for (i = 0;
         i < sizeof(vsb_meta_notable_names) / sizeof(vsb_meta_notable_names[0]);
         i++)
    {
        if (strlen(vsb_meta_notable_names[i]) == len
            && memcmp(vsb_meta_notable_names[i], name, len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* A printable, bounded copy of a value; NULL when it is not one. */
static json_t *
vsb_meta_value(const char *v, size_t len)
{
    char    buf[VSB_META_VALUE_MAX + 1];
    size_t  i;

    if (len > VSB_META_VALUE_MAX) {
        len = VSB_META_VALUE_MAX;
    }

    for (i = 0; i < len; i++) {
        unsigned char  c = (unsigned char) v[i];

        buf[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char) c;
    }
    buf[len] = '\0';

    return json_string(buf);
}


/* The next line of buf: [*p, *end of line) and past it. */
static int
vsb_meta_line(const char **p, const char *end, const char **line,
    size_t *len)
{
    const char  *nl;

    if (*p >= end) {
        return 0;
    }

    nl = memchr(*p, '\n', (size_t) (end - *p));
    *line = *p;
    *len = (size_t) ((nl != NULL ? nl : end) - *p);
    *p = nl != NULL ? nl + 1 : end;
    return 1;
}


int
vsb_meta_os_release(const char *buf, size_t len, json_t *obj)
{
    const char  *p = buf, *end = buf + len, *line, *v;
    size_t       n, vl;
    static const char  *keys[] = { "ID", "VERSION_ID", "PRETTY_NAME" };
    static const char  *as[] = { "id", "version_id", "pretty_name" };
    size_t       k, kl;

    while (vsb_meta_line(&p, end, &line, &n)) {
        for (k = 0; k < 3; k++) {
            kl = strlen(keys[k]);
            if (n <= kl || memcmp(line, keys[k], kl) != 0
                || line[kl] != '=')
            {
                continue;
            }

            v = line + kl + 1;
            vl = n - kl - 1;
            if (vl >= 2 && (v[0] == '"' || v[0] == '\'')
                && v[vl - 1] == v[0])
            {
                v++;
                vl -= 2;
            }

            json_object_set_new(obj, as[k], vsb_meta_value(v, vl));
        }
    }

    return 0;
}


/* "Key: value" of one line, or no match. */
static int
vsb_meta_field(const char *line, size_t n, const char *key, const char **v,
    size_t *vl)
{
    size_t  kl = strlen(key);

    if (n < kl + 1 || memcmp(line, key, kl) != 0 || line[kl] != ':') {
        return 0;
    }

    *v = line + kl + 1;
    *vl = n - kl - 1;
    while (*vl > 0 && (**v == ' ' || **v == '\t')) {
        (*v)++;
        (*vl)--;
    }
    while (*vl > 0 && ((*v)[*vl - 1] == ' ' || (*v)[*vl - 1] == '\r')) {
        (*vl)--;
    }

    return 1;
}


int
vsb_meta_dpkg_status(const char *buf, size_t len, json_t *tools)
{
    const char  *p = buf, *end = buf + len, *line, *v;
    const char  *pkg = NULL, *ver = NULL;
    size_t       n, vl, pl = 0, verl = 0;
    int          installed = 0, more;
    char         name[VSB_META_VALUE_MAX + 1];

    do {
        more = vsb_meta_line(&p, end, &line, &n);

        if (!more || n == 0) {
            /* end of a paragraph */
            if (pkg != NULL && ver != NULL && installed
                && vsb_meta_notable(pkg, pl) && pl <= VSB_META_VALUE_MAX)
            {
                memcpy(name, pkg, pl);
                name[pl] = '\0';
                json_object_set_new(tools, name, vsb_meta_value(ver, verl));
            }
            pkg = ver = NULL;
            installed = 0;
            continue;
        }

        if (vsb_meta_field(line, n, "Package", &v, &vl)) {
            pkg = v;
            pl = vl;
        } else if (vsb_meta_field(line, n, "Version", &v, &vl)) {
            ver = v;
            verl = vl;
        } else if (vsb_meta_field(line, n, "Status", &v, &vl)) {
            installed = vl == strlen("install ok installed")
                        && memcmp(v, "install ok installed", vl) == 0;
        }
    } while (more);

    return 0;
}


int
vsb_meta_apk_installed(const char *buf, size_t len, json_t *tools)
{
    const char  *p = buf, *end = buf + len, *line;
    const char  *pkg = NULL, *ver = NULL;
    size_t       n, pl = 0, verl = 0;
    int          more;
    char         name[VSB_META_VALUE_MAX + 1];

    do {
        more = vsb_meta_line(&p, end, &line, &n);

        if (!more || n == 0) {
            if (pkg != NULL && ver != NULL && vsb_meta_notable(pkg, pl)
                && pl <= VSB_META_VALUE_MAX)
            {
                memcpy(name, pkg, pl);
                name[pl] = '\0';
                json_object_set_new(tools, name, vsb_meta_value(ver, verl));
            }
            pkg = ver = NULL;
            continue;
        }

        if (n >= 2 && line[0] == 'P' && line[1] == ':') {
            pkg = line + 2;
            pl = n - 2;
        } else if (n >= 2 && line[0] == 'V' && line[1] == ':') {
            ver = line + 2;
            verl = n - 2;
        }
    } while (more);

    return 0;
}


static int
vsb_meta_check_value(json_t *v, int depth, char *err, size_t errlen)
{
    const char  *k;
    json_t      *m;
    size_t       i;

    if (depth > VSB_META_DEPTH_MAX) {
        snprintf(err, errlen, "unpacker report nested too deep");
        return -1;
    }

    switch (json_typeof(v)) {

    case JSON_STRING:
        if (json_string_length(v) > VSB_META_STR_MAX) {
            snprintf(err, errlen, "unpacker report: a string over %d bytes",
                     VSB_META_STR_MAX);
            return -1;
        }
        return 0;

    case JSON_INTEGER:
        return json_integer_value(v) >= 0 ? 0 : -1;

    case JSON_TRUE:
    case JSON_FALSE:
        return 0;

    case JSON_ARRAY:
        if (json_array_size(v) > 512) {
            snprintf(err, errlen, "unpacker report: an array over 512");
            return -1;
        }
        json_array_foreach(v, i, m) {
            if (vsb_meta_check_value(m, depth + 1, err, errlen) != 0) {
                return -1;
            }
        }
        return 0;

    case JSON_OBJECT:
        if (json_object_size(v) > 512) {
            snprintf(err, errlen, "unpacker report: an object over 512");
            return -1;
        }
        json_object_foreach(v, k, m) {
            if (strlen(k) > VSB_META_VALUE_MAX
                || vsb_meta_check_value(m, depth + 1, err, errlen) != 0)
            {
                if (err[0] == '\0') {
                    snprintf(err, errlen, "unpacker report: bad key");
                }
                return -1;
            }
        }
        return 0;

    default:
        snprintf(err, errlen, "unpacker report: unexpected JSON type");
        return -1;
    }
}


int
vsb_meta_check(json_t *meta, char *err, size_t errlen)
{
    const char  *k;
    json_t      *v;
    size_t       i;

    err[0] = '\0';

    if (!json_is_object(meta)) {
        snprintf(err, errlen, "unpacker report is not an object");
        return -1;
    }

    json_object_foreach(meta, k, v) {
        for (i = 0; i < sizeof(vsb_meta_keys) / sizeof(vsb_meta_keys[0]);
             i++)
        {
            if (strcmp(k, vsb_meta_keys[i]) == 0) {
                break;
            }
        }

        if (i == sizeof(vsb_meta_keys) / sizeof(vsb_meta_keys[0])) {
            snprintf(err, errlen, "unpacker report: unknown key \"%.64s\"",
                     k);
            return -1;
        }

        if (vsb_meta_check_value(v, 1, err, errlen) != 0) {
            if (err[0] == '\0') {
                snprintf(err, errlen, "unpacker report: bad \"%s\"", k);
            }
            return -1;
        }
    }

    if (!json_is_string(json_object_get(meta, "digest"))
        || !json_is_string(json_object_get(meta, "manifest_digest")))
    {
        snprintf(err, errlen, "unpacker report without digests");
        return -1;
    }

    return 0;
}
