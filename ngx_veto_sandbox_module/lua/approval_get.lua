-- approval_get: a record and its reviewers.
-- KEYS: rec, rv;  ARGV: tenant
-- (its first lines are approval_expire's: a script's early return cannot
-- move into the prelude)
local now = vsb_now()
local f = vsb_record(KEYS[1], ARGV[1])
if not f then
  return {'not_found', ''}
end
local state = f[2]
local just = '0'
if vsb_lapse(KEYS[1], f, now, true) then
  state = 'expired'
  just = '1'
end
return {'ok', state, just, redis.call('HGETALL', KEYS[1]), redis.call('SMEMBERS', KEYS[2])}
