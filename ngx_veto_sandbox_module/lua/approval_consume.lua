-- approval_consume: an approved record spent by the request it approves
-- (the same agent, action and hash), once.
-- KEYS: rec;  ARGV: tenant, agent, action, hash
local now = vsb_now()
local f = vsb_record(KEYS[1], ARGV[1], 'agent', 'action', 'hash', 'deny_reason')
if not f then
  return {'not_found', ''}
end
local state = f[2]
if vsb_lapse(KEYS[1], f, now, true) then
  return {'expired', 'expired', '1'}
end
if state == 'denied' then
  return {'not_approved', state, '0', f[7] or ''}
end
if state ~= 'approved' then
  return {'not_approved', state}
end
if f[4] ~= ARGV[2] then
  return {'mismatch', state, '0', 'agent'}
end
if f[5] ~= ARGV[3] then
  return {'mismatch', state, '0', 'action'}
end
if f[6] ~= ARGV[4] then
  return {'mismatch', state, '0', 'hash'}
end
redis.call('HSET', KEYS[1], 'state', 'consumed', 'consumed_ms', now)
return {'ok', 'consumed'}
