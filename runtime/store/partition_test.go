package store

import (
	"fmt"
	"hash/fnv"
	"strings"
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

// SignalOfResult reads the signal ID back from a result key of either layout, and from
// nothing else; SignalResultPattern matches both layouts.
func TestSignalOfResult(t *testing.T) {
	for _, id := range []string{"6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b", "st-0123~a", "a:b"} {
		for _, key := range []string{SignalResult(id), LegacySignalResult(id)} {
			if got, ok := SignalOfResult(key); !ok || got != id {
				t.Errorf("SignalOfResult(%s) = %q, %v; want %q", key, got, ok, id)
			}
			if !strings.HasPrefix(key, strings.TrimSuffix(SignalResultPattern(), "*")) {
				t.Errorf("%s does not match %s", key, SignalResultPattern())
			}
		}
	}
	if _, ok := SignalOfResult(QueueLease(3)); ok {
		t.Error("a lease key read as a result key")
	}
}
