/* libFuzzer: what the egress proxy parses on an intercepted connection
 * (a request head checked and rewritten with a credential line, then a
 * chunked body's framing) and the operator's bindings file.  The first
 * byte picks: even, a request stream; odd, a bindings file's text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eg_cred_parse.h"
#include "eg_ireq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char  out[EG_IREQ_OUT_MAX];


static void
fuzz_bindings(const uint8_t *data, size_t size)
{
    static eg_cred_binding_t  bs[EG_CRED_MAX];
    char                      err[480], r[512];
    const eg_cred_binding_t  *b;
    size_t                    n, i, j, rn;

    if (size > EG_CRED_FILE_MAX) {
        return;
    }
    if (eg_cred_bindings_parse((const char *) data, size, bs, &n, err,
                               sizeof(err)) != 0)
    {
        return;
    }
    if (n > EG_CRED_MAX) {
        abort();
    }
    for (i = 0; i < n; i++) {
        b = &bs[i];
        /* what parsed obeys the rules */
        if (strstr(b->tmpl, "{{secret}}") == NULL || b->host.port != 443
            || b->env[0] == '\0' || (b->path[0] != '\0' && b->path[0] != '/'))
        {
            abort();
        }
        for (j = 0; j < i; j++) {
            if (strcmp(bs[j].name, b->name) == 0) {
                abort();            /* none bound twice */
            }
        }
        rn = eg_cred_render(b, "v", 1, r, sizeof(r));
        if (rn > 0 && (rn < 4 || memcmp(r + rn - 2, "\r\n", 2) != 0
                       || memchr(r, '\n', rn - 1) != NULL))
        {
            abort();
        }
        (void) eg_cred_host_match(b, "a.b.test");
        (void) eg_cred_path_match(b, b->tmpl, strlen(b->tmpl));
    }
}


static void
fuzz_request(const uint8_t *data, size_t size)
{
    static const char *const  drop[] = { "Authorization", "X-Api-Key" };
    eg_str_t                  add[2] = {
        { "Authorization: Bearer s\r\n", 25 }, { "X-Api-Key: k\r\n", 14 }
    };
    const char               *why, *needles[1] = { "veto-cred-" };
    eg_ireq_t                 r;
    eg_chunk_t                st;
    size_t                    hl, n;
    ssize_t                   used;
    int                       done;

    if (size > EG_HTTP_MAX_HEAD + 4096) {
        return;
    }
    hl = eg_http_head_len((const char *) data, size);
    if (hl == 0 || hl > EG_HTTP_MAX_HEAD) {
        return;
    }
    (void) eg_ireq_find((const char *) data, size, needles, 1);
    if (eg_ireq_parse((const char *) data, hl, "a.test", &r, &why) != 0) {
        return;
    }
    if (r.target.p < (const char *) data
        || r.target.p + r.target.len > (const char *) data + hl)
    {
        abort();
    }
    n = eg_ireq_rewrite((const char *) data, hl, drop, 2, add, 2, out,
                        sizeof(out));
    if (n == 0 || n < 4 || memcmp(out + n - 4, "\r\n\r\n", 4) != 0) {
        abort();                    /* always fits: head + two lines */
    }
    if (r.chunked) {
        eg_chunk_init(&st);
        used = eg_chunk_feed(&st, data + hl, size - hl, &done, &why);
        if (used > (ssize_t) (size - hl)) {
            abort();
        }
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    if (data[0] & 1) {
        fuzz_bindings(data + 1, size - 1);
    } else {
        fuzz_request(data + 1, size - 1);
    }
    return 0;
}
