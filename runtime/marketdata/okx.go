package marketdata

import (
	"context"
	"encoding/json"
	"fmt"
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

// OKXURL is OKX's REST host: one host serves spot and swaps (and demo trading, with a
// header; public market data needs none).
const OKXURL = "https://www.okx.com"

// FlagOKX is the flag value of HistoryFromFlag for OKXPublic.
const FlagOKX = "okx"

// okxPage is the most candles /api/v5/market/history-candles answers a request.
const okxPage = 100

// okxRateLimitWait is how long a rate-limited caller waits: OKX counts its limits per 2
// seconds and sends no reset header.
const okxRateLimitWait = 2 * time.Second

// okxBars are OKX's bar names of the spec's timeframes. Daily and weekly candles are OKX's
// UTC ones (1Dutc, 1Wutc): its 1D and 1W open at 00:00 UTC+8, whereas sigops aligns candles
// to UTC (weeks to Monday 00:00 UTC).
var okxBars = map[string]string{
	"1m": "1m", "5m": "5m", "15m": "15m", "30m": "30m", "1h": "1H", "4h": "4H", "1d": "1Dutc", "1w": "1Wutc",
}

// OKXPublic reads prices and candles from OKX's public v5 market API (no key):
// /api/v5/market/ticker and /api/v5/market/history-candles, instId BASE-QUOTE on spot and
// BASE-QUOTE-SWAP (the perpetual swap) for exchange.Futures, and the swaps' funding history
// /api/v5/public/funding-rate-history (funding.go). OKX answers numbers as decimal
// strings, parsed exactly, and candles newest first, at most 100 a request, which Candles
// pages backward (after = the oldest open time so far) and turns round. A candle's volume is
// in the base currency: vol on spot, volCcy on swaps (whose vol counts contracts). Errors:
// 50011 and HTTP 429 are RATE_LIMITED; an unknown instrument (51001) is INVALID_SYMBOL
// wrapping ErrUnknownSymbol; other failures are EXCHANGE_ERROR; a cancelled caller context
// is returned as is.
type OKXPublic struct{ hosts }

// NewOKXPublic makes a provider on the given base URLs (empty spot: OKXURL; empty swaps:
// the spot URL) and client (nil: a client of its own).
func NewOKXPublic(spotBaseURL, swapBaseURL string, client *http.Client) *OKXPublic {
	return &OKXPublic{newHosts(spotBaseURL, OKXURL, swapBaseURL, client)}
}

// okxInstID turns BASE/QUOTE into OKX's instId: BTC-USDT, or BTC-USDT-SWAP for futures.
func okxInstID(kind exchange.Kind, symbol string) (string, error) {
	if err := checkKind(kind); err != nil {
		return "", err
	}
	s := strings.ToUpper(strings.TrimSpace(symbol))
	base, quote, ok := strings.Cut(strings.ReplaceAll(s, "-", "/"), "/")
	if !ok || base == "" || quote == "" || len(s) > 24 {
		return "", unknownSymbol(kind, symbol)
	}
	for _, r := range base + quote {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return "", unknownSymbol(kind, symbol)
		}
	}
	id := base + "-" + quote
	if kind == exchange.Futures {
		id += "-SWAP"
	}
	return id, nil
}

// Price is the last traded price (ticker's last).
func (o *OKXPublic) Price(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	inst, err := okxInstID(kind, symbol)
	if err != nil {
		return decimal.Decimal{}, err
	}
	var res []struct {
		InstID string          `json:"instId"`
		Last   decimal.Decimal `json:"last"`
	}
	if err := o.get(ctx, kind, symbol, "market/ticker", url.Values{"instId": {inst}}, &res); err != nil {
		return decimal.Decimal{}, err
	}
	if len(res) != 1 || res[0].InstID != inst || !res[0].Last.IsPositive() {
		return decimal.Decimal{}, errs.New(errs.ExchangeError, "okx: unexpected ticker for %s", inst)
	}
	return res[0].Last, nil
}

// Candles are OKX's candles oldest first, the last one possibly open, paged backward 100 a
// request up to limit.
func (o *OKXPublic) Candles(ctx context.Context, kind exchange.Kind, symbol, timeframe string, limit int) ([]Candle, error) {
	if _, err := okxInstID(kind, symbol); err != nil {
		return nil, err
	}
	bar, ok := okxBars[timeframe]
	if !ok {
		return nil, badTimeframe(timeframe)
	}
	limit = clampLimit(limit, MaxLimit)
	var all []Candle // newest first
	after := int64(0)
	for len(all) < limit {
		want := min(okxPage, limit-len(all))
		q := url.Values{"bar": {bar}, "limit": {strconv.Itoa(want)}}
		if after > 0 {
			q.Set("after", strconv.FormatInt(after, 10))
		}
		page, err := o.candles(ctx, kind, symbol, q)
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			if after == 0 || c.Timestamp < after {
				all = append(all, c)
			}
		}
		if len(page) < want {
			break
		}
		oldest := page[len(page)-1].Timestamp
		if after != 0 && oldest >= after {
			break // the page did not advance
		}
		after = oldest
	}
	if len(all) > limit {
		all = all[:limit]
	}
	slices.Reverse(all)
	return dedupe(all), nil
}

// dedupe drops repeated open times of candles sorted oldest first.
func dedupe(cs []Candle) []Candle {
	out := cs[:0]
	for _, c := range cs {
		if len(out) > 0 && out[len(out)-1].Timestamp == c.Timestamp {
			continue
		}
		out = append(out, c)
	}
	return out
}

