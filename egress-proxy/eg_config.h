/*
 * The proxy's configuration file: "key = value" lines, '#' comments.
 * Unknown keys, bad values and missing required keys are errors naming
 * the line.  See docs/egress.md for every key.
 */
#ifndef EG_CONFIG_H
#define EG_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "eg_addr.h"
#include "eg_limits.h"

#define EG_CF_MAX_UIDS       16
#define EG_CF_MAX_RANGES     64

typedef struct {
    char          control_socket[108];
    unsigned      control_socket_mode;
    uid_t         allowed_uids[EG_CF_MAX_UIDS];
    unsigned      nallowed_uids;
    char          user[64];             /* drop to this user when root */

    char          resolver[256];        /* "addr[:port],..." or empty */
    eg_cidr_t     allow_ranges[EG_CF_MAX_RANGES];
    unsigned      nallow_ranges;
    unsigned char dns_answer_ipv4[4];   /* what allowed names resolve to */
    uint32_t      dns_ttl_s;

    unsigned      max_sandboxes;
    unsigned      max_connections;      /* all sandboxes together */
    eg_limits_t   ceiling;              /* and the default */
    uint32_t      header_timeout_ms;    /* request head, ClientHello */
    unsigned      max_head_connections; /* per sandbox, still in the head */
    unsigned      tenant_share_floor;   /* fair shares (eg_share_admit) */
    unsigned      sandbox_share_floor;
    unsigned      borrow_reserve_percent;
    uint32_t      dns_timeout_ms;       /* the proxy's own lookups */
    size_t        record_buffer_bytes;  /* attempt records waiting */
    size_t        control_buffer_bytes; /* unsent bytes to the helper */

    char          credentials_dir[256]; /* "": no credentials */
    char          ca_dir[256];          /* the interception CA */
    char          upstream_ca_file[256];/* roots intercepted upstreams */
    unsigned      leaf_cache_size;      /* minted leaves kept */

    int           seccomp;
    int           log_level;            /* 0 error, 1 info, 2 debug */
} eg_config_t;

void eg_config_defaults(eg_config_t *cf);
int eg_config_load(eg_config_t *cf, const char *path, char *err,
    size_t errlen);

#endif
