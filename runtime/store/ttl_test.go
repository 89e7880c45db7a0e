package store_test

import (
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/store"
)

func TestTTL(t *testing.T) {
	ttl := store.NewTTL(24*time.Hour, 10*time.Minute)
	if got := ttl.Get(); got != 24*time.Hour {
		t.Fatalf("before Set: %s, want the default", got)
	}
	ttl.Set(time.Minute) // below the floor
	if got := ttl.Get(); got != 10*time.Minute {
		t.Fatalf("set under the floor: %s, want the floor", got)
	}
	ttl.Set(90*time.Minute + 500*time.Millisecond) // whole seconds: Redis takes EX seconds
	if got := ttl.Get(); got != 90*time.Minute {
		t.Fatalf("set: %s", got)
	}
}
