-- revoke_check: whether a token is revoked, by its jti or its agent.
-- KEYS: the jti key, the agent key.  MGET would answer nil for a key of
-- another type (a hash written by mistake) and so let the token through;
-- a key that exists but cannot be read as a string counts as "*".
local out = {}
for i = 1, 2 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t == 'none' then out[i] = false
  elseif t == 'string' then out[i] = redis.call('GET', KEYS[i])
  else out[i] = '*' end
end
return out
