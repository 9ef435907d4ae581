-- host_reaped: a lost host's reap is over.
-- KEYS: seen, lock;  ARGV: name, its last renewal when picked
-- The host leaves the seen set unless it renewed meanwhile.
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
end
redis.call('DEL', KEYS[2])
return 1
