/*
 * Veto Sandbox: the summary of a request a human decides on (exact, whole
 * or not at all) and the one an audit record keeps (every string
 * redacted, then cut to its byte bound in JSON text), and the views of an
 * environment they show.  Contract: ngx_http_veto_sandbox_summary.h and
 * docs/approvals.md.  Nothing here knows a request or Redis.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/evp.h>

#include "ngx_http_veto_sandbox_summary.h"
#include "ngx_http_veto_sandbox_redact.h"


/* only this much of one string is redacted: the rest is cut anyway */
#define NGX_HTTP_VSB_REDACT_SPAN   8192

/* a profile or network name: short by nature */
#define NGX_HTTP_VSB_SUMMARY_NAME_MAX  256

/* what a network summary takes besides its lists: its key, mode, the
 * lists' keys and brackets, the counts of cut lists */
#define NGX_HTTP_VSB_SUMMARY_NET_FRAME 192


typedef struct {
    const char  *name;
    json_t      *value;         /* a string, or NULL: withheld */
    ngx_uint_t   owned;         /* value is a reference of ours */
} ngx_http_veto_sandbox_env_entry_t;


static json_t *ngx_http_veto_sandbox_cut_string(ngx_pool_t *pool,
    u_char *s, size_t len, size_t max, ngx_uint_t *cut);
static json_t *ngx_http_veto_sandbox_cut_element(ngx_pool_t *pool,
    u_char *s, size_t len, size_t max, ngx_uint_t *cut,
    ngx_http_veto_sandbox_redact_state_t *st);
static ngx_int_t ngx_http_veto_sandbox_summary_argv(ngx_pool_t *pool,
    json_t *sum, json_t *argv, ngx_uint_t review);
static ngx_int_t ngx_http_veto_sandbox_summary_stdin(ngx_pool_t *pool,
    json_t *sum, ngx_str_t *in, ngx_uint_t review);
static ngx_int_t ngx_http_veto_sandbox_summary_env(json_t *sum, json_t *env,
    ngx_uint_t dropped, json_t *flagged);
static ngx_int_t ngx_http_veto_sandbox_summary_creds(json_t *sum,
    ngx_http_veto_sandbox_summary_in_t *in, size_t max);
static ngx_int_t ngx_http_veto_sandbox_summary_network(json_t *sum,
    json_t *hosts, json_t *ask, size_t max, ngx_uint_t review);


/* the bytes c takes in a JSON string */
static ngx_inline size_t
ngx_http_veto_sandbox_json_cost(u_char c)
{
    if (c == '"' || c == '\\') {
        return 2;
    }

    if (c < 0x20) {
        return (c == '\b' || c == '\f' || c == '\n' || c == '\r'
                || c == '\t') ? 2 : 6;
    }

    return 1;
}


size_t
ngx_http_veto_sandbox_json_cut(u_char *s, size_t len, size_t max)
{
    size_t  i, cost, c;

    cost = 0;

    for (i = 0; i < len; i++) {
        c = ngx_http_veto_sandbox_json_cost(s[i]);

        if (cost + c > max) {
            break;
        }

        cost += c;
    }

    /* never end inside a UTF-8 sequence */
    while (i < len && i > 0 && (s[i] & 0xc0) == 0x80) {
        i--;
    }

    return i;
}


/* the JSON text s takes as a string, quotes included */
static size_t
ngx_http_veto_sandbox_json_size(const char *s, size_t len)
{
    size_t  i, n;

    n = 2;

    for (i = 0; i < len; i++) {
        n += ngx_http_veto_sandbox_json_cost((u_char) s[i]);
    }

    return n;
}


/*
 * s redacted and cut to max bytes of JSON text; *cut set when anything
 * was left out.  NULL when the result is not UTF-8, or on failure.
 */
static json_t *
ngx_http_veto_sandbox_cut_string(ngx_pool_t *pool, u_char *s, size_t len,
    size_t max, ngx_uint_t *cut)
{
    ngx_http_veto_sandbox_redact_state_t  own;

    ngx_memzero(&own, sizeof(own));

    return ngx_http_veto_sandbox_cut_element(pool, s, len, max, cut, &own);
}


/* the same for an element of an argv: st carries what the elements
 * before it said of this one ("--password" then the secret) */
static json_t *
ngx_http_veto_sandbox_cut_element(ngx_pool_t *pool, u_char *s, size_t len,
    size_t max, ngx_uint_t *cut, ngx_http_veto_sandbox_redact_state_t *st)
{
    size_t     span, n;
    ngx_str_t  in, out;

    span = len;

    if (span > NGX_HTTP_VSB_REDACT_SPAN) {
        span = NGX_HTTP_VSB_REDACT_SPAN;

        while (span > 0 && (s[span] & 0xc0) == 0x80) {
            span--;
        }
    }

    in.data = s;
    in.len = span;

    if (ngx_http_veto_sandbox_redact_next(pool, &in, &out, st) != NGX_OK) {
        return NULL;
    }

    n = ngx_http_veto_sandbox_json_cut(out.data, out.len, max);

    if (span < len || n < out.len) {
        *cut = 1;
    }

    return json_stringn((const char *) out.data, n);
}


