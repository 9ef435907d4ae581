/*
 * Veto Sandbox: approval records and their state machine in Redis.
 * Contract: ngx_http_veto_sandbox_approval.h and docs/approvals.md.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <openssl/rand.h>

#include "ngx_http_veto_sandbox_stores.h"
#include "ngx_http_veto_sandbox_approval.h"


static ngx_int_t ngx_http_veto_sandbox_approval_call(
    ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_approval_op_e op, int numkeys, int argc,
    ngx_str_t *args);


/*
 * The Lua scripts.  Each one is the whole transition, so it is atomic:
 * Redis runs one script at a time.  The state of a record is checked
 * against Redis' own clock on every call ("lazy expiry"): a pending or
 * approved record past expires_ms becomes expired the first time anyone
 * looks at it, and that call reports the transition (third element "1").
 * The tests in t/redis/lua/ read these literals out of this file and run
 * them directly.
 */

/* KEYS: rec, rv, idx[, open]
 * ARGV: id, tenant, agent, action, hash, summary, ttl_ms, threshold,
 *       retention_ms, max records (optional, 5000), agent's open max
 *       (optional, with KEYS[4])
 * The agent keeps at most its open max pending requests (open: the
 * agent's pending ids, scored by expiry, pruned here of the decided and
 * the expired; it never holds more than that max): past it,
 * "agent_full" with that max, before anything else is touched.  The
 * tenant keeps at most max records: past it, the oldest decided (or
 * past expiry) ones go first; when all are live, "full". */
static const char ngx_http_veto_sandbox_approval_create_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local ttl = tonumber(ARGV[7])\n"
    "local thr = tonumber(ARGV[8])\n"
    "local ret = tonumber(ARGV[9])\n"
    "local max = tonumber(ARGV[10] or '5000')\n"
    "if not ttl or ttl < 1 or not thr or thr < 1 or not ret or ret < 0\n"
    "   or not max or max < 1 then\n"
    "  return redis.error_reply('ERR veto approval_create: bad ttl, threshold, retention or max')\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[1]) == 1 then\n"
    "  return {'exists', 'pending'}\n"
    "end\n"
    "local pre = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1])\n"
    "local amax = tonumber(ARGV[11] or '0')\n"
    "if KEYS[4] and (not amax or amax < 1) then\n"
    "  return redis.error_reply('ERR veto approval_create: bad agent max')\n"
    "end\n"
    "if KEYS[4] then\n"
    "  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)\n"
    "  local open = 0\n"
    "  for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do\n"
    "    local f = redis.call('HMGET', pre .. id, 'state', 'tenant', 'agent')\n"
    "    if f[1] == 'pending' and f[2] == ARGV[2] and f[3] == ARGV[3] then\n"
    "      open = open + 1\n"
    "    else\n"
    "      redis.call('ZREM', KEYS[4], id)\n"
    "    end\n"
    "  end\n"
    "  if open >= amax then\n"
    "    return {'agent_full', '', '0', tostring(amax)}\n"
    "  end\n"
    "end\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - ttl - ret)\n"
    "local n = redis.call('ZCARD', KEYS[3])\n"
    "if n >= max then\n"
    "  for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, 199)) do\n"
    "    if n < max then break end\n"
    "    local k = pre .. id\n"
    "    local f = redis.call('HMGET', k, 'state', 'expires_ms')\n"
    "    if not f[1] or f[1] == 'denied' or f[1] == 'consumed' or f[1] == 'expired'\n"
    "       or now >= (tonumber(f[2]) or 0) then\n"
    "      redis.call('DEL', k, k .. ':rv')\n"
    "      redis.call('ZREM', KEYS[3], id)\n"
    "      n = n - 1\n"
    "    end\n"
    "  end\n"
    "  if n >= max then\n"
    "    return {'full', ''}\n"
    "  end\n"
    "end\n"
    "local exp = now + ttl\n"
    "redis.call('HSET', KEYS[1], 'id', ARGV[1], 'tenant', ARGV[2], 'agent', ARGV[3],\n"
    "  'action', ARGV[4], 'hash', ARGV[5], 'summary', ARGV[6], 'state', 'pending',\n"
    "  'created_ms', now, 'expires_ms', exp, 'threshold', thr, 'approvals', 0)\n"
    "redis.call('PEXPIRE', KEYS[1], ttl + ret)\n"
    "redis.call('ZADD', KEYS[3], now, ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[3], ttl + ret)\n"
    "if KEYS[4] then\n"
    "  redis.call('ZADD', KEYS[4], exp, ARGV[1])\n"
    "  if redis.call('PTTL', KEYS[4]) < ttl then\n"
    "    redis.call('PEXPIRE', KEYS[4], ttl)\n"
    "  end\n"
    "end\n"
    "return {'ok', 'pending', '0', tostring(now), tostring(exp)}\n"
    ;

