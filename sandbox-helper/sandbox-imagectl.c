/*
 * sandbox-imagectl: the operator's tool for the helper's image store.
 *
 *   sandbox-imagectl [-c CONF] [-S STORE] [-u UID] import [OPTIONS] SRC DIGEST
 *   sandbox-imagectl [-c CONF] [-S STORE] list
 *   sandbox-imagectl [-c CONF] [-S STORE] inspect DIGEST
 *   sandbox-imagectl [-c CONF] [-S STORE] remove DIGEST
 *
 * SRC is an OCI image layout, a directory or a tarball of one; DIGEST
 * the sha256 digest of the image's manifest (or of an index, of which
 * the linux manifest for this machine's architecture is taken).  The
 * store is the helper configuration's image_store (default
 * <state_dir>/images);
 * the unpacking child runs as uid_base - 1, a uid no sandbox gets.
 *
 * Exit status: 0 done (or already in the store), 1 refused or failed,
 * 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "vsb_config.h"
#include "vsb_image.h"
#include "vsb_image_store.h"

#define VSB_IMAGECTL_CONF  "/etc/veto-sandbox/sandbox-helper.conf"


static void
vsb_imagectl_usage(void)
{
    fprintf(stderr,
        "usage: sandbox-imagectl [-c CONF] [-S STORE] [-u UNPACK_UID] "
        "COMMAND\n"
        "  import [--description TEXT] [--max-entries N] "
        "[--max-file-bytes N]\n"
        "         [--max-bytes N] [--max-layers N] [--timeout SECONDS] "
        "SOURCE DIGEST\n"
        "  list\n"
        "  inspect DIGEST\n"
        "  remove DIGEST\n"
        "SOURCE: an OCI image layout directory or tarball; DIGEST: "
        "sha256:<64 hex> of its manifest (tags are refused)\n");
}


/* A decimal with an optional K, M, G or T (binary) suffix, capped. */
static int
vsb_imagectl_num(const char *s, uint64_t max, uint64_t *out)
{
    char      *end;
    uint64_t   v, mul = 1;

    errno = 0;
    if (*s < '0' || *s > '9') {
        return -1;
    }

    v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }

    switch (*end) {
    case 'K': mul = 1ULL << 10; end++; break;
    case 'M': mul = 1ULL << 20; end++; break;
    case 'G': mul = 1ULL << 30; end++; break;
    case 'T': mul = 1ULL << 40; end++; break;
    }

    if (*end != '\0' || v == 0 || v > max / mul) {
        return -1;
    }

    *out = v * mul;
    return 0;
}


static int
vsb_imagectl_print(json_t *j)
{
    char  *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);

    if (s == NULL) {
        return -1;
    }

    printf("%s\n", s);
    free(s);
    return fflush(stdout) == 0 ? 0 : -1;
}


static int
vsb_imagectl_import(vsb_image_store_t *st, int argc, char **argv)
{
    static const struct option  opts[] = {
        { "description", required_argument, NULL, 'd' },
        { "max-entries", required_argument, NULL, 'e' },
        { "max-file-bytes", required_argument, NULL, 'f' },
        { "max-bytes", required_argument, NULL, 'b' },
        { "max-layers", required_argument, NULL, 'l' },
        { "timeout", required_argument, NULL, 't' },
        { NULL, 0, NULL, 0 },
    };
    vsb_image_import_t  req;
    json_t             *meta = NULL, *s;
    char                err[2048];
    int                 opt, rc;
    uint64_t           *field, max;

    memset(&req, 0, sizeof(req));
    vsb_image_limits_default(&req.lim);

    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            if (strlen(optarg) > VSB_IMAGE_DESC_MAX) {
                fprintf(stderr, "sandbox-imagectl: --description longer "
                        "than %d bytes\n", VSB_IMAGE_DESC_MAX);
                return 2;
            }
            req.description = optarg;
            continue;
        case 'e':
            field = &req.lim.max_entries;
            max = VSB_IMAGE_ABS_ENTRIES;
            break;
        case 'f':
            field = &req.lim.max_file_bytes;
            max = VSB_IMAGE_ABS_FILE_BYTES;
            break;
        case 'b':
            field = &req.lim.max_bytes;
            max = VSB_IMAGE_ABS_BYTES;
            break;
        case 'l':
            field = &req.lim.max_layers;
            max = VSB_IMAGE_ABS_LAYERS;
            break;
        case 't':
            field = &req.lim.max_seconds;
            max = VSB_IMAGE_ABS_SECONDS;
            break;
        default:
            vsb_imagectl_usage();
            return 2;
        }

        if (vsb_imagectl_num(optarg, max, field) != 0) {
            fprintf(stderr, "sandbox-imagectl: --%s \"%s\": a number from "
                    "1 to %llu is needed\n", opts[opt == 'e' ? 1
                    : opt == 'f' ? 2 : opt == 'b' ? 3 : opt == 'l' ? 4 : 5]
                    .name, optarg, (unsigned long long) max);
            return 2;
        }
    }

    if (argc - optind != 2) {
        vsb_imagectl_usage();
        return 2;
    }

    req.source = argv[optind];
    req.digest = argv[optind + 1];

    rc = vsb_image_import(st, &req, &meta, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "sandbox-imagectl: import %s: %s\n", req.digest, err);
        return 1;
    }

    if (rc == 1) {
        fprintf(stderr, "sandbox-imagectl: %s is already in the store\n",
                req.digest);
        return 0;
    }

    s = json_object_get(meta, "stats");
    fprintf(stderr, "sandbox-imagectl: imported %s: %lld entries; dropped "
            "%lld setuid/setgid bits, %lld device nodes or fifos\n",
            req.digest,
            (long long) json_integer_value(json_object_get(s, "entries")),
            (long long) json_integer_value(json_object_get(s,
                                                      "setid_dropped")),
            (long long) json_integer_value(json_object_get(s,
                                                      "specials_dropped")));

    rc = vsb_imagectl_print(meta) == 0 ? 0 : 1;
    json_decref(meta);
    return rc;
}


