-- host_lost: a lost host's live sandboxes of one tenant ended (_hosts.c).
-- KEYS: tenant live set, audit stream, its byte counter
-- ARGV: lost host, owner hash prefix, agent live set prefix, end marker
--       prefix, marker expiry (unix s), audit bytes, audit maxlen, time,
--       tenant, routing record prefix
-- Ends each live sandbox the lost host holds: the count ended.  Its
-- routing record (_where.c) says host_lost until the marker's expiry:
-- every host answers that end while the lost host is away.  A marker
-- per sandbox makes the call idempotent: one "sandbox.end" audit entry
-- each, appended with the prelude's vsb_audit_append.
local n = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local own = ARGV[2] .. id
  local f = redis.call('HMGET', own, 'gateway', 'agent', 'epoch')
  if f[1] == ARGV[1] then
    redis.call('ZREM', KEYS[1], id)
    if f[2] then redis.call('ZREM', ARGV[3] .. f[2], id) end
    redis.call('DEL', own)
    if f[2] and string.sub(id, 1, 4) ~= 'new-' then
      vsb_route(ARGV[10] .. id, f[2], ARGV[1], f[3] or '', 'host_lost',
        redis.call('TIME')[1], ARGV[5])
    end
    if string.sub(id, 1, 4) ~= 'new-' and redis.call('SET',
         ARGV[4] .. id .. ':host_lost', '1', 'NX', 'EXAT', ARGV[5])
    then
      local e = {ARGV[6], ARGV[7], 'time', ARGV[8], 'tenant', ARGV[9]}
      if f[2] then e[#e + 1] = 'agent'; e[#e + 1] = f[2] end
      for _, v in ipairs({'action', 'sandbox.end', 'outcome',
          'host_lost', 'reason', 'lease_expired', 'sandbox', id,
          'detail', cjson.encode({end_reason = 'host_lost',
            host = ARGV[1], epoch = f[3] or ''})}) do
        e[#e + 1] = v
      end
      vsb_audit_append({KEYS[2], KEYS[3]}, e)
      n = n + 1
    end
  end
end
return n