/* KEYS: rec, rv;  ARGV: tenant, reviewer, reason (optional)
 * The requester, or a name equal to it but for ASCII case, never
 * decides its own request.  A reason that is not only white space is
 * kept in approve_reasons, a JSON object reviewer -> reason (one entry
 * per counted reviewer, at most threshold of them). */
static const char ngx_http_veto_sandbox_approval_approve_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local f = redis.call('HMGET', KEYS[1], 'tenant', 'state', 'expires_ms', 'agent', 'threshold')\n"
    "if not f[1] or f[1] ~= ARGV[1] then\n"
    "  return {'not_found', ''}\n"
    "end\n"
    "local state = f[2]\n"
    "if state == 'pending' and now >= tonumber(f[3]) then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'expired', 'decided_ms', f[3])\n"
    "  return {'expired', 'expired', '1'}\n"
    "end\n"
    "if state ~= 'pending' then\n"
    "  return {'not_pending', state}\n"
    "end\n"
    "if ARGV[2] == '' or string.lower(ARGV[2]) == string.lower(f[4] or '') then\n"
    "  return {'self_approval', state}\n"
    "end\n"
    "if redis.call('SADD', KEYS[2], ARGV[2]) == 0 then\n"
    "  return {'already_approved', state, '0', tostring(redis.call('SCARD', KEYS[2]))}\n"
    "end\n"
    "local pttl = redis.call('PTTL', KEYS[1])\n"
    "if pttl > 0 then\n"
    "  redis.call('PEXPIRE', KEYS[2], pttl)\n"
    "end\n"
    "local n = redis.call('SCARD', KEYS[2])\n"
    "redis.call('HSET', KEYS[1], 'approvals', n, 'last_reviewer', ARGV[2])\n"
    "if ARGV[3] and string.find(ARGV[3], '%S') then\n"
    "  local rs = cjson.decode(redis.call('HGET', KEYS[1], 'approve_reasons') or '{}')\n"
    "  rs[ARGV[2]] = ARGV[3]\n"
    "  redis.call('HSET', KEYS[1], 'approve_reasons', cjson.encode(rs))\n"
    "end\n"
    "if n >= tonumber(f[5]) then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'approved', 'decided_ms', now)\n"
    "  return {'ok', 'approved', '0', tostring(n)}\n"
    "end\n"
    "return {'ok', 'pending', '0', tostring(n)}\n"
    ;

/* KEYS: rec, rv;  ARGV: tenant, reviewer, reason */
static const char ngx_http_veto_sandbox_approval_deny_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local f = redis.call('HMGET', KEYS[1], 'tenant', 'state', 'expires_ms', 'agent')\n"
    "if not f[1] or f[1] ~= ARGV[1] then\n"
    "  return {'not_found', ''}\n"
    "end\n"
    "local state = f[2]\n"
    "if state == 'pending' and now >= tonumber(f[3]) then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'expired', 'decided_ms', f[3])\n"
    "  return {'expired', 'expired', '1'}\n"
    "end\n"
    "if state ~= 'pending' then\n"
    "  return {'not_pending', state}\n"
    "end\n"
    "if ARGV[2] == '' or string.lower(ARGV[2]) == string.lower(f[4] or '') then\n"
    "  return {'self_approval', state}\n"
    "end\n"
    "if not ARGV[3] or not string.find(ARGV[3], '%S') then\n"
    "  return {'reason_required', state}\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'state', 'denied', 'decided_ms', now,\n"
    "  'denied_by', ARGV[2], 'deny_reason', ARGV[3])\n"
    "return {'ok', 'denied'}\n"
    ;

