// Package e2e_test runs the signal path end to end: SignalBot and PaperAccount applied to a
// real cluster (etcd, kube-apiserver and kube-controller-manager, started by test/testenv as
// for `make run`), the real manager controllers, webhookd over HTTPS, the Redis queue and
// the executor with the paper exchange, all against a real Redis. Prices are pinned
// on the simulated market so every figure can be checked to the decimal.
package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/trading"
	"github.com/sigops/sigops/test/testenv"
	"github.com/sigops/sigops/webhookd"
)

var paperSymbols = signal.NewSymbols(paper.Symbols())

var (
	k8s    client.Client
	rdb    redis.UniversalClient
	prices *marketdata.Simulated
	hooks  *httptest.Server
	api    *trading.API
	users  *auth.Users
	// issuer signs the read API's bearer tokens (readapi_test.go).
	issuer *auth.Issuer
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	rdb = env.RDB
	// Live bots need owners whose tier includes live trading.
	if users, err = env.LiveOwners(context.Background(), "trader@example.com", "bench@example.com", "analyst@example.com"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer running.Wait() // the daemons stop before Redis and the API server do
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// The manager's controllers.
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ring, err := credentials.NewRing(key)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	exchanges := connectors.All()
	// The Binance connector's calls are timed, so the latency benchmark can tell the
	// exchange's share of a signal from ours.
	exchanges["binance"] = binance.Connector{Transport: exchangeTime}
	managerDone, err := env.StartControllers(ctx, controllers.Options{Redis: rdb, BaseURL: "https://sigops.test", TombstoneTTL: time.Hour,
		MaxConcurrentReconciles: 4, PaperSyncPeriod: 200 * time.Millisecond, CredentialsRetryPeriod: time.Second,
		MasterKeys: ring, Connectors: exchanges})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	running.Go(func() { <-managerDone })

	// The executor on the simulated market, with pinned prices.
	prices = marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: 7})
	clients := &connectors.Clients{Keys: ring, Connectors: exchanges}
	exec := executor.New(executor.Deps{Redis: rdb, Prices: prices, Logger: quiet, Venues: &executor.Paper{Redis: rdb, Prices: prices,
		Live: &executor.LiveVenues{Redis: rdb, Clients: clients}}})
	qrdb, err := queue.DedicatedClient(ctx, store.Options{Addr: env.Redis.Addr, ClusterAddrs: env.Redis.ClusterAddrs})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	consumer := queue.NewConsumer(qrdb, queue.Options{LeaseTTL: time.Second, Logger: quiet})
	running.Go(func() { _ = consumer.Run(ctx, exec.Handle) })
	watcher := exec.NewWatcher(executor.WatcherDeps{Redis: rdb, Prices: prices, Interval: 50 * time.Millisecond, Logger: quiet})
	running.Go(func() { _ = watcher.Run(ctx) })
	api = trading.New(rdb, registry.New(rdb), prices)

	// webhookd over HTTPS.
	waiter, err := queue.NewWaiter(ctx, rdb, "e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	readAPI, err := startReadAPI(quiet)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hs, err := webhookd.New(webhookd.Options{Intake: intake.New(rdb), Waiter: waiter, Symbols: func() *signal.Symbols { return paperSymbols },
		WaitBound: 5 * time.Second, Logger: quiet, Read: readAPI})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hooks = httptest.NewTLSServer(hs.Handler())
	defer hooks.Close()

	// The API server's client, which the MCP replicas' fleet changes bots through.
	if k8s, err = env.Client(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	// authd and two mcpd replicas (mcp_test.go).
	stopMCP, err := startMCP(ctx, quiet, clients)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopMCP()

	return m.Run()
}

func pin(t *testing.T, symbol, price string) {
	t.Helper()
	if err := prices.SetPrice(exchange.Spot, symbol, decimal.RequireFromString(price)); err != nil {
		t.Fatal(err)
	}
}

