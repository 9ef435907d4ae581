/*
 * libFuzzer target for what an approval is bound to and what people are
 * shown: the canonical request hash (_hash.c) of an agent's path, query
 * and body, the one query argument a route reads (?path=), and the
 * redaction (_redact.c) of free text before it is stored or shown.
 *
 * The first byte picks the input:
 *
 *   0  a query string: its canonical form is a fixed point (canonical
 *      twice is canonical once), and when ?path= reads a value from it,
 *      the query names that value and nothing else: its canonical form is
 *      that of "path=" and the value, every byte %XX-encoded (so two
 *      queries hashing alike cannot name two files);
 *   1  a path (and, after the first '?', a query): the request hash is
 *      64 lowercase hex digits and changes with the method;
 *   2  a body, split into memory buffers and a spooled temp file at
 *      points the input picks: its digest and length are those of the
 *      bytes, however they are split; when it is JSON, its RFC 8785
 *      (JCS) form is a fixed point (canonical twice is canonical once)
 *      within its bound, and a JSON body's digest is that of the form;
 *   3  a line of free text, then a secret in one of the shapes redaction
 *      promises to hide: the redacted text holds no byte of the secret
 *      (the only 'Q's: the text's own become 'q'), and stays within its
 *      byte bound.  The line has no quote or backslash (its own become
 *      '_'): a quote it opened would run on into the secret's line, and
 *      redaction, a guard against accidents in what people are shown,
 *      does not claim to see through text built to defeat it.
 *
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_hash.c
 * FUZZ-COVERS: ngx_veto_sandbox_module/ngx_http_veto_sandbox_redact.c
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/evp.h>
#include <sys/mman.h>

#include "ngx_http_veto_sandbox_hash.h"
#include "ngx_http_veto_sandbox_redact.h"

#include "ngx_core_stub.h"


enum {
    FUZZ_QUERY = 0,
    FUZZ_PATH,
    FUZZ_BODY,
    FUZZ_REDACT,
    FUZZ_NMODES
};

#define must(cond)  do { if (!(cond)) abort(); } while (0)


static int  body_fd = -1;


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ngx_stub_init();

    body_fd = memfd_create("veto-fuzz-body", 0);
    must(body_fd != -1);

    return 0;
}


static void
canon(ngx_pool_t *pool, u_char *q, size_t len, ngx_str_t *out)
{
    ngx_str_t  in;

    in.data = q;
    in.len = len;

    must(ngx_http_veto_sandbox_hash_canon_query(pool, &in, out) == NGX_OK);
}


static void
fuzz_query(ngx_pool_t *pool, u_char *q, size_t len)
{
    u_char       *p, *e;
    size_t        i;
    ngx_int_t     rc;
    ngx_str_t     args, c1, c2, value;
    const char   *why;

    static const u_char  hex[] = "0123456789ABCDEF";

    canon(pool, q, len, &c1);
    canon(pool, c1.data, c1.len, &c2);
    must(c1.len == c2.len && ngx_memcmp(c1.data, c2.data, c1.len) == 0);

    args.data = q;
    args.len = len;
    why = NULL;

    rc = ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path", &value,
                                              &why);

    if (rc == NGX_ABORT) {
        must(why != NULL);
        return;
    }

    must(rc == NGX_OK || rc == NGX_DECLINED);

    if (rc == NGX_DECLINED) {
        /* nothing but empty parts: no pair to hash either */
        must(c1.len == 0);
        return;
    }

    must(value.data[value.len] == '\0');

    e = ngx_pnalloc(pool, sizeof("path=") - 1 + 3 * value.len);
    must(e != NULL);

    p = ngx_cpymem(e, "path=", sizeof("path=") - 1);

    for (i = 0; i < value.len; i++) {
        *p++ = '%';
        *p++ = hex[value.data[i] >> 4];
        *p++ = hex[value.data[i] & 0xf];
    }

    canon(pool, e, p - e, &c2);
    must(c1.len == c2.len && ngx_memcmp(c1.data, c2.data, c1.len) == 0);
}


static void
fuzz_path(ngx_pool_t *pool, u_char *in, size_t len)
{
    u_char     *q;
    u_char      h1[NGX_HTTP_VSB_HASH_HEX_LEN + 1];
    u_char      h2[NGX_HTTP_VSB_HASH_HEX_LEN + 1];
    u_char      md[32];
    size_t      i;
    ngx_str_t   path, args, get, put, ctxline, cp;

    q = memchr(in, '?', len);

    path.data = in;
    path.len = q ? (size_t) (q - in) : len;
    args.data = q ? q + 1 : in + len;
    args.len = q ? len - path.len - 1 : 0;

    ngx_str_set(&get, "GET");
    ngx_str_set(&put, "PUT");
    ngx_str_set(&ctxline, "sandbox-env 00");
    ngx_memzero(md, sizeof(md));

    must(ngx_http_veto_sandbox_hash_canon_path(pool, &path, &cp) == NGX_OK);

    must(ngx_http_veto_sandbox_hash_request(pool, &get, &path, &args, md, 0,
                                            NULL, h1)
         == NGX_OK);
    must(ngx_http_veto_sandbox_hash_request(pool, &put, &path, &args, md, 0,
                                            &ctxline, h2)
         == NGX_OK);

    for (i = 0; i < NGX_HTTP_VSB_HASH_HEX_LEN; i++) {
        must((h1[i] >= '0' && h1[i] <= '9') || (h1[i] >= 'a' && h1[i] <= 'f'));
    }

    must(h1[NGX_HTTP_VSB_HASH_HEX_LEN] == '\0');
    must(ngx_memcmp(h1, h2, NGX_HTTP_VSB_HASH_HEX_LEN) != 0);
}


