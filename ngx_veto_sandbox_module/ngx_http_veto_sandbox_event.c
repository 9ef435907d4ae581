/*
 * Veto Sandbox: the body of an approval event (JSON or Slack) and its
 * signature.  Contract: ngx_http_veto_sandbox_event.h.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "ngx_http_veto_sandbox_event.h"


#define NGX_HTTP_VSB_EVENT_LINK  "#/approval/"


static json_t *ngx_http_veto_sandbox_event_summary(
    ngx_http_veto_sandbox_event_t *ev);
static json_t *ngx_http_veto_sandbox_event_str(ngx_str_t *s);
static ngx_int_t ngx_http_veto_sandbox_event_dump(ngx_pool_t *pool,
    json_t *doc, ngx_str_t *out);
static u_char *ngx_http_veto_sandbox_slack_escape(u_char *p, u_char *s,
    size_t len);
static u_char *ngx_http_veto_sandbox_slack_field(u_char *p,
    const char *label, json_t *v);


/* the approval page's link to this approval, or NULL: none configured */
static json_t *
ngx_http_veto_sandbox_event_link(ngx_http_veto_sandbox_event_t *ev)
{
    u_char  *p, buf[2048 + sizeof(NGX_HTTP_VSB_EVENT_LINK) + 64];

    if (ev->page.len == 0) {
        return json_null();
    }

    if (ev->page.len + sizeof(NGX_HTTP_VSB_EVENT_LINK) + ev->id.len
        > sizeof(buf))
    {
        return NULL;
    }

    p = ngx_cpymem(buf, ev->page.data, ev->page.len);
    p = ngx_cpymem(p, NGX_HTTP_VSB_EVENT_LINK,
                   sizeof(NGX_HTTP_VSB_EVENT_LINK) - 1);
    p = ngx_cpymem(p, ev->id.data, ev->id.len);

    return json_stringn((const char *) buf, p - buf);
}


