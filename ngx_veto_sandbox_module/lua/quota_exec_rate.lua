-- quota_exec_rate: one exec counted in the tenant's and the agent's
-- window, when both have room; the retry-after of a limit is when the
-- oldest event leaves the window.
-- KEYS: tenant exec log, agent exec log
-- ARGV: tenant max, agent max, window_ms, unique event id
-- (read as quota_acquire reads its limits and ttl: each script names its
-- own arguments and error)
local now = vsb_now()
local tmax = tonumber(ARGV[1])
local amax = tonumber(ARGV[2])
local win = tonumber(ARGV[3])
if not tmax or not amax or not win or win < 1 then
  return vsb_bad('quota_exec_rate', 'bad limits or window')
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - win)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - win)
if tmax > 0 and redis.call('ZCARD', KEYS[1]) >= tmax then
  return {'tenant_limit', vsb_retry(KEYS[1], now, win)}
end
if amax > 0 and redis.call('ZCARD', KEYS[2]) >= amax then
  return {'agent_limit', vsb_retry(KEYS[2], now, win)}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('ZADD', KEYS[2], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], win)
redis.call('PEXPIRE', KEYS[2], win)
return {'ok', '0'}
