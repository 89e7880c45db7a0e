package portfolio

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
)

// walletAsset is one balance to read.
type walletAsset struct{ wallet, asset string }

// priceKey is one ticker to read.
type priceKey struct {
	kind   exchange.Kind
	symbol string
}

type priceResult struct {
	price decimal.Decimal
	err   error
}

// needs are the reads of one exchange connection for the bots' positions.
type needs struct {
	balances []walletAsset
	prices   []priceKey
	// views are the wallets' views of the account.
	views map[string]exchange.Exchange
	// key names the reads: a cached snapshot serves only the same reads.
	key string
}

// needsOf lists the reads: USDT in each wallet the key may trade (the spot wallet when it
// may trade neither), and in the spot wallet the base asset of every open spot position;
// the ticker of every open position and the ASSET/USDT spot ticker of every other asset.
// Where the adapter keeps spot and futures wallets apart (ForKind, Binance) both are read;
// otherwise one unified wallet.
func needsOf(c credentials.Connection, live exchange.Live, books []*botBook) needs {
	n := needs{views: map[string]exchange.Exchange{}}
	bases := map[string]bool{}
	prices := map[priceKey]bool{}
	hasSpot, hasFutures := c.CanTrade(exchange.Spot), c.CanTrade(exchange.Futures)
	for _, b := range books {
		for _, p := range b.positions {
			prices[priceKey{p.Kind, p.Symbol}] = true
			if p.Kind == exchange.Futures {
				hasFutures = true
			} else {
				hasSpot = true
				base, _ := exchange.SymbolAssets(p.Symbol)
				bases[base] = true
			}
		}
	}
	spotWallet := WalletUnified
	if k, ok := live.(interface {
		ForKind(exchange.Kind) exchange.Live
	}); ok {
		spotWallet = WalletSpot
		if hasSpot || !hasFutures {
			n.views[WalletSpot] = k.ForKind(exchange.Spot)
		}
		if hasFutures {
			n.views[WalletFutures] = k.ForKind(exchange.Futures)
			n.balances = append(n.balances, walletAsset{WalletFutures, Currency})
		}
	} else {
		n.views[WalletUnified] = live
	}
	if n.views[spotWallet] != nil {
		n.balances = append(n.balances, walletAsset{spotWallet, Currency})
		for base := range bases {
			if base != Currency {
				n.balances = append(n.balances, walletAsset{spotWallet, base})
				prices[priceKey{exchange.Spot, base + "/" + Currency}] = true
			}
		}
	}
	slices.SortFunc(n.balances, func(a, b walletAsset) int {
		if a.wallet != b.wallet {
			return strings.Compare(a.wallet, b.wallet)
		}
		if (a.asset == Currency) != (b.asset == Currency) { // USDT first in its wallet
			if a.asset == Currency {
				return -1
			}
			return 1
		}
		return strings.Compare(a.asset, b.asset)
	})
	for k := range prices {
		n.prices = append(n.prices, k)
	}
	slices.SortFunc(n.prices, func(a, b priceKey) int {
		return strings.Compare(string(a.kind)+"|"+a.symbol, string(b.kind)+"|"+b.symbol)
	})
	var key strings.Builder
	for _, b := range n.balances {
		key.WriteString(b.wallet + "|" + b.asset + ";")
	}
	for _, p := range n.prices {
		key.WriteString(string(p.kind) + "|" + p.symbol + ";")
	}
	n.key = key.String()
	return n
}

// snapshot is one exchange connection's balances and prices as read at one moment.
type snapshot struct {
	key      string
	at       int64 // ms, on the service's clock
	balances map[walletAsset]Balance
	prices   map[priceKey]priceResult
	// err is the failure of a balance read: the account cannot be shown.
	err error
}

// snapshot returns the connection's reads for need, from the cache when the same reads
// are younger than CacheTTL, else read once for every concurrent caller (singleflight).
// A failure is cached too, so that an exchange that is down is asked once per CacheTTL.
func (s *Service) snapshot(ctx context.Context, uid string, live exchange.Live, need needs) snapshot {
	s.mu.Lock()
	e, ok := s.cache[uid]
	s.mu.Unlock()
	if ok && e.key == need.key && s.o.Now().UnixMilli()-e.at < s.o.CacheTTL.Milliseconds() {
		return e
	}
	v, _, _ := s.flight.Do(uid+"\x00"+need.key, func() (any, error) {
		snap := s.fetch(ctx, live, need)
		snap.at = s.o.Now().UnixMilli()
		s.mu.Lock()
		s.cache[uid] = snap
		s.mu.Unlock()
		return snap, nil
	})
	return v.(snapshot)
}

// fetch reads need side by side within CallTimeout. The bound does not end with the
// request that started the read: callers waiting on the same read share its answer.
func (s *Service) fetch(ctx context.Context, live exchange.Live, need needs) snapshot {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.CallTimeout)
	defer cancel()
	snap := snapshot{key: need.key, balances: map[walletAsset]Balance{}, prices: map[priceKey]priceResult{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, wa := range need.balances {
		wg.Go(func() {
			b, err := need.views[wa.wallet].Balance(ctx, wa.asset)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if snap.err == nil {
					snap.err = err
				}
				return
			}
			snap.balances[wa] = Balance{Asset: wa.asset, Wallet: wa.wallet, Free: httpapi.Num(b.Free), Locked: httpapi.Num(b.Locked)}
		})
	}
	for _, pk := range need.prices {
		wg.Go(func() {
			p, err := live.Ticker(ctx, pk.kind, pk.symbol)
			mu.Lock()
			defer mu.Unlock()
			snap.prices[pk] = priceResult{price: p, err: err}
		})
	}
	wg.Wait()
	return snap
}
