-- approval_approve: one reviewer's approval of a pending record.
-- KEYS: rec, rv;  ARGV: tenant, reviewer, reason (optional)
-- The requester, or a name equal to it but for ASCII case, never
-- decides its own request.  A reason that is not only white space is
-- kept in approve_reasons, a JSON object reviewer -> reason (one entry
-- per counted reviewer, at most threshold of them).
local now = vsb_now()
local f, refusal = vsb_decidable(KEYS[1], ARGV[1], ARGV[2], now, 'threshold')
if not f then
  return refusal
end
if redis.call('SADD', KEYS[2], ARGV[2]) == 0 then
  return {'already_approved', 'pending', '0', tostring(redis.call('SCARD', KEYS[2]))}
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
local n = redis.call('SCARD', KEYS[2])
redis.call('HSET', KEYS[1], 'approvals', n, 'last_reviewer', ARGV[2])
if vsb_text(ARGV[3]) then
  local rs = cjson.decode(redis.call('HGET', KEYS[1], 'approve_reasons') or '{}')
  rs[ARGV[2]] = ARGV[3]
  redis.call('HSET', KEYS[1], 'approve_reasons', cjson.encode(rs))
end
if n >= tonumber(f[5]) then
  redis.call('HSET', KEYS[1], 'state', 'approved', 'decided_ms', now)
  return {'ok', 'approved', '0', tostring(n)}
end
return {'ok', 'pending', '0', tostring(n)}