/* a string field of req, redacted and cut to max: name, name_truncated;
 * in a review summary, as it is */
static ngx_int_t
ngx_http_veto_sandbox_summary_string(ngx_pool_t *pool, json_t *sum,
    json_t *req, const char *name, size_t max, ngx_uint_t review)
{
    u_char      key[64];
    json_t     *v, *s;
    ngx_uint_t  cut;

    v = json_object_get(req, name);
    if (!json_is_string(v)) {
        return NGX_OK;
    }

    if (review) {
        return json_object_set(sum, name, v) == 0 ? NGX_OK : NGX_ERROR;
    }

    cut = 0;

    s = ngx_http_veto_sandbox_cut_string(pool,
                                         (u_char *) json_string_value(v),
                                         json_string_length(v), max, &cut);
    if (s == NULL || json_object_set_new(sum, name, s) != 0) {
        return NGX_ERROR;
    }

    if (cut) {
        ngx_snprintf(key, sizeof(key), "%s_truncated%Z", name);

        if (json_object_set_new(sum, (char *) key, json_true()) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* an integer field of req as it is */
static ngx_int_t
ngx_http_veto_sandbox_summary_integer(json_t *sum, json_t *req,
    const char *name)
{
    json_t  *v;

    v = json_object_get(req, name);
    if (!json_is_integer(v)) {
        return NGX_OK;
    }

    return json_object_set_new(sum, name,
                               json_integer(json_integer_value(v))) == 0
           ? NGX_OK : NGX_ERROR;
}


/* a file's mode as chmod takes it: "0755" */
static ngx_int_t
ngx_http_veto_sandbox_summary_mode(json_t *sum, json_t *req)
{
    char        mode[5];
    json_t     *v;
    ngx_uint_t  m;

    v = json_object_get(req, "mode");
    if (!json_is_integer(v)) {
        return NGX_OK;
    }

    m = (ngx_uint_t) json_integer_value(v) & 0777;

    mode[0] = '0';
    mode[1] = (char) ('0' + ((m >> 6) & 7));
    mode[2] = (char) ('0' + ((m >> 3) & 7));
    mode[3] = (char) ('0' + (m & 7));
    mode[4] = '\0';

    return json_object_set_new(sum, "mode", json_string(mode)) == 0
           ? NGX_OK : NGX_ERROR;
}


/* a files op's path, cut like any string: path, path_truncated */
static ngx_int_t
ngx_http_veto_sandbox_summary_path(ngx_pool_t *pool, json_t *sum,
    ngx_str_t *path, ngx_uint_t review)
{
    json_t     *s;
    ngx_uint_t  cut;

    cut = 0;

    s = review ? json_stringn((const char *) path->data, path->len)
               : ngx_http_veto_sandbox_cut_string(pool, path->data,
                                        path->len,
                                        NGX_HTTP_VSB_SUMMARY_STR_MAX, &cut);
    if (s == NULL) {
        return NGX_OK;          /* not UTF-8: the helper refuses it */
    }

    if (json_object_set_new(sum, "path", s) != 0
        || (cut
            && json_object_set_new(sum, "path_truncated", json_true()) != 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_summary(ngx_pool_t *pool,
    ngx_http_veto_sandbox_summary_in_t *in, ngx_str_t *out)
{
    char        *text;
    size_t       size, max;
    json_t      *sum, *req, *v, *lim, *e;
    ngx_int_t    rc;
    const char  *key;

    rc = NGX_ERROR;
    req = json_is_object(in->req) ? in->req : NULL;

    sum = json_object();
    if (sum == NULL) {
        return NGX_ERROR;
    }

    if (json_object_set_new(sum, "action",
                            json_stringn((const char *) in->action.data,
                                         in->action.len))
        != 0)
    {
        goto done;
    }

    if (in->sandbox && in->sandbox->len
        && json_object_set_new(sum, "sandbox",
                               json_stringn((const char *) in->sandbox->data,
                                            in->sandbox->len))
           != 0)
    {
        goto done;
    }

    if (req) {
        if (ngx_http_veto_sandbox_summary_string(pool, sum, req, "profile",
                                        NGX_HTTP_VSB_SUMMARY_NAME_MAX,
                                        in->review)
            != NGX_OK
            || ngx_http_veto_sandbox_summary_string(pool, sum, req,
                                        "network",
                                        NGX_HTTP_VSB_SUMMARY_NAME_MAX,
                                        in->review)
               != NGX_OK
            || ngx_http_veto_sandbox_summary_integer(sum, req, "ttl_s")
               != NGX_OK
            || ngx_http_veto_sandbox_summary_string(pool, sum, req, "cwd",
                                        NGX_HTTP_VSB_SUMMARY_STR_MAX,
                                        in->review)
               != NGX_OK
            || ngx_http_veto_sandbox_summary_integer(sum, req, "timeout_s")
               != NGX_OK
            || ngx_http_veto_sandbox_summary_integer(sum, req,
                                                     "output_bytes")
               != NGX_OK
            || ngx_http_veto_sandbox_summary_string(pool, sum, req, "format",
                                        NGX_HTTP_VSB_SUMMARY_NAME_MAX,
                                        in->review)
               != NGX_OK
            || ngx_http_veto_sandbox_summary_mode(sum, req) != NGX_OK)
        {
            goto done;
        }

        /* a background exec outlives its request: a reviewer sees that */
        if (json_is_true(json_object_get(req, "background"))
            && json_object_set_new(sum, "background", json_true()) != 0)
        {
            goto done;
        }

        /* limits: the helper's names and integers, nothing else */
        v = json_object_get(req, "limits");

        if (json_is_object(v)) {
            lim = json_object();
            if (lim == NULL || json_object_set_new(sum, "limits", lim) != 0) {
                goto done;
            }

            json_object_foreach(v, key, e) {
                if (json_is_integer(e) && ngx_strlen(key) < 32
                    && json_object_set_new(lim, key,
                                   json_integer(json_integer_value(e))) != 0)
                {
                    goto done;
                }
            }
        }

        v = json_object_get(req, "argv");

        if (json_is_array(v)
            && ngx_http_veto_sandbox_summary_argv(pool, sum, v, in->review)
               != NGX_OK)
        {
            goto done;
        }
    }

    if (in->env
        && ngx_http_veto_sandbox_summary_env(sum, in->env, in->env_dropped,
                                             in->review ? in->env_flagged
                                                        : NULL)
           != NGX_OK)
    {
        goto done;
    }

    if (in->in && in->in->len
        && ngx_http_veto_sandbox_summary_stdin(pool, sum, in->in, in->review)
           != NGX_OK)
    {
        goto done;
    }

    if (in->path && in->path->len
        && ngx_http_veto_sandbox_summary_path(pool, sum, in->path,
                                              in->review)
           != NGX_OK)
    {
        goto done;
    }

    if (in->size >= 0
        && json_object_set_new(sum, "size", json_integer(in->size)) != 0)
    {
        goto done;
    }

    if (in->sha256 && in->sha256->len
        && json_object_set_new(sum, "sha256",
                               json_stringn((const char *) in->sha256->data,
                                            in->sha256->len))
           != 0)
    {
        goto done;
    }

    if (in->irreversible
        && (json_object_set_new(sum, "irreversible", json_true()) != 0
            || json_object_set_new(sum, "irreversible_reason",
                                   json_string(in->irreversible)) != 0))
    {
        goto done;
    }

    max = in->review ? NGX_HTTP_VSB_SUMMARY_MAX
                     : NGX_HTTP_VSB_SUMMARY_RECORD_MAX;

    /* the credentials attached (names, never a value: the gateway never
     * has one) and the hosts granted come last: in a record they get
     * what the rest leaves (the credentials at most half of it when
     * there are hosts, and NGX_HTTP_VSB_SUMMARY_CREDS_MAX; the hosts at
     * most NGX_HTTP_VSB_SUMMARY_HOSTS_MAX); a reviewer sees them all */
    if (in->hosts) {
        json_object_del(sum, "network");
    }

    if (in->creds) {
        size = json_dumpb(sum, NULL, 0, JSON_COMPACT | JSON_SORT_KEYS);
        size = size < max ? max - size : 0;

        if (in->hosts) {
            size /= 2;
        }

        if (ngx_http_veto_sandbox_summary_creds(sum, in,
                                    ngx_min(size,
                                            NGX_HTTP_VSB_SUMMARY_CREDS_MAX))
            != NGX_OK)
        {
            goto done;
        }
    }

    if (in->hosts) {
        size = json_dumpb(sum, NULL, 0, JSON_COMPACT | JSON_SORT_KEYS);
        size = size < max ? max - size : 0;

        if (ngx_http_veto_sandbox_summary_network(sum, in->hosts,
                                    in->hosts_ask,
                                    ngx_min(size,
                                            NGX_HTTP_VSB_SUMMARY_HOSTS_MAX),
                                    in->review)
            != NGX_OK)
        {
            goto done;
        }
    }

    text = json_dumps(sum, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL) {
        goto done;
    }

    out->len = ngx_strlen(text);

    /* a review summary is whole or not made: the caller refuses the
     * request, saying how large it was */
    if (in->review && out->len > max) {
        free(text);
        rc = NGX_DECLINED;
        goto done;
    }

    /* a record summary fits by construction; a change that broke that
     * must not store an unbounded record */
    if (out->len > max) {
        free(text);
        goto done;
    }

    out->data = ngx_pnalloc(pool, out->len + 1);

    if (out->data) {
        ngx_memcpy(out->data, text, out->len + 1);
        rc = NGX_OK;
    }

    free(text);

done:

    json_decref(sum);

    return rc;
}


/*
 * argv: the elements, each cut to NGX_HTTP_VSB_SUMMARY_STR_MAX, in all at
 * most NGX_HTTP_VSB_SUMMARY_ARGV_MAX; argv_bytes and argv_sha256 of the
 * whole argv, which is what runs.
 */
static ngx_int_t
ngx_http_veto_sandbox_summary_argv(ngx_pool_t *pool, json_t *sum,
    json_t *argv, ngx_uint_t review)
{
    u_char         md[EVP_MAX_MD_SIZE], hex[2 * EVP_MAX_MD_SIZE];
    size_t         i, left, max, total;
    json_t        *kept, *e, *s;
    ngx_int_t      rc;
    ngx_uint_t     cut;
    EVP_MD_CTX    *md_ctx;
    unsigned int   mdlen;

    ngx_http_veto_sandbox_redact_state_t  st;

    rc = NGX_ERROR;
    cut = 0;
    total = 0;
    ngx_memzero(&st, sizeof(st));
    left = NGX_HTTP_VSB_SUMMARY_ARGV_MAX;

    kept = json_array();
    md_ctx = EVP_MD_CTX_new();

    if (kept == NULL || md_ctx == NULL
        || EVP_DigestInit_ex(md_ctx, EVP_sha256(), NULL) != 1)
    {
        goto done;
    }

    json_array_foreach(argv, i, e) {
        if (!json_is_string(e)) {
            goto done;
        }

        /* each element and its terminating NUL, as execve() gets them */
        if (EVP_DigestUpdate(md_ctx, json_string_value(e),
                             json_string_length(e) + 1)
            != 1)
        {
            goto done;
        }

        total += json_string_length(e);

        /* a reviewer sees every element as it is */
        if (review) {
            if (json_array_append(kept, e) != 0) {
                goto done;
            }

            continue;
        }

        /* an element costs its quotes and comma too */
        if (left < 16) {
            cut = 1;
            continue;
        }

        max = ngx_min(left - 3, NGX_HTTP_VSB_SUMMARY_STR_MAX);

        /* an argv is redacted as one: "--password" hides the next */
        s = ngx_http_veto_sandbox_cut_element(pool,
                                           (u_char *) json_string_value(e),
                                           json_string_length(e), max, &cut,
                                           &st);
        if (s == NULL) {
            goto done;
        }

        left -= ngx_http_veto_sandbox_json_size(json_string_value(s),
                                                json_string_length(s)) + 1;

        if (json_array_append_new(kept, s) != 0) {
            goto done;
        }
    }

    if (EVP_DigestFinal_ex(md_ctx, md, &mdlen) != 1) {
        goto done;
    }

    ngx_hex_dump(hex, md, mdlen);

    if (json_object_set(sum, "argv", kept) != 0
        || json_object_set_new(sum, "argv_bytes", json_integer(total)) != 0
        || json_object_set_new(sum, "argv_sha256",
                               json_stringn((char *) hex, 2 * mdlen)) != 0)
    {
        goto done;
    }

    if (cut
        && (json_object_set_new(sum, "argv_truncated", json_true()) != 0
            || json_object_set_new(sum, "argv_count",
                                   json_integer(json_array_size(argv)))
               != 0))
    {
        goto done;
    }

    rc = NGX_OK;

done:

    EVP_MD_CTX_free(md_ctx);
    json_decref(kept);

    return rc;
}


/* stdin_bytes, and its head as text when it is UTF-8 ("stdin"); for a
 * reviewer stdin_sha256 and all of it, as text or "stdin_base64" */
static ngx_int_t
ngx_http_veto_sandbox_summary_stdin(ngx_pool_t *pool, json_t *sum,
    ngx_str_t *in, ngx_uint_t review)
{
    u_char        md[EVP_MAX_MD_SIZE], hex[2 * EVP_MAX_MD_SIZE];
    json_t       *v;
    ngx_str_t     b64;
    ngx_uint_t    cut;
    unsigned int  mdlen;

    if (json_object_set_new(sum, "stdin_bytes", json_integer(in->len)) != 0)
    {
        return NGX_ERROR;
    }

    if (review) {
        if (EVP_Digest(in->data, in->len, md, &mdlen, EVP_sha256(), NULL)
            != 1)
        {
            return NGX_ERROR;
        }

        ngx_hex_dump(hex, md, mdlen);

        if (json_object_set_new(sum, "stdin_sha256",
                                json_stringn((char *) hex, 2 * mdlen))
            != 0)
        {
            return NGX_ERROR;
        }

        v = json_stringn((const char *) in->data, in->len);

        if (v != NULL) {
            return json_object_set_new(sum, "stdin", v) == 0
                   ? NGX_OK : NGX_ERROR;
        }

        /* not UTF-8: its bytes, so nothing of it is hidden */
        b64.len = ngx_base64_encoded_length(in->len);
        b64.data = ngx_pnalloc(pool, b64.len);
        if (b64.data == NULL) {
            return NGX_ERROR;
        }

        ngx_encode_base64(&b64, in);

        return json_object_set_new(sum, "stdin_base64",
                                   json_stringn((char *) b64.data, b64.len))
               == 0 ? NGX_OK : NGX_ERROR;
    }

    cut = 0;

    v = ngx_http_veto_sandbox_cut_string(pool, in->data, in->len,
                                         NGX_HTTP_VSB_SUMMARY_STDIN_MAX, &cut);
    if (v == NULL) {
        return NGX_OK;          /* not text: the size says enough */
    }

    if (json_object_set_new(sum, "stdin", v) != 0
        || (cut
            && json_object_set_new(sum, "stdin_truncated", json_true()) != 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* env (the view as it is), env_names (its names, in its order) */
static ngx_int_t
ngx_http_veto_sandbox_summary_env(json_t *sum, json_t *env,
    ngx_uint_t dropped, json_t *flagged)
{
    json_t      *names, *v;
    const char  *name;

    if (!json_is_object(env)) {
        return NGX_ERROR;
    }

    names = json_array();
    if (names == NULL) {
        return NGX_ERROR;
    }

    json_object_foreach(env, name, v) {
        if (json_array_append_new(names, json_string(name)) != 0) {
            json_decref(names);
            return NGX_ERROR;
        }
    }

    if (json_object_set_new(sum, "env_names", names) != 0
        || json_object_set(sum, "env", env) != 0)
    {
        return NGX_ERROR;
    }

    /* for a reviewer: the names that are not inert */
    if (flagged != NULL
        && json_object_set(sum, "env_flagged", flagged) != 0)
    {
        return NGX_ERROR;
    }

    if (dropped
        && (json_object_set_new(sum, "env_truncated", json_true()) != 0
            || json_object_set_new(sum, "env_count",
                                   json_integer(json_object_size(env)
                                                + dropped))
               != 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * "credentials": the names attached and those needing a human, and where
 * each secret goes as the helper's bindings say: "hosts" (each once) and,
 * for a reviewer, "bindings" whole (name, host, header, env, path;
 * {name, bound: false} for one the helper does not bind).  Bindings not
 * heard from the helper: "hosts" says so in words.  In a record, at most
 * max bytes: the three lists a third each, whole entries, a cut one said
 * (<name>_truncated, <name>_count); no bindings.
 */
static ngx_int_t
ngx_http_veto_sandbox_summary_creds(json_t *sum,
    ngx_http_veto_sandbox_summary_in_t *in, size_t max)
{
    json_t      *c, *hosts, *b, *h, *e, *list;
    size_t       i, j, share;
    ngx_uint_t   seen, cut;
    const char  *key;

    static const char  *keys[] = { "needs_approval", "attach", "hosts" };
    static const char  *cuts[] = { "needs_approval_truncated",
                                   "attach_truncated", "hosts_truncated" };
    static const char  *counts[] = { "needs_approval_count", "attach_count",
                                     "hosts_count" };

    c = json_pack("{s:O, s:o}", "attach", in->creds, "needs_approval",
                  in->creds_ask ? json_incref(in->creds_ask) : json_array());
    if (c == NULL || json_object_set_new(sum, "credentials", c) != 0) {
        return NGX_ERROR;
    }

    if (in->cred_bindings == NULL) {
        if (json_object_set_new(c, "hosts", json_string(
                "each bound by the operator (the helper's "
                "egress_credentials): it joins the allowlist, port 443, "
                "and gets the header there only"))
            != 0)
        {
            return NGX_ERROR;
        }

    } else {
        hosts = json_array();
        if (hosts == NULL || json_object_set_new(c, "hosts", hosts) != 0) {
            return NGX_ERROR;
        }

        json_array_foreach(in->cred_bindings, i, b) {
            h = json_object_get(b, "host");
            if (!json_is_string(h)) {
                continue;
            }

            seen = 0;

            json_array_foreach(hosts, j, e) {
                if (json_equal(e, h)) {
                    seen = 1;
                    break;
                }
            }

            if (!seen && json_array_append(hosts, h) != 0) {
                return NGX_ERROR;
            }
        }

        if (in->review) {
            return json_object_set(c, "bindings", in->cred_bindings) == 0
                   ? NGX_OK : NGX_ERROR;
        }
    }

    if (in->review) {
        return NGX_OK;
    }

    /* the keys, flags and counts of three cut lists: under 300 bytes */
    share = max > 3 * 100 ? max / 3 - 100 : 0;

    for (i = 0; i < 3; i++) {
        key = keys[i];
        list = json_object_get(c, key);

        if (!json_is_array(list)) {
            continue;               /* the words: a constant */
        }

        cut = 0;
        e = ngx_http_veto_sandbox_summary_hosts(list, share, &cut);
        if (e == NULL) {
            return NGX_ERROR;
        }

        j = json_array_size(list);

        if (json_object_set_new(c, key, e) != 0
            || (cut && (json_object_set_new(c, cuts[i], json_true()) != 0
                        || json_object_set_new(c, counts[i],
                                               json_integer((json_int_t) j))
                           != 0)))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


json_t *
ngx_http_veto_sandbox_summary_hosts(json_t *list, size_t max,
    ngx_uint_t *cut)
{
    size_t   i, used, cost;
    json_t  *kept, *e;

    kept = json_array();
    if (kept == NULL) {
        return NULL;
    }

    used = 2;

    json_array_foreach(list, i, e) {
        if (!json_is_string(e)) {
            break;
        }

        /* an entry costs its quotes and a comma: never half a host */
        cost = ngx_http_veto_sandbox_json_size(json_string_value(e),
                                               json_string_length(e))
               + (i ? 1 : 0);

        if (used + cost > max) {
            break;
        }

        if (json_array_append(kept, e) != 0) {
            json_decref(kept);
            return NULL;
        }

        used += cost;
    }

    if (json_array_size(kept) < json_array_size(list)) {
        *cut = 1;
    }

    return kept;
}


/*
 * network: {"mode": "allowlist", "hosts": [...], "needs_approval":
 * [...]} within max bytes.  needs_approval (what the human grants) is
 * kept first, hosts get the rest but never less than a quarter when they
 * need it (reviewer interfaces and webhooks list "hosts": a cut summary
 * must not show none); a cut list is counted.
 */
static ngx_int_t
ngx_http_veto_sandbox_summary_network(json_t *sum, json_t *hosts,
    json_t *ask, size_t max, ngx_uint_t review)
{
    size_t      left, used, share;
    json_t     *net, *h, *a;
    ngx_uint_t  hcut, acut;

    net = json_object();
    if (net == NULL || json_object_set_new(sum, "network", net) != 0) {
        return NGX_ERROR;
    }

    /* a reviewer sees every host: the summary's bound is checked whole */
    if (review) {
        h = json_is_array(hosts) ? json_copy(hosts) : json_array();
        a = json_is_array(ask) ? json_copy(ask) : json_array();

        if (json_object_set_new(net, "hosts", h) != 0
            || json_object_set_new(net, "needs_approval", a) != 0
            || json_object_set_new(net, "mode", json_string("allowlist"))
               != 0)
        {
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    left = max > NGX_HTTP_VSB_SUMMARY_NET_FRAME
           ? max - NGX_HTTP_VSB_SUMMARY_NET_FRAME : 0;
    acut = 0;
    hcut = 0;

    share = ngx_min(json_dumpb(hosts, NULL, 0, JSON_COMPACT), left / 4);

    a = ngx_http_veto_sandbox_summary_hosts(ask, left - share, &acut);
    if (a == NULL
        || json_object_set_new(net, "needs_approval", a) != 0)
    {
        return NGX_ERROR;
    }

    used = json_dumpb(a, NULL, 0, JSON_COMPACT);
    left = left > used ? left - used : 0;

    h = ngx_http_veto_sandbox_summary_hosts(hosts, left, &hcut);
    if (h == NULL
        || json_object_set_new(net, "hosts", h) != 0
        || json_object_set_new(net, "mode", json_string("allowlist")) != 0)
    {
        return NGX_ERROR;
    }

    if (hcut
        && (json_object_set_new(net, "hosts_truncated", json_true()) != 0
            || json_object_set_new(net, "hosts_count",
                                   json_integer(json_array_size(hosts)))
               != 0))
    {
        return NGX_ERROR;
    }

    if (acut
        && (json_object_set_new(net, "needs_approval_truncated", json_true())
            != 0
            || json_object_set_new(net, "needs_approval_count",
                                   json_integer(json_array_size(ask)))
               != 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* what a dangerous variable shows: "NAME=value" redacted (a secret-looking
 * name hides its value), cut */
static json_t *
ngx_http_veto_sandbox_env_value(ngx_pool_t *pool, const char *name,
    json_t *value)
{
    u_char      *p, *s;
    size_t       nlen, vlen;
    ngx_str_t    in, out;
    ngx_uint_t   cut;

    nlen = ngx_strlen(name);
    vlen = ngx_min(json_string_length(value), NGX_HTTP_VSB_REDACT_SPAN);

    s = (u_char *) json_string_value(value);

    while (vlen > 0 && vlen < json_string_length(value)
           && (s[vlen] & 0xc0) == 0x80)
    {
        vlen--;
    }

    p = ngx_pnalloc(pool, nlen + 1 + vlen);
    if (p == NULL) {
        return NULL;
    }

    in.data = p;
    p = ngx_cpymem(p, name, nlen);
    *p++ = '=';
    p = ngx_cpymem(p, s, vlen);
    in.len = p - in.data;

    if (ngx_http_veto_sandbox_redact(pool, &in, &out) != NGX_OK) {
        return NULL;
    }

    if (out.len > nlen && ngx_strncmp(out.data, name, nlen) == 0
        && out.data[nlen] == '=')
    {
        out.data += nlen + 1;
        out.len -= nlen + 1;
    }

    cut = 0;

    return ngx_http_veto_sandbox_cut_string(pool, out.data, out.len,
                                            NGX_HTTP_VSB_SUMMARY_STR_MAX,
                                            &cut);
}


static int
ngx_http_veto_sandbox_env_cmp(const void *a, const void *b)
{
    const ngx_http_veto_sandbox_env_entry_t  *x = a, *y = b;

    if ((x->value == NULL) != (y->value == NULL)) {
        return x->value == NULL ? 1 : -1;
    }

    return ngx_strcmp(x->name, y->name);
}


json_t *
ngx_http_veto_sandbox_env_view(ngx_pool_t *pool, json_t *base, json_t *env,
    ngx_http_veto_sandbox_env_dangerous_pt dangerous, void *data,
    ngx_uint_t *dropped)
{
    size_t                              n, i, k, left, cost;
    json_t                             *view, *v;
    const char                         *name;
    ngx_http_veto_sandbox_env_entry_t  *ent;

    n = (json_is_object(base) ? json_object_size(base) : 0)
        + (json_is_object(env) ? json_object_size(env) : 0);

    ent = ngx_pcalloc(pool,
                      (n + 1) * sizeof(ngx_http_veto_sandbox_env_entry_t));
    if (ent == NULL) {
        return NULL;
    }

    view = NULL;
    k = 0;

    /* the sandbox's env, whole: shown like a request's */
    if (json_is_object(base)) {
        json_object_foreach(base, name, v) {
            ent[k].name = name;
            ent[k].value = NULL;
            ent[k].owned = 0;

            if (json_is_string(v) && dangerous(data, name)) {
                ent[k].value = ngx_http_veto_sandbox_env_value(pool, name, v);
                if (ent[k].value == NULL) {
                    goto done;
                }

                ent[k].owned = 1;
            }

            k++;
        }
    }

    if (json_is_object(env)) {
        json_object_foreach(env, name, v) {

            /* the request's value wins over the sandbox's */
            for (i = 0; i < k; i++) {
                if (ngx_strcmp(ent[i].name, name) == 0) {
                    break;
                }
            }

            if (i == k) {
                k++;
            }

            if (ent[i].owned) {
                json_decref(ent[i].value);
            }

            ent[i].name = name;
            ent[i].value = NULL;
            ent[i].owned = 0;

            if (json_is_string(v) && dangerous(data, name)) {
                ent[i].value = ngx_http_veto_sandbox_env_value(pool, name, v);
                if (ent[i].value == NULL) {
                    goto done;
                }

                ent[i].owned = 1;
            }
        }
    }

    ngx_qsort(ent, k, sizeof(ngx_http_veto_sandbox_env_entry_t),
              ngx_http_veto_sandbox_env_cmp);

    view = json_object();
    if (view == NULL) {
        goto done;
    }

    left = NGX_HTTP_VSB_SUMMARY_ENV_MAX;

    for (i = 0; i < k; i++) {
        cost = ngx_http_veto_sandbox_json_size(ent[i].name,
                                               ngx_strlen(ent[i].name)) + 2
               + (ent[i].value
                  ? ngx_http_veto_sandbox_json_size(
                                   json_string_value(ent[i].value),
                                   json_string_length(ent[i].value))
                  : 4);

        if (cost > left) {
            (*dropped)++;
            continue;
        }

        left -= cost;

        if (json_object_set(view, ent[i].name,
                            ent[i].value ? ent[i].value : json_null())
            != 0)
        {
            json_decref(view);
            view = NULL;
            goto done;
        }
    }

done:

    for (i = 0; i < k; i++) {
        if (ent[i].owned) {
            json_decref(ent[i].value);
        }
    }

    return view;
}


ngx_int_t
ngx_http_veto_sandbox_env_digest(json_t *env, u_char *hex)
{
    u_char        md[EVP_MAX_MD_SIZE], *p;
    char         *text;
    unsigned int  mdlen;

    text = json_is_object(env)
           ? json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

    if (EVP_Digest(text ? text : "{}", text ? ngx_strlen(text) : 2, md,
                   &mdlen, EVP_sha256(), NULL)
        != 1)
    {
        free(text);
        return NGX_ERROR;
    }

    free(text);

    p = ngx_hex_dump(hex, md, mdlen);
    *p = '\0';

    return NGX_OK;
}


static int
ngx_http_veto_sandbox_name_cmp(const void *a, const void *b)
{
    return ngx_strcmp(*(const char **) a, *(const char **) b);
}


json_t *
ngx_http_veto_sandbox_env_review(json_t *base, json_t *env,
    ngx_http_veto_sandbox_env_dangerous_pt dangerous, void *data,
    json_t **flagged)
{
    size_t        i, k, n;
    json_t       *view, *sorted, *names, *v;
    const char   *name, **all;

    *flagged = NULL;

    view = json_object();
    if (view == NULL) {
        return NULL;
    }

    /* the request's value wins over the sandbox's */
    if ((json_is_object(base) && json_object_update(view, base) != 0)
        || (json_is_object(env) && json_object_update(view, env) != 0))
    {
        goto failed;
    }

    n = json_object_size(view);

    all = malloc((n + 1) * sizeof(const char *));
    names = json_array();

    if (all == NULL || names == NULL) {
        free(all);
        json_decref(names);
        goto failed;
    }

    k = 0;

    json_object_foreach(view, name, v) {
        if (!json_is_string(v)) {
            free(all);
            json_decref(names);
            goto failed;
        }

        all[k++] = name;
    }

    /* json_object_foreach() follows insertion order: sort the names */
    qsort(all, k, sizeof(const char *), ngx_http_veto_sandbox_name_cmp);

    /* in name order, as env_names lists them */
    sorted = json_object();

    for (i = 0; i < k; i++) {
        if (sorted == NULL
            || json_object_set(sorted, all[i], json_object_get(view, all[i]))
               != 0
            || (dangerous(data, all[i])
                && json_array_append_new(names, json_string(all[i])) != 0))
        {
            free(all);
            json_decref(names);
            json_decref(sorted);
            goto failed;
        }
    }

    free(all);
    json_decref(view);

    *flagged = names;

    return sorted;

failed:

    json_decref(view);

    return NULL;
}


/* does redaction change s (len bytes; st: an argv's state)? */
static ngx_int_t
ngx_http_veto_sandbox_looks_secret(ngx_pool_t *pool, u_char *s, size_t len,
    ngx_http_veto_sandbox_redact_state_t *st)
{
    ngx_str_t                             in, out;
    ngx_http_veto_sandbox_redact_state_t  own;

    if (st == NULL) {
        ngx_memzero(&own, sizeof(own));
        st = &own;
    }

    in.data = s;
    in.len = len;

    if (ngx_http_veto_sandbox_redact_next(pool, &in, &out, st) != NGX_OK) {
        return NGX_ERROR;
    }

    return (out.len != in.len || ngx_memcmp(out.data, in.data, in.len) != 0)
           ? NGX_DECLINED : NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_env_secret(ngx_pool_t *pool, const char *name,
    json_t *value)
{
    u_char  *p;
    size_t   nlen;

    if (!json_is_string(value)) {
        return NGX_OK;
    }

    nlen = ngx_strlen(name);

    p = ngx_pnalloc(pool, nlen + 1 + json_string_length(value));
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, name, nlen);
    p[nlen] = '=';
    ngx_memcpy(p + nlen + 1, json_string_value(value),
               json_string_length(value));

    return ngx_http_veto_sandbox_looks_secret(pool, p,
                                  nlen + 1 + json_string_length(value), NULL);
}


ngx_int_t
ngx_http_veto_sandbox_summary_credential(ngx_pool_t *pool,
    ngx_http_veto_sandbox_summary_in_t *in, u_char *where, size_t size)
{
    u_char      *last;
    size_t       i;
    json_t      *v, *e;
    ngx_int_t    rc;
    const char  *name;

    ngx_http_veto_sandbox_redact_state_t  st;

    last = where + size - 1;

    v = json_is_object(in->req) ? json_object_get(in->req, "argv") : NULL;

    if (json_is_array(v)) {
        ngx_memzero(&st, sizeof(st));

        json_array_foreach(v, i, e) {
            if (!json_is_string(e)) {
                continue;
            }

            rc = ngx_http_veto_sandbox_looks_secret(pool,
                                           (u_char *) json_string_value(e),
                                           json_string_length(e), &st);
            if (rc != NGX_OK) {
                *ngx_slprintf(where, last, "argv[%uz]", i) = '\0';
                return rc;
            }
        }
    }

    v = json_is_object(in->req) ? json_object_get(in->req, "cwd") : NULL;

    if (json_is_string(v)) {
        rc = ngx_http_veto_sandbox_looks_secret(pool,
                                           (u_char *) json_string_value(v),
                                           json_string_length(v), NULL);
        if (rc != NGX_OK) {
            *ngx_slprintf(where, last, "cwd") = '\0';
            return rc;
        }
    }

    if (in->path && in->path->len) {
        rc = ngx_http_veto_sandbox_looks_secret(pool, in->path->data,
                                                in->path->len, NULL);
        if (rc != NGX_OK) {
            *ngx_slprintf(where, last, "path") = '\0';
            return rc;
        }
    }

    /* "NAME=value": a name that says secret (GH_TOKEN=...) counts */
    if (json_is_object(in->env)) {
        json_object_foreach(in->env, name, e) {
            rc = ngx_http_veto_sandbox_env_secret(pool, name, e);
            if (rc != NGX_OK) {
                *ngx_slprintf(where, last, "env.%s", name) = '\0';
                return rc;
            }
        }
    }

    if (in->in && in->in->len) {
        rc = ngx_http_veto_sandbox_looks_secret(pool, in->in->data,
                                                in->in->len, NULL);
        if (rc != NGX_OK) {
            *ngx_slprintf(where, last, "stdin") = '\0';
            return rc;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_summary_link(ngx_pool_t *pool, ngx_str_t *review,
    ngx_str_t *record)
{
    u_char        md[EVP_MAX_MD_SIZE], hex[2 * EVP_MAX_MD_SIZE];
    char         *text;
    json_t       *rec;
    ngx_int_t     rc;
    unsigned int  mdlen;

    if (EVP_Digest(review->data, review->len, md, &mdlen, EVP_sha256(), NULL)
        != 1)
    {
        return NGX_ERROR;
    }

    ngx_hex_dump(hex, md, mdlen);

    rec = json_loadb((char *) record->data, record->len, 0, NULL);

    if (!json_is_object(rec)
        || json_object_set_new(rec, "reviewed_sha256",
                               json_stringn((char *) hex, 2 * mdlen)) != 0
        || json_object_set_new(rec, "reviewed_bytes",
                               json_integer(review->len)) != 0)
    {
        json_decref(rec);
        return NGX_ERROR;
    }

    text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(rec);

    if (text == NULL) {
        return NGX_ERROR;
    }

    rc = NGX_ERROR;

    record->len = ngx_strlen(text);
    record->data = ngx_pnalloc(pool, record->len + 1);

    if (record->data) {
        ngx_memcpy(record->data, text, record->len + 1);
        rc = NGX_OK;
    }

    free(text);

    return rc;
}
