-- audit_trim_age: the audit entries older than veto_sandbox_audit_max_age
-- (_audit_age.c).
-- KEYS: audit stream, its byte counter
-- ARGV: the newest id to drop ("<ms>": every entry of that millisecond
--       and older), at most this many entries per call
-- The entries' bytes leave the counter the append keeps; what a call
-- leaves over its bound goes at the next.
local cap = tonumber(ARGV[2]) or 0
local total = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local n = 0
while n < cap do
  local b = redis.call('XRANGE', KEYS[1], '-', ARGV[1], 'COUNT', 100)
  if #b == 0 then break end
  local ids = {}
  for _, e in ipairs(b) do
    for j = 1, #e[2] do total = total - #e[2][j] end
    ids[#ids + 1] = e[1]
  end
  redis.call('XDEL', KEYS[1], unpack(ids))
  n = n + #ids
end
if n > 0 then
  if total < 0 or redis.call('XLEN', KEYS[1]) == 0 then total = 0 end
  redis.call('SET', KEYS[2], total)
end
return n
