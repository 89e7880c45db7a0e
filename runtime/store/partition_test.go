package store

import (
	"fmt"
	"hash/fnv"
	"testing"
)

// sink keeps the keys the allocation test names on the heap, where the callers' go.
var sink string

// PartitionOf is FNV-1a written out: it must never move a bot (its streams and every key
// name depend on it), and naming a key costs one allocation, the key's.
func TestPartitionOfIsFNV1a(t *testing.T) {
	for i := range 1000 {
		id := fmt.Sprintf("bot-%d-%x", i, i*7919)
		h := fnv.New32a()
		_, _ = h.Write([]byte(id))
		if got, want := PartitionOf(id), int(h.Sum32()%Partitions); got != want {
			t.Fatalf("%s: %d, want %d", id, got, want)
		}
	}
	id := "0b9f8e2c-3c1e-4b7a-9d5e-1f2a3b4c5d6e"
	for name, key := range map[string]func(){
		"Bot": func() { sink = Bot(id) }, "BookPosition": func() { sink = BookPosition(id, "BTC/USDT") },
		"SignalProgress": func() { sink = SignalProgress(id, "sig-1") },
	} {
		if n := testing.AllocsPerRun(100, key); n != 1 {
			t.Errorf("%s allocates %v times, want once", name, n)
		}
	}
}
