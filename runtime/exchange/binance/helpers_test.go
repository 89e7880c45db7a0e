package binance_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
)

// logs collects what the adapters log, to prove no secret reaches a log.
var logs = &testkit.LogBuffer{}

var logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

// seen collects every error the tests get, to prove no secret reaches an error.
var seen struct {
	mu   sync.Mutex
	errs []error
}

func keep(err error) error {
	if err != nil {
		seen.mu.Lock()
		seen.errs = append(seen.errs, err)
		seen.mu.Unlock()
	}
	return err
}

var creds = exchange.Credentials{APIKey: binancefake.APIKey, APISecret: binancefake.APISecret}

// fixture is a fake Binance and an account on it.
type fixture struct {
	fake *binancefake.Server
	x    *binance.Account
}

func newFixture(t testing.TB, tune ...func(*binance.Connector)) *fixture {
	t.Helper()
	fake := binancefake.New()
	t.Cleanup(func() {
		fake.Close()
		binance.ForgetEndpoint(fake.URL())
	})
	c := binance.Connector{Logger: logger}
	for _, f := range tune {
		f(&c)
	}
	x, err := c.Open(creds, exchange.Endpoints{Spot: fake.URL(), Futures: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{fake: fake, x: x}
}

// account opens another account on the same fake.
func (f *fixture) account(t testing.TB, c binance.Connector, cr exchange.Credentials) *binance.Account {
	t.Helper()
	if c.Logger == nil {
		c.Logger = logger
	}
	x, err := c.Open(cr, exchange.Endpoints{Spot: f.fake.URL(), Futures: f.fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

var cidSeq atomic.Int64

// cid is a fresh client order ID shaped like the executor's.
func cid() string { return fmt.Sprintf("sg-%032x", cidSeq.Add(1)+1<<40) }

func wantCode(t testing.TB, err error, code errs.Code) *errs.Error {
	t.Helper()
	keep(err)
	e, ok := errs.As(err)
	if !ok {
		t.Fatalf("error %v is not typed, want %s", err, code)
	}
	if e.Code != code {
		t.Fatalf("code %s (%v), want %s", e.Code, err, code)
	}
	return e
}

// wantUnknown: an order outcome that is not known is untyped and wraps ErrUnreachable.
func wantUnknown(t testing.TB, err error) {
	t.Helper()
	keep(err)
	if err == nil {
		t.Fatal("no error")
	}
	if _, ok := errs.As(err); ok {
		t.Fatalf("error %v is typed; an unknown outcome must not read as a rejection", err)
	}
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Fatalf("error %v does not wrap ErrUnreachable", err)
	}
}

func spotMarket(id string, side exchange.Side, amount string) exchange.OrderRequest {
	return exchange.OrderRequest{ClientOrderID: id, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: side,
		Type: exchange.Market, Amount: testkit.D(amount)}
}

func futMarket(id string, side exchange.Side, amount string, lev int) exchange.OrderRequest {
	return exchange.OrderRequest{ClientOrderID: id, Symbol: "BTC/USDT", Kind: exchange.Futures, Side: side,
		Type: exchange.Market, Amount: testkit.D(amount), Leverage: lev}
}

// paramsOf is the params of the requests to method path.
func paramsOf(fake *binancefake.Server, method, path string) []map[string]string {
	var out []map[string]string
	for _, r := range fake.Requests() {
		if r.Method == method && r.Path == path {
			m := map[string]string{}
			for k, v := range r.Params {
				m[k] = strings.Join(v, ",")
			}
			out = append(out, m)
		}
	}
	return out
}

func asDec(t testing.TB, v any) decimal.Decimal {
	t.Helper()
	d, ok := v.(decimal.Decimal)
	if !ok {
		t.Fatalf("detail %v (%T) is not a decimal", v, v)
	}
	return d
}

// signedQuery signs a query string with the fake's secret, as Binance expects.
func signedQuery(q string) string {
	q += "&recvWindow=5000&timestamp=" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(binancefake.APISecret))
	mac.Write([]byte(q))
	return q + "&signature=" + hex.EncodeToString(mac.Sum(nil))
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
