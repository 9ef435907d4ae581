-- sandbox_ended: one ENDED record of a helper handled (_ended.c).
-- KEYS: marker, tenant live set, agent live set, owner hash, audit
--       stream, its byte counter, routing record
-- ARGV: sandbox id, marker expiry (unix seconds), end reason, the
--       stream's bytes and entries (veto_sandbox_audit_bytes, _maxlen),
--       this host's name ('' without hosts: no routing record), the
--       record's epoch, ended_at and retained_until, its agent, then the
--       audit entry's field/value pairs
-- 1: this call handled the end; 0: it was handled before.  One script,
-- so that a call whose reply was lost (a timeout) and that ran anyway
-- left its audit entry too; the entry is appended with the prelude's
-- vsb_audit_append (its byte count kept).  A sandbox whose termination
-- failed still holds what it held on its host: its slot stays until its
-- end is confirmed (a record of another reason, so of another marker).
-- A sandbox ended as host_lost (its host's lease ran out, _hosts.c) is
-- on record already: the end its helper reports when the host comes
-- back adds nothing.
if not redis.call('SET', KEYS[1], '1', 'NX', 'EXAT', ARGV[2]) then
  return 0
end
local lost = vsb_prefix(KEYS[1], ARGV[3]) .. 'host_lost'
if ARGV[3] ~= 'host_lost' and redis.call('EXISTS', lost) == 1 then
  return 1
end
if ARGV[3] ~= 'termination_failed' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  if ARGV[6] ~= '' then
    local f = redis.call('HMGET', KEYS[4], 'agent', 'gateway', 'epoch')
    vsb_route(KEYS[7], f[1] or ARGV[10], f[2] or ARGV[6], f[3] or ARGV[7],
      ARGV[3], ARGV[8], ARGV[9])
  end
  redis.call('DEL', KEYS[4])
end
local a = {ARGV[4], ARGV[5]}
for i = 11, #ARGV do a[#a + 1] = ARGV[i] end
vsb_audit_append({KEYS[5], KEYS[6]}, a)
return 1
