package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestFamily(t *testing.T) {
	for key, want := range map[string]string{
		"sigops:book:{7}:bot-1:order:sg-3fa9c0d1e2b34a5f6789abcdef012345": "sigops:book:{…}:<id>:order:<id>",
		"sigops:result:{3}:sig-12":                                        "sigops:result:{…}:<id>",
		"sigops:q:{3}:p1":                                                 "sigops:q:{…}:p1",
		"sigops:paper:{acct-1}:orders":                                    "sigops:paper:{…}:orders",
		"sigops:webhook:" + hex64:                                         "sigops:webhook:<id>",
		"sigops:bot:{0}:bot-1:signals":                                    "sigops:bot:{…}:<id>:signals",
		"sigops:strategy:{0}:bots":                                        "sigops:strategy:{…}:bots",
		"sigops:owner:a@x.io:bots":                                        "sigops:owner:a@x.io:bots",
		"sigops:deadletter-words:no-digits":                               "sigops:deadletter-words:no-digits",
	} {
		if got := storetest.Family(key); got != want {
			t.Errorf("Family(%s) = %s, want %s", key, got, want)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// AdvanceTTLs moves expiries closer and ends those it reaches; keys without one stay.
func TestAdvanceTTLs(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	rdb.Set(ctx, "a", "1", 10*time.Hour)
	rdb.Set(ctx, "b", "1", 3*time.Hour)
	rdb.Set(ctx, "c", "1", 0)
	if err := storetest.AdvanceTTLs(ctx, rdb, 4*time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.TTL(ctx, "a").Val(); (6*time.Hour - ttl).Abs() > time.Minute {
		t.Errorf("a: TTL %s, want 6h", ttl)
	}
	if rdb.Exists(ctx, "b").Val() != 0 || rdb.Exists(ctx, "c").Val() != 1 || rdb.TTL(ctx, "c").Val() != -1 {
		t.Error("b should be gone, c kept without a TTL")
	}
	u, err := storetest.Usage(ctx, rdb)
	if err != nil || u["a"].Keys != 1 || u["a"].Bytes <= 0 || u["c"].MaxTTL != -1 || u["a"].MaxTTL < 5*time.Hour {
		t.Errorf("usage %+v, %v", u, err)
	}
}
