/*
 * Credential bindings: the file's and the line's parsers and the pure
 * checks of eg_cred_parse.h.  No I/O, no allocation.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "eg_cred_parse.h"

#define EG_CRED_SECRET_MARK  "{{secret}}"


int
eg_cred_name_ok(const char *s, size_t len)
{
    size_t  i;

    if (len == 0 || len > EG_CRED_NAME_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        char  c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || (i > 0 && (c == '.' || c == '_' || c == '-'))))
        {
            return 0;
        }
    }
    return 1;
}


static int
eg_cred_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9'))
    {
        return 1;
    }
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}


int
eg_cred_header_ok(const char *name, size_t len, const char **why)
{
    static const char *const  denied[] = {
        "Host", "Content-Length", "Transfer-Encoding", "Connection",
        "Keep-Alive", "Upgrade", "TE", "Trailer", "Cookie", "Expect", NULL
    };
    size_t  i;

    if (len == 0 || len > EG_CRED_HEADER_MAX) {
        *why = "a header name is 1 .. 64 bytes";
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (!eg_cred_tchar((unsigned char) name[i])) {
            *why = "a header name is an HTTP token";
            return -1;
        }
    }
    if (len >= 6 && strncasecmp(name, "Proxy-", 6) == 0) {
        *why = "Proxy-* headers cannot carry a credential";
        return -1;
    }
    for (i = 0; denied[i] != NULL; i++) {
        if (strlen(denied[i]) == len && strncasecmp(name, denied[i], len) == 0)
        {
            *why = "this header frames or routes the request and cannot "
                   "carry a credential (Host, Content-Length, "
                   "Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE, "
                   "Trailer, Cookie, Expect)";
            return -1;
        }
    }
    return 0;
}


int
eg_cred_env_ok(const char *s, const char **why)
{
    static const char *const  denied[] = {
        "PATH", "HOME", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO",
        "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
        "NO_PROXY", "NODE_OPTIONS", NULL
    };
    size_t  i, n = strlen(s);

    if (n == 0 || n > EG_CRED_ENV_MAX) {
        *why = "an env name is 1 .. 64 bytes";
        return -1;
    }
    for (i = 0; i < n; i++) {
        char  c = s[i];
        if (!((c >= 'A' && c <= 'Z') || c == '_'
              || (i > 0 && c >= '0' && c <= '9')))
        {
            *why = "an env name is [A-Z_][A-Z0-9_]*";
            return -1;
        }
    }
    if (strncmp(s, "LD_", 3) == 0) {
        *why = "LD_* variables change what the dynamic linker loads";
        return -1;
    }
    for (i = 0; denied[i] != NULL; i++) {
        if (strcmp(s, denied[i]) == 0) {
            *why = "this variable is set by the helper or steers the "
                   "process (PATH, HOME, the proxy and CA variables, "
                   "NODE_OPTIONS)";
            return -1;
        }
    }
    return 0;
}


int
eg_cred_value_ok(const unsigned char *v, size_t len, const char **why)
{
    size_t  i;

    if (len == 0) {
        *why = "empty";
        return -1;
    }
    if (len > EG_CRED_VALUE_MAX) {
        *why = "longer than 4096 bytes";
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (v[i] == '\r' || v[i] == '\n') {
            *why = "holds a CR or LF byte (a header value cannot)";
            return -1;
        }
        if (v[i] < 0x20 || v[i] > 0x7e) {
            *why = "holds a control or non-ASCII byte (printable ASCII "
                   "only)";
            return -1;
        }
    }
    return 0;
}


int
eg_cred_placeholder_ok(const char *s, size_t len)
{
    size_t  i, pl = sizeof(EG_CRED_PLACEHOLDER_PREFIX) - 1;

    if (len != EG_CRED_PLACEHOLDER_LEN
        || memcmp(s, EG_CRED_PLACEHOLDER_PREFIX, pl) != 0)
    {
        return 0;
    }
    for (i = pl; i < len; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}


int
eg_cred_host_match(const eg_cred_binding_t *b, const char *host)
{
    return eg_allow_match(&b->host, 1, host, 443);
}


int
eg_cred_path_match(const eg_cred_binding_t *b, const char *target,
    size_t len)
{
    size_t  pl = strlen(b->path), i;

    if (pl == 0) {
        return 1;
    }
    if (len < pl || memcmp(target, b->path, pl) != 0) {
        return 0;
    }
    /* what the server would normalize away must not lead out of it */
    for (i = 0; i < len; i++) {
        if (target[i] == '?' || target[i] == '#') {
            break;
        }
        if (target[i] == '\\') {
            return 0;
        }
        if (target[i] == '%' && i + 2 < len
            && ((target[i + 1] == '2' && (target[i + 2] == 'e'
                                          || target[i + 2] == 'E'
                                          || target[i + 2] == 'f'
                                          || target[i + 2] == 'F'))
                || (target[i + 1] == '5' && (target[i + 2] == 'c'
                                             || target[i + 2] == 'C'))))
        {
            return 0;
        }
        if (target[i] == '/' && i + 1 < len && target[i + 1] == '.'
            && (i + 2 == len || target[i + 2] == '/' || target[i + 2] == '?'
                || (target[i + 2] == '.'
                    && (i + 3 == len || target[i + 3] == '/'
                        || target[i + 3] == '?'))))
        {
            return 0;
        }
    }
    return 1;
}


