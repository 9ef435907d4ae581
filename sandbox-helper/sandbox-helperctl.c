/*
 * sandbox-helperctl: send one request to the helper, print the reply.
 *
 *     sandbox-helperctl [-s SOCKET] [-i INFILE|-] [-o OUTFILE] 'JSON'
 *
 * The request payload is read from INFILE ("-": stdin), the reply JSON is
 * printed on stdout as one line, the reply payload written to OUTFILE.
 * Exit status: 0 ok:true, 1 ok:false, 2 transport or usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "vsb_frame.h"

#define VSB_CTL_DEFAULT_SOCKET  "/run/veto-sandbox/helper.sock"


static void
vsb_ctl_usage(void)
{
    fprintf(stderr,
            "usage: sandbox-helperctl [-s SOCKET] [-i INFILE|-] "
            "[-o OUTFILE] 'JSON'\n"
            "  e.g. sandbox-helperctl '{\"op\":\"ping\"}'\n");
}


static int
vsb_ctl_read_all(int fd, unsigned char **out, size_t *outlen)
{
    unsigned char  *buf = NULL, *nb;
    size_t          cap = 0, len = 0;
    ssize_t         n;

    for ( ;; ) {
        if (len == cap) {
            if (cap >= VSB_MAX_PAYLOAD + (size_t) 1) {
                fprintf(stderr, "sandbox-helperctl: input larger than "
                        "%d bytes\n", VSB_MAX_PAYLOAD);
                free(buf);
                return -1;
            }
            cap = cap ? cap * 2 : 65536;
            nb = realloc(buf, cap);
            if (nb == NULL) {
                fprintf(stderr, "sandbox-helperctl: out of memory\n");
                free(buf);
                return -1;
            }
            buf = nb;
        }

        n = read(fd, buf + len, cap - len);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "sandbox-helperctl: read(input): %s\n",
                    strerror(errno));
            free(buf);
            return -1;
        }
        if (n == 0) {
            break;
        }
        len += (size_t) n;
    }

    *out = buf;
    *outlen = len;
    return 0;
}


static int
vsb_ctl_write_all(int fd, const unsigned char *p, size_t len,
    const char *what)
{
    ssize_t  n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            /* The helper refused early; its reply says why. */
            if (errno != EPIPE && errno != ECONNRESET) {
                fprintf(stderr, "sandbox-helperctl: write(%s): %s\n", what,
                        strerror(errno));
            }
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }

    return 0;
}


int
main(int argc, char **argv)
{
    const char          *sock = VSB_CTL_DEFAULT_SOCKET, *in = NULL;
    const char          *outfile = NULL, *json;
    unsigned char       *payload = NULL, *head, buf[65536];
    size_t               plen = 0, hlen, used, want;
    struct sockaddr_un   sa;
    vsb_frame_parser_t   p;
    vsb_frame_rc_t       rc;
    json_t              *reply, *ok;
    json_error_t         jerr;
    ssize_t              n;
    int                  opt, fd, ofd, status;

    while ((opt = getopt(argc, argv, "s:i:o:h")) != -1) {
        switch (opt) {
        case 's':
            sock = optarg;
            break;
        case 'i':
            in = optarg;
            break;
        case 'o':
            outfile = optarg;
            break;
        default:
            vsb_ctl_usage();
            return 2;
        }
    }

    if (optind != argc - 1) {
        vsb_ctl_usage();
        return 2;
    }

    json = argv[optind];

    if (in != NULL) {
        fd = strcmp(in, "-") == 0 ? 0 : open(in, O_RDONLY | O_CLOEXEC);
        if (fd == -1) {
            fprintf(stderr, "sandbox-helperctl: open(\"%s\"): %s\n", in,
                    strerror(errno));
            return 2;
        }
        if (vsb_ctl_read_all(fd, &payload, &plen) != 0) {
            return 2;
        }
        if (plen > VSB_MAX_PAYLOAD) {
            fprintf(stderr, "sandbox-helperctl: input larger than %d "
                    "bytes\n", VSB_MAX_PAYLOAD);
            return 2;
        }
        if (fd != 0) {
            close(fd);
        }
    }

    head = vsb_frame_encode_head(json, strlen(json), plen, &hlen);
    if (head == NULL) {
        fprintf(stderr, "sandbox-helperctl: request JSON empty or larger "
                "than %d bytes\n", VSB_MAX_JSON);
        return 2;
    }

    if (strlen(sock) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "sandbox-helperctl: socket path too long\n");
        return 2;
    }

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        fprintf(stderr, "sandbox-helperctl: socket(): %s\n", strerror(errno));
        return 2;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);

    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == -1) {
        fprintf(stderr, "sandbox-helperctl: connect(\"%s\"): %s\n", sock,
                strerror(errno));
        return 2;
    }

    /* The helper may answer early (e.g. not_permitted) and close. */
    (void) signal(SIGPIPE, SIG_IGN);

    if (vsb_ctl_write_all(fd, head, hlen, "request") != 0
        || (plen > 0
            && vsb_ctl_write_all(fd, payload, plen, "request payload") != 0))
    {
        /* Fall through: a reply may still be waiting. */
    }

    free(head);
    free(payload);

    vsb_frame_init(&p, VSB_MAX_JSON, VSB_MAX_PAYLOAD);

    for ( ;; ) {
        want = vsb_frame_need(&p);
        if (want > sizeof(buf)) {
            want = sizeof(buf);
        }

        n = read(fd, buf, want);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "sandbox-helperctl: read(reply): %s\n",
                    strerror(errno));
            return 2;
        }
        if (n == 0) {
            fprintf(stderr, "sandbox-helperctl: connection closed before a "
                    "complete reply\n");
            return 2;
        }

        rc = vsb_frame_feed(&p, buf, (size_t) n, &used);
        if (rc == VSB_FRAME_ERROR) {
            fprintf(stderr, "sandbox-helperctl: bad reply frame: %s\n",
                    p.detail);
            return 2;
        }
        if (rc == VSB_FRAME_DONE) {
            break;
        }
    }

    close(fd);

    reply = json_loadb(vsb_frame_json(&p), p.json_len, 0, &jerr);
    if (reply == NULL || !json_is_object(reply)) {
        fprintf(stderr, "sandbox-helperctl: reply is not a JSON object\n");
        return 2;
    }

    printf("%s\n", vsb_frame_json(&p));
    fflush(stdout);

    if (outfile != NULL) {
        ofd = strcmp(outfile, "-") == 0
              ? 1
              : open(outfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (ofd == -1) {
            fprintf(stderr, "sandbox-helperctl: open(\"%s\"): %s\n", outfile,
                    strerror(errno));
            return 2;
        }
        if (vsb_ctl_write_all(ofd, vsb_frame_payload(&p), p.payload_len,
                              outfile) != 0)
        {
            return 2;
        }
        if (ofd != 1 && close(ofd) == -1) {
            fprintf(stderr, "sandbox-helperctl: close(\"%s\"): %s\n",
                    outfile, strerror(errno));
            return 2;
        }
    }

    ok = json_object_get(reply, "ok");
    status = json_is_true(ok) ? 0 : 1;

    json_decref(reply);
    vsb_frame_reset(&p);
    return status;
}
