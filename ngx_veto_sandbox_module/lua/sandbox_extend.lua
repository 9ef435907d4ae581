-- sandbox_extend: a lifetime that was extended (_lifetime.c): the slot
-- counts until the new expiry and the ownership record and the live
-- sets live as long (only what exists is touched).
-- KEYS: tenant live set, agent live set, owner hash
-- ARGV: sandbox id, expires_ms
local exp = tonumber(ARGV[2])
if not exp or exp < 1 then
  return vsb_bad('sandbox_extend', 'bad expiry')
end
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', exp, ARGV[1])
redis.call('ZADD', KEYS[2], 'XX', exp, ARGV[1])
for _, k in ipairs({KEYS[1], KEYS[2]}) do
  local at = redis.call('PEXPIRETIME', k)
  if at > 0 and at < exp then redis.call('PEXPIREAT', k, exp) end
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HSET', KEYS[3], 'expires_ms', exp)
  redis.call('PEXPIREAT', KEYS[3], exp)
end
return {'ok', tostring(n)}