// CandlesBetween pages through OKX's candles backward from the period's end (after = the
// end, then the oldest open time so far), 100 a request, at most MaxHistoryCandles/100 + 2
// requests.
func (o *OKXPublic) CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, timeframe string, from, to time.Time) ([]Candle, error) {
	tf, err := checkHistory(kind, timeframe, from, to)
	if err != nil {
		return nil, err
	}
	if _, err := okxInstID(kind, symbol); err != nil {
		return nil, err
	}
	bar := okxBars[timeframe]
	first, end := historyBounds(tf, from, to)
	var all []Candle
	for after, page := end, 0; after > first; page++ {
		if page == MaxHistoryCandles/okxPage+2 {
			return nil, errs.New(errs.ExchangeError, "okx: candle pages did not advance within %d requests", page)
		}
		cs, err := o.candles(ctx, kind, symbol, url.Values{"bar": {bar}, "limit": {strconv.Itoa(okxPage)},
			"after": {strconv.FormatInt(after, 10)}})
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
		if len(cs) < okxPage {
			break
		}
		oldest := cs[len(cs)-1].Timestamp
		if oldest >= after {
			return nil, errs.New(errs.ExchangeError, "okx: candle pages did not advance")
		}
		after = oldest
	}
	return tidyHistory(all, tf, first, end, time.Now().UnixMilli()), nil
}

// candles asks for one page of history-candles (newest first, as OKX answers them).
func (o *OKXPublic) candles(ctx context.Context, kind exchange.Kind, symbol string, q url.Values) ([]Candle, error) {
	inst, err := okxInstID(kind, symbol)
	if err != nil {
		return nil, err
	}
	q.Set("instId", inst)
	var rows [][]string
	if err := o.get(ctx, kind, symbol, "market/history-candles", q, &rows); err != nil {
		return nil, err
	}
	out := make([]Candle, 0, len(rows))
	for i, row := range rows {
		c, err := parseOKXCandle(kind, row)
		if err != nil {
			return nil, errs.Wrap(err, errs.ExchangeError, "okx: malformed candle %d for %s", i, inst)
		}
		out = append(out, c)
	}
	return out, nil
}

// parseOKXCandle reads [ts, o, h, l, c, vol, volCcy, volCcyQuote, confirm]: the volume in
// the base currency is vol on spot and volCcy on swaps.
func parseOKXCandle(kind exchange.Kind, row []string) (Candle, error) {
	if len(row) < 7 {
		return Candle{}, fmt.Errorf("%d fields", len(row))
	}
	var c Candle
	ts, err := strconv.ParseInt(row[0], 10, 64)
	if err != nil {
		return Candle{}, fmt.Errorf("open time: %w", err)
	}
	c.Timestamp, c.Time = ts, floorDiv(ts, 1000)
	vol := row[5]
	if kind == exchange.Futures {
		vol = row[6]
	}
	for i, f := range []struct {
		dst *decimal.Decimal
		s   string
	}{{&c.Open, row[1]}, {&c.High, row[2]}, {&c.Low, row[3]}, {&c.Close, row[4]}, {&c.Volume, vol}} {
		d, err := decimal.NewFromString(f.s)
		if err != nil {
			return Candle{}, fmt.Errorf("field %d: %w", i+1, err)
		}
		*f.dst = d
	}
	return c, nil
}

// okxAnswer is v5's envelope.
type okxAnswer struct {
	Code string          `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// OKX's codes that the public endpoints answer.
const (
	okxRateLimit     = "50011" // rate limit reached
	okxNoInstrument  = "51001" // instrument ID doesn't exist
	okxParamError    = "51000" // parameter {param0} error
	okxInstParamName = "instid"
)

// get asks for endpoint under /api/v5/ ("market/ticker", "public/funding-rate-history").
func (o *OKXPublic) get(ctx context.Context, kind exchange.Kind, symbol, endpoint string, q url.Values, into any) error {
	u := o.spotURL
	if kind == exchange.Futures {
		u = o.futuresURL
	}
	resp, body, err := publicGet(ctx, o.client, o.Timeout, "okx", u+"/api/v5/"+endpoint+"?"+q.Encode())
	if err != nil {
		if e, ok := errs.As(err); ok && e.Code == errs.RateLimited {
			e.RetryAfter = max(e.RetryAfter, okxRateLimitWait)
		}
		return err
	}
	var a okxAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.Code == "" {
		if resp.StatusCode != http.StatusOK {
			return errs.New(errs.ExchangeError, "okx: unexpected HTTP %d", resp.StatusCode)
		}
		return errs.New(errs.ExchangeError, "okx: malformed answer")
	}
	switch {
	case a.Code == okxRateLimit:
		e := errs.New(errs.RateLimited, "okx rate limit (code %s)", a.Code)
		e.RetryAfter = okxRateLimitWait
		return e
	case a.Code == okxNoInstrument, a.Code == okxParamError && strings.Contains(strings.ToLower(a.Msg), okxInstParamName):
		return unknownSymbol(kind, symbol)
	case a.Code != "0":
		return errs.New(errs.ExchangeError, "okx rejected the request (code %s): %s", a.Code, clip(a.Msg, 200))
	case resp.StatusCode != http.StatusOK:
		return errs.New(errs.ExchangeError, "okx: unexpected HTTP %d", resp.StatusCode)
	}
	if err := json.Unmarshal(a.Data, into); err != nil {
		return errs.Wrap(err, errs.ExchangeError, "okx: malformed answer")
	}
	return nil
}
