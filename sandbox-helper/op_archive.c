/*
 * Archives into and out of a sandbox's workspace: extract_archive and
 * export_archive.  The archive is parsed only inside the sandbox, by an
 * exec of the profile's GNU tar: the workload's user, the sandbox's
 * namespaces, seccomp filter and limits.  Its options keep an archive
 * from doing what the workload itself could not, and from what it could
 * but should not: no owners, no setuid, setgid or sticky bits (the rest
 * of a mode is kept, under umask 022), existing directories left as they
 * are, no xattrs, ACLs or SELinux labels; "..", absolute names and links
 * leading out are GNU tar's to refuse or make relative.  The helper only
 * moves bytes: the upload from the request's payload to tar's stdin
 * (never held whole), tar's stdout to event frames for an export.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include <openssl/evp.h>

#include "vsb_exec.h"
#include "vsb_files.h"
#include "vsb_hex.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_registry.h"

#define VSB_ARCHIVE_SNIFF       6           /* the longest magic */
#define VSB_ARCHIVE_STDERR      4096        /* of tar's, kept for a reply */
#define VSB_ARCHIVE_FULL_BYTES  (1024 * 1024)

typedef struct {
    const char           *name;
    const char           *option;           /* tar's; NULL: plain */
    unsigned char         magic[VSB_ARCHIVE_SNIFF];
    size_t                magic_len;
} vsb_archive_format_t;

static const vsb_archive_format_t  vsb_archive_formats[] = {
    { "tar", NULL, { 0 }, 0 },
    { "tar.gz", "--gzip", { 0x1f, 0x8b }, 2 },
    { "tar.zst", "--zstd", { 0x28, 0xb5, 0x2f, 0xfd }, 4 },
    { "tar.xz", "--xz", { 0xfd, '7', 'z', 'X', 'Z', 0x00 }, 6 },
};

#define VSB_ARCHIVE_NFORMATS \
    (sizeof(vsb_archive_formats) / sizeof(vsb_archive_formats[0]))

/* What makes an archive do only what its bytes say, inside the workspace:
 * see the top of this file. */
static const char *const  vsb_archive_extract_opts[] = {
    "--no-same-owner", "--no-same-permissions", "--no-overwrite-dir",
    "--delay-directory-restore", "--no-xattrs", "--no-acls",
    "--no-selinux", NULL
};

static const char *const  vsb_archive_export_opts[] = {
    "--sparse", "--numeric-owner", "--owner=0", "--group=0", "--no-xattrs",
    "--no-acls", "--no-selinux", NULL
};

typedef struct {
    vsb_pending_t                p;         /* first: c->op points here */
    char                         sb_id[VSB_SANDBOX_ID_LEN + 1];
    int                          export;
    const vsb_archive_format_t  *fmt;       /* NULL: not sniffed yet */
    char                         path[VSB_MAX_PATH + 1];
    json_t                      *argv;

    EVP_MD_CTX                  *sha;
    uint64_t                     size;      /* archive bytes so far */

    /* extract: payload bytes not yet taken by tar's stdin */
    unsigned char                stage[VSB_STREAM_CHUNK];
    size_t                       stage_len;
    size_t                       stage_off;

    vsb_outcap_t                 errcap;    /* tar's stderr */

    /* its end */
    int                          exited, exit_code, signaled, signo;
    int                          timed_out, oom_killed;
    char                         error[256];    /* setup failure */

    unsigned                     started:1;
    unsigned                     input_done:1;
    unsigned                     exec_done:1;
    unsigned                     stdin_closed:1;
    unsigned                     no_space:1;
    unsigned                     too_large:1;
    unsigned                     ending:1;  /* the sandbox: p.sb may be
                                               gone, never touched */
} vsb_archive_t;

static const vsb_pending_hooks_t  vsb_archive_hooks;

/* live archive ops: an upload may outlive its tar (and its sandbox), the
 * rest of the payload still arriving */
static vsb_pending_t  *vsb_archives;


/* ---- shared -------------------------------------------------------- */


static const vsb_archive_format_t *
vsb_archive_format(const char *name)
{
    size_t  i;

    for (i = 0; i < VSB_ARCHIVE_NFORMATS; i++) {
        if (strcmp(vsb_archive_formats[i].name, name) == 0) {
            return &vsb_archive_formats[i];
        }
    }

    return NULL;
}


/* From the first bytes: a compressor's magic, else plain tar (for which
 * tar decides). */
