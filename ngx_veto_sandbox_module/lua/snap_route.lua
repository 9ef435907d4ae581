-- snap_route: a snapshot's routing record (_where.c): the host whose
-- helper holds it, kept as long as the snapshot is.
-- KEYS: the record; ARGV: agent, gateway, expires_at (Unix seconds, the
-- snapshot's own expiry)
local at = tonumber(ARGV[3])
if not at or at <= 0 then
  return vsb_bad('snap_route', 'expires_at is not a positive number')
end
redis.call('HSET', KEYS[1], 'agent', ARGV[1], 'gateway', ARGV[2])
redis.call('EXPIREAT', KEYS[1], at)
return 1
