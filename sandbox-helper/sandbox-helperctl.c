/*
 * sandbox-helperctl: send one request to the helper, print the reply.
 *
 *     sandbox-helperctl [-s SOCKET] [-i INFILE|-] [-o OUTFILE] 'JSON'
 *
 * The request payload is read from INFILE ("-": stdin; a regular file is
 * streamed, so an archive may be larger than memory), the reply JSON is
 * printed on stdout as one line, the reply payload written to OUTFILE.
 * Event frames before the reply (a streamed exec, a followed background
 * exec, an export) are written as they come: stderr output to stderr,
 * the rest to OUTFILE.  Exit status: 0 ok:true, 1 ok:false, 2 transport
 * or usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "vsb_fdio.h"
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
    if (vsb_write_full(fd, p, len) != 0) {
        /* The helper refused early; its reply says why. */
        if (errno != EPIPE && errno != ECONNRESET) {
            fprintf(stderr, "sandbox-helperctl: write(%s): %s\n", what,
                    strerror(errno));
        }
        return -1;
    }

    return 0;
}


/* Sends len bytes of fd (a regular file) as they are read. */
static int
vsb_ctl_send_file(int sock, int fd, uint64_t len)
{
    unsigned char  buf[65536];
    ssize_t        n;

    while (len > 0) {
        n = read(fd, buf, len < sizeof(buf) ? (size_t) len : sizeof(buf));
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fprintf(stderr, "sandbox-helperctl: read(input): %s\n",
                    n == 0 ? "file shrank" : strerror(errno));
            return -1;
        }
        if (vsb_ctl_write_all(sock, buf, (size_t) n, "request payload")
            != 0)
        {
            return -1;
        }
        len -= (uint64_t) n;
    }

    return 0;
}


static int
vsb_ctl_open_out(const char *outfile)
{
    int  ofd;

    if (outfile == NULL) {
        return -1;
    }

    ofd = strcmp(outfile, "-") == 0
          ? 1
          : open(outfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (ofd == -1) {
        fprintf(stderr, "sandbox-helperctl: open(\"%s\"): %s\n", outfile,
                strerror(errno));
    }

    return ofd;
}


/* Reads one frame into p; 0, or -1 after saying why. */
static int
vsb_ctl_read_frame(int fd, vsb_frame_parser_t *p)
{
    unsigned char   buf[65536];
    size_t          want, used;
    ssize_t         n;
    vsb_frame_rc_t  rc;

    for ( ;; ) {
        want = vsb_frame_need(p);
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
            return -1;
        }
        if (n == 0) {
            fprintf(stderr, "sandbox-helperctl: connection closed before a "
                    "complete reply\n");
            return -1;
        }

        rc = vsb_frame_feed(p, buf, (size_t) n, &used);
        if (rc == VSB_FRAME_ERROR) {
            fprintf(stderr, "sandbox-helperctl: bad reply frame: %s\n",
                    p->detail);
            return -1;
        }
        if (rc == VSB_FRAME_DONE) {
            return 0;
        }
    }
}


int
main(int argc, char **argv)
{
    const char          *sock = VSB_CTL_DEFAULT_SOCKET, *in = NULL;
    const char          *outfile = NULL, *json;
    unsigned char       *payload = NULL, *head;
    size_t               plen = 0, hlen;
    uint64_t             flen = 0;
    struct sockaddr_un   sa;
    struct stat          st;
    vsb_frame_parser_t   p;
    json_t              *reply, *ok, *ev;
    json_error_t         jerr;
    int                  opt, fd, infd = -1, ofd = -1, status, efd;

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

        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            if ((uint64_t) st.st_size > VSB_MAX_STREAM_PAYLOAD) {
                fprintf(stderr, "sandbox-helperctl: input larger than %u "
                        "bytes\n", VSB_MAX_STREAM_PAYLOAD);
                return 2;
            }
            infd = fd;
            flen = (uint64_t) st.st_size;

        } else {
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
            flen = plen;
        }
    }

    head = vsb_frame_encode_head(json, strlen(json), 0, &hlen);
    if (head == NULL) {
        fprintf(stderr, "sandbox-helperctl: request JSON empty or larger "
                "than %d bytes\n", VSB_MAX_JSON);
        return 2;
    }
    vsb_frame_put_u32(head + 8, (uint32_t) flen);

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
            && vsb_ctl_write_all(fd, payload, plen, "request payload") != 0)
        || (infd != -1 && vsb_ctl_send_file(fd, infd, flen) != 0))
    {
        /* Fall through: a reply may still be waiting. */
    }

    free(head);
    free(payload);
    if (infd > 0) {
        close(infd);
    }

    if (outfile != NULL && (ofd = vsb_ctl_open_out(outfile)) == -1) {
        return 2;
    }

    vsb_frame_init(&p, VSB_MAX_JSON, VSB_MAX_PAYLOAD);

    /* event frames, then the reply */
    for ( ;; ) {
        if (vsb_ctl_read_frame(fd, &p) != 0) {
            return 2;
        }

        reply = json_loadb(vsb_frame_json(&p), p.json_len, 0, &jerr);
        if (reply == NULL || !json_is_object(reply)) {
            fprintf(stderr, "sandbox-helperctl: reply is not a JSON "
                    "object\n");
            return 2;
        }

        ev = json_object_get(reply, "event");
        if (ev == NULL || json_object_get(reply, "ok") != NULL) {
            break;
        }

        efd = json_is_string(json_object_get(reply, "stream"))
              && strcmp(json_string_value(json_object_get(reply, "stream")),
                        "stderr") == 0 ? 2 : ofd;
        if (efd != -1
            && vsb_ctl_write_all(efd, vsb_frame_payload(&p), p.payload_len,
                                 efd == 2 ? "stderr" : outfile) != 0)
        {
            return 2;
        }

        json_decref(reply);
        vsb_frame_reset(&p);
    }

    close(fd);

    printf("%s\n", vsb_frame_json(&p));
    fflush(stdout);

    if (ofd != -1) {
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
