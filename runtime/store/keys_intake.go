package store

// Keys of the webhook intake (runtime/intake), in the bot's partition slot ({N}) so that the
// intake script (bot hash, these keys and the partition's stream) runs on one slot:
//
//	sigops:rl:{N}:<bot>                    string  GCRA theoretical arrival time (ms) of the bot's rate limit
//	sigops:idem:{N}:<bot>:<sha256(key)>    string  first signalId of an Idempotency-Key (24 h)
//	sigops:dedupe:{N}:<bot>:<sha256(body)> string  first signalId of a body inside the bot's dedupeWindow

// RateLimit is the bot's rate-limit state.
func RateLimit(botID string) string { return prefix + "rl:" + botTag(botID) + ":" + botID }

// Idempotency is the record of one Idempotency-Key (its SHA-256, hex) of a bot.
func Idempotency(botID, hash string) string {
	return prefix + "idem:" + botTag(botID) + ":" + botID + ":" + hash
}

// Dedupe is the dedupe-window record of one body (its SHA-256, hex) of a bot.
func Dedupe(botID, hash string) string {
	return prefix + "dedupe:" + botTag(botID) + ":" + botID + ":" + hash
}
