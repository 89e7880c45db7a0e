package keymigration_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/keymigration"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/runtime/wallet"
)

const hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// oldLayout writes keys as an installation without hash tags has them (the names are spelt
// out here because no code writes them any more).
func oldLayout(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	bot := registry.Bot{ID: "bot-1", Owner: "a@x.io", Market: "spot", Availability: "active", WebhookEnabled: true}
	config, _ := json.Marshal(bot)
	watched := func(bot, symbol string) string {
		w, _ := json.Marshal(position.WatchItem{BotID: bot, Symbol: symbol, Side: position.Long})
		return string(w)
	}
	envelope := func(signal, bot string) string {
		e, _ := json.Marshal(queue.Envelope{SignalID: signal, BotID: bot, Priority: queue.PriorityWebhook, Source: queue.SourceWebhook})
		return string(e)
	}
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, "sigops:bot:bot-1", "config", config, "webhook", hash, "owner", "a@x.io", "availability", "active",
			"webhookEnabled", "1", "pause", "Errors", "pauseUntil", "0")
		p.HSet(ctx, "sigops:webhook:"+hash, "bot", "bot-1")
		p.SAdd(ctx, "sigops:bots", "bot-1")
		p.Set(ctx, "sigops:rl:bot:bot-1", "1800000000000", time.Hour)
		p.Set(ctx, "sigops:idem:bot-1:"+hash, "sig-first", time.Hour)
		p.Set(ctx, "sigops:dedupe:bot-1:"+hash, "sig-first", time.Hour)
		p.Set(ctx, "sigops:book:bot-1:pos:BTC/USDT", `{"id":"p1"}`, 0)
		p.SAdd(ctx, "sigops:book:bot-1:positions", "BTC/USDT")
		p.Set(ctx, "sigops:book:bot-1:order:sg-1:x", `{"clientOrderId":"sg-1:x"}`, time.Hour)
		p.LPush(ctx, "sigops:book:bot-1:orders", "sg-1:x")
		p.RPush(ctx, "sigops:book:bot-1:trades", `{"netPnl":"1"}`)
		p.HSet(ctx, "sigops:risk:bot-1", "consecutiveErrors", "2")
		p.HSet(ctx, "sigops:risk:bot-3", "consecutiveErrors", "1")
		p.HSet(ctx, store.RiskCounters("bot-3"), "consecutiveErrors", "4") // the new version wrote it
		// Progress: of a queued signal, of a dead-lettered one, of one long finished.
		p.HSet(ctx, "sigops:sig:sig-queued", "plan", "{}")
		p.HSet(ctx, "sigops:sig:sig-dead", "plan", "{}")
		p.HSet(ctx, "sigops:sig:sig-done", "plan", "{}")
		p.HSet(ctx, "sigops:q:attempts:sig-queued", "n", "3")
		p.XAdd(ctx, &redis.XAddArgs{Stream: queue.StreamOf("bot-1", queue.PriorityWebhook),
			Values: []any{queue.EnvelopeField, envelope("sig-queued", "bot-1")}})
		p.HSet(ctx, "sigops:watch", "bot-1|BTC/USDT", watched("bot-1", "BTC/USDT"), "bot-2|ETH/USDT", watched("bot-2", "ETH/USDT"))
		for _, dl := range []struct{ signal, bot string }{{"sig-dead", "bot-2"}, {"sig-dead-2", "bot-1"}} {
			p.XAdd(ctx, &redis.XAddArgs{Stream: "sigops:q:deadletter", Values: []any{"signalId", dl.signal, "botId", dl.bot,
				"priority", 4, "partition", store.PartitionOf(dl.bot), "reason", queue.ReasonBudget, "attempts", 15,
				"at", 1, "entry", "1-1", "envelope", envelope(dl.signal, dl.bot)}})
		}
		p.HSet(ctx, "sigops:paper:acct-1", "balance", "100", "initialBalance", "100", "currency", "USDT", "feeRate", "0.001")
		p.HSet(ctx, "sigops:paper:acct-1:orders", "sg-1:x", "{}")
		p.HSet(ctx, "sigops:paper:acct-1:pos", "bot-1|spot|BTC", "1")
		p.HSet(ctx, "sigops:user:u-1", "id", "u-1", "email", "a@x.io", "gen", "1", "wallet", "12.5")
		p.SAdd(ctx, "sigops:user:u-1:sessions", hash)
		p.SAdd(ctx, "sigops:user:u-1:oauth", "auth-1")
		p.Set(ctx, "sigops:user:email:a@x.io", "u-1", 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot is every key with its type and TTL state.
func snapshot(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := storetest.Keys(ctx, rdb, "*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		out[k] = rdb.Type(ctx, k).Val()
	}
	return out
}

func TestMigrateKeys(t *testing.T) {
	srv, c := storetest.NewServer(t) // the migration is for the single server of the old layout
	rdb := c.(*redis.Client)
	ctx := context.Background()
	oldLayout(t, rdb)
	before := snapshot(t, rdb)

	// Dry: says what it would do, writes nothing.
	dry, err := keymigration.Run(ctx, rdb, true)
	if err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, rdb); len(after) != len(before) {
		t.Fatalf("a dry run changed the keys:\n%v\n%v", before, after)
	}
	wantFamilies := map[string]keymigration.Family{
		"watch index": {Moved: 2}, "dead letters": {Moved: 2}, "bots": {Moved: 1}, "rate limits": {Moved: 1},
		"idempotency keys": {Moved: 1}, "dedupe records": {Moved: 1}, "books": {Moved: 5},
		"risk counters": {Moved: 1, Kept: 1}, "signal progress": {Moved: 2, Kept: 1}, "attempt counts": {Moved: 1},
		"paper accounts": {Moved: 3}, "users": {Moved: 3}, "strategy lab wallets": {Moved: 1},
		// acct-1's orders hash, renamed, then drained: its one order (created at 0 ms) has
		// expired long ago and is dropped.
		"paper orders": {Kept: 1},
		// The untagged layout's order records take the newest names at once ("books").
		"order record names": {},
		// bot-1's trade list, renamed, then aggregated into its days
		"trade days": {Moved: 1},
	}
	check := func(what string, r keymigration.Report, want map[string]keymigration.Family) {
		t.Helper()
		if len(r) != len(wantFamilies) {
			t.Fatalf("%s: report %v", what, r)
		}
		for _, f := range r {
			if w := want[f.Name]; f.Moved != w.Moved || f.Kept != w.Kept {
				t.Errorf("%s: %s moved %d kept %d, want %d and %d", what, f.Name, f.Moved, f.Kept, w.Moved, w.Kept)
			}
		}
	}
	check("dry run", dry, wantFamilies)

	report, err := keymigration.Run(ctx, rdb, false)
	if err != nil {
		t.Fatal(err)
	}
	check("migration", report, wantFamilies)

	// The new code reads what the old layout held.
	reg := registry.New(rdb)
	if b, err := reg.Get(ctx, "bot-1"); err != nil || b.Owner != "a@x.io" {
		t.Fatalf("bot after migration: %+v, %v", b, err)
	}
	if p, err := reg.ReadPause(ctx, "bot-1", time.UnixMilli(1)); err != nil || p == nil || p.Reason != registry.PauseErrors {
		t.Fatalf("runtime pause after migration: %+v, %v", p, err)
	}
	for key, ttl := range map[string]bool{
		store.RateLimit("bot-1"): true, store.Idempotency("bot-1", hash): true, store.Dedupe("bot-1", hash): true,
		store.BookPosition("bot-1", "BTC/USDT"): false, store.BookOrder("bot-1", "sg-1:x"): true,
		store.SignalProgress("bot-1", "sig-queued"): false, store.SignalProgress("bot-2", "sig-dead"): false,
		store.SignalAttempts("bot-1", "sig-queued"): false, store.User("u-1"): false,
		store.UserSessions("u-1"): false, store.UserAuthorizations("u-1"): false,
		store.PaperPositions("acct-1"): false,
	} {
		if n := rdb.Exists(ctx, key).Val(); n != 1 {
			t.Errorf("%s missing after the migration", key)
		}
		if got := rdb.PTTL(ctx, key).Val() > 0; got != ttl {
			t.Errorf("%s: TTL kept %v, want %v", key, got, ttl)
		}
	}
	if rdb.Exists(ctx, store.PaperOrders("acct-1")).Val() != 0 {
		t.Error("the paper orders hash is left after the migration")
	}
	if n, err := position.NewBook(rdb).List(ctx, "bot-1"); err != nil || len(n) != 1 {
		t.Errorf("book after migration: %v, %v", n, err)
	}
	// The trade of bot-1 (closed at 0 ms, 1 January 1970) is counted in its day; the
	// starting equity was never recorded: empty, unknown.
	days := rdb.HGetAll(ctx, store.BookDays("bot-1")).Val()
	var day analytics.Day
	if err := json.Unmarshal([]byte(days["1970-01-01"]), &day); err != nil || len(days) != 3 || days["trades"] != "1" ||
		days["start"] != "" || day.Trades != 1 || day.Wins != 1 || !day.Net().Equal(decimal.NewFromInt(1)) {
		t.Errorf("days after migration: %v (%v)", days, err)
	}
	// The balance left the user hash for its wallet, with an opening entry in the ledger.
	wallets := wallet.New(rdb, wallet.Options{})
	if b, err := wallets.Balance(ctx, "u-1"); err != nil || !b.Equal(decimal.RequireFromString("12.5")) {
		t.Errorf("wallet after migration: %v, %v", b, err)
	}
	if entries, _, err := wallets.Ledger(ctx, "u-1", "", 10); err != nil || len(entries) != 1 || entries[0].Kind != wallet.Opening {
		t.Errorf("ledger after migration: %+v, %v", entries, err)
	}
	if rdb.HExists(ctx, store.User("u-1"), "wallet").Val() {
		t.Error("the user hash still holds its wallet field")
	}
	if w, err := position.Watched(ctx, rdb); err != nil || len(w) != 2 {
		t.Errorf("watched after migration: %v, %v", w, err)
	}
	if st, err := paper.NewAccounts(rdb).Get(ctx, "acct-1"); err != nil || st.Balance.String() != "100" {
		t.Errorf("paper account after migration: %+v, %v", st, err)
	}
	dls, err := queue.ListDeadLetters(ctx, rdb, "", 10)
	if err != nil || len(dls) != 2 || dls[0].SignalID != "sig-dead" || dls[1].SignalID != "sig-dead-2" {
		t.Fatalf("dead letters after migration: %+v, %v", dls, err)
	}
	if _, err := queue.GetDeadLetter(ctx, rdb, dls[0].ID); err != nil {
		t.Errorf("dead letter %s: %v", dls[0].ID, err)
	}
	if v := rdb.HGet(ctx, store.RiskCounters("bot-3"), "consecutiveErrors").Val(); v != "4" {
		t.Errorf("the migration overwrote a key the new version wrote: %s", v)
	}
	// Left as they were: keys whose names do not change, the progress of a finished signal
	// (it expires) and the old key whose new name was taken.
	for _, key := range []string{"sigops:webhook:" + hash, "sigops:bots", "sigops:user:email:a@x.io",
		"sigops:sig:sig-done", "sigops:risk:bot-3"} {
		if rdb.Exists(ctx, key).Val() != 1 {
			t.Errorf("%s is gone", key)
		}
	}
	for key := range snapshot(t, rdb) {
		if !strings.Contains(key, "{") && (strings.HasPrefix(key, "sigops:book:") || strings.HasPrefix(key, "sigops:paper:") ||
			key == "sigops:watch" || key == "sigops:q:deadletter" || strings.HasPrefix(key, "sigops:bot:")) {
			t.Errorf("old key %s left", key)
		}
	}

	// Again: nothing more to do.
	again, err := keymigration.Run(ctx, rdb, false)
	if err != nil {
		t.Fatal(err)
	}
	check("second run", again, map[string]keymigration.Family{"risk counters": {Kept: 1}, "signal progress": {Kept: 1}})
	if v := rdb.HGet(ctx, store.BookDays("bot-1"), "trades").Val(); v != "1" {
		t.Errorf("days after a second run count %s trades", v)
	}

	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
	defer cluster.Close()
	if _, err := keymigration.Run(ctx, cluster, true); !errors.Is(err, keymigration.ErrCluster) {
		t.Errorf("on a cluster client: %v, want ErrCluster", err)
	}
}