static const vsb_archive_format_t *
vsb_archive_sniff(const unsigned char *p, size_t len)
{
    size_t  i;

    for (i = 1; i < VSB_ARCHIVE_NFORMATS; i++) {
        if (len >= vsb_archive_formats[i].magic_len
            && memcmp(p, vsb_archive_formats[i].magic,
                      vsb_archive_formats[i].magic_len) == 0)
        {
            return &vsb_archive_formats[i];
        }
    }

    return &vsb_archive_formats[0];
}


static void
vsb_archive_free(vsb_archive_t *a)
{
    vsb_pending_t  **pp;

    for (pp = &vsb_archives; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == &a->p) {
            *pp = a->p.next;
            break;
        }
    }

    json_decref(a->argv);
    EVP_MD_CTX_free(a->sha);
    vsb_outcap_free(&a->errcap);
    free(a);
}


static int
vsb_archive_sha_hex(vsb_archive_t *a, char out[65])
{
    unsigned char  md[EVP_MAX_MD_SIZE];
    unsigned int   len;

    if (EVP_DigestFinal_ex(a->sha, md, &len) != 1) {
        return -1;
    }

    return vsb_sha256_md_hex(md, len, out);
}


/* tar's stderr as text for a reply: head and tail, printable ASCII (tar
 * runs with LC_ALL=C and quotes names), anything else as '?'. */
