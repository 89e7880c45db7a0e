package bybit

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

// num is one of Bybit's decimal strings (see restkit.Num): an alias, so that its fields read
// as the venue's own.
type num = restkit.Num

// instrument is an item of /v5/market/instruments-info (spot and linear fields).
type instrument struct {
	Symbol       string `json:"symbol"`
	ContractType string `json:"contractType"`
	Status       string `json:"status"`
	BaseCoin     string `json:"baseCoin"`
	QuoteCoin    string `json:"quoteCoin"`
	SettleCoin   string `json:"settleCoin"`
	PriceFilter  struct {
		TickSize num `json:"tickSize"`
	} `json:"priceFilter"`
	LotSizeFilter struct {
		BasePrecision    num `json:"basePrecision"`
		QtyStep          num `json:"qtyStep"`
		MinOrderQty      num `json:"minOrderQty"`
		MinOrderAmt      num `json:"minOrderAmt"`
		MinNotionalValue num `json:"minNotionalValue"`
	} `json:"lotSizeFilter"`
	LeverageFilter struct {
		MaxLeverage num `json:"maxLeverage"`
	} `json:"leverageFilter"`
}

// market is a tradable instrument: sigops' MarketInfo and Bybit's own names.
type market struct {
	info        exchange.MarketInfo
	raw         string // Bybit's symbol, e.g. BTCUSDT
	category    string
	settle      string
	maxLeverage decimal.Decimal // 0 when unknown (spot)
}

// marketSet is one category's instruments at one moment.
type marketSet struct {
	list   []exchange.MarketInfo
	byName map[string]*market // BASE/QUOTE
	byRaw  map[string]*market // BASEQUOTE as Bybit spells it
}

// marketCache holds the instruments of every account on a host (see restkit.Cache).
var marketCache restkit.Cache[*marketSet] // base URL + "|" + category → *marketSet

// markets is the cached set of a kind, refreshed when older than the TTL; when a refresh
// fails and an older set exists, the older set is used.
func (a *Account) markets(ctx context.Context, kind exchange.Kind) (*marketSet, error) {
	cat, err := category(kind)
	if err != nil {
		return nil, err
	}
	c := a.client(kind)
	key := c.base + "|" + cat
	set, err := marketCache.Get(ctx, key, a.ttl, a.timeout, func(fctx context.Context) (*marketSet, error) {
		return fetchMarkets(fctx, c, kind, cat)
	})
	if err != nil {
		var gone *restkit.CallerGone
		if errors.As(err, &gone) {
			err = &netError{err: gone.Err}
		}
		return nil, c.typed(err, "instruments-info")
	}
	return set, nil
}

// fetchMarkets reads every page of instruments-info of a category and keeps the instruments
// in status Trading (and, for linear, the perpetuals).
func fetchMarkets(ctx context.Context, c *client, kind exchange.Kind, cat string) (*marketSet, error) {
	set := &marketSet{byName: map[string]*market{}, byRaw: map[string]*market{}}
	cursor := ""
	for page := 0; page < 20; page++ {
		q := url.Values{"category": {cat}, "limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var res struct {
			List           []instrument `json:"list"`
			NextPageCursor string       `json:"nextPageCursor"`
		}
		if err := c.call(ctx, request{method: http.MethodGet, path: "/v5/market/instruments-info", query: q.Encode()}, true, 0, &res); err != nil {
			return nil, err
		}
		for _, in := range res.List {
			if m := toMarket(kind, cat, in); m != nil {
				if _, dup := set.byRaw[m.raw]; dup {
					continue
				}
				set.byRaw[m.raw] = m
				set.byName[m.info.Symbol] = m
				set.list = append(set.list, m.info)
			}
		}
		if res.NextPageCursor == "" || len(res.List) == 0 {
			break
		}
		cursor = res.NextPageCursor
	}
	sort.Slice(set.list, func(i, j int) bool { return set.list[i].Symbol < set.list[j].Symbol })
	return set, nil
}

