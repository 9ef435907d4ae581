/*
 * Configuration file parser.  Small and strict, like the helper's: one
 * key per line, every value checked against its range.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eg_config.h"


void
eg_config_defaults(eg_config_t *cf)
{
    memset(cf, 0, sizeof(*cf));
    cf->control_socket_mode = 0600;
    cf->dns_answer_ipv4[0] = 198;       /* benchmark range: never routed */
    cf->dns_answer_ipv4[1] = 18;
    cf->dns_answer_ipv4[2] = 0;
    cf->dns_answer_ipv4[3] = 1;
    cf->dns_ttl_s = 5;
    cf->max_sandboxes = 256;
    cf->max_connections = 2048;
    cf->ceiling.max_connections = 128;
    cf->ceiling.max_bytes_out = 1ULL << 30;
    cf->ceiling.max_bytes_in = 8ULL << 30;
    cf->ceiling.connect_timeout_ms = 10000;
    cf->ceiling.idle_timeout_ms = 300000;
    cf->header_timeout_ms = 5000;
    cf->max_head_connections = 16;
    cf->tenant_share_floor = 32;
    cf->sandbox_share_floor = 8;
    cf->borrow_reserve_percent = 10;
    cf->dns_timeout_ms = 5000;
    cf->record_buffer_bytes = 1 << 20;
    cf->control_buffer_bytes = 4 << 20;
    snprintf(cf->upstream_ca_file, sizeof(cf->upstream_ca_file), "%s",
             "/etc/ssl/certs/ca-certificates.crt");
    cf->leaf_cache_size = 64;
    cf->seccomp = 1;
    cf->log_level = 1;
}


static int
eg_cf_u64(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
    char               *end;
    unsigned long long  n;

    if (*v < '0' || *v > '9') {
        return -1;
    }
    errno = 0;
    n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < min || n > max) {
        return -1;
    }
    *out = n;
    return 0;
}


static int
eg_cf_bool(const char *v, int *out)
{
    if (strcmp(v, "yes") == 0) {
        *out = 1;
    } else if (strcmp(v, "no") == 0) {
        *out = 0;
    } else {
        return -1;
    }
    return 0;
}