/* KEYS: rec;  ARGV: tenant, agent, action, hash */
static const char ngx_http_veto_sandbox_approval_consume_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local f = redis.call('HMGET', KEYS[1], 'tenant', 'state', 'expires_ms', 'agent', 'action', 'hash', 'deny_reason')\n"
    "if not f[1] or f[1] ~= ARGV[1] then\n"
    "  return {'not_found', ''}\n"
    "end\n"
    "local state = f[2]\n"
    "if (state == 'pending' or state == 'approved') and now >= tonumber(f[3]) then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'expired', 'decided_ms', f[3])\n"
    "  return {'expired', 'expired', '1'}\n"
    "end\n"
    "if state == 'denied' then\n"
    "  return {'not_approved', state, '0', f[7] or ''}\n"
    "end\n"
    "if state ~= 'approved' then\n"
    "  return {'not_approved', state}\n"
    "end\n"
    "if f[4] ~= ARGV[2] then\n"
    "  return {'mismatch', state, '0', 'agent'}\n"
    "end\n"
    "if f[5] ~= ARGV[3] then\n"
    "  return {'mismatch', state, '0', 'action'}\n"
    "end\n"
    "if f[6] ~= ARGV[4] then\n"
    "  return {'mismatch', state, '0', 'hash'}\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'state', 'consumed', 'consumed_ms', now)\n"
    "return {'ok', 'consumed'}\n"
    ;

/* KEYS: rec;  ARGV: tenant, force ("1": expire now) */
static const char ngx_http_veto_sandbox_approval_expire_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local f = redis.call('HMGET', KEYS[1], 'tenant', 'state', 'expires_ms')\n"
    "if not f[1] or f[1] ~= ARGV[1] then\n"
    "  return {'not_found', ''}\n"
    "end\n"
    "local state = f[2]\n"
    "if state ~= 'pending' and state ~= 'approved' then\n"
    "  return {'not_pending', state}\n"
    "end\n"
    "if now >= tonumber(f[3]) then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'expired', 'decided_ms', f[3])\n"
    "  return {'expired', 'expired', '1'}\n"
    "end\n"
    "if ARGV[2] == '1' then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'expired', 'decided_ms', now, 'expires_ms', now)\n"
    "  return {'expired', 'expired', '1'}\n"
    "end\n"
    "return {'not_pending', state}\n"
    ;

/* KEYS: rec, rv;  ARGV: tenant */
static const char ngx_http_veto_sandbox_approval_get_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local f = redis.call('HMGET', KEYS[1], 'tenant', 'state', 'expires_ms')\n"
    "if not f[1] or f[1] ~= ARGV[1] then\n"
    "  return {'not_found', ''}\n"
    "end\n"
    "local state = f[2]\n"
    "local just = '0'\n"
    "if (state == 'pending' or state == 'approved') and now >= tonumber(f[3]) then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'expired', 'decided_ms', f[3])\n"
    "  state = 'expired'\n"
    "  just = '1'\n"
    "end\n"
    "return {'ok', state, just, redis.call('HGETALL', KEYS[1]), redis.call('SMEMBERS', KEYS[2])}\n"
    ;

/* KEYS: idx
 * ARGV: tenant, record key prefix, state or "", limit, cursor or ""
 *       ("<created_ms>:<id>": older than that), summary bytes (optional),
 *       entries examined (optional)
 * Newest first; stops at limit records, once the summaries reach the
 * byte budget, or after the entries examined; the reply's sixth element
 * is the cursor to go on from, "" when there is nothing more. */
