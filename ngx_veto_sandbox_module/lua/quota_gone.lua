-- quota_gone: the helper of this gateway says the sandbox does not
-- exist: free what Redis holds for it, when it is the asking agent's on
-- this gateway (the helper says not_found for another agent's sandbox
-- too, and another gateway's helper does not know this one's).
-- KEYS: tenant live set, the asking agent's live set, owner hash
-- ARGV: sandbox id, agent, gateway
local f = redis.call('HMGET', KEYS[3], 'agent', 'gateway')
local mine = false
if f[1] then
  mine = f[1] == ARGV[2] and f[2] == ARGV[3]
else
  mine = redis.call('ZSCORE', KEYS[2], ARGV[1]) ~= false
end
if not mine then
  return {'ok', '0'}
end
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
return {'ok', tostring(n)}