int
main(int argc, char **argv)
{
    vsb_image_store_t   st;
    vsb_config_t       *cf;
    const char         *conf = NULL, *store = NULL, *cmd;
    char                err[2048], dir[2048];
    json_t             *j;
    uint64_t            uid = 0;
    int                 opt, rc;

    while ((opt = getopt(argc, argv, "+c:S:u:h")) != -1) {
        switch (opt) {
        case 'c':
            conf = optarg;
            break;
        case 'S':
            store = optarg;
            break;
        case 'u':
            if (vsb_imagectl_num(optarg, (uid_t) -2, &uid) != 0) {
                fprintf(stderr, "sandbox-imagectl: -u \"%s\": not a uid\n",
                        optarg);
                return 2;
            }
            break;
        default:
            vsb_imagectl_usage();
            return 2;
        }
    }

    if (optind >= argc) {
        vsb_imagectl_usage();
        return 2;
    }

    cf = calloc(1, sizeof(*cf));
    if (cf == NULL) {
        fprintf(stderr, "sandbox-imagectl: out of memory\n");
        return 1;
    }

    if (conf == NULL && access(VSB_IMAGECTL_CONF, R_OK) == 0) {
        conf = VSB_IMAGECTL_CONF;
    }

    if (vsb_config_load(conf, cf, err, sizeof(err)) != 0) {
        fprintf(stderr, "sandbox-imagectl: %s\n", err);
        return 1;
    }

    if (store == NULL && cf->image_store[0] != '\0') {
        if ((size_t) snprintf(dir, sizeof(dir), "%.4000s", cf->image_store)
            >= sizeof(dir))
        {
            fprintf(stderr, "sandbox-imagectl: image_store too long\n");
            return 1;
        }
        store = dir;

    } else if (store == NULL) {
        if ((size_t) snprintf(dir, sizeof(dir), "%s/images", cf->state_dir)
            >= sizeof(dir))
        {
            fprintf(stderr, "sandbox-imagectl: state_dir too long\n");
            return 1;
        }
        store = dir;
    }

    if (uid == 0) {
        uid = (uint64_t) cf->uid_base - 1;
    }

    free(cf);

    if (geteuid() != 0) {
        fprintf(stderr, "sandbox-imagectl: the image store is root's: run "
                "as root\n");
        return 1;
    }

    if (vsb_image_store_init(&st, store, (uid_t) uid, err, sizeof(err))
        != 0)
    {
        fprintf(stderr, "sandbox-imagectl: %s\n", err);
        return 1;
    }

    cmd = argv[optind];
    argc -= optind;
    argv += optind;

    if (strcmp(cmd, "import") == 0) {
        return vsb_imagectl_import(&st, argc, argv);
    }

    if (strcmp(cmd, "list") == 0 && argc == 1) {
        if (vsb_image_list(&st, &j, err, sizeof(err)) != 0) {
            fprintf(stderr, "sandbox-imagectl: list: %s\n", err);
            return 1;
        }
        rc = vsb_imagectl_print(j) == 0 ? 0 : 1;
        json_decref(j);
        return rc;
    }

    if (strcmp(cmd, "inspect") == 0 && argc == 2) {
        if (vsb_image_meta(&st, argv[1], &j, err, sizeof(err)) != 0) {
            fprintf(stderr, "sandbox-imagectl: inspect: %s\n", err);
            return 1;
        }
        rc = vsb_imagectl_print(j) == 0 ? 0 : 1;
        json_decref(j);
        return rc;
    }

    if (strcmp(cmd, "remove") == 0 && argc == 2) {
        if (vsb_image_remove(&st, argv[1], err, sizeof(err)) != 0) {
            fprintf(stderr, "sandbox-imagectl: remove: %s\n", err);
            return 1;
        }
        fprintf(stderr, "sandbox-imagectl: removed %s\n", argv[1]);
        return 0;
    }

    vsb_imagectl_usage();
    return 2;
}
