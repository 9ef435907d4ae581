/*
 * Veto Sandbox: what a webhook receives when an approval is requested.
 * The event's body (JSON, or a Slack-compatible message) and its
 * signature.  Pure functions of their input: pools, JSON and OpenSSL, no
 * request, so the unit tests run them as they are.
 *
 * The signature header is
 *
 *     Veto-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
 *
 * made per attempt (t is when that attempt was sent), so a receiver can
 * refuse a replay by its age and a forgery by its MAC.
 */

#ifndef _NGX_HTTP_VSB_EVENT_H_INCLUDED_
#define _NGX_HTTP_VSB_EVENT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


/* a summary longer than this is left out of the event ("omitted") */
#define NGX_HTTP_VSB_EVENT_MAX_SUMMARY  (32 * 1024)

/* no event body is longer: names, ids and the link are bounded by their
 * own limits (the token size, the configuration), the summary by the
 * one above */
#define NGX_HTTP_VSB_EVENT_MAX          (64 * 1024)

/* what Slack's text shows of an argv, a path or a host list */
#define NGX_HTTP_VSB_EVENT_SLACK_FIELD  300

/* "t=" 20 digits ",v1=" 64 hex digits */
#define NGX_HTTP_VSB_EVENT_SIG_LEN                                            \
    (sizeof("t=,v1=") - 1 + NGX_INT64_LEN + 64)

#define NGX_HTTP_VSB_EVENT_SECRET_MIN   16
#define NGX_HTTP_VSB_EVENT_SECRET_MAX   1024


typedef struct {
    ngx_str_t    id;          /* the approval's */
    ngx_str_t    tenant;
    ngx_str_t    agent;
    ngx_str_t    action;      /* sandbox.exec, ... */
    ngx_str_t    sandbox;     /* empty: none (a create) */
    ngx_str_t    summary;     /* JSON text, as the approval holds it */
    ngx_str_t    hash;        /* the request hash the approval binds */
    ngx_str_t    page;        /* the approval page's URL; empty: no link */
    ngx_uint_t   threshold;
    time_t       created;
    time_t       expires;
} ngx_http_veto_sandbox_event_t;


/*
 * The JSON event:
 *
 *   {"type":"approval.requested","id":"apr_…","tenant":…,"agent":…,
 *    "action":…,"sandbox":"…"|null,"summary":{…},"request_hash":…,
 *    "threshold":1,"created_at":<unix>,"expires_at":<unix>,
 *    "link":"<page>#/approval/apr_…"|null}
 *
 * A summary over NGX_HTTP_VSB_EVENT_MAX_SUMMARY bytes (or not JSON) is
 * {"omitted":true,"bytes":N}: the page shows it whole.
 */
ngx_int_t ngx_http_veto_sandbox_event_json(ngx_pool_t *pool,
    ngx_http_veto_sandbox_event_t *ev, ngx_str_t *out);

/*
 * A Slack-compatible body: {"text": "…"} in Slack's mrkdwn, every value
 * an agent or a token controls escaped (&, <, > as Slack wants them, no
 * backtick that could end a code span, no control character), argv, path
 * and hosts cut at NGX_HTTP_VSB_EVENT_SLACK_FIELD bytes.
 */
ngx_int_t ngx_http_veto_sandbox_event_slack(ngx_pool_t *pool,
    ngx_http_veto_sandbox_event_t *ev, ngx_str_t *out);

/* "t=<t>,v1=<hex>" into buf (NGX_HTTP_VSB_EVENT_SIG_LEN bytes); the end */
u_char *ngx_http_veto_sandbox_event_sign(ngx_pool_t *pool, u_char *buf,
    ngx_str_t *secret, time_t t, ngx_str_t *body);


#endif /* _NGX_HTTP_VSB_EVENT_H_INCLUDED_ */