static const char ngx_http_veto_sandbox_approval_list_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local limit = tonumber(ARGV[4]) or 100\n"
    "if limit < 1 or limit > 1000 then\n"
    "  limit = 100\n"
    "end\n"
    "local budget = tonumber(ARGV[6] or '1048576') or 1048576\n"
    "local scan = tonumber(ARGV[7] or '5000') or 5000\n"
    "local hi, hid = '+inf', nil\n"
    "if ARGV[5] and ARGV[5] ~= '' then\n"
    "  local ms, id = string.match(ARGV[5], '^(%d+):(apr_%x+)$')\n"
    "  if not ms then\n"
    "    return redis.error_reply('ERR veto approval_list: bad cursor')\n"
    "  end\n"
    "  hi, hid = ms, id\n"
    "end\n"
    "local out, expired, gone = {}, {}, {}\n"
    "local bytes, seen, off, last, nxt = 0, 0, 0, nil, ''\n"
    "while nxt == '' do\n"
    "  local batch = redis.call('ZREVRANGEBYSCORE', KEYS[1], hi, '-inf',\n"
    "    'WITHSCORES', 'LIMIT', off, 200)\n"
    "  if #batch == 0 then break end\n"
    "  off = off + #batch / 2\n"
    "  for i = 1, #batch, 2 do\n"
    "    local id, score = batch[i], batch[i + 1]\n"
    "    if not (hid and score == hi and id >= hid) then\n"
    "      if #out >= limit or bytes >= budget or seen >= scan then\n"
    "        nxt = last or (hi .. ':' .. (hid or ''))\n"
    "        break\n"
    "      end\n"
    "      seen = seen + 1\n"
    "      last = score .. ':' .. id\n"
    "      local k = ARGV[2] .. id\n"
    "      local f = redis.call('HMGET', k, 'tenant', 'state', 'expires_ms', 'agent',\n"
    "        'action', 'created_ms', 'approvals', 'threshold', 'summary', 'hash')\n"
    "      if not f[1] then\n"
    "        table.insert(gone, id)\n"
    "      elseif f[1] == ARGV[1] then\n"
    "        local state = f[2]\n"
    "        if (state == 'pending' or state == 'approved') and now >= tonumber(f[3]) then\n"
    "          redis.call('HSET', k, 'state', 'expired', 'decided_ms', f[3])\n"
    "          state = 'expired'\n"
    "          table.insert(expired, id)\n"
    "        end\n"
    "        if ARGV[3] == '' or ARGV[3] == state then\n"
    "          table.insert(out, {'id', id, 'state', state, 'agent', f[4], 'action', f[5],\n"
    "            'created_ms', f[6], 'expires_ms', f[3], 'approvals', f[7],\n"
    "            'threshold', f[8], 'summary', f[9], 'hash', f[10]})\n"
    "          bytes = bytes + #(f[9] or '') + 256\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "for _, id in ipairs(gone) do\n"
    "  redis.call('ZREM', KEYS[1], id)\n"
    "end\n"
    "return {'ok', '', '0', out, expired, nxt}\n"
    ;


ngx_http_veto_sandbox_redis_script_t  ngx_http_veto_sandbox_approval_scripts[]
    = {
    { "approval_create", ngx_http_veto_sandbox_approval_create_lua, "" },
    { "approval_approve", ngx_http_veto_sandbox_approval_approve_lua, "" },
    { "approval_deny", ngx_http_veto_sandbox_approval_deny_lua, "" },
    { "approval_consume", ngx_http_veto_sandbox_approval_consume_lua, "" },
    { "approval_expire", ngx_http_veto_sandbox_approval_expire_lua, "" },
    { "approval_get", ngx_http_veto_sandbox_approval_get_lua, "" },
    { "approval_list", ngx_http_veto_sandbox_approval_list_lua, "" },
    { NULL, NULL, "" }
};