// The wallet step alone, as a Cluster runs it: a balance moves once; a wallet the new
// version wrote wins over the stale field, which goes; a second run finds nothing.
func TestMigrateWallets(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	wallets := wallet.New(rdb, wallet.Options{})
	rdb.HSet(ctx, store.User("u-1"), "id", "u-1", "wallet", "7.25")
	rdb.HSet(ctx, store.User("u-2"), "id", "u-2", "wallet", "3")
	rdb.HSet(ctx, store.User("u-3"), "id", "u-3") // no wallet field
	if _, err := wallets.Open(ctx, "u-2", decimal.RequireFromString("40")); err != nil {
		t.Fatal(err)
	}
	dry, err := keymigration.Wallets(ctx, rdb, true)
	if err != nil || dry.Moved != 1 || dry.Kept != 1 || !rdb.HExists(ctx, store.User("u-1"), "wallet").Val() {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	f, err := keymigration.Wallets(ctx, rdb, false)
	if err != nil || f.Moved != 1 || f.Kept != 1 {
		t.Fatalf("run: %+v %v", f, err)
	}
	for id, want := range map[string]string{"u-1": "7.25", "u-2": "40", "u-3": "0"} {
		if b, err := wallets.Balance(ctx, id); err != nil || !b.Equal(decimal.RequireFromString(want)) {
			t.Errorf("%s: balance %v (%v), want %s", id, b, err, want)
		}
		if rdb.HExists(ctx, store.User(id), "wallet").Val() {
			t.Errorf("%s still holds the field", id)
		}
	}
	if again, err := keymigration.Wallets(ctx, rdb, false); err != nil || again.Moved != 0 || again.Kept != 0 {
		t.Fatalf("second run: %+v %v", again, err)
	}
}

// paperPrice is a fixed price source for the paper exchange.
type paperPrice struct{}

func (paperPrice) Price(context.Context, exchange.Kind, string) (decimal.Decimal, error) {
	return decimal.NewFromInt(150), nil
}

func TestMigratePaperOrders(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	if _, err := paper.NewAccounts(rdb).Ensure(ctx, paper.Config{ID: "acct", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: decimal.NewFromInt(10000), FeeRate: decimal.RequireFromString("0.001")}); err != nil {
		t.Fatal(err)
	}
	x := paper.NewExchange(rdb, "acct", "bot-1", paperPrice{})
	now := time.Now()
	// Orders as an earlier version stored them: in the account's orders hash.
	for cid, age := range map[string]time.Duration{"recent": time.Hour, "expired": 9 * 24 * time.Hour, "both": time.Hour} {
		x.Now = func() time.Time { return now.Add(-age) }
		if _, err := x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: cid, Symbol: "SOL/USDT", Kind: exchange.Spot,
			Side: exchange.SideBuy, Type: exchange.Market, Amount: decimal.NewFromInt(1)}); err != nil {
			t.Fatal(err)
		}
		v := rdb.Get(ctx, store.PaperOrder("acct", cid)).Val()
		rdb.HSet(ctx, store.PaperOrders("acct"), cid, v)
		if cid != "both" { // "both": the new version wrote its own key too; it is kept
			rdb.Del(ctx, store.PaperOrder("acct", cid))
		}
	}
	rdb.Set(ctx, store.PaperOrder("acct", "both"), "kept", 0)
	dry, err := keymigration.PaperOrders(ctx, rdb, true)
	if err != nil || dry.Moved != 2 || dry.Kept != 1 || rdb.HLen(ctx, store.PaperOrders("acct")).Val() != 3 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	f, err := keymigration.PaperOrders(ctx, rdb, false)
	if err != nil || f.Moved != 2 || f.Kept != 1 {
		t.Fatalf("run: %+v %v", f, err)
	}
	if rdb.Exists(ctx, store.PaperOrders("acct")).Val() != 0 {
		t.Fatal("orders hash left")
	}
	// "recent" keeps what is left of its TTL: DefaultOrderTTL − 1 h.
	if ttl := rdb.TTL(ctx, store.PaperOrder("acct", "recent")).Val(); ttl > paper.DefaultOrderTTL-time.Hour || ttl < paper.DefaultOrderTTL-time.Hour-time.Minute {
		t.Errorf("recent order TTL %v, want %v", ttl, paper.DefaultOrderTTL-time.Hour)
	}
	if o, err := paper.NewExchange(rdb, "acct", "bot-1", paperPrice{}).GetOrder(ctx, exchange.Spot, "SOL/USDT", "recent"); err != nil || o.ClientOrderID != "recent" {
		t.Errorf("recent order after the drain: %+v, %v", o, err)
	}
	if rdb.Exists(ctx, store.PaperOrder("acct", "expired")).Val() != 0 {
		t.Error("an expired order was given a key")
	}
	if v := rdb.Get(ctx, store.PaperOrder("acct", "both")).Val(); v != "kept" {
		t.Errorf("an order key the new version wrote was overwritten: %q", v)
	}
	if again, err := keymigration.PaperOrders(ctx, rdb, false); err != nil || again.Moved != 0 || again.Kept != 0 {
		t.Fatalf("second run: %+v %v", again, err)
	}
}

