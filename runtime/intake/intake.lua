-- One round trip per webhook signal once its route is known: the route check, gates,
-- duplicate checks, per-bot rate limit (GCRA) and XADD to the bot's partition stream. Every
-- key is declared below and all carry the bot's partition hash tag (runtime/store), so the
-- script runs on one Redis Cluster slot.
--
-- KEYS[1]  the bot's hash (store.Bot)
-- KEYS[2]  the bot's rate-limit state (store.RateLimit)
-- KEYS[3]  the Idempotency-Key record (store.Idempotency); touched only when ARGV[6] is '1'
-- KEYS[4]  the body's dedupe record (store.Dedupe); touched only when ARGV[7] is '1'
-- KEYS[5]  the stream of the bot's partition at the signal's priority
-- ARGV[1]  when the request arrived, ms since epoch (the pause's clock)
-- ARGV[2]  signalId
-- ARGV[3]  envelope JSON
-- ARGV[4]  '1' when the signal needs a symbol and has none
-- ARGV[5]  sha256 of the webhook ID the signal came in on
-- ARGV[6]  '1' when the request has an Idempotency-Key; ARGV[7] '1' when the body is hashed
-- ARGV[8]  idempotency TTL ms; ARGV[9] stream MAXLEN (approximate)
--
-- Returns {status, value, retryAfterMs}: status "ok" (value = signalId), "dup" (value = the
-- first signalId), "err" (value = the spec's error code) or "stale": the bot is gone or
-- routes another webhook now, so the route the caller looked up (or remembered) is out of
-- date. The bot hash's webhook field is the registry's switch between routes.
local g = redis.call('HMGET', KEYS[1], 'webhook', 'availability', 'disabledReason', 'webhookEnabled',
  'symbol', 'ratePerMinute', 'rateBurst', 'dedupeMillis', 'pause', 'pauseUntil', 'disabledCode')
if g[1] ~= ARGV[5] then return {'stale', '', 0} end
if g[4] == '0' then return {'err', 'WEBHOOK_DISABLED', 0} end
if g[2] == 'disabled' then
  -- The same rule as registry.Bot.DisabledError in Go, on the code the controller writes
  -- (registry.FieldDisabledCode); a projection without a code (from a controller that wrote
  -- none, until it is re-projected) is read by its exact reason. TestDisabledCodesAgreeWithGo
  -- holds the two rules equal.
  local code = g[11] or ''
  if code == '' and (g[3] == 'ExchangeConnectionNotFound' or g[3] == 'ExchangeConnectionNotReady') then
    code = 'ExchangeDisconnected'
  end
  if code == 'ExchangeDisconnected' then return {'err', 'EXCHANGE_DISCONNECTED', 0} end
  return {'err', 'BOT_DISABLED', 0}
end
local now = tonumber(ARGV[1])
if g[2] == 'paused' then return {'err', 'BOT_PAUSED', 0} end
-- The runtime pause (registry.FieldPause, registry.FieldPauseUntil): in force while it has
-- no end or its end is still ahead.
if g[9] and g[9] ~= '' then
  local untilMs = tonumber(g[10] or '0') or 0
  if untilMs == 0 or untilMs > now then return {'err', 'BOT_PAUSED', 0} end
end
if ARGV[4] == '1' and (not g[5] or g[5] == '') then return {'err', 'MISSING_SYMBOL', 0} end

-- A duplicate rewrites its record's own expiry: a write, so that the WAIT which follows on
-- the caller's connection (store.AckScript) also covers the first signal's entry, written
-- perhaps on another connection, before the duplicate is answered with its signalId.
local function dup(key, first)
  local at = redis.call('PEXPIRETIME', key)
  if at > 0 then redis.call('PEXPIREAT', key, at) end
  return {'dup', first, 0}
end
if ARGV[6] == '1' then
  local first = redis.call('GET', KEYS[3])
  if first then return dup(KEYS[3], first) end
end
local dedupeMs = tonumber(g[8] or '0') or 0
local dedupe = dedupeMs > 0 and ARGV[7] == '1'
if dedupe then
  local first = redis.call('GET', KEYS[4])
  if first then return dup(KEYS[4], first) end
end

-- GCRA: `burst` signals at once, then one every `interval` ms. Its clock is this server's,
-- not the request's arrival (ARGV[1]): a request held up in a failover or a retry arrives
-- here late, and on the arrival clock it would look like a burst from the past and be
-- refused behind requests that came after it; one clock also spares the limit the skew
-- between webhookd replicas.
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(g[6] or '60') or 60
local burst = tonumber(g[7] or '10') or 10
local interval = math.max(1, math.floor(60000 / rate))
local tat = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if tat < clock then tat = clock end
local newTat = tat + interval
local allowAt = newTat - burst * interval
if clock < allowAt then return {'err', 'RATE_LIMITED', allowAt - clock} end
redis.call('SET', KEYS[2], string.format('%d', newTat), 'PX', newTat - clock)

redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[9], '*', 'e', ARGV[3])
if ARGV[6] == '1' then redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[8]) end
if dedupe then redis.call('SET', KEYS[4], ARGV[2], 'PX', dedupeMs) end
return {'ok', ARGV[2], 0}