// paperNamespace creates a namespace with the PaperAccount "paper" of trader@example.com.
func paperNamespace(t *testing.T) string { return paperNamespaceOf(t, "trader@example.com") }

// paperNamespaceOf creates a namespace with the PaperAccount "paper" of owner.
func paperNamespaceOf(t *testing.T, owner string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	acct := &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "paper"},
		Spec: tradingv1.PaperAccountSpec{Owner: owner}}
	if err := k8s.Create(ctx, acct); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// deploy applies a PaperAccount and a SignalBot of trader@example.com and returns the bot's
// webhook path and ID.
func deploy(t *testing.T, bot *tradingv1.SignalBot) (path, botID string) {
	t.Helper()
	return deployFor(t, "trader@example.com", bot)
}

// deployFor is deploy for another owner.
func deployFor(t *testing.T, owner string, bot *tradingv1.SignalBot) (path, botID string) {
	t.Helper()
	ctx := context.Background()
	ns := paperNamespaceOf(t, owner)
	bot.Namespace, bot.Spec.Owner = ns, owner
	bot.Spec.PaperAccountRef = &tradingv1.LocalObjectReference{Name: "paper"}
	if err := k8s.Create(ctx, bot); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bot ready", func() error {
		b := &tradingv1.SignalBot{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), b); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", c)
		}
		botID = string(b.UID)
		return nil
	})
	s := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: bot.Name + "-webhook"}, s); err != nil {
		t.Fatal(err)
	}
	url := string(s.Data[controllers.WebhookSecretKeyURL])
	return strings.TrimPrefix(url, "https://sigops.test"), botID
}

type reply struct {
	Status int
	Body   struct {
		Success  bool           `json:"success"`
		Message  string         `json:"message"`
		SignalID string         `json:"signalId"`
		Code     string         `json:"code"`
		Error    string         `json:"error"`
		Details  map[string]any `json:"details"`
		Order    *struct {
			Status       string          `json:"status"`
			Side         string          `json:"side"`
			Amount       decimal.Decimal `json:"amount"`
			FilledAmount decimal.Decimal `json:"filledAmount"`
			AvgPrice     decimal.Decimal `json:"avgPrice"`
			Fee          decimal.Decimal `json:"fee"`
		} `json:"order"`
	}
}

func send(t testing.TB, path, body string) reply {
	t.Helper()
	resp, err := hooks.Client().Post(hooks.URL+path, "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r reply
	r.Status = resp.StatusCode
	if err := json.NewDecoder(resp.Body).Decode(&r.Body); err != nil {
		t.Fatal(err)
	}
	return r
}

// eventually is testkit.Eventually with the 20 s most of these waits allow.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, what, check)
}

