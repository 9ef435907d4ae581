-- snap_route: a snapshot's routing record (_where.c): the host whose
-- helper holds it, kept at least until expires_at and never shortened
-- (the snapshot's own expiry when it is made, then each fork's: the
-- helper keeps a snapshot while a fork of it lives).
-- KEYS: the record; ARGV: agent, gateway, expires_at (Unix seconds)
local at = tonumber(ARGV[3])
if not at or at <= 0 then
  return vsb_bad('snap_route', 'expires_at is not a positive number')
end
local ttl = redis.call('TTL', KEYS[1])
redis.call('HSET', KEYS[1], 'agent', ARGV[1], 'gateway', ARGV[2])
if ttl < 0 or tonumber(redis.call('TIME')[1]) + ttl < at then
  redis.call('EXPIREAT', KEYS[1], at)
end
return 1
