package okx

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// num is one of OKX's decimal strings (see restkit.Num): an alias, so that its fields read
// as the venue's own.
type num = restkit.Num

// instrument is an item of /api/v5/public/instruments (SPOT and SWAP fields).
type instrument struct {
	InstID    string `json:"instId"`
	InstType  string `json:"instType"`
	BaseCcy   string `json:"baseCcy"`
	QuoteCcy  string `json:"quoteCcy"`
	SettleCcy string `json:"settleCcy"`
	CtVal     num    `json:"ctVal"`
	CtValCcy  string `json:"ctValCcy"`
	CtType    string `json:"ctType"`
	Uly       string `json:"uly"`
	LotSz     num    `json:"lotSz"`
	MinSz     num    `json:"minSz"`
	TickSz    num    `json:"tickSz"`
	Lever     num    `json:"lever"`
	State     string `json:"state"`
}

// market is a tradable instrument: sigops' MarketInfo and OKX's own names and units.
type market struct {
	info     exchange.MarketInfo
	raw      string // OKX's instId, e.g. BTC-USDT or BTC-USDT-SWAP
	instType string // SPOT or SWAP
	settle   string // the settlement (margin) currency of a swap; the quote on spot
	// ctVal is the base amount of one contract (1 on spot); lotSz and minSz are OKX's, in
	// contracts on swaps.
	ctVal, lotSz, minSz decimal.Decimal
	maxLeverage         decimal.Decimal // 0 when unknown (spot)
}

func (m *market) swap() bool { return m.instType == "SWAP" }

// size is OKX's sz of a base amount: the amount itself on spot; on swaps the number of
// contracts, amount / ctVal, exactly. A swap amount that is not a whole number of lots
// (ctVal × lotSz) or is below minSz contracts is refused: rounding it here would trade an
// amount nobody asked for (the executor rounds to Markets' StepSize and MinQty, which are
// these bounds in base units).
func (m *market) size(amount decimal.Decimal) (string, error) {
	if !m.swap() {
		return amount.String(), nil
	}
	if !m.ctVal.IsPositive() {
		return "", errs.New(errs.InvalidSymbol, "okx %s has no contract value", m.raw)
	}
	step := m.ctVal
	if m.lotSz.IsPositive() {
		step = m.ctVal.Mul(m.lotSz)
	}
	if !amount.Mod(step).IsZero() {
		return "", errs.New(errs.InvalidAmount, "amount %s %s is not a whole number of okx %s lots (%s %s = %s contracts of %s)",
			amount, m.info.Base, m.raw, step, m.info.Base, m.lotSz, m.ctVal)
	}
	contracts := amount.Div(step).Round(0)
	if m.lotSz.IsPositive() {
		contracts = contracts.Mul(m.lotSz)
	}
	if contracts.LessThan(m.minSz) {
		return "", errs.New(errs.InvalidAmount, "amount %s %s is %s contracts of okx %s, below its minimum of %s contracts (%s %s)",
			amount, m.info.Base, contracts, m.raw, m.minSz, m.minSz.Mul(m.ctVal), m.info.Base)
	}
	return contracts.String(), nil
}

// base is the base amount of an OKX size: contracts × ctVal on swaps.
func (m *market) base(sz decimal.Decimal) decimal.Decimal {
	if m.swap() && m.ctVal.IsPositive() {
		return sz.Mul(m.ctVal)
	}
	return sz
}

// marketSet is one instrument type's instruments at one moment.
type marketSet struct {
	list   []exchange.MarketInfo
	byName map[string]*market // BASE/QUOTE
	byRaw  map[string]*market // instId
}

// marketCache holds the instruments of every account on a host (see restkit.Cache).
var marketCache restkit.Cache[*marketSet] // base URL + "|" + instType → *marketSet

// markets is the cached set of a kind, refreshed when older than the TTL; when a refresh
// fails and an older set exists, the older set is used.
func (a *Account) markets(ctx context.Context, kind exchange.Kind) (*marketSet, error) {
	it, err := instType(kind)
	if err != nil {
		return nil, err
	}
	c := a.client(kind)
	key := c.base + "|" + it
	if c.demo {
		key += "|demo"
	}
	set, err := marketCache.Get(ctx, key, a.ttl, a.timeout, func(fctx context.Context) (*marketSet, error) {
		return fetchMarkets(fctx, c, kind, it)
	})
	if err != nil {
		var gone *restkit.CallerGone
		if errors.As(err, &gone) {
			err = &netError{err: gone.Err}
		}
		return nil, c.typed(err, "instruments")
	}
	return set, nil
}

// fetchMarkets reads the instruments of a type (OKX answers them all in one page) and keeps
// the live ones: on spot every pair, on swaps the USDT-settled linear perpetuals.
func fetchMarkets(ctx context.Context, c *client, kind exchange.Kind, it string) (*marketSet, error) {
	set := &marketSet{byName: map[string]*market{}, byRaw: map[string]*market{}}
	var list []instrument
	q := url.Values{"instType": {it}}.Encode()
	if err := c.call(ctx, request{method: http.MethodGet, path: "/api/v5/public/instruments", query: q}, true, 0, &list); err != nil {
		return nil, err
	}
	for _, in := range list {
		m := toMarket(kind, in)
		if m == nil {
			continue
		}
		if _, dup := set.byName[m.info.Symbol]; dup {
			continue
		}
		set.byRaw[m.raw] = m
		set.byName[m.info.Symbol] = m
		set.list = append(set.list, m.info)
	}
	sort.Slice(set.list, func(i, j int) bool { return set.list[i].Symbol < set.list[j].Symbol })
	return set, nil
}

