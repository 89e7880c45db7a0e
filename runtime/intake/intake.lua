-- One round trip per webhook signal: route lookup, gates, duplicate checks, per-bot rate
-- limit (GCRA) and XADD to the bot's partition stream. Keys other than KEYS[1] are derived
-- from the bot ID found in Redis, so the script needs a single (non-cluster) Redis or one
-- hash slot for all sigops keys.
--
-- KEYS[1]  webhook route (store.Webhook(sha256(webhookId)))
-- ARGV[1]  now, ms since epoch
-- ARGV[2]  signalId
-- ARGV[3]  envelope JSON without botId (the script adds it)
-- ARGV[4]  "1" when the signal needs a symbol and has none
-- ARGV[5]  sha256 of the Idempotency-Key, or ""
-- ARGV[6]  sha256 of the body, or ""
-- ARGV[7]  bot key prefix; ARGV[8] rate-limit prefix; ARGV[9] idempotency prefix;
-- ARGV[10] dedupe prefix; ARGV[11]/ARGV[12] stream key around the partition
-- ARGV[13] idempotency TTL ms; ARGV[14] stream MAXLEN (approximate)
--
-- Returns {status, value, retryAfterMs, botId}: status "ok" (value = signalId), "dup"
-- (value = the first signalId) or "err" (value = the spec's error code).
local route = redis.call('HMGET', KEYS[1], 'bot', 'deletedAt')
local bot = route[1]
if not bot then return {'err', 'INVALID_WEBHOOK', 0, ''} end
if route[2] then return {'err', 'BOT_DELETED', 0, bot} end

local g = redis.call('HMGET', ARGV[7] .. bot, 'availability', 'disabledReason', 'webhookEnabled',
  'symbol', 'ratePerMinute', 'rateBurst', 'dedupeMillis', 'partition', 'pause', 'pauseUntil',
  'disabledCode')
if not g[1] then return {'err', 'INVALID_WEBHOOK', 0, bot} end
if g[3] == '0' then return {'err', 'WEBHOOK_DISABLED', 0, bot} end
if g[1] == 'disabled' then
  -- The same rule as registry.Bot.DisabledError in Go, on the code the controller writes
  -- (registry.FieldDisabledCode); a projection without a code (from a controller that wrote
  -- none, until it is re-projected) is read by its exact reason. TestDisabledCodesAgreeWithGo
  -- holds the two rules equal.
  local code = g[11] or ''
  if code == '' and (g[2] == 'ExchangeConnectionNotFound' or g[2] == 'ExchangeConnectionNotReady') then
    code = 'ExchangeDisconnected'
  end
  if code == 'ExchangeDisconnected' then return {'err', 'EXCHANGE_DISCONNECTED', 0, bot} end
  return {'err', 'BOT_DISABLED', 0, bot}
end
local now = tonumber(ARGV[1])
if g[1] == 'paused' then return {'err', 'BOT_PAUSED', 0, bot} end
-- The runtime pause (registry.FieldPause, registry.FieldPauseUntil): in force while it has
-- no end or its end is still ahead.
if g[9] and g[9] ~= '' then
  local untilMs = tonumber(g[10] or '0') or 0
  if untilMs == 0 or untilMs > now then return {'err', 'BOT_PAUSED', 0, bot} end
end
if ARGV[4] == '1' and (not g[4] or g[4] == '') then return {'err', 'MISSING_SYMBOL', 0, bot} end

local idemKey, dedupeKey
if ARGV[5] ~= '' then
  idemKey = ARGV[9] .. bot .. ':' .. ARGV[5]
  local first = redis.call('GET', idemKey)
  if first then return {'dup', first, 0, bot} end
end
local dedupeMs = tonumber(g[7] or '0') or 0
if dedupeMs > 0 and ARGV[6] ~= '' then
  dedupeKey = ARGV[10] .. bot .. ':' .. ARGV[6]
  local first = redis.call('GET', dedupeKey)
  if first then return {'dup', first, 0, bot} end
end

-- GCRA: `burst` signals at once, then one every `interval` ms.
local rate = tonumber(g[5] or '60') or 60
local burst = tonumber(g[6] or '10') or 10
local interval = math.max(1, math.floor(60000 / rate))
local rlKey = ARGV[8] .. bot
local tat = tonumber(redis.call('GET', rlKey) or '0') or 0
if tat < now then tat = now end
local newTat = tat + interval
local allowAt = newTat - burst * interval
if now < allowAt then return {'err', 'RATE_LIMITED', allowAt - now, bot} end
redis.call('SET', rlKey, string.format('%d', newTat), 'PX', newTat - now)

local stream = ARGV[11] .. (g[8] or '0') .. ARGV[12]
redis.call('XADD', stream, 'MAXLEN', '~', ARGV[14], '*', 'e', '{"botId":"' .. bot .. '",' .. string.sub(ARGV[3], 2))
if idemKey then redis.call('SET', idemKey, ARGV[2], 'PX', ARGV[13]) end
if dedupeKey then redis.call('SET', dedupeKey, ARGV[2], 'PX', dedupeMs) end
return {'ok', ARGV[2], 0, bot}
