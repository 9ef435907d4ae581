/*
 * Veto Sandbox: redaction.  Audit records and approval summaries
 * (ngx_http_veto_sandbox_summary.h) are stored and shown to people;
 * secrets must never reach them.  Pure functions of their input.
 */

#ifndef _NGX_HTTP_VSB_REDACT_H_INCLUDED_
#define _NGX_HTTP_VSB_REDACT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <jansson.h>


/* What the next word is, from the words before it. */
enum {
    NGX_HTTP_VSB_NEXT_PLAIN = 0,
    NGX_HTTP_VSB_NEXT_SECRET,       /* after --password, Bearer */
    NGX_HTTP_VSB_NEXT_USERINFO      /* after curl's -u: user:password */
};

/* The command whose flags are being read. */
enum {
    NGX_HTTP_VSB_CMD_OTHER = 0,
    NGX_HTTP_VSB_CMD_CURL,          /* -u, -U, --user, --proxy-user u:p */
    NGX_HTTP_VSB_CMD_MYSQL,         /* mysql*, mariadb*: -pPASSWORD */
    NGX_HTTP_VSB_CMD_SSHPASS        /* -p PASSWORD */
};

/* Carried from one argv element to the next; zeroed for a new text. */
typedef struct {
    ngx_uint_t                   next;
    ngx_uint_t                   command;
} ngx_http_veto_sandbox_redact_state_t;

/*
 * Redaction of free text; each of these
 * becomes "[redacted]", in one pass, linear in the input:
 *
 *  - the credential after "Bearer " and "Basic ", and after a key's
 *    "token ", "Bearer ", "Basic " ("Authorization: token X");
 *  - the value of key=value / key: value / "key": "value" pairs whose key
 *    names a secret (password, passwd, secret, token, apikey, api_key,
 *    api-key, authorization, credential, private, access_key, session,
 *    cookie): "password = x" too;
 *  - the word after a flag naming one (--password X, --api-key X,
 *    -passin X; not --password-file, --token-path, --password-stdin,
 *    ...), and for curl the password of -u/--user/-U/--proxy-user
 *    user:password, for mysql/mariadb the X of -pX, for sshpass the word
 *    after -p;
 *  - the password of a URL's userinfo (scheme://user:password@host);
 *  - bare tokens: JWTs (eyJ..), ghp_ gho_ ghu_ ghs_ ghr_ github_pat_
 *    glpat- xoxb- xoxp- xoxa- xoxr- xoxs- sk- (20+ characters after),
 *    AKIA/ASIA key ids;
 *  - the body of a PEM private key block (its BEGIN/END lines kept).
 *
 * A value that could run something ($, `, (, ), |, ;, &, <, >, {, },
 * newline) stays visible: the same text is what a human approves.
 */
ngx_int_t ngx_http_veto_sandbox_redact(ngx_pool_t *pool,
    ngx_str_t *in, ngx_str_t *out);

/*
 * The same, for one element of an argv: st says what the elements
 * before it left pending ("--password" makes the next element the
 * secret, all of it) and is updated for the next.
 */
ngx_int_t ngx_http_veto_sandbox_redact_next(ngx_pool_t *pool,
    ngx_str_t *in, ngx_str_t *out, ngx_http_veto_sandbox_redact_state_t *st);

/* Does a key (a JSON member's name) name a secret? */
ngx_uint_t ngx_http_veto_sandbox_secret_name(u_char *p, size_t len);

#endif /* _NGX_HTTP_VSB_REDACT_H_INCLUDED_ */
