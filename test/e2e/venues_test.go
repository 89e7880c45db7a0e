package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
	"github.com/sigops/sigops/runtime/exchange/okx"
	"github.com/sigops/sigops/runtime/exchange/okx/okxfake"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// venue is one fake exchange as the live-path test drives it: where it listens, the key
// its credentials Secret holds, and what it says of the BTC/USDT position and of the
// orders it received.
type venue struct {
	exchange tradingv1.Exchange
	url      string
	secret   map[string]string
	// placed is how many orders the venue made with a client order ID.
	placed func(cid string) int
	// long and short are the futures position's sides in hedge mode (short negative);
	// net is the one-way position.
	long, short, net func() decimal.Decimal
	close            func()
}

// newVenue starts exchange's fake with 65,000 USDT a BTC and 10,000 USDT in every wallet,
// in hedge or one-way mode.
func newVenue(ex tradingv1.Exchange, hedge bool) venue {
	switch ex {
	case tradingv1.ExchangeBinance:
		f := binancefake.New()
		f.SetPrice("BTCUSDT", "65000")
		f.SetSpotBalance("USDT", "10000")
		f.SetFuturesBalance("USDT", "10000")
		f.SetHedgeMode(hedge)
		side := func(s string) func() decimal.Decimal {
			return func() decimal.Decimal { a, _ := f.SidePosition("BTCUSDT", s); return a }
		}
		return venue{exchange: ex, url: f.URL(), secret: map[string]string{"apiKey": binancefake.APIKey, "apiSecret": binancefake.APISecret},
			placed: f.Placed, long: side("LONG"), short: side("SHORT"), net: side("BOTH"), close: f.Close}
	case tradingv1.ExchangeBybit:
		f := bybitfake.New()
		f.SetPrice("BTCUSDT", decimal.NewFromInt(65000))
		f.SetBalance("USDT", decimal.NewFromInt(10000))
		if hedge {
			f.SetPositionMode(bybitfake.BothSides)
		}
		at := func(idx int) func() decimal.Decimal {
			return func() decimal.Decimal { s, _, _ := f.PositionAt("BTCUSDT", idx); return s }
		}
		return venue{exchange: ex, url: f.URL(), secret: map[string]string{"apiKey": bybitfake.APIKey, "apiSecret": bybitfake.APISecret},
			placed: f.OrdersCreated, long: at(1), short: at(2), net: at(0), close: f.Close}
	case tradingv1.ExchangeOKX:
		f := okxfake.New()
		f.SetPrice("BTC-USDT", decimal.NewFromInt(65000))
		f.SetBalance("USDT", decimal.NewFromInt(10000))
		if hedge {
			f.SetPositionMode(okxfake.LongShortMode)
		}
		// Swap positions are in contracts of 0.01 BTC; a long/short mode short is a positive
		// count on the short side.
		ctVal := decimal.RequireFromString("0.01")
		side := func(posSide string, sign int64) func() decimal.Decimal {
			return func() decimal.Decimal {
				p, _, _ := f.Position("BTC-USDT-SWAP", posSide)
				return p.Mul(ctVal).Mul(decimal.NewFromInt(sign))
			}
		}
		return venue{exchange: ex, url: f.URL(),
			secret: map[string]string{"apiKey": okxfake.APIKey, "apiSecret": okxfake.APISecret, "passphrase": okxfake.Passphrase},
			placed: func(cid string) int { return f.OrdersCreated(okx.ClOrdID(cid)) },
			long:   side("long", 1), short: side("short", -1), net: side("net", 1), close: f.Close}
	}
	panic("no fake for " + ex)
}

// The live path on every venue, market and futures position mode: ExchangeConnection and
// SignalBot YAML against the venue's fake, the connection validated (and its position mode
// shown), then signals through webhookd and the executor to exactly one signed order each,
// booked from the venue's fill. On futures the bot opens a long, closes it, opens a short
// and closes it; in hedge mode each order must act on the right side (the long side for a
// buy entry and its sell exit, the short side for a sell entry and its buy exit), which the
// fakes refuse otherwise.
func TestLiveVenuesEndToEnd(t *testing.T) {
	for _, ex := range []tradingv1.Exchange{tradingv1.ExchangeBinance, tradingv1.ExchangeBybit, tradingv1.ExchangeOKX} {
		t.Run(string(ex)+"/spot", func(t *testing.T) { liveVenueRun(t, ex, tradingv1.MarketSpot, false) })
		t.Run(string(ex)+"/futures-oneway", func(t *testing.T) { liveVenueRun(t, ex, tradingv1.MarketFutures, false) })
		t.Run(string(ex)+"/futures-hedge", func(t *testing.T) { liveVenueRun(t, ex, tradingv1.MarketFutures, true) })
	}
}

