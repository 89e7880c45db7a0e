// Package store names every Redis key sigops uses, in one place, so that the controllers,
// daemons and executor agree on them and no key is spelt as a literal elsewhere.
//
// Layout (all keys carry the "sigops:" prefix so that a shared Redis stays readable):
//
//	sigops:bots                  set    IDs (Kubernetes UIDs) of every projected bot
//	sigops:bot:{id}              hash   projected bot: config JSON, webhook hash, owner
//	sigops:webhook:{sha256}      hash   webhook ID hash -> bot ID (or a tombstone of a deleted bot)
//	sigops:owner:{email}:bots    set    bot IDs per owner (tier downgrades, listings)
//	sigops:paper:{id}            hash   simulated balance of a paper account
//	sigops:q:{partition}:p{1-4}  stream signals of one partition at one priority (runtime/queue)
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

// Bot is the projected configuration of one bot.
func Bot(id string) string { return prefix + "bot:" + id }

// Webhook maps the SHA-256 (hex) of a webhook ID to its bot. The raw ID never enters Redis.
func Webhook(hash string) string { return prefix + "webhook:" + hash }

// OwnerBots is the set of bot IDs owned by one account, by its canonical email
// (emails.Canonical).
func OwnerBots(owner string) string { return prefix + "owner:" + emails.Canonical(owner) + ":bots" }

// PaperAccount is the simulated balance of one paper account.
func PaperAccount(id string) string { return prefix + "paper:" + id }

// QueueStream is the stream of one partition and priority.
func QueueStream(partition, priority int) string {
	return prefix + "q:{" + itoa(partition) + "}:p" + itoa(priority)
}

func itoa(n int) string { return strconv.Itoa(n) }

// KnownSymbols is the set of canonical symbols (BASE/QUOTE) the connected exchanges list;
// webhookd resolves signal symbols against it and the paper catalogue.
func KnownSymbols() string { return prefix + "symbols" }
