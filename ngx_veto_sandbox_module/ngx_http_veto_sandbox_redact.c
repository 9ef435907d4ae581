/*
 * Veto Sandbox: what is kept of a request: the redaction that keeps
 * secrets out of audit records and approval summaries, and the summary a
 * human decides on.  Contract: ngx_http_veto_sandbox_redact.h and
 * docs/approvals.md.  Nothing here knows a request or Redis.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_veto_sandbox_redact.h"


#define NGX_HTTP_VSB_REDACTED  "[redacted]"


static ngx_uint_t ngx_http_veto_sandbox_secret_key(u_char *p, size_t len);
static size_t ngx_http_veto_sandbox_match_ci(u_char *p, u_char *last,
    const char *word);
static json_t *ngx_http_veto_sandbox_redacted_copy(ngx_pool_t *pool,
    json_t *v, ngx_uint_t depth);
static json_t *ngx_http_veto_sandbox_redacted_string(ngx_pool_t *pool,
    const char *s, size_t len);



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


static json_t *
ngx_http_veto_sandbox_redacted_string(ngx_pool_t *pool, const char *s,
    size_t len)
{
    ngx_str_t  in, out;

    in.data = (u_char *) s;
    in.len = len;

    if (ngx_http_veto_sandbox_redact(pool, &in, &out) != NGX_OK) {
        return NULL;
    }

    return json_stringn((const char *) out.data, out.len);
}


/* a deep copy in which strings are redacted and secret keys hidden */
static json_t *
ngx_http_veto_sandbox_redacted_copy(ngx_pool_t *pool, json_t *v,
    ngx_uint_t depth)
{
    size_t       i;
    json_t      *c, *e;
    const char  *key;

    if (depth > 8) {
        return json_string("[too deep]");
    }

    switch (json_typeof(v)) {

    case JSON_STRING:
        return ngx_http_veto_sandbox_redacted_string(pool, json_string_value(v),
                                                     json_string_length(v));

    case JSON_ARRAY:
        c = json_array();

        json_array_foreach(v, i, e) {
            if (c == NULL
                || json_array_append_new(c,
                       ngx_http_veto_sandbox_redacted_copy(pool, e, depth + 1))
                   != 0)
            {
                json_decref(c);
                return NULL;
            }
        }

        return c;

    case JSON_OBJECT:
        c = json_object();

        json_object_foreach(v, key, e) {
            if (c == NULL) {
                return NULL;
            }

            if (ngx_http_veto_sandbox_secret_key((u_char *) key,
                                                 ngx_strlen(key)))
            {
                e = json_string(NGX_HTTP_VSB_REDACTED);

            } else {
                e = ngx_http_veto_sandbox_redacted_copy(pool, e, depth + 1);
            }

            if (json_object_set_new(c, key, e) != 0) {
                json_decref(c);
                return NULL;
            }
        }

        return c;

    default:
        return json_copy(v);
    }
}


/* stdin_bytes, and its head as text when it is UTF-8 ("stdin") */
static ngx_int_t
ngx_http_veto_sandbox_summary_stdin(ngx_pool_t *pool, json_t *sum,
    ngx_str_t *in)
{
    size_t   len, i;
    json_t  *v;

    if (json_object_set_new(sum, "stdin_bytes", json_integer(in->len)) != 0)
    {
        return NGX_ERROR;
    }

    len = ngx_min(in->len, 4096);

    /* a cut inside a UTF-8 sequence: back off to its start */
    for (i = 0; len < in->len && i < 3 && (in->data[len] & 0xc0) == 0x80;
         i++)
    {
        len--;
    }

    v = ngx_http_veto_sandbox_redacted_string(pool, (const char *) in->data,
                                              len);
    if (v == NULL) {
        return NGX_OK;          /* not text: the size says enough */
    }

    if (json_object_set_new(sum, "stdin", v) != 0
        || (len < in->len
            && json_object_set_new(sum, "stdin_truncated", json_true()) != 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_summary(ngx_pool_t *pool, ngx_str_t *action,
    json_t *body, ngx_str_t *in, ngx_str_t *path, off_t size,
    ngx_str_t *sha256, ngx_str_t *out)
{
    char         *text;
    size_t        i, len;
    json_t       *sum, *v, *names, *e;
    const char   *key, *eq, *s;
    ngx_int_t     rc;
    static const char  *keep[] = {
        "profile", "limits", "ttl_s", "network", "argv", "cwd", "timeout_s",
        NULL
    };

    rc = NGX_ERROR;
    names = NULL;

    sum = json_object();
    if (sum == NULL) {
        return NGX_ERROR;
    }

    if (json_object_set_new(sum, "action",
                            json_stringn((const char *) action->data,
                                         action->len))
        != 0)
    {
        goto done;
    }

    if (body && json_is_object(body)) {
        for (i = 0; keep[i]; i++) {
            v = json_object_get(body, keep[i]);
            if (v == NULL) {
                continue;
            }

            if (json_object_set_new(sum, keep[i],
                        ngx_http_veto_sandbox_redacted_copy(pool, v, 0))
                != 0)
            {
                goto done;
            }
        }

        /* env: names only, never values */

        v = json_object_get(body, "env");

        if (v) {
            names = json_array();
            if (names == NULL) {
                goto done;
            }

            if (json_is_object(v)) {
                json_object_foreach(v, key, e) {
                    if (json_array_append_new(names, json_string(key)) != 0) {
                        goto done;
                    }
                }

            } else if (json_is_array(v)) {
                json_array_foreach(v, i, e) {
                    s = json_string_value(e);
                    if (s == NULL) {
                        continue;
                    }

                    eq = strchr(s, '=');
                    len = eq ? (size_t) (eq - s) : ngx_strlen(s);

                    if (json_array_append_new(names, json_stringn(s, len))
                        != 0)
                    {
                        goto done;
                    }
                }
            }

            if (json_object_set(sum, "env_names", names) != 0) {
                goto done;
            }
        }
    }

    if (in && in->len
        && ngx_http_veto_sandbox_summary_stdin(pool, sum, in) != NGX_OK)
    {
        goto done;
    }

    if (path && path->len) {
        if (json_object_set_new(sum, "path",
                ngx_http_veto_sandbox_redacted_string(pool,
                                        (const char *) path->data, path->len))
            != 0)
        {
            goto done;
        }
    }

    if (size >= 0
        && json_object_set_new(sum, "size", json_integer(size)) != 0)
    {
        goto done;
    }

    if (sha256 && sha256->len
        && json_object_set_new(sum, "sha256",
                               json_stringn((const char *) sha256->data,
                                            sha256->len))
           != 0)
    {
        goto done;
    }

    text = json_dumps(sum, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL) {
        goto done;
    }

    out->len = ngx_strlen(text);
    out->data = ngx_pnalloc(pool, out->len + 1);

    if (out->data) {
        ngx_memcpy(out->data, text, out->len + 1);
        rc = NGX_OK;
    }

    free(text);

done:

    json_decref(names);
    json_decref(sum);

    return rc;
}
