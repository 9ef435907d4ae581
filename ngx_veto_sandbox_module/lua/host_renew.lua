-- host_renew: this host's lease (_hosts.c), with its load.
-- KEYS: lease, seen;  ARGV: name, addr, epoch, lease_ms, and the load:
--       live sandboxes, capacity, their ratio ('' when not known)
-- {'ok'} or {'fenced', the lease's epoch}: a newer run holds the name
local held = tonumber(redis.call('HGET', KEYS[1], 'epoch') or '0')
local mine = tonumber(ARGV[3])
if not mine or mine < 1 then
  return vsb_bad('host_renew', 'bad epoch')
end
if held and held > mine then
  return {'fenced', tostring(held)}
end
local now = vsb_now()
redis.call('HSET', KEYS[1], 'addr', ARGV[2], 'epoch', ARGV[3],
  'renewed_ms', now, 'sandboxes', ARGV[5], 'capacity', ARGV[6],
  'load', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], now, ARGV[1])
return {'ok', ''}