size_t
eg_cred_render(const eg_cred_binding_t *b, const char *secret, size_t slen,
    char *out, size_t cap)
{
    const char  *mark = strstr(b->tmpl, EG_CRED_SECRET_MARK);
    size_t       hl = strlen(b->header), pre, post, ml, n;

    if (mark == NULL) {
        return 0;
    }
    ml = sizeof(EG_CRED_SECRET_MARK) - 1;
    pre = (size_t) (mark - b->tmpl);
    post = strlen(mark + ml);
    n = hl + 2 + pre + slen + post + 2;
    if (n > cap) {
        return 0;
    }
    memcpy(out, b->header, hl);
    memcpy(out + hl, ": ", 2);
    memcpy(out + hl + 2, b->tmpl, pre);
    memcpy(out + hl + 2 + pre, secret, slen);
    memcpy(out + hl + 2 + pre + slen, mark + ml, post);
    memcpy(out + n - 2, "\r\n", 2);
    return n;
}


/* ---- the line -------------------------------------------------------- */


static int
eg_cred_copy(char *dst, size_t cap, const char *v, size_t len)
{
    if (len >= cap) {
        return -1;
    }
    memcpy(dst, v, len);
    dst[len] = '\0';
    return 0;
}


/* The value of one key: "k=v" up to a blank, or k="v" up to the quote. */
static int
eg_cred_kv(const char **pp, const char **k, size_t *kl, const char **v,
    size_t *vl, const char **why)
{
    const char  *p = *pp, *eq, *q;

    *k = p;
    for (eq = p; *eq != '\0' && *eq != '=' && *eq != ' ' && *eq != '\t';
         eq++)
    { }
    if (*eq != '=' || eq == p) {
        *why = "expected key=value";
        return -1;
    }
    *kl = (size_t) (eq - p);
    if (eq[1] == '"') {
        q = strchr(eq + 2, '"');
        if (q == NULL) {
            *why = "a quoted value without its closing quote";
            return -1;
        }
        *v = eq + 2;
        *vl = (size_t) (q - eq - 2);
        q++;
        if (*q != '\0' && *q != ' ' && *q != '\t') {
            *why = "text after a closing quote";
            return -1;
        }
    } else {
        for (q = eq + 1; *q != '\0' && *q != ' ' && *q != '\t'; q++) {
            if (*q == '"') {
                *why = "a quote inside an unquoted value";
                return -1;
            }
        }
        *v = eq + 1;
        *vl = (size_t) (q - eq - 1);
    }
    *pp = q;
    return 0;
}