static ngx_str_t  ngx_http_veto_sandbox_approval_codes[] = {
    ngx_string("ok"),
    ngx_string("not_found"),
    ngx_string("expired"),
    ngx_string("not_pending"),
    ngx_string("not_approved"),
    ngx_string("self_approval"),
    ngx_string("already_approved"),
    ngx_string("reason_required"),
    ngx_string("mismatch"),
    ngx_string("exists"),
    ngx_string("full"),
    ngx_string("agent_full"),
    ngx_null_string
};


ngx_int_t
ngx_http_veto_sandbox_approval_init(void)
{
    return ngx_http_veto_sandbox_redis_scripts_init(
                                      ngx_http_veto_sandbox_approval_scripts);
}


ngx_int_t
ngx_http_veto_sandbox_approval_id(u_char *id)
{
    u_char  rnd[16];

    if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
        return NGX_ERROR;
    }

    (void) ngx_hex_dump(ngx_cpymem(id, "apr_", 4), rnd, sizeof(rnd));

    return NGX_OK;
}


ngx_uint_t
ngx_http_veto_sandbox_approval_agent_max(ngx_uint_t tenant_max)
{
    return tenant_max / 4 ? tenant_max / 4 : 1;
}


ngx_uint_t
ngx_http_veto_sandbox_approval_id_valid(ngx_str_t *id)
{
    return id->len == NGX_HTTP_VSB_APPROVAL_ID_LEN
           && ngx_strncmp(id->data, "apr_", 4) == 0
           && ngx_http_veto_sandbox_hex_lower(id->data + 4, id->len - 4);
}

