package feed_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/feed"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
)

func trade(t *testing.T, id, sig, net string) redis.XMessage {
	t.Helper()
	v, err := position.EncodeTrade(position.Trade{ID: "t-" + sig, BotID: "b", SignalID: sig, Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: position.Long, Size: httpapi.Num(testkit.D("1")), NetPnl: httpapi.Num(testkit.D(net)), Closed: true})
	if err != nil {
		t.Fatal(err)
	}
	return redis.XMessage{ID: id, Values: map[string]any{"k": store.ArchiveTrade, "v": v}}
}

func result(id, sig string) redis.XMessage {
	return redis.XMessage{ID: id, Values: map[string]any{"k": store.ArchiveResult, "v": `{"signalId":"` + sig + `","botId":"b","success":true,` +
		`"order":{"success":true,"orderId":"1","status":"filled","symbol":"BTC/USDT","side":"sell","type":"market","amount":"1","filledAmount":"1","avgPrice":"100","fee":"0","timestamp":1},"timestamp":1}`}}
}

// An exit's PnL is its trades' sum, and the saved position stays before a trade whose
// result is not read yet; a trade left without a result for a minute is let go.
func TestExitPnLAndPending(t *testing.T) {
	d := feed.NewDecoder()
	d.Archive(trade(t, "1000-0", "s1", "1.25"))
	d.Archive(trade(t, "1000-1", "s1", "-0.5"))
	if p := d.Pending(); p != "1000-0" {
		t.Fatalf("pending %q, want the first trade", p)
	}
	e, ok := d.Archive(result("1000-2", "s1"))
	if !ok || e.Kind != notify.Fill || e.PnL == nil || e.PnL.String() != "0.75" || e.ID != "fill:s1" {
		t.Fatalf("event %+v %v", e, ok)
	}
	if p := d.Pending(); p != "" {
		t.Fatalf("pending %q after the result", p)
	}
	d.Archive(trade(t, "2000-0", "orphan", "3"))
	d.Archive(result("61999-0", "s2"))
	if p := d.Pending(); p != "2000-0" {
		t.Fatalf("pending %q, want the orphan trade within its minute", p)
	}
	d.Archive(result("62001-0", "s3"))
	if p := d.Pending(); p != "" {
		t.Fatalf("pending %q, want the orphan let go after a minute", p)
	}
}