func balance(t *testing.T, botID string) string {
	t.Helper()
	b, err := registry.New(rdb).Get(context.Background(), botID)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rdb.HGet(context.Background(), store.PaperAccount(b.Account.ID), "balance").Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustEqual(t *testing.T, what string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(testkit.D(want)) {
		t.Fatalf("%s = %s, want %s", what, got, want)
	}
}

// A spot bot from YAML: buy 10 %, a DCA add, a close; every figure to the decimal.
func TestSpotBuyDCAAndCloseToTheDecimal(t *testing.T) {
	ctx := context.Background()
	path, botID := deploy(t, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "btc"},
		Spec: tradingv1.SignalBotSpec{Symbol: "BTC/USDT", DCA: tradingv1.DCASpec{Enabled: true, MaxLevels: 3}}})

	// 10 % of 10,000 USDT at 65,000: 1000/65000 = 0.0153846… rounds down to the 5-decimal
	// step: 0.01538 BTC, cost 999.70, fee 0.1 % = 0.9997; balance 8999.3003.
	pin(t, "BTC/USDT", "65000")
	r := send(t, path, `{"action":"buy","symbol":"BTCUSDT","size":"10%","dca":true,"dcaLevel":1}`)
	if r.Status != 200 || !r.Body.Success || r.Body.Order == nil {
		t.Fatalf("buy: %+v", r)
	}
	o := r.Body.Order
	mustEqual(t, "amount", o.Amount, "0.01538")
	mustEqual(t, "filled", o.FilledAmount, "0.01538")
	mustEqual(t, "avgPrice", o.AvgPrice, "65000")
	mustEqual(t, "fee", o.Fee, "0.9997")
	if o.Status != "filled" || o.Side != "buy" {
		t.Fatalf("order = %+v", o)
	}
	mustEqual(t, "balance", decimal.RequireFromString(balance(t, botID)), "8999.3003")

	// DCA level 2: a fixed 0.01 BTC at 64,000: cost 640, fee 0.64; the entry re-averages to
	// (999.70 + 640) / 0.02538 = 64605.98896769… ; balance 8358.6603.
	pin(t, "BTC/USDT", "64000")
	r = send(t, path, `{"action":"buy","symbol":"BTC/USDT","size":"0.01","dca":true,"dcaLevel":2}`)
	if r.Status != 200 || !r.Body.Success {
		t.Fatalf("dca 2: %+v", r)
	}
	mustEqual(t, "balance after DCA", decimal.RequireFromString(balance(t, botID)), "8358.6603")
	pos, err := api.Positions(ctx, botID)
	if err != nil || len(pos) != 1 {
		t.Fatalf("positions = %+v, %v", pos, err)
	}
	mustEqual(t, "position size", pos[0].Size.Decimal, "0.02538")
	if got := pos[0].EntryPrice.StringFixed(6); got != "64605.988968" {
		t.Fatalf("entry price = %s", pos[0].EntryPrice)
	}
	if pos[0].Side != "long" || pos[0].Symbol != "BTC/USDT" || pos[0].CreatedAt == "" {
		t.Fatalf("position = %+v", pos[0])
	}

	// Sequence rules through the whole path.
	if r := send(t, path, `{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":2}`); r.Status != 422 || r.Body.Code != "DCA_INVALID_LEVEL" {
		t.Fatalf("level 2 twice: %+v", r)
	}
	if r := send(t, path, `{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":4}`); r.Status != 422 || r.Body.Code != "DCA_MAX_LEVELS" {
		t.Fatalf("level 4 of 3: %+v", r)
	}

	// Close at 66,000: proceeds 1675.08, fee 1.67508; balance 10032.06522; net PnL
	// 32.06522 = gross 35.38 − fees (0.9997 + 0.64 + 1.67508).
	pin(t, "BTC/USDT", "66000")
	r = send(t, path, `{"action":"close"}`)
	if r.Status != 200 || !r.Body.Success {
		t.Fatalf("close: %+v", r)
	}
	mustEqual(t, "close fee", r.Body.Order.Fee, "1.67508")
	mustEqual(t, "final balance", decimal.RequireFromString(balance(t, botID)), "10032.06522")
	page, err := api.Trades(ctx, botID, history.TradeQuery{Limit: 10})
	trades := page.Trades
	if err != nil || len(trades) != 1 {
		t.Fatalf("trades = %+v, %v", trades, err)
	}
	mustEqual(t, "gross pnl", trades[0].Pnl.Decimal, "35.38")
	mustEqual(t, "fees", trades[0].Fees.Decimal, "3.31478")
	mustEqual(t, "net pnl", trades[0].NetPnl.Decimal, "32.06522")
	if pos, _ := api.Positions(ctx, botID); len(pos) != 0 {
		t.Fatalf("position still open: %+v", pos)
	}

	// The PaperAccount's status mirrors the balance.
	eventually(t, "status balance", func() error {
		list := &tradingv1.PaperAccountList{}
		if err := k8s.List(ctx, list); err != nil {
			return err
		}
		for _, a := range list.Items {
			if a.Status.Balance == "10032.06522" {
				return nil
			}
		}
		return fmt.Errorf("no account shows 10032.06522")
	})

	// Nothing left to close, and a DCA add without a position.
	if r := send(t, path, `{"action":"close"}`); r.Status != 422 || r.Body.Code != "POSITION_NOT_FOUND" {
		t.Fatalf("close again: %+v", r)
	}
	if r := send(t, path, `{"action":"buy","size":"0.01","dca":true,"dcaLevel":2}`); r.Status != 422 || r.Body.Code != "DCA_NO_POSITION" {
		t.Fatalf("dca without position: %+v", r)
	}
}

