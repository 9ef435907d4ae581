/*
 * Veto Sandbox: token revocation lookups and the admin writes.
 * Contract: ngx_http_veto_sandbox_revoke.h.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_revoke.h"


/* lua/revoke_check.lua: a revoked jti or agent, "*" for a key of
 * another type */
NGX_HTTP_VSB_LUA(revoke_check);

static ngx_http_veto_sandbox_redis_script_t  ngx_http_veto_sandbox_revoke_script
    = NGX_HTTP_VSB_SCRIPT(revoke_check);


ngx_int_t
ngx_http_veto_sandbox_revoke_init(void)
{
    return ngx_http_veto_sandbox_redis_script_init(
                                      &ngx_http_veto_sandbox_revoke_script);
}


ngx_int_t
ngx_http_veto_sandbox_revoke_check(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, ngx_str_t *jti)
{
    ngx_int_t     rc;
    ngx_str_t     kagent, kjti, none;
    size_t        argvlen[2];
    const char   *argv[2];

    rc = ngx_http_veto_sandbox_tenant_key_valid(call->pool, &kagent,
                                                "revoked:agent", tenant,
                                                agent);
    if (rc != NGX_OK) {
        return rc;
    }

    /*
     * No jti: look up "...:revoked:jti:" (an empty jti, which no revoke
     * can write), to keep one reply shape and one hash slot.
     */

    if (jti == NULL || jti->len == 0) {
        ngx_str_set(&none, "");

        if (ngx_http_veto_sandbox_tenant_key(call->pool, &kjti, "revoked:jti",
                                             tenant, &none)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

    } else {
        rc = ngx_http_veto_sandbox_tenant_key_valid(call->pool, &kjti,
                                                    "revoked:jti", tenant,
                                                    jti);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    argv[0] = (const char *) kjti.data;
    argvlen[0] = kjti.len;
    argv[1] = (const char *) kagent.data;
    argvlen[1] = kagent.len;

    return ngx_http_veto_sandbox_redis_eval(call,
                                          &ngx_http_veto_sandbox_revoke_script,
                                          2, 2, argv, argvlen);
}


ngx_int_t
ngx_http_veto_sandbox_revoke_result(redisReply *reply, time_t iat,
    const char **why)
{
    time_t       before;
    redisReply  *j, *a;

    *why = NULL;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 2)
    {
        return NGX_ERROR;
    }

    j = reply->element[0];
    a = reply->element[1];

    if (j->type == REDIS_REPLY_STRING) {
        *why = "jti";
        return NGX_DECLINED;
    }

    if (j->type != REDIS_REPLY_NIL) {
        return NGX_ERROR;
    }

    if (a->type == REDIS_REPLY_NIL) {
        return NGX_OK;
    }

    if (a->type != REDIS_REPLY_STRING) {
        return NGX_ERROR;
    }

    *why = "agent";

    if (a->len == 1 && a->str[0] == '*') {
        return NGX_DECLINED;
    }

    before = ngx_atotm((u_char *) a->str, a->len);

    if (before == NGX_ERROR) {
        /* a value we cannot read is taken as "all tokens": fail closed */
        return NGX_DECLINED;
    }

    if (iat < 0 || iat <= before) {
        return NGX_DECLINED;
    }

    *why = NULL;
    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_revoke_jti(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *jti, time_t exp)
{
    u_char      *p;
    ngx_int_t    rc;
    ngx_str_t    key;
    size_t       argvlen[5];
    const char  *argv[5];

    rc = ngx_http_veto_sandbox_tenant_key_valid(call->pool, &key,
                                                "revoked:jti", tenant, jti);
    if (rc != NGX_OK) {
        return rc;
    }

    p = ngx_pnalloc(call->pool, NGX_TIME_T_LEN + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    /* already expired tokens need no record, but one minute costs nothing */
    if (exp <= ngx_time()) {
        exp = ngx_time() + 60;
    }

    argv[0] = "SET";
    argvlen[0] = 3;
    argv[1] = (const char *) key.data;
    argvlen[1] = key.len;
    argv[2] = "1";
    argvlen[2] = 1;
    argv[3] = "EXAT";
    argvlen[3] = 4;
    argv[4] = (const char *) p;
    argvlen[4] = ngx_sprintf(p, "%T", exp) - p;

    return ngx_http_veto_sandbox_redis_command(call, 5, argv, argvlen);
}


/* opens as ngx_http_veto_sandbox_revoke_jti() does: kept apart, a jti's
 * record ends with its token (EXAT), an agent's holds a time and stays */
ngx_int_t
ngx_http_veto_sandbox_revoke_agent(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *agent, time_t before)
{
    u_char      *p;
    ngx_int_t    rc;
    ngx_str_t    key;
    size_t       argvlen[3];
    const char  *argv[3];

    rc = ngx_http_veto_sandbox_tenant_key_valid(call->pool, &key,
                                                "revoked:agent", tenant,
                                                agent);
    if (rc != NGX_OK) {
        return rc;
    }

    p = ngx_pnalloc(call->pool, NGX_TIME_T_LEN + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    argv[0] = "SET";
    argvlen[0] = 3;
    argv[1] = (const char *) key.data;
    argvlen[1] = key.len;
    argv[2] = (const char *) p;

    if (before < 0) {
        /* every token, whatever its iat */
        argvlen[2] = ngx_sprintf(p, "*") - p;

    } else {
        argvlen[2] = ngx_sprintf(p, "%T", before ? before : ngx_time()) - p;
    }

    return ngx_http_veto_sandbox_redis_command(call, 3, argv, argvlen);
}


/* DEL (undo) or the read of the admin API: kind "jti" or "agent" */
static ngx_int_t
ngx_http_veto_sandbox_revocation_cmd(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, const char *kind, ngx_str_t *value, const char *cmd)
{
    ngx_int_t    rc;
    ngx_str_t    key;
    size_t       argvlen[2];
    const char  *argv[2], *what;

    what = ngx_strcmp(kind, "jti") == 0 ? "revoked:jti" : "revoked:agent";

    rc = ngx_http_veto_sandbox_tenant_key_valid(call->pool, &key, what,
                                                tenant, value);
    if (rc != NGX_OK) {
        return rc;
    }

    argv[0] = cmd;
    argvlen[0] = ngx_strlen(cmd);
    argv[1] = (const char *) key.data;
    argvlen[1] = key.len;

    return ngx_http_veto_sandbox_redis_command(call, 2, argv, argvlen);
}


ngx_int_t
ngx_http_veto_sandbox_unrevoke(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, const char *kind, ngx_str_t *value)
{
    return ngx_http_veto_sandbox_revocation_cmd(call, tenant, kind, value,
                                                "DEL");
}


ngx_int_t
ngx_http_veto_sandbox_revocation_get(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, const char *kind, ngx_str_t *value)
{
    return ngx_http_veto_sandbox_revocation_cmd(call, tenant, kind, value,
                                         ngx_strcmp(kind, "jti") == 0
                                         ? "TTL" : "GET");
}