// Order records named with their bot take the name without it, their TTL kept; one the new
// version wrote already is not overwritten (the old copy stays, to expire); other keys of
// the book are left alone; a second run moves nothing.
func TestMigrateBookOrderNames(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	rdb.Set(ctx, store.LegacyBookOrder("bot-1", "sg-a"), "a", time.Hour)
	rdb.Set(ctx, store.LegacyBookOrder("bot-2", "sg-b"), "b", 0)
	rdb.Set(ctx, store.LegacyBookOrder("bot-1", "sg-c"), "old c", 0)
	rdb.Set(ctx, store.BookOrder("bot-1", "sg-c"), "new c", 0)
	rdb.LPush(ctx, store.BookOrders("bot-1"), "sg-a")
	rdb.Set(ctx, store.BookPosition("bot-1", "BTC/USDT"), "p", 0)
	dry, err := keymigration.BookOrderNames(ctx, rdb, true)
	if err != nil || dry.Moved != 2 || dry.Kept != 1 || rdb.Exists(ctx, store.BookOrder("bot-1", "sg-a")).Val() != 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	f, err := keymigration.BookOrderNames(ctx, rdb, false)
	if err != nil || f.Moved != 2 || f.Kept != 1 {
		t.Fatalf("run: %+v %v", f, err)
	}
	for key, want := range map[string]string{store.BookOrder("bot-1", "sg-a"): "a", store.BookOrder("bot-2", "sg-b"): "b",
		store.BookOrder("bot-1", "sg-c"): "new c", store.LegacyBookOrder("bot-1", "sg-c"): "old c",
		store.BookPosition("bot-1", "BTC/USDT"): "p"} {
		if v := rdb.Get(ctx, key).Val(); v != want {
			t.Errorf("%s = %q, want %q", key, v, want)
		}
	}
	if ttl := rdb.TTL(ctx, store.BookOrder("bot-1", "sg-a")).Val(); ttl < 59*time.Minute {
		t.Errorf("moved record's TTL %v, want about an hour", ttl)
	}
	if rdb.Exists(ctx, store.LegacyBookOrder("bot-1", "sg-a")).Val() != 0 || rdb.LLen(ctx, store.BookOrders("bot-1")).Val() != 1 {
		t.Error("the old name is left, or the order list changed")
	}
	if again, err := keymigration.BookOrderNames(ctx, rdb, false); err != nil || again.Moved != 0 || again.Kept != 1 {
		t.Fatalf("second run: %+v %v", again, err)
	}
}
