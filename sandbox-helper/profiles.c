/*
 * Profiles backed by the image store, and every profile's discovery
 * entry (vsb_profile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_config.h"
#include "vsb_fdio.h"
#include "vsb_image_meta.h"
#include "vsb_log.h"
#include "vsb_overlay.h"
#include "vsb_profile.h"

#define VSB_PROFILE_OS_RELEASE_MAX  (64 << 10)
#define VSB_PROFILE_PKG_DB_MAX      (32 << 20)

/* the profiles op's reply must leave room for its own envelope */
#define VSB_PROFILES_JSON_MAX       (VSB_MAX_JSON - 1024)

typedef struct {
    json_t  *info;          /* the discovery entry, without "available" */
    json_t  *env;           /* image profiles: config env as an object */
} vsb_profile_info_t;

static vsb_image_store_t   vsb_store;
static int                 vsb_store_open;
static vsb_profile_info_t  vsb_infos[VSB_MAX_PROFILES];


const vsb_image_store_t *
vsb_profiles_store(void)
{
    return vsb_store_open ? &vsb_store : NULL;
}


/* A short printable string value of obj, or NULL. */
static json_t *
vsb_profile_short(json_t *v)
{
    const char  *s = json_string_value(v);
    size_t       i, n;

    if (s == NULL) {
        return NULL;
    }

    n = json_string_length(v);
    if (n == 0 || n > VSB_PROFILE_VALUE_MAX) {
        return NULL;
    }

    for (i = 0; i < n; i++) {
        if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] >= 0x7f) {
            return NULL;
        }
    }

    return json_incref(v);
}


/* {key: short string} of an object's members (os_release, tools). */
static json_t *
vsb_profile_strings(json_t *obj)
{
    const char  *k;
    json_t      *v, *out, *s;

    out = json_object();
    if (out == NULL || !json_is_object(obj)) {
        return out;
    }

    json_object_foreach(obj, k, v) {
        s = vsb_profile_short(v);
        if (s != NULL && strlen(k) <= VSB_PROFILE_VALUE_MAX) {
            json_object_set_new(out, k, s);
        }
    }

    return out;
}


/* The image config's "env": ["NAME=value", ...] as {NAME: value}. */
static json_t *
vsb_profile_image_env(json_t *meta)
{
    json_t       *list, *v, *env;
    const char   *s, *eq;
    size_t        i, n;
    char          name[VSB_MAX_NAME + 1];

    env = json_object();
    list = json_object_get(json_object_get(meta, "config"), "env");
    if (env == NULL || !json_is_array(list)) {
        return env;
    }

    json_array_foreach(list, i, v) {
        s = json_string_value(v);
        if (s == NULL || json_object_size(env) >= VSB_MAX_ENV) {
            continue;
        }

        eq = strchr(s, '=');
        n = eq ? (size_t) (eq - s) : 0;
        if (n == 0 || n > VSB_MAX_NAME) {
            continue;
        }

        memcpy(name, s, n);
        name[n] = '\0';

        /* what exec_env.c accepts; HOME and USER describe our user */
        if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   "_0123456789") != n
            || (name[0] >= '0' && name[0] <= '9')
            || strcmp(name, "HOME") == 0 || strcmp(name, "USER") == 0)
        {
            continue;
        }

        json_object_set_new(env, name, json_string(eq + 1));
    }

    return env;
}


static int
vsb_profile_image(const vsb_profile_t *p, vsb_profile_info_t *pi, char *err,
    size_t errlen)
{
    json_t      *meta, *desc;
    char         why[512];

    if (vsb_image_meta(&vsb_store, p->digest, &meta, why, sizeof(why)) != 0)
    {
        snprintf(err, errlen, "profile \"%s\": %s (store %s): import it "
                 "(sandbox-imagectl import LAYOUT %s) or remove the "
                 "profile", p->name, why, vsb_store.dir, p->digest);
        return -1;
    }

    desc = json_object_get(meta, "description");

    pi->info = json_pack("{s:s, s:s, s:s, s:s%, s:o, s:o}",
                         "name", p->name,
                         "kind", "image",
                         "digest", p->digest,
                         "description",
                         json_is_string(desc) ? json_string_value(desc) : "",
                         json_is_string(desc)
                         ? json_string_length(desc) : (size_t) 0,
                         "os_release", vsb_profile_strings(
                             json_object_get(meta, "os_release")),
                         "tools", vsb_profile_strings(
                             json_object_get(meta, "tools")));
    pi->env = vsb_profile_image_env(meta);
    json_decref(meta);

    if (pi->info == NULL || pi->env == NULL) {
        snprintf(err, errlen, "profile \"%s\": out of memory", p->name);
        return -1;
    }

    return 0;
}


