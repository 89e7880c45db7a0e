package dashboard_test

import (
	"context"
	"strings"
	"sync"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
)

// The suite's manager validates exchange connections against stubExchange, which stands in
// for Binance and Bybit: an API key's prefix says how the exchange answers, so that each
// test's keys are its own.
//   - "withdraw-": the key can read, trade spot and withdraw;
//   - "invalid-": the exchange refuses the key;
//   - "hold-": the answer waits until release(key), then is read and spot trading;
//   - anything else: read, spot and futures trading.
var (
	stubMasterKeys = mustRing()
	stubExchanges  = map[string]exchange.Connector{"binance": stubExchange{name: "binance"}, "bybit": stubExchange{name: "bybit"}}
	held           = struct {
		sync.Mutex
		ch map[string]chan struct{}
	}{ch: map[string]chan struct{}{}}
)

func mustRing() *credentials.Ring {
	r, err := credentials.NewRing([]byte("dashboard-suite-master-key-32-b!"))
	if err != nil {
		panic(err)
	}
	return r
}

// heldChan is key's gate, closed once the key is released.
func heldChan(key string) chan struct{} {
	held.Lock()
	defer held.Unlock()
	ch, ok := held.ch[key]
	if !ok {
		ch = make(chan struct{})
		held.ch[key] = ch
	}
	return ch
}

// release answers key's validations, those waiting and every later one.
func release(key string) { close(heldChan(key)) }

type stubExchange struct{ name string }

func (s stubExchange) Name() string { return s.name }

func (s stubExchange) Connect(c exchange.Credentials, _ exchange.Endpoints) (exchange.Live, error) {
	return stubAccount{key: c.APIKey}, nil
}

// stubAccount is one key's account; the controller calls Permissions and Markets only.
type stubAccount struct {
	exchange.Exchange
	key string
}

func (a stubAccount) Permissions(ctx context.Context) (exchange.Permissions, error) {
	switch {
	case strings.HasPrefix(a.key, "withdraw-"):
		return exchange.Permissions{Read: true, SpotTrade: true, Withdraw: true}, nil
	case strings.HasPrefix(a.key, "invalid-"):
		return exchange.Permissions{}, exchange.ErrInvalidCredentials
	case strings.HasPrefix(a.key, "hold-"):
		select {
		case <-heldChan(a.key):
		case <-ctx.Done():
			return exchange.Permissions{}, exchange.ErrUnreachable
		}
		return exchange.Permissions{Read: true, SpotTrade: true}, nil
	}
	return exchange.Permissions{Read: true, SpotTrade: true, FuturesTrade: true}, nil
}

func (a stubAccount) Markets(_ context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	return []exchange.MarketInfo{{Symbol: "ETH/USDT", Base: "ETH", Quote: "USDT", Kind: kind}}, nil
}
