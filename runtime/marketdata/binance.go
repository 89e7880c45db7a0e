package marketdata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Binance's public market-data hosts.
const (
	BinanceSpotURL    = "https://api.binance.com"
	BinanceFuturesURL = "https://fapi.binance.com"
	// The testnets' hosts, where testnet keys trade (and whose klines they see).
	BinanceSpotTestnetURL    = "https://testnet.binance.vision"
	BinanceFuturesTestnetURL = "https://testnet.binancefuture.com"
)

// DefaultBinanceTimeout bounds one request: the spec allows an exchange call up to 2000 ms.
const DefaultBinanceTimeout = 2 * time.Second

// maxBinanceBody bounds a response read (1000 klines are about 150 KB).
const maxBinanceBody = 4 << 20

// BinancePublic reads prices and candles from Binance's public REST API (no key): spot
// /api/v3/ticker/price and /api/v3/klines, USDⓈ-M futures /fapi/v1/ticker/price and
// /fapi/v1/klines, and USDⓈ-M funding history /fapi/v1/fundingRate (funding.go). Prices
// and rates are Binance's decimal strings, parsed exactly. Errors: HTTP 429
// and 418 are RATE_LIMITED with RetryAfter from the Retry-After header; an invalid symbol
// (code -1121) is INVALID_SYMBOL wrapping ErrUnknownSymbol; other failures are
// EXCHANGE_ERROR; a cancelled caller context is returned as is.
type BinancePublic struct{ hosts }

// NewBinancePublic makes a provider on the given base URLs (empty: BinanceSpotURL and
// BinanceFuturesURL) and client (nil: a client of its own).
func NewBinancePublic(spotBaseURL, futuresBaseURL string, client *http.Client) *BinancePublic {
	if futuresBaseURL == "" {
		futuresBaseURL = BinanceFuturesURL
	}
	return &BinancePublic{newHosts(spotBaseURL, BinanceSpotURL, futuresBaseURL, client)}
}

// hosts are a public market-data venue's base URLs and HTTP client.
type hosts struct {
	spotURL, futuresURL string
	client              *http.Client
	// Timeout bounds each request (default DefaultBinanceTimeout, the spec's 2000 ms).
	Timeout time.Duration
}

// newHosts trims the base URLs: spot (empty: defaultSpot), futures (empty: the spot URL,
// for a venue that serves both markets on one host) and the client (nil: one of its own).
func newHosts(spot, defaultSpot, futures string, client *http.Client) hosts {
	if spot == "" {
		spot = defaultSpot
	}
	if futures == "" {
		futures = spot
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultBinanceTimeout}
	}
	return hosts{spotURL: strings.TrimRight(spot, "/"), futuresURL: strings.TrimRight(futures, "/"),
		client: client, Timeout: DefaultBinanceTimeout}
}

// Price is the last traded price (ticker/price).
func (b *BinancePublic) Price(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	pair, err := binancePair(kind, symbol)
	if err != nil {
		return decimal.Decimal{}, err
	}
	var resp struct {
		Symbol string          `json:"symbol"`
		Price  decimal.Decimal `json:"price"`
	}
	if err := b.get(ctx, kind, symbol, "ticker/price", url.Values{"symbol": {pair}}, &resp); err != nil {
		return decimal.Decimal{}, err
	}
	if resp.Symbol != pair || !resp.Price.IsPositive() {
		return decimal.Decimal{}, errs.New(errs.ExchangeError, "binance: unexpected ticker for %s", pair)
	}
	return resp.Price, nil
}

// Candles are Binance's klines, oldest first, the last one open.
func (b *BinancePublic) Candles(ctx context.Context, kind exchange.Kind, symbol, timeframe string, limit int) ([]Candle, error) {
	if _, err := binancePair(kind, symbol); err != nil {
		return nil, err
	}
	if _, err := TimeframeDuration(timeframe); err != nil {
		return nil, err // Binance's interval names are the spec's
	}
	limit = clampLimit(limit, MaxLimit)
	return b.klines(ctx, kind, symbol, url.Values{"interval": {timeframe}, "limit": {strconv.Itoa(limit)}})
}

// klines asks for the klines q selects (interval, limit, and startTime/endTime or none) of
// symbol, oldest first.
func (b *BinancePublic) klines(ctx context.Context, kind exchange.Kind, symbol string, q url.Values) ([]Candle, error) {
	pair, err := binancePair(kind, symbol)
	if err != nil {
		return nil, err
	}
	q.Set("symbol", pair)
	var rows [][]json.RawMessage
	if err := b.get(ctx, kind, symbol, "klines", q, &rows); err != nil {
		return nil, err
	}
	out := make([]Candle, 0, len(rows))
	for i, row := range rows {
		c, err := parseKline(row)
		if err != nil {
			return nil, errs.Wrap(err, errs.ExchangeError, "binance: malformed kline %d for %s", i, pair)
		}
		out = append(out, c)
	}
	return out, nil
}

