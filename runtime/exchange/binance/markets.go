package binance

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	binance "github.com/adshao/go-binance/v2"
	"github.com/adshao/go-binance/v2/futures"
	"github.com/shopspring/decimal"
	"golang.org/x/sync/singleflight"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// marketCache holds exchange information per API base URL and kind. It is public data,
// so every account on the same endpoint shares it: one fetch per TTL per endpoint.
type marketCache struct {
	mu      sync.Mutex
	entries map[string]marketEntry
	group   singleflight.Group
}

type marketEntry struct {
	list []exchange.MarketInfo
	at   time.Time
}

var markets = &marketCache{entries: map[string]marketEntry{}}

func (mc *marketCache) get(key string) (marketEntry, bool) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	e, ok := mc.entries[key]
	return e, ok
}

func (mc *marketCache) put(key string, list []exchange.MarketInfo) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.entries[key] = marketEntry{list: list, at: time.Now()}
}

// Markets lists the TRADING symbols of a kind (spot pairs, or USDⓈ-M perpetuals) with
// their filters, from a cache refreshed every MarketsTTL. A failed refresh serves the
// stale list (and logs it); with nothing cached the failure is returned.
func (x *Account) Markets(ctx context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	list, err := x.markets(ctx, kind)
	if err != nil {
		return nil, err
	}
	return append([]exchange.MarketInfo(nil), list...), nil
}

func (x *Account) markets(ctx context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	var m api
	switch kind {
	case exchange.Spot:
		m = spotAPI
	case exchange.Futures:
		m = futuresAPI
	default:
		return nil, errs.New(errs.InvalidSymbol, "unknown market kind %q", kind)
	}
	key := x.base(m) + "|" + string(kind)
	e, ok := markets.get(key)
	if ok && time.Since(e.at) < x.cfg.MarketsTTL {
		return e.list, nil
	}
	// The fetch is shared by concurrent callers: it must not die with the first caller's
	// context, only with its own budget.
	detached := context.WithoutCancel(ctx)
	ch := markets.group.DoChan(key, func() (any, error) {
		fctx, cancel := x.budget(detached)
		defer cancel()
		list, err := x.fetchMarkets(fctx, kind)
		if err != nil {
			return nil, err
		}
		markets.put(key, list)
		return list, nil
	})
	select {
	case r := <-ch:
		if r.Err == nil {
			return r.Val.([]exchange.MarketInfo), nil
		}
		if ok {
			x.log.Warn("exchange information refresh failed; serving the cached copy",
				"kind", kind, "age", time.Since(e.at).Round(time.Second), "err", r.Err)
			return e.list, nil
		}
		return nil, r.Err
	case <-ctx.Done():
		if ok {
			return e.list, nil
		}
		return nil, errs.Wrap(ctx.Err(), errs.ExchangeError, "Binance exchange information not loaded in time")
	}
}

func (x *Account) fetchMarkets(ctx context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	var out []exchange.MarketInfo
	if kind == exchange.Futures {
		var info *futures.ExchangeInfo
		if f := x.do(ctx, futuresAPI, "GET /fapi/v1/exchangeInfo", true, func(ctx context.Context) error {
			var err error
			info, err = x.fut().NewExchangeInfoService().Do(ctx)
			return err
		}); f != nil {
			return nil, readError(f, "exchange information")
		}
		for _, s := range info.Symbols {
			if s.Status != "TRADING" || s.ContractType != futures.ContractTypePerpetual {
				continue
			}
			if mi, ok := marketOf(exchange.Futures, s.BaseAsset, s.QuoteAsset, s.Filters); ok {
				out = append(out, mi)
			}
		}
	} else {
		var info *binance.ExchangeInfo
		if f := x.do(ctx, spotAPI, "GET /api/v3/exchangeInfo", true, func(ctx context.Context) error {
			var err error
			info, err = x.spot().NewExchangeInfoService().Do(ctx)
			return err
		}); f != nil {
			return nil, readError(f, "exchange information")
		}
		for _, s := range info.Symbols {
			if s.Status != "TRADING" {
				continue
			}
			if mi, ok := marketOf(exchange.Spot, s.BaseAsset, s.QuoteAsset, s.Filters); ok {
				out = append(out, mi)
			}
		}
	}
	if len(out) == 0 {
		return nil, errs.New(errs.ExchangeError, "Binance listed no trading %s symbols", kind)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Symbol < out[j].Symbol })
	return out, nil
}

