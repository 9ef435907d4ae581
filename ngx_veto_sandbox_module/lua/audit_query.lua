-- audit_query: a tenant's audit entries, newest first (GET /v1/audit).
-- KEYS: stream
-- ARGV: newest id (or '+', or '(' id: older than it), oldest id or '-',
--       max results, agent or '', sandbox or '', max entries scanned,
--       max bytes
-- Reply: {entries, next}: next is the id to go on from ("(" next), ""
-- when the stream has no more in the range.
local want = tonumber(ARGV[3]) or 100
local budget = tonumber(ARGV[6]) or 10000
local maxb = tonumber(ARGV[7] or '524288') or 524288
local out = {}
local hi = ARGV[1]
local size, last, nxt, stop = 0, nil, '', false
while not stop do
  local n = 200
  if n > budget then n = budget end
  if n < 1 then
    nxt = last or ''
    break
  end
  local batch = redis.call('XREVRANGE', KEYS[1], hi, ARGV[2], 'COUNT', n)
  for _, e in ipairs(batch) do
    if #out >= want or size >= maxb or budget < 1 then
      nxt = last
      stop = true
      break
    end
    budget = budget - 1
    last = e[1]
    local fl = e[2]
    local agent, sandbox, bytes = '', '', 0
    for i = 1, #fl, 2 do
      if fl[i] == 'agent' then agent = fl[i + 1] end
      if fl[i] == 'sandbox' then sandbox = fl[i + 1] end
      bytes = bytes + #fl[i] + #fl[i + 1]
    end
    if (ARGV[4] == '' or agent == ARGV[4])
       and (ARGV[5] == '' or sandbox == ARGV[5]) then
      table.insert(out, e)
      size = size + bytes
    end
  end
  if not stop and #batch < n then break end
  if not stop then hi = '(' .. batch[#batch][1] end
end
return {out, nxt}