static json_t *
vsb_archive_stderr(const vsb_archive_t *a)
{
    vsb_outcap_view_t  v;
    unsigned char     *kept;
    char              *s;
    size_t             i, n;
    int                m;
    json_t            *j;

    vsb_outcap_view(&a->errcap, &v);
    if (v.len == 0) {
        return NULL;
    }

    kept = malloc(v.len);
    s = malloc(v.len + 64);
    if (kept == NULL || s == NULL) {
        free(kept);
        free(s);
        return NULL;
    }

    /* head, a mark where the middle was left out, tail */
    vsb_outcap_copy(&v, kept);
    memcpy(s, kept, v.head_len);
    n = v.head_len;
    if (v.dropped > 0) {
        m = snprintf(s + n, 64, "\n[... %llu bytes ...]\n",
                     (unsigned long long) v.dropped);
        n += m > 0 && m < 64 ? (size_t) m : 0;
    }
    memcpy(s + n, kept + v.head_len, v.len - v.head_len);
    n += v.len - v.head_len;
    free(kept);

    for (i = 0; i < n; i++) {
        if (((unsigned char) s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
            || (unsigned char) s[i] >= 0x7f)
        {
            s[i] = '?';
        }
    }

    j = json_stringn(s, n);
    free(s);
    return j;
}


/* Keeps tar's stderr, and watches for a full disk: tar would go on with
 * every other member, failing each (a bomb: for as long as it takes to
 * decompress it).  Whatever it complains about, once its line is out, if
 * the sandbox's disk (blocks or inodes) is full, it is stopped at once. */
static void
vsb_archive_watch(vsb_archive_t *a, vsb_exec_t *ex, const unsigned char *p,
    size_t len)
{
    struct statfs  st;

    vsb_outcap_add(&a->errcap, p, len);

    if (a->no_space || memchr(p, '\n', len) == NULL
        || statfs(a->p.sb->dir, &st) != 0)
    {
        return;
    }

    if ((uint64_t) st.f_bavail * (uint64_t) st.f_bsize
        < VSB_ARCHIVE_FULL_BYTES || (st.f_files > 0 && st.f_ffree == 0))
    {
        a->no_space = 1;
        vsb_exec_cancel(ex);
    }
}


static void
vsb_archive_reply(vsb_archive_t *a)
{
    vsb_conn_t  *c = a->p.conn;
    vsb_error_t  e;
    json_t      *reply, *err;
    char         sha[65];
    int          ok;

    if (c == NULL) {
        return;
    }

    c->op = NULL;
    a->p.conn = NULL;
    memset(&e, 0, sizeof(e));

    ok = 0;

    if (a->ending) {
        vsb_error_set(&e, VSB_E_BUSY, "id", "sandbox %s is being destroyed",
                      a->sb_id);

    } else if (a->error[0] != '\0') {
        vsb_error_set(&e, VSB_E_EXEC_FAILED, NULL, "%s", a->error);

    } else if (a->too_large) {
        vsb_error_set(&e, VSB_E_FILE_TOO_LARGE, "path", "the archive of "
                      "\"%.200s\" exceeds max_archive_bytes %llu",
                      a->path, (unsigned long long) vsb_cf.max_archive_bytes);
        e.limit = VSB_LIMIT_ARCHIVE_BYTES;

    } else if (a->no_space || (a->signaled && a->signo == SIGXFSZ)) {
        vsb_error_set(&e, VSB_E_NO_SPACE, "path", "the sandbox's disk "
                      "(disk_mb %llu) is full: %s stopped",
                      (unsigned long long) a->p.sb->limits.disk_mb,
                      a->export ? "the export" : "extraction");
        e.limit = VSB_LIMIT_DISK_MB;

    } else if (a->timed_out) {
        vsb_error_set(&e, VSB_E_TIMED_OUT, NULL, "tar did not finish within "
                      "the sandbox's timeout_s %llu: %s stopped",
                      (unsigned long long) a->p.sb->limits.timeout_s,
                      a->export ? "the export" : "extraction");
        e.limit = VSB_LIMIT_TIMEOUT_S;

    } else if (a->oom_killed) {
        vsb_error_set(&e, VSB_E_EXEC_FAILED, NULL, "tar ran out of memory "
                      "(the sandbox's memory_mb %llu)",
                      (unsigned long long) a->p.sb->limits.memory_mb);

    } else if (a->exited && a->exit_code == 127) {
        vsb_error_set(&e, VSB_E_EXEC_FAILED, NULL, "the sandbox's profile "
                      "\"%s\" has no tar (or no %s) to run",
                      a->p.sb->profile->name,
                      a->fmt && a->fmt->option ? a->fmt->option + 2 : "tar");

    } else if (a->exited && (a->exit_code == 0
                             || (a->export && a->exit_code == 1)))
    {
        /* export: 1 is "a file changed as we read it", said on stderr */
        ok = 1;

    } else if (a->export) {
        vsb_error_set(&e, VSB_E_IO, "path", "tar could not archive \"%.200s\""
                      " (exit %d, signal %d): see stderr", a->path,
                      a->exited ? a->exit_code : -1,
                      a->signaled ? a->signo : 0);

    } else {
        vsb_error_set(&e, VSB_E_BAD_ARCHIVE, NULL, "tar refused the archive "
                      "or part of it (exit %d, signal %d)%s; what came before "
                      "the error is extracted",
                      a->exited ? a->exit_code : -1,
                      a->signaled ? a->signo : 0,
                      a->errcap.total ? ": see stderr" : ", without a word");
    }

    if (!ok) {
        reply = vsb_error_json(vsb_pending_rid(&a->p), &e);
    } else {
        reply = vsb_ok(vsb_pending_rid(&a->p));
        if (reply != NULL) {
            /* the workspace itself as a client names it (?path=.) */
            json_object_set_new(reply, "path",
                                json_string(a->path[0] ? a->path : "."));
            json_object_set_new(reply, "format",
                                json_string(a->fmt->name));
            json_object_set_new(reply, "size",
                                json_integer((json_int_t) a->size));
            if (vsb_archive_sha_hex(a, sha) == 0) {
                json_object_set_new(reply, "sha256", json_string(sha));
            }
        }
    }

    if (reply != NULL && (err = vsb_archive_stderr(a)) != NULL) {
        json_object_set_new(reply, "stderr", err);
    }

    vsb_log(VSB_LOG_INFO, "sandbox %s: %s \"%s\" (%s, %llu bytes): %s%s%s",
            a->sb_id, a->export ? "export" : "extract", a->path,
            a->fmt ? a->fmt->name : "?", (unsigned long long) a->size,
            ok ? "ok" : e.error, ok ? "" : ": ", ok ? "" : e.detail);

    vsb_conn_reply(c, reply, NULL, 0);
}


/* Both ends are over (or the client left): answer, free. */
static void
vsb_archive_check(vsb_archive_t *a)
{
    if (a->started && !a->exec_done) {
        return;
    }

    if (!a->input_done && a->p.conn != NULL) {
        return;
    }

    vsb_archive_reply(a);
    vsb_archive_free(a);
}


static void
vsb_archive_done(vsb_exec_t *ex, const vsb_exec_result_t *res, void *data)
{
    vsb_archive_t  *a = data;

    a->p.ex = NULL;
    a->exec_done = 1;
    a->stdin_closed = 1;
    a->exited = res->exited;
    a->exit_code = res->exit_code;
    a->signaled = res->signaled;
    a->signo = res->signo;
    a->timed_out = res->timed_out;
    a->oom_killed = res->oom_killed;

    if (res->error != NULL) {
        snprintf(a->error, sizeof(a->error), "%s", res->detail);
    }

    vsb_archive_check(a);
}


static void
vsb_archive_detach(vsb_pending_t *p)
{
    vsb_archive_t  *a = (vsb_archive_t *) p;

    if (a->p.ex != NULL) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: client gone, stopping the %s's "
                "tar", a->sb_id, a->export ? "export" : "extraction");
        vsb_exec_cancel(a->p.ex);
        return;                 /* freed when its end is confirmed */
    }

    vsb_archive_check(a);
}