int
eg_cred_binding_parse(const char *line, eg_cred_binding_t *b, char *err,
    size_t errlen)
{
    const char   *p = line, *start, *k, *v, *why = NULL, *mark;
    size_t        kl, vl, i;
    unsigned      seen = 0;
    eg_host_t     h;
    char          tmp[EG_HOST_MAX + 8];
    enum { K_HOST = 1, K_PORT = 2, K_HEADER = 4, K_TEMPLATE = 8, K_ENV = 16,
           K_PATH = 32 } key;

    memset(b, 0, sizeof(*b));

    for (i = 0; line[i] != '\0'; i++) {
        if ((unsigned char) line[i] < 0x20 && line[i] != '\t') {
            snprintf(err, errlen, "a control byte in the line");
            return -1;
        }
        if ((unsigned char) line[i] > 0x7e) {
            snprintf(err, errlen, "a byte outside printable ASCII");
            return -1;
        }
    }

    while (*p == ' ' || *p == '\t') {
        p++;
    }
    if (*p == '\0' || *p == '#') {
        return 0;
    }

    start = p;
    while (*p != '\0' && *p != ' ' && *p != '\t') {
        p++;
    }
    if (!eg_cred_name_ok(start, (size_t) (p - start))) {
        snprintf(err, errlen, "\"%.*s\": a credential name is 1 .. 64 bytes "
                 "of [a-z0-9._-], starting with a letter or digit",
                 (int) ((size_t) (p - start) > 64 ? 64 : p - start), start);
        return -1;
    }
    memcpy(b->name, start, (size_t) (p - start));
    snprintf(b->header, sizeof(b->header), "Authorization");

    for (;;) {
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        if (eg_cred_kv(&p, &k, &kl, &v, &vl, &why) != 0) {
            snprintf(err, errlen, "%s: %s", b->name, why);
            return -1;
        }

#define KEY(s)  (kl == sizeof(s) - 1 && memcmp(k, s, kl) == 0)
        if (KEY("host")) {
            key = K_HOST;
        } else if (KEY("port")) {
            key = K_PORT;
        } else if (KEY("header")) {
            key = K_HEADER;
        } else if (KEY("template")) {
            key = K_TEMPLATE;
        } else if (KEY("env")) {
            key = K_ENV;
        } else if (KEY("path")) {
            key = K_PATH;
        } else {
            snprintf(err, errlen, "%s: unknown key \"%.*s\" (host, port, "
                     "header, template, env, path)", b->name,
                     (int) (kl > 32 ? 32 : kl), k);
            return -1;
        }
#undef KEY
        if (seen & key) {
            snprintf(err, errlen, "%s: \"%.*s\" given twice", b->name,
                     (int) kl, k);
            return -1;
        }
        seen |= key;

        switch (key) {
        case K_HOST:
            if (vl == 0 || vl > EG_HOST_MAX + 2 || memchr(v, ':', vl) != NULL
                || memchr(v, '[', vl) != NULL)
            {
                snprintf(err, errlen, "%s: host is a DNS name or "
                         "\"*.suffix\", without a port", b->name);
                return -1;
            }
            memcpy(tmp, v, vl);
            tmp[vl] = '\0';
            if (eg_allow_parse(tmp, &b->host, err, errlen) != 0) {
                char  inner[256];
                snprintf(inner, sizeof(inner), "%s", err);
                snprintf(err, errlen, "%s: host: %s", b->name, inner);
                return -1;
            }
            if (!b->host.wildcard
                && eg_host_parse(b->host.host, strlen(b->host.host), &h,
                                 &why) == 0
                && h.is_literal)
            {
                snprintf(err, errlen, "%s: host is a DNS name, not an IP "
                         "literal (the upstream's certificate is checked "
                         "against the name)", b->name);
                return -1;
            }
            b->host.port = 443;
            break;

        case K_PORT:
            if (vl != 3 || memcmp(v, "443", 3) != 0) {
                snprintf(err, errlen, "%s: port is 443, the only one (the "
                         "proxy adds credentials to HTTPS only)", b->name);
                return -1;
            }
            break;

        case K_HEADER:
            if (eg_cred_header_ok(v, vl, &why) != 0) {
                snprintf(err, errlen, "%s: header \"%.*s\": %s", b->name,
                         (int) (vl > 64 ? 64 : vl), v, why);
                return -1;
            }
            memcpy(b->header, v, vl);
            b->header[vl] = '\0';
            break;

        case K_TEMPLATE:
            if (eg_cred_copy(b->tmpl, sizeof(b->tmpl), v, vl) != 0) {
                snprintf(err, errlen, "%s: template longer than %d bytes",
                         b->name, EG_CRED_TEMPLATE_MAX);
                return -1;
            }
            mark = strstr(b->tmpl, EG_CRED_SECRET_MARK);
            if (mark == NULL
                || strstr(mark + 1, EG_CRED_SECRET_MARK) != NULL)
            {
                snprintf(err, errlen, "%s: template holds \"{{secret}}\" "
                         "exactly once", b->name);
                return -1;
            }
            break;

        case K_ENV:
            if (eg_cred_copy(b->env, sizeof(b->env), v, vl) != 0
                || eg_cred_env_ok(b->env, &why) != 0)
            {
                snprintf(err, errlen, "%s: env \"%.*s\": %s", b->name,
                         (int) (vl > 64 ? 64 : vl), v,
                         why ? why : "longer than 64 bytes");
                return -1;
            }
            break;

        case K_PATH:
            if (vl == 0 || v[0] != '/'
                || eg_cred_copy(b->path, sizeof(b->path), v, vl) != 0)
            {
                snprintf(err, errlen, "%s: path is a prefix starting with "
                         "'/', at most %d bytes", b->name, EG_CRED_PATH_MAX);
                return -1;
            }
            for (i = 0; i < vl; i++) {
                if (v[i] == ' ' || v[i] == '\t' || v[i] == '%' || v[i] == '\\'
                    || v[i] == '?' || v[i] == '#')
                {
                    snprintf(err, errlen, "%s: path holds no blank, '%%', "
                             "'\\', '?' or '#'", b->name);
                    return -1;
                }
            }
            break;
        }
    }

    if (!(seen & K_HOST) || !(seen & K_TEMPLATE) || !(seen & K_ENV)) {
        snprintf(err, errlen, "%s: host, template and env are required",
                 b->name);
        return -1;
    }
    return 1;
}