func liveVenueRun(t *testing.T, ex tradingv1.Exchange, market tradingv1.Market, hedge bool) {
	ctx := context.Background()
	v := newVenue(ex, hedge)
	defer v.close()
	path, botID, ns := liveBot(t, v, market)

	conn := &tradingv1.ExchangeConnection{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "venue"}, conn); err != nil {
		t.Fatal(err)
	}
	wantMode := tradingv1.PositionModeOneWay
	if hedge {
		wantMode = tradingv1.PositionModeHedge
	}
	if market == tradingv1.MarketFutures && conn.Status.PositionMode != wantMode {
		t.Fatalf("status.positionMode = %q, want %q", conn.Status.PositionMode, wantMode)
	}
	defer credentialsNowhere(t, conn, v.secret)

	trade := func(action string, want func() decimal.Decimal, size string) {
		t.Helper()
		r := send(t, path, `{"action":"`+action+`"}`)
		if r.Status != 200 || !r.Body.Success || r.Body.Order == nil {
			t.Fatalf("%s: %+v", action, r)
		}
		leg, filled := "", "0.01"
		if action == "close" {
			// A close is one leg per symbol; on spot it sells what the buy left after its
			// fee, which the venue took in BTC (0.1 %).
			leg = "close:BTC/USDT"
			if market == tradingv1.MarketSpot {
				filled = "0.00999"
			}
		}
		mustEqual(t, action+" filled", r.Body.Order.FilledAmount, filled)
		if n := v.placed(order.ClientOrderID(r.Body.SignalID, leg)); n != 1 {
			t.Fatalf("%s: the venue made %d orders with the signal's client order ID, want exactly 1", action, n)
		}
		if want != nil {
			mustEqual(t, action+": the venue's position", want(), size)
		}
	}
	if market == tradingv1.MarketSpot {
		trade("buy", nil, "")
		pos, err := api.Positions(ctx, botID)
		if err != nil || len(pos) != 1 || !pos[0].Size.IsPositive() {
			t.Fatalf("positions after the buy = %+v, %v", pos, err)
		}
		trade("close", nil, "")
		if pos, err := api.Positions(ctx, botID); err != nil || len(pos) != 0 {
			t.Fatalf("positions after the close = %+v, %v", pos, err)
		}
		return
	}
	long, short := v.net, v.net
	if hedge {
		long, short = v.long, v.short
	}
	trade("buy", long, "0.01")
	trade("close", long, "0")
	trade("sell", short, "-0.01")
	if hedge && !v.long().IsZero() {
		t.Fatalf("the short entry touched the long side: %s", v.long())
	}
	trade("close", short, "0")
	if pos, err := api.Positions(ctx, botID); err != nil || len(pos) != 0 {
		t.Fatalf("positions after the last close = %+v, %v", pos, err)
	}
}

// liveBot applies a credentials Secret, an ExchangeConnection named "venue" pointing at v
// and a SignalBot on it (0.01 BTC a signal), waits until both are Ready, and returns the
// bot's webhook path, its ID and the namespace.
func liveBot(t *testing.T, v venue, market tradingv1.Market) (path, botID, namespace string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "venue-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "venue-key"}, StringData: v.secret}
	conn := &tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "venue"},
		Spec: tradingv1.ExchangeConnectionSpec{Owner: "trader@example.com", Exchange: v.exchange,
			CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "venue-key"},
			Endpoints:            tradingv1.EndpointsSpec{Spot: v.url, Futures: v.url}}}
	bot := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "live"},
		Spec: tradingv1.SignalBotSpec{Owner: "trader@example.com", Symbol: "BTC/USDT", Market: market, PositionSize: "0.01",
			ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "venue"}}}
	for _, o := range []client.Object{secret, conn, bot} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "connection validated", func() error {
		c := &tradingv1.ExchangeConnection{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(conn), c); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(c.Status.Conditions, tradingv1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", r)
		}
		return nil
	})
	eventually(t, "bot ready", func() error {
		b := &tradingv1.SignalBot{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), b); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", r)
		}
		botID = string(b.UID)
		return nil
	})
	s := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "live-webhook"}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[controllers.WebhookSecretKeyURL])[len("https://sigops.test"):], botID, ns.Name
}

// credentialsNowhere checks, once the venue has been traded on, that no credential value
// (key, secret, OKX's passphrase) is in the connection's status or anywhere in Redis: every
// key's name and every value of its strings, hashes, sets and streams.
func credentialsNowhere(t *testing.T, conn *tradingv1.ExchangeConnection, secret map[string]string) {
	t.Helper()
	ctx := context.Background()
	var texts []string
	c := &tradingv1.ExchangeConnection{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(conn), c); err != nil {
		t.Fatal(err)
	}
	texts = append(texts, fmt.Sprintf("%+v", c.Status))
	keys, err := storetest.Keys(ctx, rdb, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		texts = append(texts, k)
		switch rdb.Type(ctx, k).Val() {
		case "string":
			texts = append(texts, rdb.Get(ctx, k).Val())
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				texts = append(texts, f, v)
			}
		case "set":
			texts = append(texts, rdb.SMembers(ctx, k).Val()...)
		case "stream":
			for _, m := range rdb.XRange(ctx, k, "-", "+").Val() {
				texts = append(texts, fmt.Sprint(m.Values))
			}
		}
	}
	for name, value := range secret {
		for _, s := range texts {
			if strings.Contains(s, value) {
				t.Fatalf("the credential %s is readable in clear: %.200s", name, s)
			}
		}
	}
}
