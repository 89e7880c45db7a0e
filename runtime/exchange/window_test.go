package exchange_test

import (
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/bybit"
	"github.com/sigops/sigops/runtime/exchange/okx"
	"github.com/sigops/sigops/runtime/exchange/paper"
)

// The executor reads the request window off the account as it holds it: the connector's
// account or its ForKind view. Each live adapter's is its call budget + recv window + clock
// margin; the paper exchange, which executes inside the call, has none.
func TestWindowOfEachExchange(t *testing.T) {
	creds := exchange.Credentials{APIKey: "k", APISecret: "s"}
	ep := exchange.Endpoints{Spot: "http://127.0.0.1:9", Futures: "http://127.0.0.1:9"}
	for _, c := range []struct {
		name string
		conn exchange.Connector
		want time.Duration
	}{
		{"binance defaults", binance.Connector{}, 12 * time.Second},
		{"binance", binance.Connector{MaxElapsed: 3 * time.Second, RecvWindow: 2 * time.Second, ClockMargin: 500 * time.Millisecond}, 5500 * time.Millisecond},
		{"bybit defaults", bybit.Connector{}, 8 * time.Second},
		{"bybit", bybit.Connector{Timeout: time.Second, RecvWindow: 1500 * time.Millisecond, ClockMargin: 200 * time.Millisecond}, 2700 * time.Millisecond},
	} {
		live, err := c.conn.Connect(creds, ep)
		if err != nil {
			t.Fatal(err)
		}
		if w := exchange.WindowOf(live); w != c.want {
			t.Errorf("%s: window %s, want %s", c.name, w, c.want)
		}
		if k, ok := live.(interface {
			ForKind(exchange.Kind) exchange.Live
		}); ok {
			if w := exchange.WindowOf(k.ForKind(exchange.Futures)); w != c.want {
				t.Errorf("%s futures view: window %s, want %s", c.name, w, c.want)
			}
		}
	}
	if w := exchange.WindowOf(paper.NewExchange(nil, "acct", "bot", nil)); w != 0 {
		t.Errorf("paper window %s, want none", w)
	}
	if w := exchange.WindowFor(paper.NewExchange(nil, "acct", "bot", nil), exchange.OrderRequest{Type: exchange.Market}); w != 0 {
		t.Errorf("paper window %s, want none", w)
	}
}

// OKX's window depends on the request: an ordinary order carries expTime (the call's 2 s +
// its 5 s expiry + 1 s clock margin), a conditional one only the 30 s timestamp rule. The
// executor asks per request (WindowFor), so a market order's retry waits 8 s, not 33 s.
func TestWindowForOKXFollowsTheRequest(t *testing.T) {
	live, err := okx.Connector{}.Connect(exchange.Credentials{APIKey: "k", APISecret: "s", Passphrase: "p"},
		exchange.Endpoints{Spot: "http://127.0.0.1:9", Futures: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ  exchange.OrderType
		want time.Duration
	}{{exchange.Market, 8 * time.Second}, {exchange.Limit, 8 * time.Second}, {exchange.StopLoss, 33 * time.Second}, {exchange.TakeProfit, 33 * time.Second}} {
		if w := exchange.WindowFor(live, exchange.OrderRequest{Type: c.typ}); w != c.want {
			t.Errorf("%s: window %s, want %s", c.typ, w, c.want)
		}
	}
	if w := exchange.WindowOf(live); w != 33*time.Second {
		t.Errorf("the window of any request: %s, want 33s", w)
	}
}
