-- quota_acquire: a sandbox's slot in the tenant's and the agent's live
-- sets, and its ownership record.  Both limits are checked before
-- either count moves, so a refused call changes nothing; the
-- retry-after of a limit is when the oldest live sandbox reaches its
-- lifetime, an upper bound.
-- KEYS: tenant live set, agent live set, owner hash
-- ARGV: sandbox id, agent, tenant max, agent max, ttl_ms, gateway, and
--       optionally: the gateway's helper epoch, the owner hash prefix
--       ("veto:{T}:sbx:own:"), the agent live set prefix
--       ("veto:{T}:sbx:live:"), env view, env sha256, env names dropped
-- With an epoch, first drops this gateway's live sandboxes recorded
-- under another epoch: a restarted helper removed them.
local now = vsb_now()
local tmax = tonumber(ARGV[3])
local amax = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
if not tmax or not amax or not ttl or ttl < 1 then
  return vsb_bad('quota_sandbox_acquire', 'bad limits or ttl')
end
local epoch = ARGV[7] or ''
local stale = 0
if epoch ~= '' and ARGV[8] and ARGV[9] then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, 1023)) do
    local own = ARGV[8] .. id
    local f = redis.call('HMGET', own, 'gateway', 'epoch', 'agent')
    if f[1] == ARGV[6] and f[2] and f[2] ~= '' and f[2] ~= epoch then
      redis.call('ZREM', KEYS[1], id)
      if f[3] then redis.call('ZREM', ARGV[9] .. f[3], id) end
      redis.call('DEL', own)
      stale = stale + 1
    end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return {'exists', '0', tostring(stale)}
end
if tmax > 0 and redis.call('ZCARD', KEYS[1]) >= tmax then
  return {'tenant_limit', vsb_retry(KEYS[1], now, 0), tostring(stale)}
end
if amax > 0 and redis.call('ZCARD', KEYS[2]) >= amax then
  return {'agent_limit', vsb_retry(KEYS[2], now, 0), tostring(stale)}
end
local exp = now + ttl
redis.call('ZADD', KEYS[1], exp, ARGV[1])
redis.call('ZADD', KEYS[2], exp, ARGV[1])
for _, k in ipairs({KEYS[1], KEYS[2]}) do
  vsb_keep(k, ttl)
end
redis.call('HSET', KEYS[3], 'agent', ARGV[2], 'gateway', ARGV[6],
  'created_ms', now, 'expires_ms', exp)
if epoch ~= '' then redis.call('HSET', KEYS[3], 'epoch', epoch) end
if ARGV[11] and ARGV[11] ~= '' then
  redis.call('HSET', KEYS[3], 'env', ARGV[10], 'env_sha256', ARGV[11],
    'env_dropped', ARGV[12] or '0')
end
redis.call('PEXPIRE', KEYS[3], ttl)
return {'ok', '0', tostring(stale)}
