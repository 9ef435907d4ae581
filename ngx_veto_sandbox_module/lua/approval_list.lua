-- approval_list: a tenant's records, newest first, a page at a time.
-- KEYS: idx
-- ARGV: tenant, record key prefix, state or "", limit, cursor or ""
--       ("<created_ms>:<id>": older than that), summary bytes (optional),
--       entries examined (optional)
-- Stops at limit records, once the summaries reach the byte budget, or
-- after the entries examined; the reply's sixth element is the cursor
-- to go on from, "" when there is nothing more.
local now = vsb_now()
local limit = tonumber(ARGV[4]) or 100
if limit < 1 or limit > 1000 then
  limit = 100
end
local budget = tonumber(ARGV[6] or '1048576') or 1048576
local scan = tonumber(ARGV[7] or '5000') or 5000
local hi, hid = '+inf', nil
if ARGV[5] and ARGV[5] ~= '' then
  local ms, id = string.match(ARGV[5], '^(%d+):(apr_%x+)$')
  if not ms then
    return vsb_bad('approval_list', 'bad cursor')
  end
  hi, hid = ms, id
end
local out, expired, gone = {}, {}, {}
local bytes, seen, off, last, nxt = 0, 0, 0, nil, ''
while nxt == '' do
  local batch = redis.call('ZREVRANGEBYSCORE', KEYS[1], hi, '-inf',
    'WITHSCORES', 'LIMIT', off, 200)
  if #batch == 0 then break end
  off = off + #batch / 2
  for i = 1, #batch, 2 do
    local id, score = batch[i], batch[i + 1]
    if not (hid and score == hi and id >= hid) then
      if #out >= limit or bytes >= budget or seen >= scan then
        nxt = last or (hi .. ':' .. (hid or ''))
        break
      end
      seen = seen + 1
      last = score .. ':' .. id
      local k = ARGV[2] .. id
      local f = redis.call('HMGET', k, 'tenant', 'state', 'expires_ms', 'agent',
        'action', 'created_ms', 'approvals', 'threshold', 'summary', 'hash')
      if not f[1] then
        table.insert(gone, id)
      elseif f[1] == ARGV[1] then
        local state = f[2]
        if vsb_lapse(k, f, now, true) then
          state = 'expired'
          table.insert(expired, id)
        end
        if ARGV[3] == '' or ARGV[3] == state then
          table.insert(out, {'id', id, 'state', state, 'agent', f[4], 'action', f[5],
            'created_ms', f[6], 'expires_ms', f[3], 'approvals', f[7],
            'threshold', f[8], 'summary', f[9], 'hash', f[10]})
          bytes = bytes + #(f[9] or '') + 256
        end
      end
    end
  end
end
for _, id in ipairs(gone) do
  redis.call('ZREM', KEYS[1], id)
end
return {'ok', '', '0', out, expired, nxt}
