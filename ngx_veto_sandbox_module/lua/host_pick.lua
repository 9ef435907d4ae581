-- host_pick: a lost host to reap (_hosts.c).
-- KEYS: seen;  ARGV: lease + grace (ms), lease prefix, lock prefix,
--       lock ms, this host's name
-- The lost host whose lease ran out longest ago and whose lock this call
-- took: {name, its last renewal}; else {}.
local now = vsb_now()
local cut = now - tonumber(ARGV[1])
local c = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cut,
  'WITHSCORES', 'LIMIT', 0, 8)
for i = 1, #c, 2 do
  local name = c[i]
  if name ~= ARGV[5] and redis.call('EXISTS', ARGV[2] .. name) == 0
     and redis.call('SET', ARGV[3] .. name, '1', 'NX', 'PX', ARGV[4])
  then
    return {name, c[i + 1]}
  end
end
return {}