ngx_int_t
ngx_http_veto_sandbox_approval_keys(ngx_pool_t *pool, ngx_str_t *tenant,
    ngx_str_t *id, ngx_str_t *rec, ngx_str_t *rv, ngx_str_t *idx)
{
    size_t  len;

    if (!ngx_http_veto_sandbox_redis_key_part_valid(tenant->data,
                                                    tenant->len)
        || (id && !ngx_http_veto_sandbox_approval_id_valid(id)))
    {
        return NGX_DECLINED;
    }

    len = sizeof(NGX_HTTP_VSB_KEY_PREFIX "{}:appr:idx") + tenant->len
          + NGX_HTTP_VSB_APPROVAL_ID_LEN + sizeof(":rv");

    if (rec) {
        rec->data = ngx_pnalloc(pool, len);
        if (rec->data == NULL) {
            return NGX_ERROR;
        }

        rec->len = ngx_sprintf(rec->data,
                               NGX_HTTP_VSB_KEY_PREFIX "{%V}:appr:%V",
                               tenant, id)
                   - rec->data;
    }

    if (rv) {
        rv->data = ngx_pnalloc(pool, len);
        if (rv->data == NULL) {
            return NGX_ERROR;
        }

        rv->len = ngx_sprintf(rv->data,
                              NGX_HTTP_VSB_KEY_PREFIX
                              "{%V}:appr:%V:rv", tenant, id)
                  - rv->data;
    }

    if (idx) {
        idx->data = ngx_pnalloc(pool, len);
        if (idx->data == NULL) {
            return NGX_ERROR;
        }

        idx->len = ngx_sprintf(idx->data,
                               NGX_HTTP_VSB_KEY_PREFIX
                               "{%V}:appr:idx", tenant)
                   - idx->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_veto_sandbox_approval_call(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_http_veto_sandbox_approval_op_e op, int numkeys, int argc,
    ngx_str_t *args)
{
    /* a transition or a consume a failover could lose counts only once
     * replicas have it (veto_sandbox_redis_wait): a consume lost would
     * let an approval be used twice, a denial lost would let it be
     * approved */
    call->durable = (op == NGX_HTTP_VSB_APPROVAL_CREATE
                     || op == NGX_HTTP_VSB_APPROVAL_APPROVE
                     || op == NGX_HTTP_VSB_APPROVAL_DENY
                     || op == NGX_HTTP_VSB_APPROVAL_CONSUME);

    return ngx_http_veto_sandbox_redis_eval_str(call,
                                  &ngx_http_veto_sandbox_approval_scripts[op],
                                  numkeys, argc, args);
}


ngx_int_t
ngx_http_veto_sandbox_approval_create(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *id,
    ngx_http_veto_sandbox_approval_bind_t *bind, ngx_str_t *summary,
    ngx_msec_t ttl, ngx_uint_t threshold, ngx_msec_t retention,
    ngx_uint_t max, ngx_uint_t agent_max)
{
    u_char     *p;
    ngx_int_t   rc;
    ngx_str_t   a[15];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, &bind->tenant, id,
                                             &a[0], &a[1], &a[2]);
    if (rc != NGX_OK) {
        return rc;
    }

    if (!ngx_http_veto_sandbox_redis_key_part_valid(bind->agent.data,
                                                    bind->agent.len))
    {
        return NGX_DECLINED;
    }

    /* the agent's open requests: veto:{<tenant>}:appr:open:<agent> */
    p = ngx_pnalloc(call->pool,
                    sizeof(NGX_HTTP_VSB_KEY_PREFIX "{}:appr:open:")
                    + bind->tenant.len + bind->agent.len
                    + 5 * NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    a[3].data = p;
    p = ngx_sprintf(p, NGX_HTTP_VSB_KEY_PREFIX "{%V}:appr:open:%V",
                    &bind->tenant, &bind->agent);
    a[3].len = p - a[3].data;

    a[4] = *id;
    a[5] = bind->tenant;
    a[6] = bind->agent;
    a[7] = bind->action;
    a[8].data = bind->hash;
    a[8].len = NGX_HTTP_VSB_HASH_HEX_LEN;
    a[9] = *summary;

    a[10].data = p;
    p = ngx_sprintf(p, "%M", ttl);
    a[10].len = p - a[10].data;

    a[11].data = p;
    p = ngx_sprintf(p, "%ui", threshold ? threshold : 1);
    a[11].len = p - a[11].data;

    a[12].data = p;
    p = ngx_sprintf(p, "%M", retention);
    a[12].len = p - a[12].data;

    max = max ? max : NGX_HTTP_VSB_APPROVAL_MAX;

    a[13].data = p;
    p = ngx_sprintf(p, "%ui", max);
    a[13].len = p - a[13].data;

    a[14].data = p;
    p = ngx_sprintf(p, "%ui",
                    agent_max ? agent_max
                              : ngx_http_veto_sandbox_approval_agent_max(max));
    a[14].len = p - a[14].data;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_CREATE,
                                               4, 15, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_decide(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *id, ngx_str_t *reviewer, ngx_uint_t approve, ngx_str_t *reason)
{
    ngx_int_t   rc;
    ngx_str_t   a[5];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, id, &a[0],
                                             &a[1], NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[2] = *tenant;
    a[3] = *reviewer;

    if (reason) {
        a[4] = *reason;

    } else {
        ngx_str_null(&a[4]);
        a[4].data = (u_char *) "";
    }

    if (approve) {
        return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_APPROVE,
                                               2, 5, a);
    }

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_DENY,
                                               2, 5, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_consume(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *id,
    ngx_http_veto_sandbox_approval_bind_t *bind)
{
    ngx_int_t   rc;
    ngx_str_t   a[5];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, &bind->tenant, id,
                                             &a[0], NULL, NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[1] = bind->tenant;
    a[2] = bind->agent;
    a[3] = bind->action;
    a[4].data = bind->hash;
    a[4].len = NGX_HTTP_VSB_HASH_HEX_LEN;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_CONSUME,
                                               1, 5, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_expire(
    ngx_http_veto_sandbox_redis_call_t *call, ngx_str_t *tenant,
    ngx_str_t *id, ngx_uint_t force)
{
    ngx_int_t   rc;
    ngx_str_t   a[3];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, id, &a[0],
                                             NULL, NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[1] = *tenant;
    a[2].data = (u_char *) (force ? "1" : "0");
    a[2].len = 1;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_EXPIRE,
                                               1, 3, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_get(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *id)
{
    ngx_int_t   rc;
    ngx_str_t   a[3];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, id, &a[0],
                                             &a[1], NULL);
    if (rc != NGX_OK) {
        return rc;
    }

    a[2] = *tenant;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_GET,
                                               2, 3, a);
}


ngx_int_t
ngx_http_veto_sandbox_approval_list(ngx_http_veto_sandbox_redis_call_t *call,
    ngx_str_t *tenant, ngx_str_t *state, ngx_uint_t limit, ngx_str_t *cursor)
{
    u_char     *p;
    ngx_int_t   rc;
    ngx_str_t   a[7];

    rc = ngx_http_veto_sandbox_approval_keys(call->pool, tenant, NULL, NULL,
                                             NULL, &a[0]);
    if (rc != NGX_OK) {
        return rc;
    }

    p = ngx_pnalloc(call->pool, sizeof(NGX_HTTP_VSB_KEY_PREFIX "{}:appr:")
                          + tenant->len + 2 * NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    a[1] = *tenant;

    a[2].data = p;
    p = ngx_sprintf(p, NGX_HTTP_VSB_KEY_PREFIX "{%V}:appr:", tenant);
    a[2].len = p - a[2].data;

    if (state && state->len) {
        a[3] = *state;

    } else {
        a[3].data = (u_char *) "";
        a[3].len = 0;
    }

    a[4].data = p;
    p = ngx_sprintf(p, "%ui", limit ? limit : 100);
    a[4].len = p - a[4].data;

    if (cursor && cursor->len) {
        a[5] = *cursor;

    } else {
        a[5].data = (u_char *) "";
        a[5].len = 0;
    }

    a[6].data = p;
    p = ngx_sprintf(p, "%ui", (ngx_uint_t) NGX_HTTP_VSB_APPROVAL_LIST_BYTES);
    a[6].len = p - a[6].data;

    return ngx_http_veto_sandbox_approval_call(call,
                                               NGX_HTTP_VSB_APPROVAL_LIST,
                                               1, 7, a);
}


void
ngx_http_veto_sandbox_approval_result(redisReply *reply,
    ngx_http_veto_sandbox_approval_result_t *res)
{
    ngx_uint_t   i;
    redisReply  *e;

    ngx_memzero(res, sizeof(ngx_http_veto_sandbox_approval_result_t));
    res->code = NGX_HTTP_VSB_AR_BAD_REPLY;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements < 2)
    {
        return;
    }

    for (i = 0; i < 4 && i < reply->elements; i++) {
        if (reply->element[i]->type != REDIS_REPLY_STRING) {
            if (i < 2) {
                return;
            }

            continue;
        }

        e = reply->element[i];

        switch (i) {
        case 1:
            res->state.data = (u_char *) e->str;
            res->state.len = e->len;
            break;

        case 2:
            res->just_expired = (e->len == 1 && e->str[0] == '1');
            break;

        case 3:
            res->detail.data = (u_char *) e->str;
            res->detail.len = e->len;
            break;
        }
    }

    e = reply->element[0];

    for (i = 0; ngx_http_veto_sandbox_approval_codes[i].len; i++) {
        if ((size_t) e->len == ngx_http_veto_sandbox_approval_codes[i].len
            && ngx_strncmp(e->str, ngx_http_veto_sandbox_approval_codes[i].data,
                           e->len) == 0)
        {
            res->code = (ngx_http_veto_sandbox_approval_code_e) i;
            return;
        }
    }
}


ngx_uint_t
ngx_http_veto_sandbox_approval_cursor_valid(ngx_str_t *cursor)
{
    size_t     i;
    ngx_str_t  id;

    for (i = 0; i < cursor->len && i < 20; i++) {
        if (cursor->data[i] < '0' || cursor->data[i] > '9') {
            break;
        }
    }

    if (i == 0 || i == cursor->len || cursor->data[i] != ':') {
        return 0;
    }

    id.data = cursor->data + i + 1;
    id.len = cursor->len - i - 1;

    return ngx_http_veto_sandbox_approval_id_valid(&id);
}
