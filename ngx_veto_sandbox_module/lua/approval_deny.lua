-- approval_deny: a reviewer's denial of a pending record, with a reason.
-- KEYS: rec, rv;  ARGV: tenant, reviewer, reason
local now = vsb_now()
local f = vsb_record(KEYS[1], ARGV[1], 'agent')
if not f then
  return {'not_found', ''}
end
local state = f[2]
if vsb_lapse(KEYS[1], f, now, false) then
  return {'expired', 'expired', '1'}
end
if state ~= 'pending' then
  return {'not_pending', state}
end
if vsb_self(ARGV[2], f[4]) then
  return {'self_approval', state}
end
if not vsb_text(ARGV[3]) then
  return {'reason_required', state}
end
redis.call('HSET', KEYS[1], 'state', 'denied', 'decided_ms', now,
  'denied_by', ARGV[2], 'deny_reason', ARGV[3])
return {'ok', 'denied'}