int
eg_cred_bindings_parse(const char *text, size_t len,
    eg_cred_binding_t out[EG_CRED_MAX], size_t *n, char *err, size_t errlen)
{
    char               line[EG_CRED_LINE_MAX + 1], perr[400];
    const char        *p = text, *end = text + len, *nl;
    unsigned           lineno = 0;
    size_t             ll, i;
    eg_cred_binding_t  b;
    int                rc;

    *n = 0;
    if (len > 0 && memchr(text, '\0', len) != NULL) {
        snprintf(err, errlen, "a NUL byte in the file");
        return -1;
    }
    while (p < end) {
        lineno++;
        nl = memchr(p, '\n', (size_t) (end - p));
        ll = (size_t) ((nl != NULL ? nl : end) - p);
        if (ll > EG_CRED_LINE_MAX) {
            snprintf(err, errlen, "line %u: longer than %d bytes", lineno,
                     EG_CRED_LINE_MAX);
            return -1;
        }
        memcpy(line, p, ll);
        line[ll] = '\0';
        p += ll + (nl != NULL);

        rc = eg_cred_binding_parse(line, &b, perr, sizeof(perr));
        if (rc < 0) {
            snprintf(err, errlen, "line %u: %s", lineno, perr);
            return -1;
        }
        if (rc == 0) {
            continue;
        }
        for (i = 0; i < *n; i++) {
            if (strcmp(out[i].name, b.name) == 0) {
                snprintf(err, errlen, "line %u: %s is bound twice", lineno,
                         b.name);
                return -1;
            }
        }
        if (*n == EG_CRED_MAX) {
            snprintf(err, errlen, "line %u: more than %d bindings", lineno,
                     EG_CRED_MAX);
            return -1;
        }
        out[(*n)++] = b;
    }
    return 0;
}


/* 0 if s (may be NULL when optional) holds no '"', no control byte and,
 * unless blanks, no blank. */
static int
eg_cred_part_ok(const char *s, int blanks)
{
    for (; s != NULL && *s != '\0'; s++) {
        if (*s == '"' || (unsigned char) *s < 0x20 || (unsigned char) *s > 0x7e
            || (!blanks && *s == ' '))
        {
            return -1;
        }
    }
    return 0;
}


int
eg_cred_binding_from(const char *name, const char *host, const char *header,
    const char *tmpl, const char *env, const char *path,
    eg_cred_binding_t *b, char *err, size_t errlen)
{
    char  line[EG_CRED_LINE_MAX + 1];
    int   n;

    if (eg_cred_part_ok(name, 0) != 0 || eg_cred_part_ok(host, 0) != 0
        || eg_cred_part_ok(header, 0) != 0 || eg_cred_part_ok(env, 0) != 0
        || eg_cred_part_ok(path, 0) != 0 || eg_cred_part_ok(tmpl, 1) != 0)
    {
        snprintf(err, errlen, "a part of the binding holds a '\"', a control "
                 "byte or a blank (only the template may hold blanks)");
        return -1;
    }
    n = snprintf(line, sizeof(line), "%s host=%s header=%s template=\"%s\" "
                 "env=%s%s%s", name, host,
                 header != NULL ? header : "Authorization", tmpl,
                 env != NULL ? env : "VETO_AGENT_SECRET",
                 path != NULL ? " path=" : "", path != NULL ? path : "");
    if (n < 0 || (size_t) n >= sizeof(line)) {
        snprintf(err, errlen, "the binding is longer than %d bytes",
                 EG_CRED_LINE_MAX);
        return -1;
    }
    if (eg_cred_binding_parse(line, b, err, errlen) != 1) {
        if (err[0] == '\0') {
            snprintf(err, errlen, "an empty binding");
        }
        return -1;
    }
    return 0;
}
