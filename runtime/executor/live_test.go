package executor_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/registry"
)

var (
	liveKey   = bytes.Repeat([]byte{0x42, 0x17, 0xa9, 0x6c}, 8)
	liveCreds = exchange.Credentials{APIKey: "AK-live-test-key", APISecret: "SK-live-secret-never-shown", Passphrase: "PP-live"}
)

// stubConnector connects "exchange" accounts that trade on the harness's paper account, and
// records what it was given.
type stubConnector struct {
	name string
	h    *harness
	err  error

	mu       sync.Mutex
	connects int
	creds    []exchange.Credentials
	eps      []exchange.Endpoints
}

func (s *stubConnector) Name() string { return s.name }

func (s *stubConnector) Connect(c exchange.Credentials, ep exchange.Endpoints) (exchange.Live, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connects++
	s.creds = append(s.creds, c)
	s.eps = append(s.eps, ep)
	if s.err != nil {
		return nil, s.err
	}
	return &stubLive{Exchange: paper.NewExchange(s.h.rdb, "acct-1", s.h.bot.ID, s.h.px)}, nil
}

func (s *stubConnector) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

type stubLive struct{ exchange.Exchange }

func (*stubLive) Permissions(context.Context) (exchange.Permissions, error) {
	return exchange.Permissions{Read: true, SpotTrade: true}, nil
}

type liveFixture struct {
	*harness
	keys  *credentials.Ring
	conns *credentials.Connections
	stub  *stubConnector
	lv    *executor.LiveVenues
}

// newLive is the harness with its bot on exchange connection xc-1 (owner a@x.io, spot,
// binance) whose stub exchange trades on the harness's paper account.
func newLive(t *testing.T, edit func(*registry.Bot)) *liveFixture {
	t.Helper()
	h := newHarness(t, func(b *registry.Bot) {
		b.Account = registry.Account{Kind: registry.AccountExchange, Name: "bn", ID: "xc-1"}
		if edit != nil {
			edit(b)
		}
	})
	keys, err := credentials.NewRing(liveKey)
	if err != nil {
		t.Fatal(err)
	}
	f := &liveFixture{harness: h, keys: keys, conns: credentials.NewConnections(h.rdb),
		stub: &stubConnector{name: "binance", h: h}}
	f.lv = &executor.LiveVenues{Redis: h.rdb, Clients: &connectors.Clients{Keys: keys, Connectors: map[string]exchange.Connector{"binance": f.stub}}}
	f.save(f.connection("xc-1", nil))
	h.ex = executor.New(executor.Deps{Redis: h.rdb, Logger: h.quiet, Now: func() time.Time { return h.now },
		Venues: &executor.Paper{Redis: h.rdb, Prices: h.px, Live: f.lv}})
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	return f
}

// connection is a Ready projection of uid with liveCreds sealed for it.
func (f *liveFixture) connection(uid string, edit func(*credentials.Connection)) credentials.Connection {
	f.t.Helper()
	blob, err := f.keys.SealCredentials(liveCreds, credentials.AAD(uid))
	if err != nil {
		f.t.Fatal(err)
	}
	c := credentials.Connection{UID: uid, Namespace: "ns", Name: "bn", Exchange: "binance", Owner: "a@x.io",
		Ready: true, Reason: "Validated", Permissions: []string{"read", "spot"}, Sealed: blob, KeyID: f.keys.CurrentKeyID()}
	if edit != nil {
		edit(&c)
	}
	return c
}

func (f *liveFixture) save(c credentials.Connection) {
	f.t.Helper()
	if err := f.conns.Save(f.ctx, c); err != nil {
		f.t.Fatal(err)
	}
}

