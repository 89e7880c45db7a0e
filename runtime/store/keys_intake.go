package store

// Keys of the webhook intake (runtime/intake). The intake's Lua script builds them from
// these prefixes and the bot ID it looks up, so the prefixes are exported as such.
//
//	sigops:rl:bot:{bot}                 string  GCRA theoretical arrival time (ms) of the bot's rate limit
//	sigops:idem:{bot}:{sha256(key)}     string  first signalId of an Idempotency-Key (24 h)
//	sigops:dedupe:{bot}:{sha256(body)}  string  first signalId of a body inside the bot's dedupeWindow

// BotKeyPrefix + bot ID is Bot(id).
func BotKeyPrefix() string { return Bot("") }

// RateLimitPrefix + bot ID is the bot's rate-limit state.
func RateLimitPrefix() string { return prefix + "rl:bot:" }

// IdempotencyPrefix + bot ID + ":" + hash is an Idempotency-Key record.
func IdempotencyPrefix() string { return prefix + "idem:" }

// DedupePrefix + bot ID + ":" + hash is a dedupe-window record.
func DedupePrefix() string { return prefix + "dedupe:" }

// QueueStreamParts splits QueueStream(partition, priority) around the partition number, for
// scripts that learn the partition from Redis.
func QueueStreamParts(priority int) (before, after string) {
	k := QueueStream(0, priority)
	i := len(prefix + "q:{")
	return k[:i], k[i+1:]
}