static int
eg_cf_set(eg_config_t *cf, const char *k, const char *v, const char **why)
{
    uint64_t  n;

    *why = "invalid value";

#define U64(name, field, min, max)                                          \
    if (strcmp(k, name) == 0) {                                             \
        if (eg_cf_u64(v, min, max, &n) != 0) {                              \
            *why = "expected an integer in " #min " .. " #max;              \
            return -1;                                                      \
        }                                                                   \
        field = n;                                                          \
        return 0;                                                           \
    }

    if (strcmp(k, "control_socket") == 0) {
        if (v[0] != '/' || strlen(v) >= sizeof(cf->control_socket)) {
            *why = "an absolute path shorter than 108 bytes";
            return -1;
        }
        strcpy(cf->control_socket, v);
        return 0;
    }

    if (strcmp(k, "control_socket_mode") == 0) {
        char           *end;
        unsigned long   m = strtoul(v, &end, 8);
        if (*v == '\0' || *end != '\0' || m > 0777) {
            *why = "an octal mode such as 0600";
            return -1;
        }
        cf->control_socket_mode = (unsigned) m;
        return 0;
    }

    if (strcmp(k, "allowed_uids") == 0) {
        char  buf[512], *tok, *save = NULL;
        if (strlen(v) >= sizeof(buf)) {
            return -1;
        }
        strcpy(buf, v);
        cf->nallowed_uids = 0;
        for (tok = strtok_r(buf, ", ", &save); tok != NULL;
             tok = strtok_r(NULL, ", ", &save))
        {
            if (cf->nallowed_uids == EG_CF_MAX_UIDS
                || eg_cf_u64(tok, 0, 0xfffffffe, &n) != 0)
            {
                *why = "a comma-separated list of at most 16 uids";
                return -1;
            }
            cf->allowed_uids[cf->nallowed_uids++] = (uid_t) n;
        }
        return cf->nallowed_uids ? 0 : -1;
    }

    if (strcmp(k, "user") == 0) {
        if (*v == '\0' || strlen(v) >= sizeof(cf->user)) {
            return -1;
        }
        strcpy(cf->user, v);
        return 0;
    }

    if (strcmp(k, "resolver") == 0) {
        if (strlen(v) >= sizeof(cf->resolver)) {
            return -1;
        }
        strcpy(cf->resolver, v);
        return 0;
    }

    if (strcmp(k, "allow_range") == 0) {
        if (cf->nallow_ranges == EG_CF_MAX_RANGES) {
            *why = "more than 64 allow_range lines";
            return -1;
        }
        if (eg_cidr_parse(v, &cf->allow_ranges[cf->nallow_ranges]) != 0) {
            *why = "a CIDR range such as 198.19.7.0/24 or 2001:db8::/64";
            return -1;
        }
        cf->nallow_ranges++;
        return 0;
    }

    if (strcmp(k, "credentials_dir") == 0 || strcmp(k, "ca_dir") == 0
        || strcmp(k, "upstream_ca_file") == 0)
    {
        char  *dst = k[0] == 'c' ? (k[1] == 'r' ? cf->credentials_dir
                                                : cf->ca_dir)
                                 : cf->upstream_ca_file;
        if (v[0] != '/' || strlen(v) >= sizeof(cf->ca_dir)) {
            *why = "an absolute path shorter than 256 bytes";
            return -1;
        }
        strcpy(dst, v);
        return 0;
    }

    if (strcmp(k, "dns_answer_ipv4") == 0) {
        if (inet_pton(AF_INET, v, cf->dns_answer_ipv4) != 1) {
            *why = "a dotted IPv4 address";
            return -1;
        }
        return 0;
    }

    if (strcmp(k, "seccomp") == 0) {
        return eg_cf_bool(v, &cf->seccomp);
    }

    if (strcmp(k, "log_level") == 0) {
        if (strcmp(v, "error") == 0) {
            cf->log_level = 0;
        } else if (strcmp(v, "info") == 0) {
            cf->log_level = 1;
        } else if (strcmp(v, "debug") == 0) {
            cf->log_level = 2;
        } else {
            *why = "error, info or debug";
            return -1;
        }
        return 0;
    }

    U64("dns_ttl_s", cf->dns_ttl_s, 0, 3600)
    U64("leaf_cache_size", cf->leaf_cache_size, 1, 4096)
    U64("max_sandboxes", cf->max_sandboxes, 1, 65536)
    U64("max_connections", cf->max_connections, 1, 1000000)
    U64("max_sandbox_connections", cf->ceiling.max_connections, 1, 100000)
    U64("max_bytes_out", cf->ceiling.max_bytes_out, 0, 1ULL << 50)
    U64("max_bytes_in", cf->ceiling.max_bytes_in, 0, 1ULL << 50)
    U64("connect_timeout_ms", cf->ceiling.connect_timeout_ms, 100, 600000)
    U64("idle_timeout_ms", cf->ceiling.idle_timeout_ms, 100, 86400000)
    U64("header_timeout_ms", cf->header_timeout_ms, 100, 600000)
    U64("max_sandbox_head_connections", cf->max_head_connections, 1, 100000)
    U64("tenant_share_floor", cf->tenant_share_floor, 1, 1000000)
    U64("sandbox_share_floor", cf->sandbox_share_floor, 1, 100000)
    U64("borrow_reserve_percent", cf->borrow_reserve_percent, 0, 90)
    U64("dns_timeout_ms", cf->dns_timeout_ms, 100, 60000)
    U64("record_buffer_bytes", cf->record_buffer_bytes, 4096, 1 << 30)
    U64("control_buffer_bytes", cf->control_buffer_bytes, 65536, 1 << 30)

#undef U64

    *why = "unknown key";
    return -1;
}


int
eg_config_load(eg_config_t *cf, const char *path, char *err, size_t errlen)
{
    FILE        *f;
    char         line[1024], *k, *v, *e;
    unsigned     lineno = 0;
    const char  *why;

    f = fopen(path, "re");
    if (f == NULL) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        return -1;
    }

    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            snprintf(err, errlen, "%s:%u: line longer than %zu bytes", path,
                     lineno, sizeof(line) - 2);
            fclose(f);
            return -1;
        }

        for (k = line; *k == ' ' || *k == '\t'; k++) { /* skip */ }
        if (*k == '#' || *k == '\n' || *k == '\0') {
            continue;
        }

        v = strchr(k, '=');
        if (v == NULL) {
            snprintf(err, errlen, "%s:%u: expected \"key = value\"", path,
                     lineno);
            fclose(f);
            return -1;
        }
        for (e = v; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--) { }
        *e = '\0';
        for (v++; *v == ' ' || *v == '\t'; v++) { }
        for (e = v + strlen(v);
             e > v && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'); e--)
        { }
        *e = '\0';

        if (eg_cf_set(cf, k, v, &why) != 0) {
            snprintf(err, errlen, "%s:%u: %s: %s", path, lineno, k, why);
            fclose(f);
            return -1;
        }
    }

    if (ferror(f)) {
        snprintf(err, errlen, "read %s: %s", path, strerror(errno));
        fclose(f);
        return -1;
    }
    fclose(f);

    if (cf->control_socket[0] == '\0') {
        snprintf(err, errlen, "%s: control_socket is required", path);
        return -1;
    }
    if (cf->nallowed_uids == 0) {
        snprintf(err, errlen, "%s: allowed_uids is required", path);
        return -1;
    }
    return 0;
}
