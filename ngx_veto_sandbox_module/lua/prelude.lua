-- The prelude of every script in this directory.  The module compiles
-- each script in as one text, this file then the script's own
-- (NGX_HTTP_VSB_LUA in ngx_http_veto_sandbox_redis.h), so its SHA-1
-- (EVALSHA, EVAL on NOSCRIPT) is of both; t/lib/VetoRedisTest.pm runs
-- the same text.  Only local functions: nothing here runs a command
-- unless a script calls it.

-- Redis' own clock, in ms
local function vsb_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- a call's bad arguments, named by the script: "ERR veto <script>: ..."
local function vsb_bad(script, what)
  return redis.error_reply('ERR veto ' .. script .. ': ' .. what)
end

-- a key without its last part: the prefix its sibling keys share
local function vsb_prefix(key, tail)
  return string.sub(key, 1, #key - #tail)
end

-- a key lives at least ttl ms more
local function vsb_keep(key, ttl)
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIRE', key, ttl)
  end
end

-- An approval record's fields: tenant, state, expires_ms, then those
-- named; nil when there is no record or it is another tenant's.
local function vsb_record(key, tenant, ...)
  local f = redis.call('HMGET', key, 'tenant', 'state', 'expires_ms', ...)
  if not f[1] or f[1] ~= tenant then
    return nil
  end
  return f
end

-- Lazy expiry: a pending record (or an approved one, with approved)
-- past its expires_ms becomes expired, decided at that time; true when
-- this call made it so.  f: vsb_record()'s fields.
local function vsb_lapse(key, f, now, approved)
  local state = f[2]
  if (state == 'pending' or (approved and state == 'approved'))
     and now >= tonumber(f[3]) then
    redis.call('HSET', key, 'state', 'expired', 'decided_ms', f[3])
    return true
  end
  return false
end

-- a reviewer who may not decide: none, or the requester (the same name
-- but for ASCII case)
local function vsb_self(reviewer, agent)
  return reviewer == '' or string.lower(reviewer) == string.lower(agent or '')
end

-- A record a reviewer may decide now: the tenant's, still pending (not
-- lapsed), and not the reviewer's own request.  Its fields (vsb_record's,
-- then agent, then those named), or nil and the reply the script gives.
local function vsb_decidable(key, tenant, reviewer, now, ...)
  local f = vsb_record(key, tenant, 'agent', ...)
  if not f then
    return nil, {'not_found', ''}
  end
  if vsb_lapse(key, f, now, false) then
    return nil, {'expired', 'expired', '1'}
  end
  if f[2] ~= 'pending' then
    return nil, {'not_pending', f[2]}
  end
  if vsb_self(reviewer, f[4]) then
    return nil, {'self_approval', f[2]}
  end
  return f
end

-- a reason that is not only white space
local function vsb_text(s)
  return s and string.find(s, '%S')
end

-- Retry-After of a full zset: seconds (at least 1, as text) until its
-- oldest member's score plus plus ms is past.
local function vsb_retry(key, now, plus)
  local o = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local s = math.ceil((tonumber(o[2]) + plus - now) / 1000)
  if s < 1 then s = 1 end
  return tostring(s)
end

-- An ended sandbox's routing record (_where.c): the host that held it
-- and how it ended, until until_s (unix s, the ENDED record's retention).
local function vsb_route(key, agent, gateway, epoch, reason, ended_at, until_s)
  redis.call('DEL', key)
  redis.call('HSET', key, 'agent', agent, 'gateway', gateway,
    'epoch', epoch, 'end_reason', reason, 'ended_at', ended_at)
  redis.call('EXPIREAT', key, until_s)
end

-- The audit append (audit_append.lua; sandbox_ended.lua and
-- host_lost.lua append their entry with it, in their own call).
-- KEYS: stream, its byte counter
-- ARGV: bytes, entries, then the entry's field, value, ...
-- Adds the entry, counts its bytes, then drops the oldest entries while
-- the stream holds more than either bound (never the one just added).
-- The counter starts again from the entry when the stream was empty or
-- is down to it, so it cannot drift for long (an operator's XTRIM).
local function vsb_audit_append(KEYS, ARGV)
  local budget = tonumber(ARGV[1])
  local maxlen = tonumber(ARGV[2])
  if not budget or budget < 1 or not maxlen or maxlen < 1 or #ARGV < 4 then
    return vsb_bad('audit_append', 'bad bounds or no fields')
  end
  local size = 0
  for i = 3, #ARGV do size = size + #ARGV[i] end
  local fresh = redis.call('EXISTS', KEYS[1]) == 0
  local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
  local total = size
  if not fresh then
    total = (tonumber(redis.call('GET', KEYS[2])) or 0) + size
  end
  local n = redis.call('XLEN', KEYS[1])
  while (total > budget or n > maxlen) and n > 1 do
    local b = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 16)
    local ids = {}
    for _, e in ipairs(b) do
      if (total <= budget and n <= maxlen) or n <= 1 or e[1] == id then break end
      for j = 1, #e[2] do total = total - #e[2][j] end
      n = n - 1
      table.insert(ids, e[1])
    end
    if #ids == 0 then break end
    redis.call('XDEL', KEYS[1], unpack(ids))
  end
  if n <= 1 or total < size then total = size end
  redis.call('SET', KEYS[2], total)
  return id
end