func toMarket(kind exchange.Kind, cat string, in instrument) *market {
	if in.Status != "Trading" || in.BaseCoin == "" || in.QuoteCoin == "" {
		return nil
	}
	if kind == exchange.Futures && in.ContractType != "" && in.ContractType != "LinearPerpetual" {
		return nil
	}
	m := &market{raw: in.Symbol, category: cat, settle: in.SettleCoin,
		maxLeverage: in.LeverageFilter.MaxLeverage.Dec()}
	m.info = exchange.MarketInfo{
		Symbol: in.BaseCoin + "/" + in.QuoteCoin, Base: in.BaseCoin, Quote: in.QuoteCoin, Kind: kind,
		TickSize: in.PriceFilter.TickSize.Dec(), MinQty: in.LotSizeFilter.MinOrderQty.Dec(),
	}
	if kind == exchange.Futures {
		m.info.StepSize = in.LotSizeFilter.QtyStep.Dec()
		m.info.MinNotional = in.LotSizeFilter.MinNotionalValue.Dec()
	} else {
		m.info.StepSize = in.LotSizeFilter.BasePrecision.Dec()
		m.info.MinNotional = in.LotSizeFilter.MinOrderAmt.Dec()
	}
	if m.settle == "" {
		m.settle = in.QuoteCoin
	}
	return m
}

// find looks a symbol up by BASE/QUOTE or by Bybit's spelling, case-insensitively.
func (s *marketSet) find(symbol string) *market {
	k := strings.ToUpper(strings.TrimSpace(symbol))
	if m := s.byName[k]; m != nil {
		return m
	}
	return s.byRaw[strings.ReplaceAll(k, "/", "")]
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
	return nil, errs.New(errs.InvalidSymbol, "bybit has no tradable %s symbol %q", kind, symbol)
}

// marketLenient resolves a symbol for reading orders, which may outlive the instrument's
// Trading status: an unknown symbol is Bybit's spelling of what was given.
func (a *Account) marketLenient(ctx context.Context, kind exchange.Kind, symbol string) (*market, error) {
	cat, err := category(kind)
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
	return &market{raw: base + quote, category: cat, settle: quote,
		info: exchange.MarketInfo{Symbol: k, Base: base, Quote: quote, Kind: kind}}, nil
}

// Markets implements exchange.Exchange: the instruments in status Trading (linear: the
// perpetuals), with tickSize, basePrecision (spot) or qtyStep (linear), minOrderQty, and
// minOrderAmt (spot) or minNotionalValue (linear).
func (a *Account) Markets(ctx context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	set, err := a.markets(ctx, kind)
	if err != nil {
		return nil, err
	}
	return append([]exchange.MarketInfo(nil), set.list...), nil
}

// Ticker implements exchange.Exchange: lastPrice of /v5/market/tickers.
func (a *Account) Ticker(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	m, err := a.market(ctx, kind, symbol)
	if err != nil {
		return decimal.Zero, err
	}
	return a.ticker(ctx, kind, m)
}

func (a *Account) ticker(ctx context.Context, kind exchange.Kind, m *market) (decimal.Decimal, error) {
	c := a.client(kind)
	var res struct {
		List []struct {
			Symbol    string `json:"symbol"`
			LastPrice num    `json:"lastPrice"`
		} `json:"list"`
	}
	q := url.Values{"category": {m.category}, "symbol": {m.raw}}
	if err := c.call(ctx, request{method: http.MethodGet, path: "/v5/market/tickers", query: q.Encode()}, true, 0, &res); err != nil {
		return decimal.Zero, c.typed(err, "ticker")
	}
	for _, t := range res.List {
		if t.Symbol == m.raw {
			if p := t.LastPrice.Dec(); p.IsPositive() {
				return p, nil
			}
		}
	}
	return decimal.Zero, errs.New(errs.ExchangeError, "bybit has no last price for %s", m.info.Symbol)
}