func TestLiveVenuesTradeThroughTheConnection(t *testing.T) {
	f := newLive(t, nil)
	f.ok(f.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	f.ok(f.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	if f.stub.count() != 1 {
		t.Fatalf("connected %d times for two signals; the client must be cached", f.stub.count())
	}
	if f.stub.creds[0] != liveCreds {
		t.Fatal("the connector did not get the decrypted credentials")
	}
	if f.exchangeOrders() != 2 {
		t.Fatalf("orders on the exchange = %d", f.exchangeOrders())
	}

	acct, err := f.lv.Open(f.ctx, f.bot)
	if err != nil {
		t.Fatal(err)
	}
	if acct.Venue != "binance" || !acct.FeeRate.Equal(testkit.D("0.001")) {
		t.Fatalf("account = %s fee %s", acct.Venue, acct.FeeRate)
	}
	f.lv.FeeRate = testkit.D("0.00075")
	if acct, _ = f.lv.Open(f.ctx, f.bot); !acct.FeeRate.Equal(testkit.D("0.00075")) {
		t.Fatalf("fee = %s", acct.FeeRate)
	}
}

func TestLiveVenuesRefuse(t *testing.T) {
	other, _ := credentials.NewRing(bytes.Repeat([]byte{0x01, 0x02, 0x03, 0x04}, 8))
	cases := []struct {
		name  string
		bot   func(*registry.Bot)
		conn  func(f *liveFixture, c *credentials.Connection)
		venue func(f *liveFixture)
		code  errs.Code
	}{
		{"no connection object", func(b *registry.Bot) { b.Account.ID = "" }, nil, nil, errs.ExchangeDisconnected},
		{"no projection", func(b *registry.Bot) { b.Account.ID = "xc-gone" }, nil, nil, errs.ExchangeDisconnected},
		{"someone else's connection", func(b *registry.Bot) { b.Owner = "mallory@x.io" }, nil, nil, errs.BotDisabled},
		{"owner compared case-insensitively", func(b *registry.Bot) { b.Owner = "A@X.IO" }, nil, nil, ""},
		{"not ready", nil, func(_ *liveFixture, c *credentials.Connection) {
			c.Ready, c.Reason = false, "WithdrawalPermissionEnabled"
		}, nil, errs.ExchangeDisconnected},
		{"futures bot on a spot key", func(b *registry.Bot) { b.Market = "futures" }, nil, nil, errs.BotDisabled},
		{"futures bot on a futures key", func(b *registry.Bot) { b.Market = "futures" }, func(_ *liveFixture, c *credentials.Connection) {
			c.Permissions = []string{"futures", "read"}
		}, nil, ""},
		{"blob of another connection", nil, func(f *liveFixture, c *credentials.Connection) {
			c.Sealed = f.connection("xc-2", nil).Sealed
		}, nil, errs.ExchangeDisconnected},
		{"blob of an unknown master key", nil, func(_ *liveFixture, c *credentials.Connection) {
			c.Sealed, _ = other.SealCredentials(liveCreds, credentials.AAD("xc-1"))
		}, nil, errs.ExchangeDisconnected},
		{"no master key", nil, nil, func(f *liveFixture) { f.lv.Clients.Keys = nil }, errs.ExchangeDisconnected},
		{"no connector", nil, func(_ *liveFixture, c *credentials.Connection) { c.Exchange = "bybit" }, nil, errs.ExchangeDisconnected},
		{"connector error quoting the secret", nil, nil, func(f *liveFixture) {
			f.stub.err = fmt.Errorf("bad secret %s for %s", liveCreds.APISecret, liveCreds.APIKey)
		}, errs.ExchangeDisconnected},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newLive(t, c.bot)
			if c.conn != nil {
				f.save(f.connection("xc-1", func(x *credentials.Connection) { c.conn(f, x) }))
			}
			if c.venue != nil {
				c.venue(f)
			}
			_, err := f.lv.Open(f.ctx, f.bot)
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if errs.CodeOf(err) != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
			if f.stub.err == nil && f.stub.count() != 0 {
				t.Fatal("credentials were handed to a connector for a refused account")
			}
			for _, s := range []string{liveCreds.APIKey, liveCreds.APISecret, liveCreds.Passphrase} {
				if strings.Contains(err.Error(), s) || strings.Contains(fmt.Sprintf("%+v", err), s) {
					t.Fatalf("error leaks a credential: %v", err)
				}
			}
			// Through the executor: a failure result with the same code, nothing traded.
			f.fails(f.send(`{"action":"buy","symbol":"BTCUSDT"}`), c.code)
			testkit.EqualD(t, "balance", f.balance(), "10000")
		})
	}

	t.Run("redis down is retried, not answered", func(t *testing.T) {
		lv := &executor.LiveVenues{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})}
		_, err := lv.Open(context.Background(), registry.Bot{Owner: "a@x.io", Account: registry.Account{Kind: registry.AccountExchange, ID: "xc-1"}})
		if err == nil {
			t.Fatal("no error")
		}
		if _, typed := errs.As(err); typed {
			t.Fatalf("a Redis failure became a client answer: %v", err)
		}
	})
}

