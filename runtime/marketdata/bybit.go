package marketdata

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Bybit's public market-data hosts: one host serves spot and linear alike.
const (
	BybitURL        = "https://api.bybit.com"
	BybitTestnetURL = "https://api-testnet.bybit.com"
)

// bybitIPBan is how long Bybit asks a client to stop after "403, access too frequent".
const bybitIPBan = 10 * time.Minute

// bybitIntervals are Bybit v5's kline interval names of the spec's timeframes.
var bybitIntervals = map[string]string{
	"1m": "1", "5m": "5", "15m": "15", "30m": "30", "1h": "60", "4h": "240", "1d": "D", "1w": "W",
}

// BybitPublic reads prices and candles from Bybit's public v5 market API (no key):
// /v5/market/tickers and /v5/market/kline, category spot or linear (USDT perpetuals for
// exchange.Futures), and the linear funding history /v5/market/funding/history
// (funding.go). Bybit answers numbers as decimal strings, parsed exactly, and klines
// newest first, which Candles turns round. Errors: HTTP 403 (an IP ban) and retCodes 10006
// and 10018 are RATE_LIMITED; an unknown symbol is INVALID_SYMBOL wrapping ErrUnknownSymbol;
// other failures are EXCHANGE_ERROR; a cancelled caller context is returned as is.
type BybitPublic struct{ hosts }

// NewBybitPublic makes a provider on the given base URLs (empty spot: BybitURL; empty
// linear: the spot URL) and client (nil: a client of its own).
func NewBybitPublic(spotBaseURL, linearBaseURL string, client *http.Client) *BybitPublic {
	return &BybitPublic{newHosts(spotBaseURL, BybitURL, linearBaseURL, client)}
}

// Price is the last traded price (tickers' lastPrice).
func (b *BybitPublic) Price(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	pair, err := binancePair(kind, symbol) // Bybit spells pairs as Binance does: BTCUSDT
	if err != nil {
		return decimal.Decimal{}, err
	}
	var res struct {
		List []struct {
			Symbol    string          `json:"symbol"`
			LastPrice decimal.Decimal `json:"lastPrice"`
		} `json:"list"`
	}
	if err := b.get(ctx, kind, symbol, "tickers", url.Values{"symbol": {pair}}, &res); err != nil {
		return decimal.Decimal{}, err
	}
	if len(res.List) != 1 || res.List[0].Symbol != pair || !res.List[0].LastPrice.IsPositive() {
		return decimal.Decimal{}, errs.New(errs.ExchangeError, "bybit: unexpected ticker for %s", pair)
	}
	return res.List[0].LastPrice, nil
}

// Candles are Bybit's klines turned oldest first, the last one open.
func (b *BybitPublic) Candles(ctx context.Context, kind exchange.Kind, symbol, timeframe string, limit int) ([]Candle, error) {
	if _, err := binancePair(kind, symbol); err != nil {
		return nil, err
	}
	interval, ok := bybitIntervals[timeframe]
	if !ok {
		return nil, badTimeframe(timeframe)
	}
	limit = clampLimit(limit, MaxLimit)
	return b.klines(ctx, kind, symbol, url.Values{"interval": {interval}, "limit": {strconv.Itoa(limit)}})
}

// klines asks for the klines q selects (interval, limit, and start/end or none) of symbol
// and turns them oldest first.
func (b *BybitPublic) klines(ctx context.Context, kind exchange.Kind, symbol string, q url.Values) ([]Candle, error) {
	pair, err := binancePair(kind, symbol)
	if err != nil {
		return nil, err
	}
	q.Set("symbol", pair)
	var res struct {
		Symbol string              `json:"symbol"`
		List   [][]json.RawMessage `json:"list"`
	}
	if err := b.get(ctx, kind, symbol, "kline", q, &res); err != nil {
		return nil, err
	}
	out := make([]Candle, 0, len(res.List))
	for i, row := range slices.Backward(res.List) {
		// [startTime, open, high, low, close, volume, turnover], every field a string.
		c, err := parseKline(row)
		if err != nil {
			return nil, errs.Wrap(err, errs.ExchangeError, "bybit: malformed kline %d for %s", i, pair)
		}
		out = append(out, c)
	}
	return out, nil
}

// bybitAnswer is v5's envelope.
type bybitAnswer struct {
	RetCode int             `json:"retCode"`
	RetMsg  string          `json:"retMsg"`
	Result  json.RawMessage `json:"result"`
}

// Bybit's retCodes that the public endpoints answer.
const (
	bybitParamError  = 10001 // params error, including an unknown symbol
	bybitTooMany     = 10006 // too many visits
	bybitIPRateLimit = 10018 // IP rate limit
)

func (b *BybitPublic) get(ctx context.Context, kind exchange.Kind, symbol, endpoint string, q url.Values, into any) error {
	u, category := b.spotURL, "spot"
	if kind == exchange.Futures {
		u, category = b.futuresURL, "linear"
	}
	q.Set("category", category)
	resp, body, err := publicGet(ctx, b.client, b.Timeout, "bybit", u+"/v5/market/"+endpoint+"?"+q.Encode())
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusForbidden {
		e := errs.New(errs.RateLimited, "bybit refused this address (HTTP 403, access too frequent)")
		e.RetryAfter = bybitIPBan
		return e
	}
	var a bybitAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		if resp.StatusCode != http.StatusOK {
			return errs.New(errs.ExchangeError, "bybit: unexpected HTTP %d", resp.StatusCode)
		}
		return errs.Wrap(err, errs.ExchangeError, "bybit: malformed answer")
	}
	switch {
	case a.RetCode == bybitTooMany || a.RetCode == bybitIPRateLimit:
		e := errs.New(errs.RateLimited, "bybit rate limit (retCode %d)", a.RetCode)
		e.RetryAfter = time.Second
		if ms, err := strconv.ParseInt(resp.Header.Get("X-Bapi-Limit-Reset-Timestamp"), 10, 64); err == nil {
			e.RetryAfter = max(time.Until(time.UnixMilli(ms)).Round(time.Second), time.Second)
		}
		return e
	case a.RetCode == bybitParamError && bybitUnknownSymbol(a.RetMsg):
		return unknownSymbol(kind, symbol)
	case a.RetCode != 0:
		return errs.New(errs.ExchangeError, "bybit rejected the request (retCode %d): %s", a.RetCode, clip(a.RetMsg, 200))
	case resp.StatusCode != http.StatusOK:
		return errs.New(errs.ExchangeError, "bybit: unexpected HTTP %d", resp.StatusCode)
	}
	if err := json.Unmarshal(a.Result, into); err != nil {
		return errs.Wrap(err, errs.ExchangeError, "bybit: malformed answer")
	}
	return nil
}

// bybitUnknownSymbol tells an unknown symbol among 10001's answers: "params error: symbol
// invalid" and "Not supported symbols".
func bybitUnknownSymbol(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "symbol")
}
