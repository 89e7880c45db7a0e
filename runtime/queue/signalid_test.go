package queue_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
)

// Every ID SignalIDFor answers has its result key in the bot's partition, for UUIDs and for
// other IDs, and an ID already there is left alone.
func TestSignalIDForPlacesTheResultInTheBotsPartition(t *testing.T) {
	suffixed := 0
	for i := range 2000 {
		bot := fmt.Sprintf("bot-%d", i)
		for _, base := range []string{uuid.NewString(), fmt.Sprintf("wt-%032x", i*7919), "m-" + uuid.NewString()} {
			id := queue.SignalIDFor(bot, base)
			if got, want := store.SignalPartition(id), store.PartitionOf(bot); got != want {
				t.Fatalf("SignalIDFor(%s, %s) = %s in partition %d, want %d", bot, base, id, got, want)
			}
			if store.SignalPartition(base) == store.PartitionOf(bot) && id != base {
				t.Fatalf("%s was already in the bot's partition, yet became %s", base, id)
			}
			if queue.SignalIDFor(bot, base) != id {
				t.Fatalf("SignalIDFor(%s, %s) is not deterministic", bot, base)
			}
			if strings.HasPrefix(base, "wt-") {
				if id != base && !strings.HasPrefix(id, base+"~") {
					t.Fatalf("an ID that does not end in a UUID gets a suffix, not a change: %s -> %s", base, id)
				}
				continue
			}
			// A UUID, or a prefix and a UUID: the same shape, only the last two hex digits
			// re-chosen.
			n := len(base)
			u, err := uuid.Parse(id[min(len(id), n-36):])
			if len(id) != n || err != nil || u.Version() != 4 || id[:n-2] != base[:n-2] {
				suffixed++ // the rare UUID none of whose 256 endings fits
				if !strings.HasPrefix(id, base+"~") {
					t.Fatalf("%s became %s: neither the same ID but its last two hex digits nor a suffix", base, id)
				}
			}
		}
	}
	// (31/32)^256 ≈ 0.03 %: about 1.2 of the 4,000 IDs ending in a UUID; 10 would mean the
	// search is broken.
	if suffixed > 10 {
		t.Fatalf("%d of 4000 IDs ending in a UUID needed a suffix", suffixed)
	}
}

func TestNewSignalIDIsAUUIDInTheBotsPartition(t *testing.T) {
	for i := range 200 {
		bot := fmt.Sprintf("b%d", i)
		id := queue.NewSignalID(bot)
		if store.SignalPartition(id) != store.PartitionOf(bot) {
			t.Fatalf("NewSignalID(%s) = %s outside the bot's partition", bot, id)
		}
		if _, err := uuid.Parse(strings.SplitN(id, "~", 2)[0]); err != nil {
			t.Fatalf("NewSignalID(%s) = %s: %v", bot, id, err)
		}
	}
}

func BenchmarkNewSignalID(b *testing.B) {
	for b.Loop() {
		_ = queue.NewSignalID("bot-1")
	}
}

// The reference: a plain random UUID.
func BenchmarkUUIDReference(b *testing.B) {
	for b.Loop() {
		_ = uuid.NewString()
	}
}