// The client cache: a changed blob (new key in the Secret, master-key rotation) or new
// endpoints replace the entry; a refused connection leaves it; the size is bounded.
func TestLiveVenuesCache(t *testing.T) {
	f := newLive(t, nil)
	open := func() {
		t.Helper()
		if _, err := f.lv.Open(f.ctx, f.bot); err != nil {
			t.Fatal(err)
		}
	}
	open()
	open()
	if f.stub.count() != 1 || f.lv.Clients.Cached() != 1 {
		t.Fatalf("connects %d, cached %d", f.stub.count(), f.lv.Clients.Cached())
	}

	// Rotation: the manager re-seals with a new key; the executor holds both.
	newKey := bytes.Repeat([]byte{0x77, 0x31, 0xd0, 0x0b}, 8)
	rotated, _ := credentials.NewRing(newKey, liveKey)
	f.lv.Clients.Keys = rotated
	open() // the old blob still opens with the previous key; same blob, cached client
	if f.stub.count() != 1 {
		t.Fatal("reconnected although nothing changed")
	}
	f.keys = rotated
	f.save(f.connection("xc-1", nil))
	open()
	if f.stub.count() != 2 || f.stub.creds[1] != liveCreds || f.lv.Clients.Cached() != 1 {
		t.Fatalf("re-sealed blob: connects %d, cached %d", f.stub.count(), f.lv.Clients.Cached())
	}

	f.save(f.connection("xc-1", func(c *credentials.Connection) { c.Testnet, c.SpotEndpoint = true, "http://127.0.0.1:9" }))
	open()
	if f.stub.count() != 3 || f.stub.eps[2] != (exchange.Endpoints{Spot: "http://127.0.0.1:9", Testnet: true}) {
		t.Fatalf("new endpoints: connects %d, endpoints %+v", f.stub.count(), f.stub.eps)
	}

	// Refused: the cached client (and the credentials in it) is dropped.
	f.save(f.connection("xc-1", func(c *credentials.Connection) { c.Ready = false }))
	if _, err := f.lv.Open(f.ctx, f.bot); errs.CodeOf(err) != errs.ExchangeDisconnected {
		t.Fatalf("err = %v", err)
	}
	if f.lv.Clients.Cached() != 0 {
		t.Fatal("a refused connection's client stays cached")
	}

	// Bounded: the least recently used goes first.
	f.lv.Clients.CacheSize = 2
	for _, id := range []string{"xc-a", "xc-b", "xc-c"} {
		f.save(f.connection(id, nil))
		b := f.bot
		b.Account.ID = id
		if _, err := f.lv.Open(f.ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if f.lv.Clients.Cached() != 2 {
		t.Fatalf("cached = %d, want 2", f.lv.Clients.Cached())
	}
	before := f.stub.count()
	b := f.bot
	b.Account.ID = "xc-a" // evicted
	if _, err := f.lv.Open(f.ctx, b); err != nil || f.stub.count() != before+1 {
		t.Fatalf("evicted entry: %v, connects %d -> %d", err, before, f.stub.count())
	}
	b.Account.ID = "xc-c" // still cached
	if _, err := f.lv.Open(f.ctx, b); err != nil || f.stub.count() != before+1 {
		t.Fatalf("cached entry reconnected: %v", err)
	}
}
