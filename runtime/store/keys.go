// Package store names every Redis key sigops uses, in one place, so that the controllers,
// daemons and executor agree on them and no key is spelt as a literal elsewhere.
//
// Every key carries the "sigops:" prefix, so that a shared Redis stays readable, and a hash
// tag (the part in braces, the only part Redis Cluster hashes) chosen so that each Lua
// script and each MULTI/WATCH transaction touches keys of one Cluster slot. A script
// declares every key it touches in KEYS; none is built inside Lua. The slots:
//
//   - {N}, the bot's queue partition (PartitionOf, 0-31): every key about a bot or about
//     one of its signals, beside the partition's streams and lease. The intake script
//     (gates, rate limit, duplicates, XADD), the executor's booking transaction (progress,
//     book, risk, runtime pause, watch index) and the queue's dead-letter transaction
//     (XACK, XADD, attempts) each stay in one partition's slot.
//   - {account ID}: a paper account's balance, orders and holdings (the paper exchange's
//     WATCH transaction).
//   - {user ID}: an account and its session and authorization sets (keys_auth.go).
//   - {authorization ID}, {login}, {register}: OAuth token families and the login and
//     registration counters (keys_auth.go).
//   - no tag (the key's own slot): keys only ever touched alone or by single-key steps:
//     the webhook routes, owner and global sets, signal results, sessions, connections.
//
// Bot projection and routing (runtime/registry):
//
//	sigops:bots                   set    {own}  IDs (Kubernetes UIDs) of every projected bot
//	sigops:bot:{N}:<id>           hash   {N}    projected bot: config JSON, gate fields, webhook hash, owner, runtime pause
//	sigops:webhook:<sha256>       hash   {own}  webhook ID hash -> bot ID (or a tombstone of a deleted bot)
//	sigops:owner:<email>:bots     set    {own}  bot IDs per owner (tier downgrades, listings)
//	sigops:symbols                set    {own}  canonical symbols the connected exchanges list
//	sigops:projection:marker      string {own}  set by the manager once every object is queued for projection
//
// The webhook route cannot carry the bot's partition (the intake knows only the webhook
// hash), so routing is two steps: route -> bot ID, then the intake script on the bot's
// partition slot, which checks that the bot hash still names that webhook hash (the
// registry's switch: see runtime/registry).
//
// Later packages keep their keys in their own files of this package (keys_*.go).
package store

import (
	"strconv"

	"github.com/sigops/sigops/runtime/emails"
)

const prefix = "sigops:"

// AllBots is the set of every projected bot ID.
func AllBots() string { return prefix + "bots" }

// ProjectionMarker is written by the manager's leader after it has queued every SignalBot,
// PaperAccount and ExchangeConnection for projection, with a value unique to that write.
// Its absence tells the manager that Redis lost its data (emptied, replaced by an empty
// server, failed over to an empty replica), so that it projects everything again; a value
// the leader did not write, that Redis may hold projections of bots deleted since (a
// restored backup).
func ProjectionMarker() string { return prefix + "projection:marker" }

// Bot is the projected configuration of one bot, in its partition's slot.
func Bot(id string) string { return prefix + "bot:" + botTag(id) + ":" + id }

// Webhook maps the SHA-256 (hex) of a webhook ID to its bot. The raw ID never enters Redis.
func Webhook(hash string) string { return prefix + "webhook:" + hash }

// OwnerBots is the set of bot IDs owned by one account, by its canonical email
// (emails.Canonical).
func OwnerBots(owner string) string { return prefix + "owner:" + emails.Canonical(owner) + ":bots" }

// QueueStream is the stream of one partition and priority.
func QueueStream(partition, priority int) string {
	return prefix + "q:" + partitionTag(partition) + ":p" + itoa(priority)
}

func itoa(n int) string { return strconv.Itoa(n) }

// KnownSymbols is the set of canonical symbols (BASE/QUOTE) the connected exchanges list;
// webhookd resolves signal symbols against it and the paper catalogue.
func KnownSymbols() string { return prefix + "symbols" }
