-- quota_release: a sandbox's slot and ownership record freed.
-- KEYS: tenant live set, agent live set, owner hash[, routing record]
-- ARGV: sandbox id[, end reason, ended_at, the routing record's expiry
--       (unix s: the helper's ENDED record's retained_until)]
-- With a routing record, the ownership record's agent, gateway and epoch
-- stay there with how the sandbox ended, until its expiry (_where.c).
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if KEYS[4] then
  local f = redis.call('HMGET', KEYS[3], 'agent', 'gateway', 'epoch')
  if f[1] and f[2] then
    vsb_route(KEYS[4], f[1], f[2], f[3] or '', ARGV[2], ARGV[3], ARGV[4])
  end
end
redis.call('DEL', KEYS[3])
return {'ok', tostring(n)}
