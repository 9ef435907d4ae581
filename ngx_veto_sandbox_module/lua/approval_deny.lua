-- approval_deny: a reviewer's denial of a pending record, with a reason.
-- KEYS: rec, rv;  ARGV: tenant, reviewer, reason
local now = vsb_now()
local f, refusal = vsb_decidable(KEYS[1], ARGV[1], ARGV[2], now)
if not f then
  return refusal
end
if not vsb_text(ARGV[3]) then
  return {'reason_required', 'pending'}
end
redis.call('HSET', KEYS[1], 'state', 'denied', 'decided_ms', now,
  'denied_by', ARGV[2], 'deny_reason', ARGV[3])
return {'ok', 'denied'}