/* the input's first byte splits it: the low 4 bits give the number of
 * memory buffers, then the rest goes to the temp file */
static void
fuzz_body(ngx_pool_t *pool, u_char *in, size_t len)
{
    u_char         want[32], got[32];
    off_t          blen;
    size_t         n, i, part, at;
    ngx_buf_t     *b;
    ngx_file_t     file;
    ngx_str_t      c1, c2;
    ngx_int_t      rc, rc2;
    ngx_chain_t   *head, **next, *cl;
    unsigned int   mdlen;

    if (len == 0) {
        return;
    }

    n = in[0] & 0x0f;
    in++;
    len--;

    must(EVP_Digest(in, len, want, &mdlen, EVP_sha256(), NULL) == 1);

    head = NULL;
    next = &head;
    at = 0;
    part = n ? len / (n + 1) : 0;

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.fd = body_fd;
    ngx_str_set(&file.name, "/proc/self/fd/body");
    file.log = ngx_cycle->log;

    for (i = 0; i <= n; i++) {
        b = ngx_pcalloc(pool, sizeof(ngx_buf_t));
        cl = ngx_pcalloc(pool, sizeof(ngx_chain_t));
        must(b != NULL && cl != NULL);

        if (i < n) {
            /* an empty buffer with no memory, as nginx may hand one */
            b->pos = part ? in + at : NULL;
            b->last = part ? in + at + part : NULL;
            b->memory = 1;
            at += part;

        } else {
            /* the rest, spooled, after a few bytes that are not its own */
            must(ftruncate(body_fd, 0) == 0);
            must(pwrite(body_fd, "junk", 4, 0) == 4);
            must(pwrite(body_fd, in + at, len - at, 4)
                 == (ssize_t) (len - at));
            b->in_file = 1;
            b->file = &file;
            b->file_pos = 4;
            b->file_last = 4 + (off_t) (len - at);
        }

        cl->buf = b;
        *next = cl;
        next = &cl->next;
    }

    must(ngx_http_veto_sandbox_hash_body(head, got, &blen, ngx_cycle->log)
         == NGX_OK);
    must(blen == (off_t) len && ngx_memcmp(want, got, 32) == 0);

    /* as a JSON body: its JCS form, however split, is a fixed point
     * within its bound, and the digest is that of the form */
    rc = ngx_http_veto_sandbox_jcs(pool, in, len, &c1);
    must(rc == NGX_OK || rc == NGX_DECLINED);

    if (len > 0 && in[0] == '{') {
        rc2 = ngx_http_veto_sandbox_hash_body_jcs(pool, head, 1 << 20, got,
                                                  &blen, ngx_cycle->log);
        must(rc2 == rc);
    }

    if (rc != NGX_OK) {
        return;
    }

    must(c1.len <= NGX_HTTP_VSB_JCS_MAX(len));
    must(ngx_http_veto_sandbox_jcs(pool, c1.data, c1.len, &c2) == NGX_OK);
    must(c1.len == c2.len && ngx_memcmp(c1.data, c2.data, c1.len) == 0);

    if (len > 0 && in[0] == '{') {
        must(EVP_Digest(c1.data, c1.len, want, &mdlen, EVP_sha256(), NULL)
             == 1);
        must(blen == (off_t) c1.len && ngx_memcmp(want, got, 32) == 0);
    }
}


static void
fuzz_redact(ngx_pool_t *pool, u_char *in, size_t len)
{
    u_char      *text, *p;
    size_t       tlen, i;
    ngx_str_t    t, out;

    /* the only 'Q's of the text: the input's become 'q' */
    static const char   secret[] = "Q3cQ3tV4lu3Qyz";
    static const char  *shapes[] = {
        " password=%s",
        " Authorization: Bearer %s",
        " \"api_key\": \"%s\"",
        "\nBasic %s",
        " token: %s;",
        " session='%s'",
        " eyJhbGciOiJIUzI1NiJ9.eyJ%s.c2ln",
        " ACCESS_KEY = %s&",
    };

    if (len == 0) {
        return;
    }

    tlen = len - 1 + 1 + 64;
    text = ngx_pnalloc(pool, tlen);
    must(text != NULL);

    p = ngx_cpymem(text, in + 1, len - 1);

    for (i = 0; i < len - 1; i++) {
        if (text[i] == 'Q') {
            text[i] = 'q';

        } else if (text[i] == '"' || text[i] == '\'' || text[i] == '\\') {
            text[i] = '_';
        }
    }

    *p++ = '\n';
    p += snprintf((char *) p, 64, shapes[in[0] % (sizeof(shapes)
                                                   / sizeof(shapes[0]))],
                  secret);

    t.data = text;
    t.len = p - text;

    must(ngx_http_veto_sandbox_redact(pool, &t, &out) == NGX_OK);
    must(out.len <= 10 * t.len && out.data[out.len] == '\0');
    must(memchr(out.data, 'Q', out.len) == NULL);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char      *copy;
    ngx_pool_t  *pool;

    if (size == 0) {
        return 0;
    }

    pool = ngx_create_pool(1024, ngx_cycle->log);
    copy = pool ? ngx_pnalloc(pool, size) : NULL;
    must(copy != NULL);

    /* its own allocation, so ASan sees a read past the input */
    ngx_memcpy(copy, data + 1, size - 1);

    switch (data[0] % FUZZ_NMODES) {

    case FUZZ_QUERY:
        fuzz_query(pool, copy, size - 1);
        break;

    case FUZZ_PATH:
        fuzz_path(pool, copy, size - 1);
        break;

    case FUZZ_BODY:
        fuzz_body(pool, copy, size - 1);
        break;

    default:
        fuzz_redact(pool, copy, size - 1);
        break;
    }

    ngx_destroy_pool(pool);

    return 0;
}
