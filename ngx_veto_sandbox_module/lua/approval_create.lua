-- approval_create: a new pending approval record.
-- KEYS: rec, rv, idx[, open]
-- ARGV: id, tenant, agent, action, hash, summary, ttl_ms, threshold,
--       retention_ms, max records (optional, 5000), agent's open max
--       (optional, with KEYS[4])
-- The agent keeps at most its open max pending requests (open: the
-- agent's pending ids, scored by expiry, pruned here of the decided and
-- the expired; it never holds more than that max): past it,
-- "agent_full" with that max, before anything else is touched.  The
-- tenant keeps at most max records: past it, the oldest decided (or
-- past expiry) ones go first; when all are live, "full".
local now = vsb_now()
local ttl = tonumber(ARGV[7])
local thr = tonumber(ARGV[8])
local ret = tonumber(ARGV[9])
local max = tonumber(ARGV[10] or '5000')
if not ttl or ttl < 1 or not thr or thr < 1 or not ret or ret < 0
   or not max or max < 1 then
  return vsb_bad('approval_create', 'bad ttl, threshold, retention or max')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'exists', 'pending'}
end
local pre = vsb_prefix(KEYS[1], ARGV[1])
local amax = tonumber(ARGV[11] or '0')
if KEYS[4] and (not amax or amax < 1) then
  return vsb_bad('approval_create', 'bad agent max')
end
if KEYS[4] then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  local open = 0
  for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    local f = redis.call('HMGET', pre .. id, 'state', 'tenant', 'agent')
    if f[1] == 'pending' and f[2] == ARGV[2] and f[3] == ARGV[3] then
      open = open + 1
    else
      redis.call('ZREM', KEYS[4], id)
    end
  end
  if open >= amax then
    return {'agent_full', '', '0', tostring(amax)}
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - ttl - ret)
local n = redis.call('ZCARD', KEYS[3])
if n >= max then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, 199)) do
    if n < max then break end
    local k = pre .. id
    local f = redis.call('HMGET', k, 'state', 'expires_ms')
    if not f[1] or f[1] == 'denied' or f[1] == 'consumed' or f[1] == 'expired'
       or now >= (tonumber(f[2]) or 0) then
      redis.call('DEL', k, k .. ':rv')
      redis.call('ZREM', KEYS[3], id)
      n = n - 1
    end
  end
  if n >= max then
    return {'full', ''}
  end
end
local exp = now + ttl
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'tenant', ARGV[2], 'agent', ARGV[3],
  'action', ARGV[4], 'hash', ARGV[5], 'summary', ARGV[6], 'state', 'pending',
  'created_ms', now, 'expires_ms', exp, 'threshold', thr, 'approvals', 0)
redis.call('PEXPIRE', KEYS[1], ttl + ret)
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('PEXPIRE', KEYS[3], ttl + ret)
if KEYS[4] then
  redis.call('ZADD', KEYS[4], exp, ARGV[1])
  vsb_keep(KEYS[4], ttl)
end
return {'ok', 'pending', '0', tostring(now), tostring(exp)}
