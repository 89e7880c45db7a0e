package executor_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
)

// manual is the queue envelope of a manual request (as trading.API queues it).
func (h *harness) manual(id string, req order.Request) queue.Envelope {
	h.t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return queue.Envelope{SignalID: id, BotID: h.bot.ID, Priority: queue.PriorityManualClose, Source: queue.SourceManual,
		Signal: data, ReceivedAt: h.now.UnixMilli()}
}

func (h *harness) order(cid string) position.OrderRecord {
	h.t.Helper()
	rec, err := position.NewBook(h.rdb).Order(h.ctx, h.bot.ID, cid)
	if err != nil || rec == nil {
		h.t.Fatalf("order %s: %v %v", cid, rec, err)
	}
	return *rec
}

// A resting limit order on Binance (the fake) is cancelled there by its client order ID,
// and its record becomes cancelled; a second cancel, a filled order and an unknown one are
// refused before anything reaches the exchange.
func TestManualCancelOnTheExchange(t *testing.T) {
	fake := binancefake.New()
	t.Cleanup(fake.Close)
	fake.SetPrice("BTCUSDT", "65000")
	h := newWindowFixture(t, venue{name: binance.Name, url: fake.URL(),
		creds: exchange.Credentials{APIKey: binancefake.APIKey, APISecret: binancefake.APISecret},
		edit:  func(b *registry.Bot) { b.Market = "spot" }})
	const cancelPath = "/api/v3/order"

	// A buy limit at 60,000 under a 65,000 market rests open.
	h.ok(h.run(h.manual("m-limit", order.Request{Type: exchange.Limit, Side: exchange.SideBuy, Symbol: "BTC/USDT",
		Amount: httpapi.NumOrNil(testkit.DP("0.01")), Price: httpapi.NumOrNil(testkit.DP("60000"))})))
	cid := order.ClientOrderID("m-limit", "")
	if rec := h.order(cid); rec.Status != exchange.StatusOpen || !rec.Price.Equal(testkit.D("60000")) {
		t.Fatalf("limit order record %+v, want open at 60000", rec)
	}

	res := h.ok(h.run(h.manual("m-cancel", order.Request{Type: order.Cancel, ClientOrderID: cid})))
	if got := fake.Count(http.MethodDelete, cancelPath); got != 1 {
		t.Fatalf("%d cancel requests reached the exchange, want 1", got)
	}
	if fake.Placed(cid) != 1 {
		t.Fatal("the exchange does not hold the order by its client order ID")
	}
	rec := h.order(cid)
	if rec.Status != exchange.StatusCancelled || !rec.FilledAmount.IsZero() || rec.UpdatedAt != h.now.UnixMilli() {
		t.Fatalf("record after the cancel %+v", rec)
	}
	if res.Order == nil || res.Order.Status != "cancelled" || !res.Order.Amount.Equal(testkit.D("0.01")) ||
		res.Message != "order "+cid+" cancelled" {
		t.Fatalf("result %+v order %+v", res, res.Order)
	}

	// Cancelled already: refused, and nothing more reaches the exchange.
	again := h.fails(h.run(h.manual("m-cancel-2", order.Request{Type: order.Cancel, ClientOrderID: cid})), errs.InvalidAction)
	if !strings.Contains(again.Error, "is cancelled") || fake.Count(http.MethodDelete, cancelPath) != 1 {
		t.Fatalf("second cancel: %+v, %d cancel requests", again, fake.Count(http.MethodDelete, cancelPath))
	}
	// A market order fills at once: refused as filled.
	h.ok(h.run(h.manual("m-market", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT",
		Amount: httpapi.NumOrNil(testkit.DP("0.01"))})))
	filled := h.fails(h.run(h.manual("m-cancel-3", order.Request{Type: order.Cancel,
		ClientOrderID: order.ClientOrderID("m-market", "")})), errs.InvalidAction)
	if !strings.Contains(filled.Error, "is filled") {
		t.Fatalf("cancel of a filled order: %+v", filled)
	}
	h.fails(h.run(h.manual("m-cancel-4", order.Request{Type: order.Cancel, ClientOrderID: "sg-unknown"})), errs.NotFound)
	if fake.Count(http.MethodDelete, cancelPath) != 1 {
		t.Fatal("a refused cancel reached the exchange")
	}
}

// A paper bot's orders fill at once: a cancel answers that the order is filled.
func TestManualCancelPaper(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.run(h.manual("m-limit", order.Request{Type: exchange.Limit, Side: exchange.SideBuy, Symbol: "BTC/USDT",
		Amount: httpapi.NumOrNil(testkit.DP("0.01")), Price: httpapi.NumOrNil(testkit.DP("60000"))})))
	res := h.fails(h.run(h.manual("m-cancel", order.Request{Type: order.Cancel,
		ClientOrderID: order.ClientOrderID("m-limit", "")})), errs.InvalidAction)
	if !strings.Contains(res.Error, "is filled") {
		t.Fatalf("paper cancel: %+v", res)
	}
}