// marketOf reads a symbol's filters: tick from PRICE_FILTER; step and minimum quantity
// from LOT_SIZE and MARKET_LOT_SIZE (the stricter of the two, so that an amount valid here
// is valid for market and limit orders alike); minimum notional from NOTIONAL or
// MIN_NOTIONAL (spot "minNotional", futures "notional"). The values stay decimal strings.
func marketOf(kind exchange.Kind, base, quote string, filters []map[string]any) (exchange.MarketInfo, bool) {
	mi := exchange.MarketInfo{Symbol: base + "/" + quote, Base: base, Quote: quote, Kind: kind}
	for _, f := range filters {
		switch f["filterType"] {
		case "PRICE_FILTER":
			mi.TickSize = dec(f["tickSize"])
		case "LOT_SIZE", "MARKET_LOT_SIZE":
			mi.StepSize = decimal.Max(mi.StepSize, dec(f["stepSize"]))
			mi.MinQty = decimal.Max(mi.MinQty, dec(f["minQty"]))
		case "NOTIONAL", "MIN_NOTIONAL":
			n := dec(f["minNotional"])
			if n.IsZero() {
				n = dec(f["notional"])
			}
			mi.MinNotional = decimal.Max(mi.MinNotional, n)
		}
	}
	return mi, base != "" && quote != "" && mi.TickSize.IsPositive() && mi.StepSize.IsPositive()
}

// dec reads a JSON value that Binance sends as a decimal string.
func dec(v any) decimal.Decimal {
	s, ok := v.(string)
	if !ok {
		return decimal.Zero
	}
	d, err := decimal.NewFromString(strings.TrimSpace(s))
	if err != nil {
		return decimal.Zero
	}
	return d
}

// resolve turns BASE/QUOTE (or BASEQUOTE, looked up in the markets) into Binance's symbol
// and the two assets.
func (x *Account) resolve(ctx context.Context, kind exchange.Kind, symbol string) (bsym, base, quote string, err error) {
	s := strings.ToUpper(strings.TrimSpace(symbol))
	if b, q, ok := strings.Cut(s, "/"); ok && b != "" && q != "" && !strings.Contains(q, "/") {
		return b + q, b, q, nil
	}
	if s == "" || strings.Contains(s, "/") {
		return "", "", "", errs.New(errs.InvalidSymbol, "invalid symbol %q", symbol)
	}
	list, err := x.markets(ctx, kind)
	if err != nil {
		return "", "", "", err
	}
	for _, m := range list {
		if m.Base+m.Quote == s {
			return s, m.Base, m.Quote, nil
		}
	}
	return "", "", "", errs.New(errs.InvalidSymbol, "unknown Binance %s symbol %q", kind, symbol)
}

// Ticker is the last traded price (spot /api/v3/ticker/price, futures
// /fapi/v2/ticker/price).
func (x *Account) Ticker(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	bsym, _, _, err := x.resolve(ctx, kind, symbol)
	if err != nil {
		return decimal.Zero, err
	}
	return x.ticker(ctx, kind, bsym)
}

func (x *Account) ticker(ctx context.Context, kind exchange.Kind, bsym string) (decimal.Decimal, error) {
	var price string
	var f *failure
	switch kind {
	case exchange.Spot:
		f = x.do(ctx, spotAPI, "GET /api/v3/ticker/price", true, func(ctx context.Context) error {
			res, err := x.spot().NewListPricesService().Symbol(bsym).Do(ctx)
			if err == nil && len(res) > 0 {
				price = res[0].Price
			}
			return err
		})
	case exchange.Futures:
		f = x.do(ctx, futuresAPI, "GET /fapi/v2/ticker/price", true, func(ctx context.Context) error {
			res, err := x.fut().NewListPricesService().Symbol(bsym).Do(ctx)
			if err == nil && len(res) > 0 {
				price = res[0].Price
			}
			return err
		})
	default:
		return decimal.Zero, errs.New(errs.InvalidSymbol, "unknown market kind %q", kind)
	}
	if f != nil {
		return decimal.Zero, readError(f, "ticker")
	}
	p, err := decimal.NewFromString(price)
	if err != nil || !p.IsPositive() {
		return decimal.Zero, errs.New(errs.ExchangeError, "Binance sent no price for %s", bsym)
	}
	return p, nil
}