/* Runs tar in the sandbox: argv, the helper's own environment. */
static int
vsb_archive_start(vsb_archive_t *a, const char *const *opts,
    vsb_exec_output_pt output, vsb_exec_stdin_pt stdin_ready)
{
    vsb_exec_request_t   req;
    json_t              *env;
    char                 dir[VSB_MAX_PATH + sizeof("/workspace/")];
    size_t               i;

    snprintf(dir, sizeof(dir), "/workspace%s%s", a->path[0] ? "/" : "",
             a->path);

    a->argv = json_pack("[s, s, s, s, s]", "tar",
                        a->export ? "--create" : "--extract",
                        "--file=-", "--directory", dir);
    env = json_pack("{s:s}", "LC_ALL", "C");

    for (i = 0; a->argv != NULL && opts[i] != NULL; i++) {
        json_array_append_new(a->argv, json_string(opts[i]));
    }
    if (a->argv != NULL && a->fmt->option != NULL) {
        json_array_append_new(a->argv, json_string(a->fmt->option));
    }
    if (a->argv != NULL && a->export) {
        json_array_append_new(a->argv, json_string("."));
    }

    if (a->argv == NULL || env == NULL) {
        json_decref(env);
        snprintf(a->error, sizeof(a->error), "out of memory");
        return -1;
    }

    memset(&req, 0, sizeof(req));
    req.argv = a->argv;
    req.cwd = "/workspace";
    req.env = env;
    req.own_env = 1;
    req.timeout_s = 0;                  /* the sandbox's */
    req.stdin_stream = !a->export;
    req.stream_stdout = 1;
    req.stream_stderr = 1;
    req.output = output;
    req.stdin_ready = stdin_ready;

    a->started = 1;
    a->p.ex = vsb_exec_start(a->p.sb, &req, vsb_archive_done, a, a->error,
                             sizeof(a->error));
    json_decref(env);

    if (a->p.ex == NULL) {
        a->started = 0;
        if (a->error[0] == '\0') {
            snprintf(a->error, sizeof(a->error), "tar could not start");
        }
        return -1;
    }

    return 0;
}


/* Common checks and the record of an archive op; NULL: replied. */
static vsb_archive_t *
vsb_archive_new(vsb_conn_t *c, const vsb_request_t *r, int export,
    vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    vsb_archive_t  *a;

    sb = vsb_find_running(r, e);
    if (sb == NULL) {
        return NULL;
    }

    if (vsb_execs_running(sb) >= vsb_cf.max_execs_per_sandbox) {
        vsb_error_set(e, VSB_E_BUSY, NULL, "sandbox %s already runs %u "
                      "execs, the maximum (tar would be one more)", sb->id,
                      vsb_execs_running(sb));
        e->limit = VSB_LIMIT_EXECS;
        return NULL;
    }

    /* extract: make the directory; export: it must be one */
    if (vsb_files_dir(sb, r->path, !export, e) != 0) {
        return NULL;
    }

    a = calloc(1, sizeof(*a));
    if (a == NULL || (a->sha = EVP_MD_CTX_new()) == NULL
        || EVP_DigestInit_ex(a->sha, EVP_sha256(), NULL) != 1)
    {
        if (a != NULL) {
            EVP_MD_CTX_free(a->sha);
            free(a);
        }
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }

    a->p.kind = VSB_PENDING_ARCHIVE;
    a->p.conn = c;
    a->p.sb = sb;
    a->p.hooks = &vsb_archive_hooks;
    a->p.next = vsb_archives;
    vsb_archives = &a->p;
    snprintf(a->sb_id, sizeof(a->sb_id), "%s", sb->id);
    if (r->request_id != NULL) {
        snprintf(a->p.request_id, sizeof(a->p.request_id), "%s",
                 r->request_id);
        a->p.has_request_id = 1;
    }
    a->export = export;
    snprintf(a->path, sizeof(a->path), "%s", r->path);
    vsb_outcap_init(&a->errcap, VSB_ARCHIVE_STDERR);

    if (r->format != NULL) {
        a->fmt = vsb_archive_format(r->format);
    }

    return a;
}


