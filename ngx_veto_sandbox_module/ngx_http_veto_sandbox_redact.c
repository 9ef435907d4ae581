/*
 * Veto Sandbox: the redaction that keeps secrets out of audit records
 * and approval summaries (ngx_http_veto_sandbox_summary.c): secrets in
 * free text and in argv, hidden before anything is stored or shown
 * (contract: ngx_http_veto_sandbox_redact.h and docs/approvals.md).  One
 * pass over the input with a little state between words (the command
 * being read, what the next word is); every look ahead is bounded or is
 * consumed, so the work is linear in the input whatever it holds: no
 * regular expressions, no backtracking over what an agent sent.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_veto_sandbox_redact.h"


#define NGX_HTTP_VSB_REDACTED  "[redacted]"


/*
 * The names that make a key=value, key: value or "key": "value" secret
 * (any case; a flag's leading dashes are not part of its name):
 * CONTAINS anywhere in the name, the WHOLE name, or its SUFFIX after a
 * separator ('_', '-', '.'): DB_PWD, SMTP_PASS, STRIPE_KEY, REDIS_AUTH,
 * but neither KEYBOARD, MONKEY, OLDPWD nor AUTHOR.  PWD alone is the
 * shell's working directory, not a password: only *_PWD is.
 */
#define NGX_HTTP_VSB_NAME_CONTAINS  0
#define NGX_HTTP_VSB_NAME_WHOLE     1
#define NGX_HTTP_VSB_NAME_SUFFIX    2

static const struct {
    const char  *word;
    ngx_uint_t   how;
} ngx_http_veto_sandbox_secret_names[] = {
    { "password", NGX_HTTP_VSB_NAME_CONTAINS },
    { "passwd", NGX_HTTP_VSB_NAME_CONTAINS },
    { "passphrase", NGX_HTTP_VSB_NAME_CONTAINS },
    { "secret", NGX_HTTP_VSB_NAME_CONTAINS },
    { "token", NGX_HTTP_VSB_NAME_CONTAINS },
    { "apikey", NGX_HTTP_VSB_NAME_CONTAINS },
    { "api_key", NGX_HTTP_VSB_NAME_CONTAINS },
    { "api-key", NGX_HTTP_VSB_NAME_CONTAINS },
    { "authorization", NGX_HTTP_VSB_NAME_CONTAINS },
    { "credential", NGX_HTTP_VSB_NAME_CONTAINS },
    { "private", NGX_HTTP_VSB_NAME_CONTAINS },
    { "access_key", NGX_HTTP_VSB_NAME_CONTAINS },
    { "session", NGX_HTTP_VSB_NAME_CONTAINS },
    { "cookie", NGX_HTTP_VSB_NAME_CONTAINS },
    { "pass", NGX_HTTP_VSB_NAME_WHOLE },
    { "pw", NGX_HTTP_VSB_NAME_WHOLE },
    { "auth", NGX_HTTP_VSB_NAME_WHOLE },
    { "key", NGX_HTTP_VSB_NAME_WHOLE },
    { "bearer", NGX_HTTP_VSB_NAME_WHOLE },
    { "pass", NGX_HTTP_VSB_NAME_SUFFIX },
    { "pwd", NGX_HTTP_VSB_NAME_SUFFIX },
    { "pw", NGX_HTTP_VSB_NAME_SUFFIX },
    { "key", NGX_HTTP_VSB_NAME_SUFFIX },
    { "auth", NGX_HTTP_VSB_NAME_SUFFIX },
    { NULL, 0 }
};

/* words that make a flag take a secret as its next word (--password X) */
static const char  *ngx_http_veto_sandbox_flag_words[] = {
    "password", "passwd", "secret", "token", "apikey", "api_key", "api-key",
    "access_key", "access-key", "credential", "cookie", NULL
};

/* ... and flags that do by their whole name (--pass X, but not
 * --passes 3; openssl's -pass, -passin, -passout) */