func toMarket(kind exchange.Kind, in instrument) *market {
	if in.State != "live" || in.InstID == "" {
		return nil
	}
	m := &market{raw: in.InstID, instType: in.InstType, lotSz: in.LotSz.Dec(), minSz: in.MinSz.Dec(),
		maxLeverage: in.Lever.Dec(), ctVal: decimal.NewFromInt(1)}
	base, quote := in.BaseCcy, in.QuoteCcy
	if kind == exchange.Futures {
		if in.InstType != "SWAP" || in.CtType != "linear" || in.SettleCcy != "USDT" || !in.CtVal.Dec().IsPositive() {
			return nil
		}
		base, quote, _ = strings.Cut(in.Uly, "-")
		if base == "" {
			base = in.CtValCcy
		}
		if quote == "" {
			quote = in.SettleCcy
		}
		if in.CtValCcy != "" && in.CtValCcy != base {
			return nil // a contract counted in another currency than the base: not a base amount
		}
		m.ctVal = in.CtVal.Dec()
		m.settle = in.SettleCcy
	} else {
		if in.InstType != "SPOT" {
			return nil
		}
		m.settle = quote
	}
	if base == "" || quote == "" {
		return nil
	}
	m.info = exchange.MarketInfo{
		Symbol: base + "/" + quote, Base: base, Quote: quote, Kind: kind,
		TickSize: in.TickSz.Dec(), StepSize: m.lotSz.Mul(m.ctVal), MinQty: m.minSz.Mul(m.ctVal),
	}
	return m
}

// find looks a symbol up by BASE/QUOTE or by OKX's instId, case-insensitively.
func (s *marketSet) find(symbol string) *market {
	k := strings.ToUpper(strings.TrimSpace(symbol))
	if m := s.byName[k]; m != nil {
		return m
	}
	return s.byRaw[k]
}

// market resolves a tradable symbol; an unknown one is INVALID_SYMBOL.
func (a *Account) market(ctx context.Context, kind exchange.Kind, symbol string) (*market, error) {
	set, err := a.markets(ctx, kind)
	if err != nil {
		return nil, err
	}
	if m := set.find(symbol); m != nil {
		return m, nil
	}
	return nil, errs.New(errs.InvalidSymbol, "okx has no tradable %s symbol %q", kind, symbol)
}

// marketLenient resolves a symbol for reading orders, which may outlive the instrument's
// live state: an unknown symbol is OKX's spelling of what was given, with one contract per
// base unit (its orders' sizes then read as contracts).
func (a *Account) marketLenient(ctx context.Context, kind exchange.Kind, symbol string) (*market, error) {
	it, err := instType(kind)
	if err != nil {
		return nil, err
	}
	if set, err := a.markets(ctx, kind); err == nil {
		if m := set.find(symbol); m != nil {
			return m, nil
		}
	}
	k := strings.ToUpper(strings.TrimSpace(symbol))
	base, quote, _ := strings.Cut(k, "/")
	raw := base + "-" + quote
	if it == "SWAP" {
		raw += "-SWAP"
	}
	return &market{raw: raw, instType: it, settle: quote, ctVal: decimal.NewFromInt(1),
		info: exchange.MarketInfo{Symbol: k, Base: base, Quote: quote, Kind: kind}}, nil
}

// Markets implements exchange.Exchange: the live instruments (swaps: USDT-settled linear
// perpetuals) with tickSz, and StepSize and MinQty in base units: lotSz and minSz on spot,
// ctVal × lotSz and ctVal × minSz on swaps, so that an amount rounded to them is a whole
// number of contracts. OKX publishes no minimum notional: MinNotional is zero.
func (a *Account) Markets(ctx context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	set, err := a.markets(ctx, kind)
	if err != nil {
		return nil, err
	}
	return append([]exchange.MarketInfo(nil), set.list...), nil
}

// Ticker implements exchange.Exchange: last of /api/v5/market/ticker.
func (a *Account) Ticker(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	m, err := a.market(ctx, kind, symbol)
	if err != nil {
		return decimal.Zero, err
	}
	return a.ticker(ctx, m)
}

func (a *Account) ticker(ctx context.Context, m *market) (decimal.Decimal, error) {
	c := a.client(m.info.Kind)
	var res []struct {
		InstID string `json:"instId"`
		Last   num    `json:"last"`
	}
	q := url.Values{"instId": {m.raw}}.Encode()
	if err := c.call(ctx, request{method: http.MethodGet, path: "/api/v5/market/ticker", query: q}, true, 0, &res); err != nil {
		return decimal.Zero, c.typed(err, "ticker")
	}
	for _, t := range res {
		if t.InstID == m.raw {
			if p := t.Last.Dec(); p.IsPositive() {
				return p, nil
			}
		}
	}
	return decimal.Zero, errs.New(errs.ExchangeError, "okx has no last price for %s", m.info.Symbol)
}
