package queue

import (
	"strconv"

	"github.com/google/uuid"

	"github.com/sigops/sigops/runtime/store"
)

// Signal IDs are chosen so that a signal's result key (store.SignalResult, whose slot is a
// hash of the ID alone) lands in its bot's partition slot: the executor then stores the
// result in the script that books the fill, and a reader still needs nothing but the ID.

// NewSignalID is a fresh version-4 UUID whose result key is in bot botID's partition.
func NewSignalID(botID string) string { return SignalIDFor(botID, uuid.NewString()) }

// SignalIDFor places id in bot botID's partition (store.SignalPartition):
//   - id itself when it is already there;
//   - an ID that ends in a UUID (a UUID, or a prefix and a UUID such as a manual order's
//     "m-<uuid>") with its last two hex digits re-chosen, the first of 00 to ff that lands
//     there, so that it keeps its shape and the UUID its version (a random one keeps 120
//     random bits);
//   - any other ID, or one of those for which none of the 256 does (about 1 in 3,400), with
//     the shortest suffix "~<n>" (n = 0, 1, 2, ... in base 36) that does.
//
// The answer depends on botID and id alone, so a deterministic ID (a watcher trigger's, a
// strategy candle's, a copy's) stays deterministic: retries of the same signal agree.
func SignalIDFor(botID, id string) string {
	want := uint32(store.PartitionOf(botID))
	if partitionOf(fnvOf(fnvOffset, id)) == want {
		return id
	}
	if n := len(id); n >= 36 && isUUID(id[n-36:]) {
		// The hash of all but the last two characters is shared by every candidate.
		h := fnvOf(fnvOffset, id[:n-2])
		for b := 0; b < 256; b++ {
			hi, lo := hexDigits[b>>4], hexDigits[b&15]
			if partitionOf(fnvByte(fnvByte(h, hi), lo)) == want {
				return id[:n-2] + string([]byte{hi, lo})
			}
		}
	}
	h := fnvOf(fnvOffset, id+"~")
	for n := 0; ; n++ {
		s := strconv.FormatInt(int64(n), 36)
		if partitionOf(fnvOf(h, s)) == want {
			return id + "~" + s
		}
	}
}

// InBotPartition reports whether signalID's result key is in bot botID's partition, as
// SignalIDFor makes it. A signal queued by an older version is not, and still executes.
func InBotPartition(botID, signalID string) bool {
	return store.SignalPartition(signalID) == store.PartitionOf(botID)
}

// FNV-1a, as store.PartitionOf computes it, so that a candidate's hash continues from a
// shared prefix instead of starting over.
const (
	fnvOffset uint32 = 2166136261
	fnvPrime  uint32 = 16777619
)

func fnvByte(h uint32, c byte) uint32 { return (h ^ uint32(c)) * fnvPrime }

func fnvOf(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return h
}

func partitionOf(h uint32) uint32 { return h % store.Partitions }

const hexDigits = "0123456789abcdef"

// isUUID reports whether id is a UUID in its canonical lower-case text form.
func isUUID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