static const char  *ngx_http_veto_sandbox_flag_names[] = {
    "-pass", "-passin", "-passout", "--pass", "--passphrase", "--pwd",
    "--auth", NULL
};

/* ... unless it names where the secret is, not the secret */
static const char  *ngx_http_veto_sandbox_flag_not[] = {
    "file", "path", "stdin", "prompt", "env", NULL
};

/* bare tokens by their issuer's prefix, the least that follows and its
 * shape (what the characters after the prefix may be) */
#define NGX_HTTP_VSB_TOK_B64URL      0   /* [A-Za-z0-9_-] */
#define NGX_HTTP_VSB_TOK_UPPER       1   /* [A-Z0-9] (AWS key ids) */
#define NGX_HTTP_VSB_TOK_ALNUM       2   /* [A-Za-z0-9] */
#define NGX_HTTP_VSB_TOK_B64URL_DOT  3   /* [A-Za-z0-9_.-] (SendGrid) */

static struct {
    const char  *prefix;
    size_t       min;
    ngx_uint_t   shape;
} ngx_http_veto_sandbox_tokens[] = {
    { "github_pat_", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "ghp_", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "gho_", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "ghu_", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "ghs_", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "ghr_", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "glpat-", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "xoxb-", 10, NGX_HTTP_VSB_TOK_B64URL },
    { "xoxp-", 10, NGX_HTTP_VSB_TOK_B64URL },
    { "xoxa-", 10, NGX_HTTP_VSB_TOK_B64URL },
    { "xoxr-", 10, NGX_HTTP_VSB_TOK_B64URL },
    { "xoxs-", 10, NGX_HTTP_VSB_TOK_B64URL },
    { "sk-", 20, NGX_HTTP_VSB_TOK_B64URL },
    { "AKIA", 16, NGX_HTTP_VSB_TOK_UPPER },
    { "ASIA", 16, NGX_HTTP_VSB_TOK_UPPER },
    { "npm_", 36, NGX_HTTP_VSB_TOK_ALNUM },          /* npm */
    { "AIza", 35, NGX_HTTP_VSB_TOK_B64URL },         /* Google API key */
    { "hf_", 30, NGX_HTTP_VSB_TOK_ALNUM },           /* Hugging Face */
    { "SG.", 40, NGX_HTTP_VSB_TOK_B64URL_DOT },      /* SendGrid */
    { NULL, 0, 0 }
};


