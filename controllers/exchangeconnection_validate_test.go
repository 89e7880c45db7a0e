package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
)

func TestBackoffDoublesUpToTheLimit(t *testing.T) {
	var b backoff
	want := []time.Duration{1, 2, 4, 8, 10, 10}
	for i, w := range want {
		if got := b.next("a", time.Second, 10*time.Second); got != w*time.Second {
			t.Fatalf("failure %d: %s, want %s", i+1, got, w*time.Second)
		}
	}
	if got := b.next("b", time.Second, 10*time.Second); got != time.Second {
		t.Fatalf("another connection shares the count: %s", got)
	}
	b.reset("a")
	if got := b.next("a", time.Second, 10*time.Second); got != time.Second {
		t.Fatalf("after reset: %s", got)
	}
}

func TestRedact(t *testing.T) {
	c := exchange.Credentials{APIKey: "AK-123456", APISecret: "SK-abcdef", Passphrase: "PP-xyz"}
	got := redact("signature for SK-abcdef with key AK-123456 and PP-xyz failed", c)
	for _, s := range []string{c.APIKey, c.APISecret, c.Passphrase} {
		if strings.Contains(got, s) {
			t.Fatalf("not redacted: %q", got)
		}
	}
	if !strings.Contains(got, "failed") {
		t.Fatalf("message lost: %q", got)
	}
	if long := redact(strings.Repeat("x", 1000), c); len(long) > 260 {
		t.Fatalf("not truncated: %d", len(long))
	}
}
