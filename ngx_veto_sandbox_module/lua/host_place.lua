-- host_place: where a create goes when this host is full (_where.c).
-- KEYS: seen;  ARGV: this host's name, the lease prefix
-- This host has room (or its load is not known): {}; else the live host
-- with room and the least load: {name, addr}; none: {}.
local function load(name)
  local f = redis.call('HMGET', ARGV[2] .. name, 'sandboxes',
    'capacity', 'addr')
  local n, c = tonumber(f[1]), tonumber(f[2])
  if not n or not c or c < 1 or not f[3] then return nil end
  return n, c, f[3]
end
local n, c = load(ARGV[1])
if not n or n < c then return {} end
local best, bl, ba = nil, 2, nil
for _, h in ipairs(redis.call('ZRANGE', KEYS[1], 0, 63)) do
  if h ~= ARGV[1] then
    local hn, hc, ha = load(h)
    if hn and hn < hc and hn / hc < bl then
      best, bl, ba = h, hn / hc, ha
    end
  end
end
if best then return {best, ba} end
return {}