// parseKline reads [openTime, "open", "high", "low", "close", "volume", ...]: Binance's row,
// whose open time is a number, and Bybit's, whose open time is a string.
func parseKline(row []json.RawMessage) (Candle, error) {
	if len(row) < 6 {
		return Candle{}, fmt.Errorf("%d fields", len(row))
	}
	var c Candle
	ts := bytes.Trim(row[0], `"`)
	if err := json.Unmarshal(ts, &c.Timestamp); err != nil {
		return Candle{}, fmt.Errorf("open time: %w", err)
	}
	c.Time = floorDiv(c.Timestamp, 1000)
	for i, dst := range []*decimal.Decimal{&c.Open, &c.High, &c.Low, &c.Close, &c.Volume} {
		var s string
		if err := json.Unmarshal(row[i+1], &s); err != nil {
			return Candle{}, fmt.Errorf("field %d: %w", i+1, err)
		}
		d, err := decimal.NewFromString(s)
		if err != nil {
			return Candle{}, fmt.Errorf("field %d: %w", i+1, err)
		}
		*dst = d
	}
	return c, nil
}

// binancePair turns BASE/QUOTE into Binance's BASEQUOTE.
func binancePair(kind exchange.Kind, symbol string) (string, error) {
	if err := checkKind(kind); err != nil {
		return "", err
	}
	pair := strings.ToUpper(strings.NewReplacer("/", "", "-", "", "_", "").Replace(strings.TrimSpace(symbol)))
	if pair == "" || len(pair) > 20 {
		return "", unknownSymbol(kind, symbol)
	}
	for _, r := range pair {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return "", unknownSymbol(kind, symbol)
		}
	}
	return pair, nil
}

type binanceError struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// Binance's "Invalid symbol." code.
const binanceInvalidSymbol = -1121

func (b *BinancePublic) get(ctx context.Context, kind exchange.Kind, symbol, endpoint string, q url.Values, into any) error {
	u := b.spotURL + "/api/v3/" + endpoint
	if kind == exchange.Futures {
		u = b.futuresURL + "/fapi/v1/" + endpoint
	}
	resp, body, err := publicGet(ctx, b.client, b.Timeout, "binance", u+"?"+q.Encode())
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusTeapot:
		e := errs.New(errs.RateLimited, "binance rate limit (HTTP %d)", resp.StatusCode)
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
		return e
	case resp.StatusCode >= 400:
		var be binanceError
		_ = json.Unmarshal(body, &be)
		if be.Code == binanceInvalidSymbol {
			return unknownSymbol(kind, symbol)
		}
		return errs.New(errs.ExchangeError, "binance rejected the request (HTTP %d, code %d): %s", resp.StatusCode, be.Code, clip(be.Msg, 200))
	case resp.StatusCode != http.StatusOK:
		return errs.New(errs.ExchangeError, "binance: unexpected HTTP %d", resp.StatusCode)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return errs.Wrap(err, errs.ExchangeError, "binance: malformed answer")
	}
	return nil
}

// publicGet sends one GET of a venue's public API, bounded by timeout (<= 0:
// DefaultBinanceTimeout), and returns the answer with its body for the venue to read.
// What every venue means alike is answered here: a cancelled caller gets its context's
// error; no answer, an unreadable body or a 5xx is EXCHANGE_ERROR; 429 is RATE_LIMITED
// with Retry-After.
func publicGet(ctx context.Context, client *http.Client, timeout time.Duration, venue, u string) (*http.Response, []byte, error) {
	if timeout <= 0 {
		timeout = DefaultBinanceTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, errs.Wrap(err, errs.InternalError, "%s: bad request", venue)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sigops-marketdata")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, errs.Wrap(err, errs.ExchangeError, "%s: no answer within %s", venue, timeout)
		}
		return nil, nil, errs.Wrap(err, errs.ExchangeError, "%s unreachable", venue)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBinanceBody))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, errs.Wrap(err, errs.ExchangeError, "%s: reading the answer", venue)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e := errs.New(errs.RateLimited, "%s rate limit (HTTP %d)", venue, resp.StatusCode)
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
		return nil, nil, e
	case resp.StatusCode >= 500:
		return nil, nil, errs.New(errs.ExchangeError, "%s unavailable (HTTP %d)", venue, resp.StatusCode)
	}
	return resp, body, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// retryAfter reads Retry-After in seconds (Binance's form) or as an HTTP date; absent or
// unreadable, one minute.
func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second)
		}
		return 0
	}
	return time.Minute
}
