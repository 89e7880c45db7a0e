package candles

import (
	"context"
	"errors"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
)

// TickerRequest asks for a symbol's last price, spelt as a candles Request.
type TickerRequest struct {
	Symbol string
	// ExchangeID is binance, bybit, okx, paper (also "": the public source paper trading fills
	// at) or the UID of one of Owner's exchange connections.
	ExchangeID string
	// Market is "spot" (also "") or "futures".
	Market string
	Owner  string
}

// Ticker is a symbol's last price as read at AsOf.
type Ticker struct {
	Symbol string         `json:"symbol"`
	Market string         `json:"market"`
	Price  httpapi.Number `json:"price"`
	// AsOf is when the price was read, ms since epoch.
	AsOf int64 `json:"asOf"`
	// UsingFallback: the public source answered (paper trading, or an exchange that could
	// not be reached), as in a candles Result.
	UsingFallback bool `json:"usingFallback"`
}

// Ticker reads r's last price from the source its candles come from (the same exchange
// resolution, the same fallback when the exchange cannot answer). Prices are not cached:
// each call reads the source once, within FetchTimeout. Errors: MISSING_SYMBOL,
// INVALID_SYMBOL (unknown, or not traded on the exchange), INVALID_PARAMETER (market),
// NOT_FOUND "exchange not found", EXCHANGE_ERROR.
func (s *Service) Ticker(ctx context.Context, r TickerRequest) (Ticker, error) {
	symbol, err := s.Resolve(r.Symbol)
	if err != nil {
		return Ticker{}, err
	}
	kind, err := ParseMarket(r.Market)
	if err != nil {
		return Ticker{}, err
	}
	exchangeID := r.ExchangeID
	if strings.TrimSpace(exchangeID) == "" {
		exchangeID = Paper
	}
	src, err := s.source(ctx, exchangeID, r.Owner)
	if err != nil {
		return Ticker{}, err
	}
	price := func(p marketdata.Provider) (decimal.Decimal, error) {
		fctx, cancel := context.WithTimeout(ctx, s.o.FetchTimeout)
		defer cancel()
		return p.Price(fctx, kind, symbol)
	}
	t := Ticker{Symbol: symbol, Market: string(kind)}
	if src.upstream != nil {
		px, err := price(src.upstream)
		switch {
		case err == nil:
			t.Price, t.AsOf = httpapi.Num(px), s.o.Now().UnixMilli()
			return t, nil
		case errors.Is(err, marketdata.ErrUnknownSymbol):
			return Ticker{}, errs.New(errs.InvalidSymbol, "%s is not traded on %s %s", symbol, src.exchange, kind)
		}
		s.o.Logger.Info("exchange price unavailable; serving the public source", "exchange", src.exchange, "err", err)
	}
	if s.o.Fallback == nil {
		return Ticker{}, errs.New(errs.ExchangeError, "no market data source")
	}
	px, err := price(s.o.Fallback)
	if errors.Is(err, marketdata.ErrUnknownSymbol) {
		return Ticker{}, errs.New(errs.InvalidSymbol, "%s has no price on the public source", symbol)
	}
	if err != nil {
		return Ticker{}, errs.Wrap(err, errs.ExchangeError, "price unavailable")
	}
	t.Price, t.AsOf, t.UsingFallback = httpapi.Num(px), s.o.Now().UnixMilli(), true
	return t, nil
}