#define ngx_http_vsb_b64url(c)                                                \
    (((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z')                 \
     || ((c) >= '0' && (c) <= '9') || (c) == '-' || (c) == '_')

#define ngx_http_vsb_keychar(c)                                               \
    (ngx_http_vsb_b64url(c) || (c) == '.')

#define ngx_http_vsb_space(c)                                                 \
    ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')

/* white space around a key's '=' or ':' (a line's end is not) */
#define ngx_http_vsb_hspace(c)                                                \
    ((c) == ' ' || (c) == '\t' || (c) == '\v' || (c) == '\f' || (c) == '\r')

/* where a bare word ends: space, or the quote around it */
#define ngx_http_vsb_word_end(c)                                              \
    (ngx_http_vsb_space(c) || (c) == '"' || (c) == '\'')


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


/* does p..p+len contain one of words (any case)? */
static ngx_uint_t
ngx_http_veto_sandbox_contains(u_char *p, size_t len, const char **words)
{
    u_char      *s, *last;
    ngx_uint_t   i;

    last = p + len;

    for (s = p; s < last; s++) {
        for (i = 0; words[i]; i++) {
            if (ngx_http_veto_sandbox_match_ci(s, last, words[i])) {
                return 1;
            }
        }
    }

    return 0;
}


ngx_uint_t
ngx_http_veto_sandbox_secret_name(u_char *p, size_t len)
{
    u_char      *last, *s;
    size_t       n;
    ngx_uint_t   i;

    last = p + len;

    for (i = 0; ngx_http_veto_sandbox_secret_names[i].word; i++) {
        if (ngx_http_veto_sandbox_secret_names[i].how
            != NGX_HTTP_VSB_NAME_CONTAINS)
        {
            continue;
        }

        for (s = p; s < last; s++) {
            if (ngx_http_veto_sandbox_match_ci(s, last,
                                   ngx_http_veto_sandbox_secret_names[i].word))
            {
                return 1;
            }
        }
    }

    /* a flag's name without its dashes: --pass=x is "pass" */
    while (p < last && *p == '-') {
        p++;
    }

    for (i = 0; ngx_http_veto_sandbox_secret_names[i].word; i++) {
        n = ngx_strlen(ngx_http_veto_sandbox_secret_names[i].word);

        switch (ngx_http_veto_sandbox_secret_names[i].how) {

        case NGX_HTTP_VSB_NAME_WHOLE:
            if ((size_t) (last - p) == n
                && ngx_http_veto_sandbox_match_ci(p, last,
                                ngx_http_veto_sandbox_secret_names[i].word))
            {
                return 1;
            }

            break;

        case NGX_HTTP_VSB_NAME_SUFFIX:
            s = last - n;

            if ((size_t) (last - p) > n
                && (s[-1] == '_' || s[-1] == '-' || s[-1] == '.')
                && ngx_http_veto_sandbox_match_ci(s, last,
                                ngx_http_veto_sandbox_secret_names[i].word))
            {
                return 1;
            }

            break;
        }
    }

    return 0;
}


/* an authorization scheme at p ("Bearer ", "Basic ", and after a key
 * "token "): its length with the space, else 0; *bare: the scheme word
 * ends the input, its credential comes next */
static size_t
ngx_http_veto_sandbox_scheme(u_char *p, u_char *last, ngx_uint_t after_key,
    ngx_uint_t *bare)
{
    size_t       n;
    ngx_uint_t   i;

    static const char  *schemes[] = { "bearer", "basic", "token", NULL };

    *bare = 0;

    for (i = 0; schemes[i]; i++) {
        if (!after_key && i == 2) {
            break;              /* "token x" alone is prose */
        }

        n = ngx_http_veto_sandbox_match_ci(p, last, schemes[i]);
        if (n == 0) {
            continue;
        }

        if (p + n == last) {
            if (!after_key && i != 0) {
                continue;       /* "Basic" ending a text is a word */
            }

            *bare = 1;
            return n;
        }

        if (p[n] == ' ') {
            return n + 1;
        }
    }

    return 0;
}


/* an RFC 7235 token68 of 8 or more characters: what a credential
 * after "Bearer" or "Basic" looks like (or shell syntax, shown anyway) */
static ngx_uint_t
ngx_http_veto_sandbox_token68(u_char *s, u_char *last)
{
    u_char  *p;

    if (last - s < 8) {
        return 0;
    }

    for (p = s; p < last; p++) {
        if (!ngx_http_vsb_b64url(*p) && *p != '.' && *p != '~' && *p != '+'
            && *p != '/' && *p != '=')
        {
            return 0;
        }
    }

    return 1;
}


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


/* user:password (curl -u, URL userinfo): the user kept, the rest hidden */
static u_char *
ngx_http_veto_sandbox_userinfo(u_char *d, u_char *s, u_char *last)
{
    u_char  *colon;

    colon = ngx_strlchr(s, last, ':');

    if (colon == NULL) {
        return ngx_cpymem(d, s, last - s);
    }

    d = ngx_cpymem(d, s, colon + 1 - s);

    return ngx_http_veto_sandbox_hide(d, colon + 1, last);
}


/* The word at p that st->next says is a secret; NULL if it is none (a
 * flag follows instead).  A quoted word is hidden inside its quotes. */
static u_char *
ngx_http_veto_sandbox_next_word(u_char **dp, u_char *p, u_char *last,
    ngx_uint_t whole, ngx_http_veto_sandbox_redact_state_t *st)
{
    u_char  *d, *s, *e, q;

    d = *dp;

    if (st->next == NGX_HTTP_VSB_NEXT_SECRET && *p == '-') {
        st->next = NGX_HTTP_VSB_NEXT_PLAIN;
        return NULL;
    }

    q = 0;

    if (whole) {
        /* an argv element is the value, all of it */
        s = p;
        e = last;

    } else {
        if (*p == '"' || *p == '\'') {
            q = *p;
            *d++ = *p++;
        }

        s = p;

        if (q) {
            while (p < last && *p != q) {
                p += (*p == '\\' && q == '"' && p + 1 < last) ? 2 : 1;
            }

        } else {
            while (p < last && !ngx_http_vsb_word_end(*p)) {
                p++;
            }
        }

        e = p;
    }

    if (st->next == NGX_HTTP_VSB_NEXT_USERINFO && q == 0
        && ngx_strlchr(s, e, ':') == NULL)
    {
        /* a user alone (curl asks for the password): scanned as any
         * word, so "-u KEY = secret" still finds the key */
        st->next = NGX_HTTP_VSB_NEXT_PLAIN;
        return NULL;
    }

    d = (st->next == NGX_HTTP_VSB_NEXT_USERINFO)
        ? ngx_http_veto_sandbox_userinfo(d, s, e)
        : ngx_http_veto_sandbox_hide(d, s, e);

    st->next = NGX_HTTP_VSB_NEXT_PLAIN;

    *dp = d;

    return e;
}


/* -----BEGIN ... PRIVATE KEY----- at p: its body hidden up to -----END
 * (or the end), the lines themselves kept.  NULL: none here. */
static u_char *
ngx_http_veto_sandbox_pem(u_char **dp, u_char *p, u_char *last)
{
    u_char  *s, *e;

    static const char  begin[] = "-----BEGIN ";
    static const char  end[] = "-----END ";
    static const char  pk[] = "PRIVATE KEY-----";

    if ((size_t) (last - p) < sizeof(begin) - 1
        || ngx_strncmp(p, begin, sizeof(begin) - 1) != 0)
    {
        return NULL;
    }

    /* the label: "RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", ... (short) */
    for (s = p + sizeof(begin) - 1; s < last && s - p < 64; s++) {
        if (*s == '-') {
            break;
        }
    }

    if ((size_t) (last - s) < sizeof("-----") - 1
        || (size_t) (s - p) < sizeof(begin) - 1 + sizeof("PRIVATE KEY") - 1
        || ngx_strncmp(s - (sizeof("PRIVATE KEY") - 1), pk,
                       sizeof(pk) - 1) != 0)
    {
        return NULL;
    }

    s += sizeof("-----") - 1;
    *dp = ngx_cpymem(*dp, p, s - p);

    for (e = s; e < last; e++) {
        if (*e == '-' && (size_t) (last - e) >= sizeof(end) - 1
            && ngx_strncmp(e, end, sizeof(end) - 1) == 0)
        {
            break;
        }
    }

    if (e > s) {
        *dp = ngx_cpymem(*dp, NGX_HTTP_VSB_REDACTED,
                         sizeof(NGX_HTTP_VSB_REDACTED) - 1);
    }

    return e;
}


/* a bare token at p (ghp_..., AKIA..., sk-...): where it ends, or NULL */
static u_char *
ngx_http_veto_sandbox_token(u_char *p, u_char *last)
{
    u_char      *s, c;
    size_t       n;
    ngx_uint_t   i, ok;

    for (i = 0; ngx_http_veto_sandbox_tokens[i].prefix; i++) {
        n = ngx_strlen(ngx_http_veto_sandbox_tokens[i].prefix);

        if ((size_t) (last - p) < n
            || ngx_strncmp(p, ngx_http_veto_sandbox_tokens[i].prefix, n) != 0)
        {
            continue;
        }

        for (s = p + n; s < last; s++) {
            c = *s;

            switch (ngx_http_veto_sandbox_tokens[i].shape) {

            case NGX_HTTP_VSB_TOK_UPPER:
                ok = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                break;

            case NGX_HTTP_VSB_TOK_ALNUM:
                ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
                     || (c >= '0' && c <= '9');
                break;

            case NGX_HTTP_VSB_TOK_B64URL_DOT:
                ok = ngx_http_vsb_keychar(c);
                break;

            default:
                ok = ngx_http_vsb_b64url(c);
            }

            if (!ok) {
                break;
            }
        }

        if ((size_t) (s - p) - n >= ngx_http_veto_sandbox_tokens[i].min
            && (s == last || !ngx_http_vsb_keychar(*s)))
        {
            return s;
        }

        return NULL;
    }

    return NULL;
}


/* one of the flags that take a secret by their whole name? */
static ngx_uint_t
ngx_http_veto_sandbox_flag_named(u_char *k, size_t len)
{
    ngx_uint_t  i;

    for (i = 0; ngx_http_veto_sandbox_flag_names[i]; i++) {
        if (len == ngx_strlen(ngx_http_veto_sandbox_flag_names[i])
            && ngx_strncmp(k, ngx_http_veto_sandbox_flag_names[i], len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* the command whose flags mean something here, by its name */
static void
ngx_http_veto_sandbox_command(u_char *k, size_t len,
    ngx_http_veto_sandbox_redact_state_t *st)
{
    if (len == 4 && ngx_strncmp(k, "curl", 4) == 0) {
        st->command = NGX_HTTP_VSB_CMD_CURL;

    } else if ((len >= 5 && ngx_strncmp(k, "mysql", 5) == 0)
               || (len >= 7 && ngx_strncmp(k, "mariadb", 7) == 0))
    {
        st->command = NGX_HTTP_VSB_CMD_MYSQL;

    } else if (len == 7 && ngx_strncmp(k, "sshpass", 7) == 0) {
        st->command = NGX_HTTP_VSB_CMD_SSHPASS;
    }
}


#define ngx_http_vsb_is(k, len, s)                                            \
    ((len) == sizeof(s) - 1 && ngx_strncmp(k, s, sizeof(s) - 1) == 0)


/*
 * A flag (the key run k..p starting with '-'): what its value is.  May
 * write it (attached values: -pX, -uuser:pw) and return where scanning
 * goes on; NULL when the run is to be handled as any other.
 */
static u_char *
ngx_http_veto_sandbox_flag(u_char **dp, u_char *k, u_char *p, u_char *last,
    ngx_http_veto_sandbox_redact_state_t *st)
{
    u_char      *e;
    size_t       len;
    ngx_uint_t   alone;

    len = p - k;
    alone = (p == last || ngx_http_vsb_space(*p));

    for (e = p; e < last && !ngx_http_vsb_word_end(*e); e++) { /* void */ }

    switch (st->command) {

    case NGX_HTTP_VSB_CMD_CURL:
        if (alone
            && (ngx_http_vsb_is(k, len, "-u") || ngx_http_vsb_is(k, len, "-U")
                || ngx_http_vsb_is(k, len, "--user")
                || ngx_http_vsb_is(k, len, "--proxy-user")))
        {
            *dp = ngx_cpymem(*dp, k, len);
            st->next = NGX_HTTP_VSB_NEXT_USERINFO;
            return p;
        }

        if (len > 2 && (k[1] == 'u' || k[1] == 'U') && k[2] != '-'
            && k[0] == '-' && k[1] != '-')
        {
            /* -uuser:password */
            *dp = ngx_cpymem(*dp, k, 2);
            *dp = ngx_http_veto_sandbox_userinfo(*dp, k + 2, e);
            return e;
        }

        break;

    case NGX_HTTP_VSB_CMD_MYSQL:
        if (len > 2 && k[1] == 'p') {
            /* -ppassword; a lone -p prompts */
            *dp = ngx_cpymem(*dp, k, 2);
            *dp = ngx_http_veto_sandbox_hide(*dp, k + 2, e);
            return e;
        }

        break;

    case NGX_HTTP_VSB_CMD_SSHPASS:
        if (alone && ngx_http_vsb_is(k, len, "-p")) {
            *dp = ngx_cpymem(*dp, k, len);
            st->next = NGX_HTTP_VSB_NEXT_SECRET;
            return p;
        }

        break;
    }

    /* --password X, -token X, -passin X (openssl), --pass X */
    if (alone
        && (ngx_http_veto_sandbox_contains(k, len,
                                           ngx_http_veto_sandbox_flag_words)
            || ngx_http_veto_sandbox_flag_named(k, len))
        && !ngx_http_veto_sandbox_contains(k, len,
                                           ngx_http_veto_sandbox_flag_not))
    {
        *dp = ngx_cpymem(*dp, k, len);
        st->next = NGX_HTTP_VSB_NEXT_SECRET;
        return p;
    }

    return NULL;
}


/* scheme://user:password@host: the password hidden.  p is at "://";
 * returns where scanning goes on. */
static u_char *
ngx_http_veto_sandbox_url(u_char **dp, u_char *p, u_char *last)
{
    u_char  *s, *q;

    s = p + 3;

    for (q = s; q < last; q++) {
        switch (*q) {
        case '/': case '?': case '#': case '@': case '"': case '\'':
        case '<': case '>': case '\\': case ' ': case '\t': case '\n':
        case '\r':
            goto found;
        }
    }

found:

    *dp = ngx_cpymem(*dp, p, 3);

    if (q == last || *q != '@' || ngx_strlchr(s, q, ':') == NULL) {
        return s;
    }

    *dp = ngx_http_veto_sandbox_userinfo(*dp, s, q);

    return q;
}


ngx_int_t
ngx_http_veto_sandbox_redact(ngx_pool_t *pool, ngx_str_t *in, ngx_str_t *out)
{
    ngx_http_veto_sandbox_redact_state_t  st;

    ngx_memzero(&st, sizeof(st));

    return ngx_http_veto_sandbox_redact_next(pool, in, out, &st);
}


ngx_int_t
ngx_http_veto_sandbox_redact_next(ngx_pool_t *pool, ngx_str_t *in,
    ngx_str_t *out, ngx_http_veto_sandbox_redact_state_t *st)
{
    u_char      *p, *last, *d, *s, *k, *e, q;
    size_t       n, klen;
    ngx_uint_t   dots, word_start, bare;

    /* each redaction replaces at least one byte with 10 */
    d = ngx_pnalloc(pool, in->len * 10 + 1);
    if (d == NULL) {
        return NGX_ERROR;
    }

    out->data = d;
    p = in->data;
    last = p + in->len;

    /* the element after "--password" or "Bearer" is the secret */
    if (st->next != NGX_HTTP_VSB_NEXT_PLAIN && p < last) {
        e = ngx_http_veto_sandbox_next_word(&d, p, last, 1, st);
        if (e) {
            p = e;
        }
    }

    st->next = NGX_HTTP_VSB_NEXT_PLAIN;

    while (p < last) {

        if (ngx_http_vsb_space(*p)) {
            if (*p == '\n') {
                /* a flag's value is on its line: the next line's first
                 * word may be a key whose value is the secret */
                st->next = NGX_HTTP_VSB_NEXT_PLAIN;
            }

            *d++ = *p++;
            continue;
        }

        /* the word after "--password", "-u" (curl), "Bearer" */
        if (st->next != NGX_HTTP_VSB_NEXT_PLAIN) {
            e = ngx_http_veto_sandbox_next_word(&d, p, last, 0, st);
            if (e) {
                p = e;
                continue;
            }
        }

        /* a PEM private key, wherever it starts (JSON text: "\n-----") */
        if (*p == '-') {
            e = ngx_http_veto_sandbox_pem(&d, p, last);
            if (e) {
                p = e;
                continue;
            }
        }

        word_start = (p == in->data || !ngx_http_vsb_keychar(p[-1]));

        if (!word_start) {
            *d++ = *p++;
            continue;
        }

        /* Bearer <token>, Basic <credentials> */

        n = ngx_http_veto_sandbox_scheme(p, last, 0, &bare);

        if (n) {
            d = ngx_cpymem(d, p, n);
            p += n;

            if (bare) {
                st->next = NGX_HTTP_VSB_NEXT_SECRET;
                continue;
            }

            while (p < last && *p == ' ') {
                *d++ = *p++;
            }

            s = p;
            while (p < last && *p != ' ' && *p != '"' && *p != '\''
                   && *p != ',' && *p != '\n' && *p != '\r')
            {
                p++;
            }

            /* alone (no key before it) only a credential-shaped word:
             * "a basic test" is prose */
            if (ngx_http_veto_sandbox_token68(s, p)) {
                d = ngx_http_veto_sandbox_hide(d, s, p);

            } else {
                d = ngx_cpymem(d, s, p - s);
            }

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

        /* a token by its prefix: ghp_..., AKIA..., sk-..., xoxb-... */

        e = ngx_http_veto_sandbox_token(p, last);

        if (e) {
            d = ngx_cpymem(d, NGX_HTTP_VSB_REDACTED,
                           sizeof(NGX_HTTP_VSB_REDACTED) - 1);
            p = e;
            continue;
        }

        if (!ngx_http_vsb_keychar(*p)) {
            *d++ = *p++;
            continue;
        }

        /* a word: a command, a flag, a URL's scheme, or a key */

        k = p;

        while (p < last && ngx_http_vsb_keychar(*p)) {
            p++;
        }

        ngx_http_veto_sandbox_command(k, p - k, st);

        if (*k == '-') {
            e = ngx_http_veto_sandbox_flag(&d, k, p, last, st);
            if (e) {
                p = e;
                continue;
            }
        }

        d = ngx_cpymem(d, k, p - k);
        klen = p - k;

        if (last - p >= 3 && ngx_strncmp(p, "://", 3) == 0) {
            p = ngx_http_veto_sandbox_url(&d, p, last);
            continue;
        }

        /* key=value, key: value, "key": "value" with a secret-looking key */

        if (!ngx_http_veto_sandbox_secret_name(k, klen)) {
            continue;
        }

        s = p;

        if (s < last && (*s == '"' || *s == '\'')) {
            s++;
        }

        while (s < last && ngx_http_vsb_hspace(*s)) {
            s++;
        }

        if (s == last || (*s != '=' && *s != ':')) {
            continue;
        }

        s++;

        while (s < last && ngx_http_vsb_hspace(*s)) {
            s++;
        }

        /* key: -----BEGIN ... PRIVATE KEY-----: the key's body is hidden
         * where the scan meets it */
        if (last - s > 5 && ngx_strncmp(s, "-----", 5) == 0) {
            continue;
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
            n = ngx_http_veto_sandbox_scheme(p, last, 1, &bare);

            if (n) {
                d = ngx_cpymem(d, p, n);
                p += n;
                s = p;
            }

            if (p == last) {
                /* "Authorization:", "Authorization: token": the value is
                 * the next argv element */
                if (bare
                    || ngx_http_veto_sandbox_match_ci(k, k + klen,
                                                      "authorization")
                    || ngx_http_veto_sandbox_match_ci(k, k + klen,
                                                  "proxy-authorization"))
                {
                    st->next = NGX_HTTP_VSB_NEXT_SECRET;
                }

                continue;
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
    }

    out->len = d - out->data;
    *d = '\0';

    return NGX_OK;
}
