-- sbx_where: where a sandbox is (_where.c).
-- KEYS: ownership record, routing record
-- {agent, gateway, epoch, end_reason, ended_at}: the ownership record's
-- (a live sandbox: no end_reason); else the routing record's (an ended
-- one); else nothing.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local f = redis.call('HMGET', KEYS[1], 'agent', 'gateway', 'epoch')
  return {f[1], f[2], f[3], false, false}
end
return redis.call('HMGET', KEYS[2], 'agent', 'gateway', 'epoch',
  'end_reason', 'ended_at')