static int
vsb_req_archive(json_t *root, const char *what, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "path",
        "format", NULL
    };

    if (vsb_req_sandbox_ref(root, allowed, what, r, e) != 0
        || vsb_req_ws_path(root, "path", 0, 1, r, e) != 0
        || vsb_req_string(root, "format", 0, 16, &r->format, e) != 0)
    {
        return -1;
    }

    if (r->format != NULL && vsb_archive_format(r->format) == NULL) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "format",
                             "\"format\" must be \"tar\", \"tar.gz\", "
                             "\"tar.zst\" or \"tar.xz\"");
    }

    return 0;
}


/* ---- extract --------------------------------------------------------- */


static void
vsb_extract_output(vsb_exec_t *ex, int stream, uint64_t offset,
    const unsigned char *data, size_t len, void *udata)
{
    vsb_archive_t  *a = udata;

    /* tar -x says nothing on stdout; stderr is what went wrong */
    if (stream == VSB_EXEC_STDERR) {
        vsb_archive_watch(a, ex, data, len);
    }
}


/* Moves staged bytes into tar's stdin; closes it after the last. */
static void
vsb_extract_flush(vsb_archive_t *a)
{
    ssize_t  n;

    while (a->stage_len > 0 && !a->stdin_closed && a->p.ex != NULL) {
        n = vsb_exec_stdin_write(a->p.ex, a->stage + a->stage_off,
                                 a->stage_len);
        if (n == 0) {
            return;             /* vsb_extract_stdin_ready() */
        }
        if (n < 0) {
            a->stdin_closed = 1;    /* tar is done reading: drop the rest */
            break;
        }
        a->stage_off += (size_t) n;
        a->stage_len -= (size_t) n;
    }

    a->stage_len = 0;
    a->stage_off = 0;

    if (a->input_done && !a->stdin_closed && a->p.ex != NULL) {
        vsb_exec_stdin_close(a->p.ex);
        a->stdin_closed = 1;
    }

    if (a->p.conn != NULL) {
        vsb_conn_resume_input(a->p.conn);
    }
}


static void
vsb_extract_stdin_ready(vsb_exec_t *ex, void *udata)
{
    vsb_extract_flush(udata);
}


static size_t
vsb_extract_room(vsb_pending_t *p)
{
    vsb_archive_t  *a = (vsb_archive_t *) p;

    /* before tar runs, the first bytes gather to tell the format */
    if (!a->started) {
        return sizeof(a->stage) - a->stage_len;
    }

    /* the next chunk only once tar took the last one */
    return a->stage_len == 0 ? sizeof(a->stage) : 0;
}


static void
vsb_extract_input(vsb_pending_t *p, const unsigned char *data, size_t len,
    int last)
{
    vsb_archive_t  *a = (vsb_archive_t *) p;

    if (len > 0) {
        if (EVP_DigestUpdate(a->sha, data, len) != 1) {
            snprintf(a->error, sizeof(a->error), "SHA-256 failed");
        }
        a->size += len;
    }

    if (len > 0 && !a->stdin_closed && a->error[0] == '\0') {
        /* room() allowed this much: the stage is empty, or holds only the
         * first bytes while the format is sniffed */
        if (a->stage_len + len > sizeof(a->stage)) {
            len = sizeof(a->stage) - a->stage_len;
        }
        memcpy(a->stage + a->stage_off + a->stage_len, data, len);
        a->stage_len += len;
    }

    if (last) {
        a->input_done = 1;
    }

    if (!a->started && a->error[0] == '\0' && !a->ending) {
        if (a->fmt == NULL) {
            if (a->stage_len < VSB_ARCHIVE_SNIFF && !last) {
                return;
            }
            a->fmt = vsb_archive_sniff(a->stage, a->stage_len);
        }

        if (vsb_archive_start(a, vsb_archive_extract_opts,
                              vsb_extract_output, vsb_extract_stdin_ready)
            != 0)
        {
            vsb_log(VSB_LOG_INFO, "sandbox %s: extraction could not start: "
                    "%s", a->sb_id, a->error);
        }
    }

    if ((a->error[0] != '\0' || a->ending) && !a->started) {
        a->stdin_closed = 1;
        a->stage_len = 0;
    }

    vsb_extract_flush(a);
    vsb_archive_check(a);
}


