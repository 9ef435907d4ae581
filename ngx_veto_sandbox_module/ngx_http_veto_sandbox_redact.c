/*
 * Veto Sandbox: the redaction that keeps secrets out of audit records
 * and approval summaries (ngx_http_veto_sandbox_summary.c).  Contract:
 * ngx_http_veto_sandbox_redact.h and docs/approvals.md.  Nothing here
 * knows a request or Redis.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_veto_sandbox_redact.h"


#define NGX_HTTP_VSB_REDACTED  "[redacted]"


static ngx_uint_t ngx_http_veto_sandbox_secret_key(u_char *p, size_t len);
static size_t ngx_http_veto_sandbox_match_ci(u_char *p, u_char *last,
    const char *word);



static const char  *ngx_http_veto_sandbox_secret_words[] = {
    "password", "passwd", "secret", "token", "apikey", "api_key", "api-key",
    "authorization", "credential", "private", "access_key", "session",
    "cookie", NULL
};


static size_t
ngx_http_veto_sandbox_match_ci(u_char *p, u_char *last, const char *word)
{
    size_t  n;

    n = ngx_strlen(word);

    if ((size_t) (last - p) < n
        || ngx_strncasecmp(p, (u_char *) word, n) != 0)
    {
        return 0;
    }

    return n;
}


/* "Bearer " or "Basic " at p: its length, else 0 */
static size_t
ngx_http_veto_sandbox_scheme(u_char *p, u_char *last)
{
    size_t  n;

    n = ngx_http_veto_sandbox_match_ci(p, last, "bearer ");

    return n ? n : ngx_http_veto_sandbox_match_ci(p, last, "basic ");
}


static ngx_uint_t
ngx_http_veto_sandbox_secret_key(u_char *p, size_t len)
{
    u_char      *s, *last;
    ngx_uint_t   i;

    last = p + len;

    for (s = p; s < last; s++) {
        for (i = 0; ngx_http_veto_sandbox_secret_words[i]; i++) {
            if (ngx_http_veto_sandbox_match_ci(s, last,
                                        ngx_http_veto_sandbox_secret_words[i]))
            {
                return 1;
            }
        }
    }

    return 0;
}


#define ngx_http_vsb_b64url(c)                                                \
    (((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z')                 \
     || ((c) >= '0' && (c) <= '9') || (c) == '-' || (c) == '_')

#define ngx_http_vsb_keychar(c)                                               \
    (ngx_http_vsb_b64url(c) || (c) == '.')


/*
 * Writes "[redacted]" for the value s..last, unless it could run
 * something: the same text is the approval summary a human decides on,
 * and "password=\"$(curl x | sh)\"" in an argv must be seen, not hidden.
 * Errs on showing a password that contains shell syntax.
 */
static u_char *
ngx_http_veto_sandbox_hide(u_char *d, u_char *s, u_char *last)
{
    u_char  *p;

    if (s == last) {
        return d;
    }

    for (p = s; p < last; p++) {
        switch (*p) {
        case '$': case '`': case '(': case ')': case '|': case ';':
        case '&': case '<': case '>': case '\n': case '{': case '}':
            return ngx_cpymem(d, s, last - s);
        }
    }

    return ngx_cpymem(d, NGX_HTTP_VSB_REDACTED,
                      sizeof(NGX_HTTP_VSB_REDACTED) - 1);
}


ngx_int_t
ngx_http_veto_sandbox_redact(ngx_pool_t *pool, ngx_str_t *in,
    ngx_str_t *out)
{
    u_char      *p, *last, *d, *s, *k, q;
    size_t       n;
    ngx_uint_t   dots, word_start;

    /* each redaction replaces at least one byte with 10 */
    d = ngx_pnalloc(pool, in->len * 10 + 1);
    if (d == NULL) {
        return NGX_ERROR;
    }

    out->data = d;
    p = in->data;
    last = p + in->len;

    while (p < last) {
        word_start = (p == in->data || !ngx_http_vsb_keychar(p[-1]));

        if (!word_start) {
            *d++ = *p++;
            continue;
        }

        /* Bearer <token>, Basic <credentials> */

        n = ngx_http_veto_sandbox_scheme(p, last);

        if (n) {
            d = ngx_cpymem(d, p, n);
            p += n;

            while (p < last && *p == ' ') {
                *d++ = *p++;
            }

            s = p;
            while (p < last && *p != ' ' && *p != '"' && *p != '\''
                   && *p != ',' && *p != '\n' && *p != '\r')
            {
                p++;
            }

            d = ngx_http_veto_sandbox_hide(d, s, p);

            continue;
        }

        /* a JWT: eyJ<b64url>.<b64url>.<b64url> */

        if (last - p > 3 && ngx_strncmp(p, "eyJ", 3) == 0) {
            s = p;
            dots = 0;

            while (s < last && (ngx_http_vsb_b64url(*s) || *s == '.'))
            {
                dots += (*s == '.');
                s++;
            }

            if (dots >= 2) {
                d = ngx_cpymem(d, NGX_HTTP_VSB_REDACTED,
                               sizeof(NGX_HTTP_VSB_REDACTED) - 1);
                p = s;
                continue;
            }
        }

        /* key=value, key: value, "key": "value" with a secret-looking key */

        if (ngx_http_vsb_keychar(*p)) {
            k = p;

            while (p < last && ngx_http_vsb_keychar(*p)) {
                p++;
            }

            d = ngx_cpymem(d, k, p - k);

            if (!ngx_http_veto_sandbox_secret_key(k, p - k)) {
                continue;
            }

            s = p;

            if (s < last && (*s == '"' || *s == '\'')) {
                s++;
            }

            while (s < last && *s == ' ') {
                s++;
            }

            if (s == last || (*s != '=' && *s != ':')) {
                continue;
            }

            s++;

            while (s < last && *s == ' ') {
                s++;
            }

            q = 0;

            if (s < last && (*s == '"' || *s == '\'')) {
                q = *s++;
            }

            d = ngx_cpymem(d, p, s - p);
            p = s;

            if (q) {
                while (p < last && *p != q) {
                    p += (*p == '\\' && p + 1 < last) ? 2 : 1;
                }

            } else {
                /* "Authorization: Bearer x": keep the scheme, hide x */
                n = ngx_http_veto_sandbox_scheme(p, last);

                if (n) {
                    d = ngx_cpymem(d, p, n);
                    p += n;
                    s = p;
                }

                while (p < last && *p != '&' && *p != ',' && *p != ';'
                       && *p != ' ' && *p != '\t' && *p != '"'
                       && *p != '\'' && *p != '\n' && *p != '\r'
                       && *p != '}')
                {
                    p++;
                }
            }

            d = ngx_http_veto_sandbox_hide(d, s, p);

            continue;
        }

        *d++ = *p++;
    }

    out->len = d - out->data;
    *d = '\0';

    return NGX_OK;
}