/* A file of a directory profile, resolved inside it, at most max bytes;
 * NULL when absent or too big.  Same shape as vsb_unpack_read_tree()
 * (image_unpack.c), which reads the same files of an image: kept apart
 * because a profile's root is a host directory that may span mounts and
 * a file over max is refused here, where an image's tree is one file
 * system and the unpack keeps a file's first max bytes. */
static char *
vsb_profile_read(const char *root, const char *path, size_t max,
    size_t *len)
{
    struct stat      st;
    char            *buf;
    ssize_t          n;
    int              rfd, fd;

    rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rfd == -1) {
        return NULL;
    }

    fd = vsb_openat2(rfd, path, O_RDONLY | O_NONBLOCK, 0,
                     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    close(rfd);

    if (fd == -1) {
        return NULL;
    }

    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
        || (uint64_t) st.st_size > max
        || (buf = malloc((size_t) st.st_size + 1)) == NULL)
    {
        close(fd);
        return NULL;
    }

    n = vsb_read_full(fd, buf, (size_t) st.st_size);
    close(fd);
    if (n == -1) {
        free(buf);
        return NULL;
    }

    buf[n] = '\0';
    *len = (size_t) n;
    return buf;
}


static int
vsb_profile_directory(const vsb_profile_t *p, vsb_profile_info_t *pi,
    char *err, size_t errlen)
{
    json_t  *os, *tools;
    char    *buf, desc[PATH_MAX + 64];
    size_t   len;

    os = json_object();
    tools = json_object();
    if (os == NULL || tools == NULL) {
        json_decref(os);
        json_decref(tools);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    buf = vsb_profile_read(p->root, "usr/lib/os-release",
                           VSB_PROFILE_OS_RELEASE_MAX, &len);
    if (buf == NULL) {
        buf = vsb_profile_read(p->root, "etc/os-release",
                               VSB_PROFILE_OS_RELEASE_MAX, &len);
    }
    if (buf != NULL) {
        (void) vsb_meta_os_release(buf, len, os);
        free(buf);
    }

    buf = vsb_profile_read(p->root, "var/lib/dpkg/status",
                           VSB_PROFILE_PKG_DB_MAX, &len);
    if (buf != NULL) {
        (void) vsb_meta_dpkg_status(buf, len, tools);
        free(buf);

    } else {
        buf = vsb_profile_read(p->root, "lib/apk/db/installed",
                               VSB_PROFILE_PKG_DB_MAX, &len);
        if (buf != NULL) {
            (void) vsb_meta_apk_installed(buf, len, tools);
            free(buf);
        }
    }

    if (strcmp(p->root, "/") == 0) {
        snprintf(desc, sizeof(desc), "the host's /usr, read-only");
    } else {
        snprintf(desc, sizeof(desc), "the usr/ of %s, read-only", p->root);
    }

    pi->info = json_pack("{s:s, s:s, s:n, s:s, s:o, s:o}",
                         "name", p->name,
                         "kind", "directory",
                         "digest",
                         "description", desc,
                         "os_release", vsb_profile_strings(os),
                         "tools", vsb_profile_strings(tools));
    json_decref(os);
    json_decref(tools);

    if (pi->info == NULL) {
        snprintf(err, errlen, "profile \"%s\": out of memory", p->name);
        return -1;
    }

    return 0;
}


/* The whole list must fit a reply: drop tools, last profiles first. */
static int
vsb_profiles_fit(char *err, size_t errlen)
{
    json_t  *all;
    char    *s;
    size_t   len, i, n = vsb_cf.n_profiles;

    for (i = n; ; i--) {
        all = vsb_profiles_json();
        s = all ? json_dumps(all, JSON_COMPACT) : NULL;
        json_decref(all);
        if (s == NULL) {
            snprintf(err, errlen, "profiles: out of memory");
            return -1;
        }
        len = strlen(s);
        free(s);

        if (len <= VSB_PROFILES_JSON_MAX) {
            return 0;
        }

        if (i == 0) {
            snprintf(err, errlen, "profiles: their descriptions take %zu "
                     "bytes, over the %d a reply may carry", len,
                     VSB_PROFILES_JSON_MAX);
            return -1;
        }

        json_object_set_new(vsb_infos[i - 1].info, "tools", json_object());
        json_object_set_new(vsb_infos[i - 1].info, "tools_truncated",
                            json_true());
        vsb_log(VSB_LOG_WARN, "profile \"%s\": tool versions left out of "
                "its listing (the listing would exceed %d bytes)",
                vsb_cf.profiles[i - 1].name, VSB_PROFILES_JSON_MAX);
    }
}


int
vsb_profiles_init(char *err, size_t errlen)
{
    char    dir[PATH_MAX + 16], why[512];
    size_t  i;
    int     images = 0;

    for (i = 0; i < vsb_cf.n_profiles; i++) {
        images += vsb_profile_is_image(&vsb_cf.profiles[i]);
    }

    if (images > 0) {
        if (vsb_cf.image_store[0] != '\0') {
            snprintf(dir, sizeof(dir), "%s", vsb_cf.image_store);
        } else {
            snprintf(dir, sizeof(dir), "%s/images", vsb_cf.state_dir);
        }

        if (vsb_image_store_init(&vsb_store, dir, vsb_cf.uid_base - 1, why,
                                 sizeof(why)) != 0)
        {
            snprintf(err, errlen, "image store: %s", why);
            return -1;
        }

        vsb_store_open = 1;

        snprintf(dir, sizeof(dir), "%s/sha256", vsb_store.dir);
        if (vsb_overlay_probe(dir, vsb_cf.uid_base, err, errlen) != 0) {
            return -1;
        }
    }

    for (i = 0; i < vsb_cf.n_profiles; i++) {
        const vsb_profile_t  *p = &vsb_cf.profiles[i];

        if ((vsb_profile_is_image(p)
             ? vsb_profile_image(p, &vsb_infos[i], err, errlen)
             : vsb_profile_directory(p, &vsb_infos[i], err, errlen)) != 0)
        {
            return -1;
        }

        vsb_log(VSB_LOG_INFO, "profile \"%s\": %s %s", p->name,
                vsb_profile_is_image(p) ? "image" : "directory",
                vsb_profile_is_image(p) ? p->digest : p->root);
    }

    return vsb_profiles_fit(err, errlen);
}


void
vsb_profiles_cleanup(void)
{
    size_t  i;

    for (i = 0; i < VSB_MAX_PROFILES; i++) {
        json_decref(vsb_infos[i].info);
        json_decref(vsb_infos[i].env);
        vsb_infos[i].info = NULL;
        vsb_infos[i].env = NULL;
    }
}


/* An image profile's image is (still) in the store; a directory
 * profile's usr/ is (still) there. */
static int
vsb_profile_available(const vsb_profile_t *p)
{
    char         path[PATH_MAX + 128], hex[VSB_IMAGE_HEX_LEN + 1], why[160];
    struct stat  st;

    if (!vsb_profile_is_image(p)) {
        snprintf(path, sizeof(path), "%s/usr", p->root);
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    }

    if (!vsb_store_open
        || vsb_image_digest_parse(p->digest, hex, why, sizeof(why)) != 0)
    {
        return 0;
    }

    snprintf(path, sizeof(path), "%s/sha256/%s/rootfs", vsb_store.dir, hex);
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}


json_t *
vsb_profiles_json(void)
{
    json_t  *list, *one;
    size_t   i;

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    for (i = 0; i < vsb_cf.n_profiles; i++) {
        if (vsb_infos[i].info == NULL) {
            continue;
        }

        one = json_copy(vsb_infos[i].info);
        if (one == NULL) {
            json_decref(list);
            return NULL;
        }

        json_object_set_new(one, "default", json_boolean(i == 0));
        json_object_set_new(one, "available", json_boolean(
                            vsb_profile_available(&vsb_cf.profiles[i])));
        json_array_append_new(list, one);
    }

    return list;
}


json_t *
vsb_profiles_summary(void)
{
    json_t               *list, *one;
    size_t                i;
    const vsb_profile_t  *p;

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    for (i = 0; i < vsb_cf.n_profiles; i++) {
        if (vsb_infos[i].info == NULL) {
            continue;
        }

        p = &vsb_cf.profiles[i];

        one = json_pack("{s:s, s:s, s:o, s:b, s:b}",
                        "name", p->name,
                        "kind", vsb_profile_is_image(p) ? "image"
                                                        : "directory",
                        "digest", vsb_profile_is_image(p)
                                  ? json_string(p->digest) : json_null(),
                        "default", i == 0,
                        "available", vsb_profile_available(p));

        if (one == NULL || json_array_append_new(list, one) != 0) {
            json_decref(list);
            return NULL;
        }
    }

    return list;
}


int
vsb_profile_env(vsb_sandbox_t *sb, vsb_error_t *e)
{
    const char  *k;
    json_t      *v, *env = NULL;
    size_t       i, dropped = 0;

    for (i = 0; i < vsb_cf.n_profiles; i++) {
        if (&vsb_cf.profiles[i] == sb->profile) {
            env = vsb_infos[i].env;
        }
    }

    if (env == NULL) {
        return 0;
    }

    json_object_foreach(env, k, v) {
        if (json_object_get(sb->env, k) != NULL) {
            continue;           /* the request's own value wins */
        }
        if (json_object_size(sb->env) >= VSB_MAX_ENV) {
            dropped++;
            continue;
        }
        if (json_object_set(sb->env, k, v) != 0) {
            return vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        }
    }

    if (dropped > 0) {
        vsb_log(VSB_LOG_WARN, "sandbox %s: %zu variables of profile \"%s\"'s "
                "image left out (at most %d in all)", sb->id, dropped,
                sb->profile->name, VSB_MAX_ENV);
    }

    return 0;
}