static const vsb_pending_hooks_t  vsb_archive_hooks = {
    .detach = vsb_archive_detach,
    .drained = NULL,
    .room = vsb_extract_room,
    .input = vsb_extract_input,
};


static int
vsb_req_extract_archive(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    return vsb_req_archive(root, VSB_OP_EXTRACT_ARCHIVE, r, e);
}


static void
vsb_op_extract_archive(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_archive_t  *a;

    if (payload_len > vsb_cf.max_archive_bytes) {
        vsb_error_set(e, VSB_E_FILE_TOO_LARGE, NULL, "the archive of %zu "
                      "bytes exceeds max_archive_bytes %llu", payload_len,
                      (unsigned long long) vsb_cf.max_archive_bytes);
        e->limit = VSB_LIMIT_ARCHIVE_BYTES;
        c->close_after = 1;     /* its payload will not be read */
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    a = vsb_archive_new(c, r, 0, e);
    if (a == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    c->op = &a->p;

    /* an empty payload is not streamed: there is no more to come */
    if (c->state != VSB_CONN_STREAMING) {
        vsb_extract_input(&a->p, NULL, 0, 1);
    }
}


const vsb_op_t  vsb_extract_archive_op = {
    .name = VSB_OP_EXTRACT_ARCHIVE,
    .payload = 1,
    .stream_in = 1,
    .while_stopping = 0,
    .parse = vsb_req_extract_archive,
    .handler = vsb_op_extract_archive,
};


/* ---- export -------------------------------------------------------- */


static void
vsb_export_output(vsb_exec_t *ex, int stream, uint64_t offset,
    const unsigned char *data, size_t len, void *udata)
{
    vsb_archive_t  *a = udata;
    unsigned char  *copy;
    json_t         *ev;

    if (stream == VSB_EXEC_STDERR) {
        vsb_archive_watch(a, ex, data, len);
        return;
    }

    if (a->p.conn == NULL || a->too_large) {
        return;
    }

    if (a->size + len > vsb_cf.max_archive_bytes) {
        a->too_large = 1;
        vsb_exec_cancel(ex);
        return;
    }

    copy = malloc(len);
    ev = json_pack("{s:s, s:I}", "event", VSB_EVENT_DATA,
                   "offset", (json_int_t) offset);
    if (copy == NULL || ev == NULL
        || EVP_DigestUpdate(a->sha, data, len) != 1)
    {
        free(copy);
        json_decref(ev);
        snprintf(a->error, sizeof(a->error), "out of memory");
        vsb_exec_cancel(ex);
        return;
    }

    memcpy(copy, data, len);
    a->size += len;
    vsb_conn_event(a->p.conn, ev, copy, len);

    vsb_pending_stream_throttle(&a->p, ex);
}


/* Same shape as extract's hooks and parser above: each op's row names its
 * own (an export is drained, an extract takes input); what both parse is
 * vsb_req_archive()'s. */
static const vsb_pending_hooks_t  vsb_export_hooks = {
    .detach = vsb_archive_detach,
    .drained = vsb_pending_stream_drained,
    .room = NULL,
    .input = NULL,
};


static int
vsb_req_export_archive(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    return vsb_req_archive(root, VSB_OP_EXPORT_ARCHIVE, r, e);
}


static void
vsb_op_export_archive(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_archive_t  *a;

    a = vsb_archive_new(c, r, 1, e);
    if (a == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (a->fmt == NULL) {
        a->fmt = &vsb_archive_formats[0];
    }

    a->p.hooks = &vsb_export_hooks;
    a->input_done = 1;
    c->op = &a->p;

    if (vsb_archive_start(a, vsb_archive_export_opts, vsb_export_output,
                          NULL) != 0)
    {
        vsb_log(VSB_LOG_INFO, "sandbox %s: export could not start: %s",
                a->sb_id, a->error);
    }

    vsb_archive_check(a);
}


const vsb_op_t  vsb_export_archive_op = {
    .name = VSB_OP_EXPORT_ARCHIVE,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_export_archive,
    .handler = vsb_op_export_archive,
};


/* A destroy has begun: the archive ops of sb answer busy from now on and
 * never touch it again (their tar is killed with the sandbox's execs). */
void
vsb_archive_sandbox_ending(vsb_sandbox_t *sb)
{
    vsb_pending_t  *p;

    for (p = vsb_archives; p != NULL; p = p->next) {
        if (p->sb == sb) {
            ((vsb_archive_t *) p)->ending = 1;
        }
    }
}