func TestInsufficientBalanceCarriesDetails(t *testing.T) {
	path, _ := deploy(t, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Spec: tradingv1.SignalBotSpec{}})
	pin(t, "ETH/USDT", "3000")
	// 5 ETH at 3,000 = 15,000 + fee 15 against 10,000 available.
	r := send(t, path, `{"action":"buy","symbol":"ETHUSDT","size":"5"}`)
	if r.Status != 422 || r.Body.Code != "INSUFFICIENT_BALANCE" {
		t.Fatalf("%+v", r)
	}
	if r.Body.Details["required"] != 15015.0 || r.Body.Details["available"] != 10000.0 {
		t.Fatalf("details = %v", r.Body.Details)
	}
	// Below the minimum: DOGE's step is 1, so 0.5 DOGE rounds to 0.
	pin(t, "DOGE/USDT", "0.15")
	if r := send(t, path, `{"action":"buy","symbol":"DOGEUSDT","size":"0.5"}`); r.Status != 422 || r.Body.Code != "INVALID_AMOUNT" {
		t.Fatalf("below minimum: %+v", r)
	}
}

func TestStopLossTriggersOnPriceCross(t *testing.T) {
	ctx := context.Background()
	path, botID := deploy(t, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "sl"},
		Spec: tradingv1.SignalBotSpec{Symbol: "SOL/USDT", StopLoss: "2%"}})
	pin(t, "SOL/USDT", "150")
	if r := send(t, path, `{"action":"buy","size":"10%"}`); r.Status != 200 {
		t.Fatalf("buy: %+v", r)
	}
	pos, _ := api.Positions(ctx, botID)
	if len(pos) != 1 || pos[0].StopLoss == nil {
		t.Fatalf("position = %+v", pos)
	}
	mustEqual(t, "stop-loss price", (*pos[0].StopLoss).Decimal, "147") // 2 % below 150 for a long
	pin(t, "SOL/USDT", "146.5")
	eventually(t, "stop-loss exit", func() error {
		page, err := api.Trades(ctx, botID, history.TradeQuery{Limit: 10})
		if err != nil {
			return err
		}
		trades := page.Trades
		if len(trades) != 1 || trades[0].Reason != "stop_loss" {
			return fmt.Errorf("trades = %+v", trades)
		}
		return nil
	})
	if pos, _ := api.Positions(ctx, botID); len(pos) != 0 {
		t.Fatalf("position survives its stop-loss: %+v", pos)
	}
}

func TestSuspendedBotRefusesAtTheDoor(t *testing.T) {
	ctx := context.Background()
	bot := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "paused"}, Spec: tradingv1.SignalBotSpec{}}
	path, _ := deploy(t, bot)
	b := &tradingv1.SignalBot{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Suspend = true
	if err := k8s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, "paused at the door", func() error {
		if r := send(t, path, `{"action":"buy","symbol":"BTCUSDT"}`); r.Status != 403 || r.Body.Code != "BOT_PAUSED" {
			return fmt.Errorf("%+v", r)
		}
		return nil
	})
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted", func() error {
		if r := send(t, path, `{"action":"buy","symbol":"BTCUSDT"}`); r.Status != 403 || r.Body.Code != "BOT_DELETED" {
			return fmt.Errorf("%+v", r)
		}
		return nil
	})
}