ngx_int_t
ngx_http_veto_sandbox_event_json(ngx_pool_t *pool,
    ngx_http_veto_sandbox_event_t *ev, ngx_str_t *out)
{
    json_t     *doc, *sum, *sandbox, *link;
    ngx_int_t   rc;

    sum = ngx_http_veto_sandbox_event_summary(ev);
    sandbox = ev->sandbox.len ? ngx_http_veto_sandbox_event_str(&ev->sandbox)
                              : json_null();
    link = ngx_http_veto_sandbox_event_link(ev);

    if (sum == NULL || sandbox == NULL || link == NULL) {
        json_decref(sum);
        json_decref(sandbox);
        json_decref(link);
        return NGX_ERROR;
    }

    /* "o" steals its reference, also when json_pack() fails */
    doc = json_pack("{s:s, s:s%, s:s%, s:s%, s:s%, s:o, s:o, s:s%, s:I, s:I,"
                    " s:I, s:o}",
                    "type", "approval.requested",
                    "id", ev->id.data, ev->id.len,
                    "tenant", ev->tenant.data, ev->tenant.len,
                    "agent", ev->agent.data, ev->agent.len,
                    "action", ev->action.data, ev->action.len,
                    "sandbox", sandbox,
                    "summary", sum,
                    "request_hash", ev->hash.data, ev->hash.len,
                    "threshold", (json_int_t) ev->threshold,
                    "created_at", (json_int_t) ev->created,
                    "expires_at", (json_int_t) ev->expires,
                    "link", link);
    if (doc == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_veto_sandbox_event_dump(pool, doc, out);

    json_decref(doc);

    return rc;
}


/* The approval's summary, or what stands for one too long to carry. */
static json_t *
ngx_http_veto_sandbox_event_summary(ngx_http_veto_sandbox_event_t *ev)
{
    json_t  *sum;

    if (ev->summary.len <= NGX_HTTP_VSB_EVENT_MAX_SUMMARY) {
        sum = json_loadb((const char *) ev->summary.data, ev->summary.len,
                         0, NULL);
        if (json_is_object(sum)) {
            return sum;
        }

        json_decref(sum);
    }

    return json_pack("{s:b, s:I}", "omitted", 1,
                     "bytes", (json_int_t) ev->summary.len);
}


/* NULL also for text that is not UTF-8 */
static json_t *
ngx_http_veto_sandbox_event_str(ngx_str_t *s)
{
    return json_stringn((const char *) s->data, s->len);
}


static ngx_int_t
ngx_http_veto_sandbox_event_dump(ngx_pool_t *pool, json_t *doc,
    ngx_str_t *out)
{
    char       *text;
    size_t      len;
    ngx_int_t   rc;

    text = json_dumps(doc, JSON_COMPACT);
    if (text == NULL) {
        return NGX_ERROR;
    }

    rc = NGX_ERROR;
    len = ngx_strlen(text);

    if (len <= NGX_HTTP_VSB_EVENT_MAX) {
        out->data = ngx_pnalloc(pool, len);

        if (out->data) {
            ngx_memcpy(out->data, text, len);
            out->len = len;
            rc = NGX_OK;
        }
    }

    free(text);

    return rc;
}


/*
 * Slack's mrkdwn: &, < and > as entities (so that no "<!channel>" or
 * "<https://…|…>" can be smuggled in), a backtick as a quote (it would end
 * the code span the value is shown in), control characters as spaces.
 * At most 5 bytes out per byte in.
 */
static u_char *
ngx_http_veto_sandbox_slack_escape(u_char *p, u_char *s, size_t len)
{
    while (len--) {
        switch (*s) {

        case '&':
            p = ngx_cpymem(p, "&amp;", 5);
            break;

        case '<':
            p = ngx_cpymem(p, "&lt;", 4);
            break;

        case '>':
            p = ngx_cpymem(p, "&gt;", 4);
            break;

        case '`':
            *p++ = '\'';
            break;

        default:
            *p++ = (*s < 0x20 || *s == 0x7f) ? ' ' : *s;
        }

        s++;
    }

    return p;
}


/* len cut back to a UTF-8 character boundary at most max bytes in */
static size_t
ngx_http_veto_sandbox_utf8_cut(u_char *s, size_t len, size_t max)
{
    if (len <= max) {
        return len;
    }

    len = max;

    while (len && (s[len] & 0xc0) == 0x80) {
        len--;
    }

    return len;
}


/*
 * "\n<label>: `<value>`" for a string, or a list of strings joined by
 * spaces (an argv, shell-quoted where a word needs it) or by commas
 * (hosts); at most NGX_HTTP_VSB_EVENT_SLACK_FIELD bytes of the value,
 * "…" after a cut.  p has room for 5 times that, plus the label.
 */
static u_char *
ngx_http_veto_sandbox_slack_field(u_char *p, const char *label, json_t *v)
{
    u_char       *s, *q, buf[NGX_HTTP_VSB_EVENT_SLACK_FIELD + 1];
    size_t        i, n, len, room;
    json_t       *e;
    ngx_uint_t    argv, quote;
    const char   *text;

    if (v == NULL) {
        return p;
    }

    argv = (ngx_strcmp(label, "argv") == 0);
    room = sizeof(buf);
    q = buf;

    if (json_is_string(v)) {
        s = (u_char *) json_string_value(v);
        len = json_string_length(v);
        n = ngx_min(len, room);
        q = ngx_cpymem(q, s, n);

    } else if (json_is_array(v)) {
        json_array_foreach(v, i, e) {
            text = json_is_string(e) ? json_string_value(e) : NULL;
            if (text == NULL) {
                continue;
            }

            s = (u_char *) text;
            len = json_string_length(e);

            quote = argv && (len == 0
                             || strpbrk(text, " \t\n'\"\\$`;&|<>()*?") != NULL);

            if (q > buf && room > (size_t) (q - buf)) {
                *q++ = argv ? ' ' : ',';
            }

            if (quote && room > (size_t) (q - buf)) {
                *q++ = '\'';
            }

            n = ngx_min(len, room - (q - buf));
            q = ngx_cpymem(q, s, n);

            if (quote && room > (size_t) (q - buf)) {
                *q++ = '\'';
            }

            if ((size_t) (q - buf) >= room) {
                break;
            }
        }

    } else {
        return p;
    }

    len = q - buf;

    if (len == 0) {
        return p;
    }

    n = ngx_http_veto_sandbox_utf8_cut(buf, len,
                                       NGX_HTTP_VSB_EVENT_SLACK_FIELD);

    p = ngx_sprintf(p, "\n%s: `", label);
    p = ngx_http_veto_sandbox_slack_escape(p, buf, n);
    *p++ = '`';

    if (n < len) {
        p = ngx_cpymem(p, "\xe2\x80\xa6", 3);      /* "…" */
    }

    return p;
}


ngx_int_t
ngx_http_veto_sandbox_event_slack(ngx_pool_t *pool,
    ngx_http_veto_sandbox_event_t *ev, ngx_str_t *out)
{
    u_char      *text, *p, when[64];
    size_t       size, n;
    json_t      *sum, *doc, *net;
    struct tm    tm;
    ngx_int_t    rc;
    time_t       t;

    if (ev->page.len > 2048) {
        return NGX_ERROR;
    }

    /* every value escaped (5 bytes per byte at most), three summary
     * fields, the link and the words around them */
    size = 5 * (ev->action.len + ev->agent.len + ev->tenant.len
                + ev->sandbox.len + ev->id.len)
           + 3 * (5 * NGX_HTTP_VSB_EVENT_SLACK_FIELD + 32)
           + ev->page.len + 2 * ev->id.len + 512;

    text = ngx_pnalloc(pool, size);
    if (text == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(text, "*Approval requested*: `", 23);
    p = ngx_http_veto_sandbox_slack_escape(p, ev->action.data,
                                           ev->action.len);
    p = ngx_cpymem(p, "` by agent `", 12);
    p = ngx_http_veto_sandbox_slack_escape(p, ev->agent.data, ev->agent.len);
    p = ngx_cpymem(p, "` of tenant `", 13);
    p = ngx_http_veto_sandbox_slack_escape(p, ev->tenant.data,
                                           ev->tenant.len);
    *p++ = '`';

    if (ev->sandbox.len) {
        p = ngx_cpymem(p, " on sandbox `", 13);
        p = ngx_http_veto_sandbox_slack_escape(p, ev->sandbox.data,
                                               ev->sandbox.len);
        *p++ = '`';
    }

    sum = NULL;

    if (ev->summary.len <= NGX_HTTP_VSB_EVENT_MAX_SUMMARY) {
        sum = json_loadb((const char *) ev->summary.data, ev->summary.len,
                         0, NULL);
    }

    if (json_is_object(sum)) {
        p = ngx_http_veto_sandbox_slack_field(p, "argv",
                                              json_object_get(sum, "argv"));
        p = ngx_http_veto_sandbox_slack_field(p, "path",
                                              json_object_get(sum, "path"));

        net = json_object_get(sum, "network");
        p = ngx_http_veto_sandbox_slack_field(p, "hosts",
                                json_is_object(net)
                                ? json_object_get(net, "hosts") : NULL);
    }

    json_decref(sum);

    t = ev->expires;

    if (gmtime_r(&t, &tm) == NULL) {
        return NGX_ERROR;
    }

    n = strftime((char *) when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
    if (n == 0) {
        return NGX_ERROR;
    }

    /* Slack shows <!date^…> in the reader's time zone, the text after
     * "|" where it cannot */
    p = ngx_sprintf(p, "\nExpires <!date^%T^{date_short_pretty} {time}|%*s>. ",
                    ev->expires, n, when);

    if (ev->page.len) {
        p = ngx_sprintf(p, "<%V" NGX_HTTP_VSB_EVENT_LINK "%V|Review %V>",
                        &ev->page, &ev->id, &ev->id);

    } else {
        p = ngx_sprintf(p, "Review %V on the approval page.", &ev->id);
    }

    if ((size_t) (p - text) > size) {
        /* cannot happen: the size above is an upper bound */
        return NGX_ERROR;
    }

    doc = json_pack("{s:s%}", "text", text, (size_t) (p - text));
    if (doc == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_veto_sandbox_event_dump(pool, doc, out);

    json_decref(doc);

    return rc;
}


u_char *
ngx_http_veto_sandbox_event_sign(ngx_pool_t *pool, u_char *buf,
    ngx_str_t *secret, time_t t, ngx_str_t *body)
{
    u_char        *msg, *p, md[EVP_MAX_MD_SIZE];
    unsigned int   mdlen;

    msg = ngx_pnalloc(pool, NGX_INT64_LEN + 1 + body->len);
    if (msg == NULL) {
        return NULL;
    }

    p = ngx_sprintf(msg, "%T.", t);
    p = ngx_cpymem(p, body->data, body->len);

    mdlen = 0;

    if (HMAC(EVP_sha256(), secret->data, (int) secret->len, msg, p - msg,
             md, &mdlen)
        == NULL
        || mdlen != 32)
    {
        return NULL;
    }

    p = ngx_sprintf(buf, "t=%T,v1=", t);

    return ngx_hex_dump(p, md, mdlen);
}
