-- approval_expire: a live record expired, when its time is past, or now
-- (force).
-- KEYS: rec;  ARGV: tenant, force ("1": expire now)
local now = vsb_now()
local f = vsb_record(KEYS[1], ARGV[1])
if not f then
  return {'not_found', ''}
end
local state = f[2]
if state ~= 'pending' and state ~= 'approved' then
  return {'not_pending', state}
end
if vsb_lapse(KEYS[1], f, now, true) then
  return {'expired', 'expired', '1'}
end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'expired', 'decided_ms', now, 'expires_ms', now)
  return {'expired', 'expired', '1'}
end
return {'not_pending', state}
