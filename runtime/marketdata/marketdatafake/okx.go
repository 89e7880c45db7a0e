package marketdatafake

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
)

var errNoHistory = errors.New("the fake's source keeps no history")

func decimalOf(n int64) decimal.Decimal { return decimal.NewFromInt(n) }

// okxBars are OKX's bar names (the UTC-aligned daily and weekly ones) of the spec's
// timeframes.
var okxBars = map[string]string{
	"1m": "1m", "5m": "5m", "15m": "15m", "30m": "30m", "1H": "1h", "4H": "4h", "1Dutc": "1d", "1Wutc": "1w",
}

// okxContracts is how many contracts of the fake's swaps make one base unit: swap candles
// count their vol in contracts and their volCcy in the base currency, as OKX's do.
const okxContracts = 100

func okxFail(w http.ResponseWriter, code, msg string) {
	writeJSON(w, http.StatusOK, map[string]any{"code": code, "msg": msg, "data": []any{}})
}

// okxSymbol reads an instId: BTC-USDT (spot) or BTC-USDT-SWAP (futures).
func okxSymbol(instID string) (exchange.Kind, string, bool) {
	kind := exchange.Spot
	if s, ok := strings.CutSuffix(instID, "-SWAP"); ok {
		kind, instID = exchange.Futures, s
	}
	base, quote, ok := strings.Cut(instID, "-")
	return kind, base + "/" + quote, ok && base != "" && quote != "" && !strings.Contains(quote, "-")
}

// serveOKX answers OKX's /api/v5/market/history-candles (rows of strings, newest first, at
// most 100, after = open times strictly earlier) and /api/v5/market/ticker.
func (s *Server) serveOKX(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch r.URL.Path {
	case "/api/v5/market/ticker":
		if s.down.Load() {
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
			return
		}
		kind, symbol, ok := okxSymbol(q.Get("instId"))
		p, err := s.src.Price(r.Context(), kind, symbol)
		if !ok || err != nil {
			okxFail(w, "51001", "Instrument ID or Spread ID doesn't exist.")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"code": "0", "msg": "", "data": []map[string]string{{
			"instType": map[exchange.Kind]string{exchange.Spot: "SPOT", exchange.Futures: "SWAP"}[kind],
			"instId":   q.Get("instId"), "last": p.String(), "ts": strconv.FormatInt(time.Now().UnixMilli(), 10)}}})
		return
	case "/api/v5/market/history-candles":
	default:
		http.NotFound(w, r)
		return
	}
	s.calls.Add(1)
	if s.down.Load() {
		http.Error(w, "upstream down", http.StatusServiceUnavailable)
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			okxFail(w, "51000", "Parameter limit error")
			return
		}
		limit = n
	}
	tf, ok := okxBars[q.Get("bar")]
	if !ok {
		okxFail(w, "51000", "Parameter bar error")
		return
	}
	kind, symbol, ok := okxSymbol(q.Get("instId"))
	if !ok {
		okxFail(w, "51001", "Instrument ID or Spread ID doesn't exist.")
		return
	}
	cs, err := s.okxCandles(r, kind, symbol, tf, limit)
	if err != nil {
		okxFail(w, "51001", "Instrument ID or Spread ID doesn't exist.")
		return
	}
	d, _ := marketdata.TimeframeDuration(tf)
	now := time.Now().UnixMilli()
	s.mu.Lock()
	rows := make([][]string, 0, len(cs)+len(s.dup))
	for i := len(cs) - 1; i >= 0; i-- { // newest first
		c := cs[i]
		if s.drop[c.Timestamp] {
			continue
		}
		n := 1
		if s.dup[c.Timestamp] {
			n = 2
		}
		vol, volCcy := c.Volume.String(), c.Volume.Mul(c.Close).String()
		if kind == exchange.Futures {
			vol, volCcy = c.Volume.Mul(decimalOf(okxContracts)).String(), c.Volume.String()
		}
		confirm := "1"
		if c.Timestamp+d.Milliseconds() > now {
			confirm = "0"
		}
		for range n {
			rows = append(rows, []string{strconv.FormatInt(c.Timestamp, 10), c.Open.String(), c.High.String(), c.Low.String(),
				c.Close.String(), vol, volCcy, c.Volume.Mul(c.Close).String(), confirm})
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"code": "0", "msg": "", "data": rows})
}

// okxCandles answers a request's candles oldest first: the newest limit, or, with after,
// the limit newest of those opening strictly before it, from the source's
// marketdata.History.
func (s *Server) okxCandles(r *http.Request, kind exchange.Kind, symbol, tf string, limit int) ([]marketdata.Candle, error) {
	v := r.URL.Query().Get("after")
	if v == "" {
		return s.src.Candles(r.Context(), kind, symbol, tf, limit)
	}
	after, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, err
	}
	h, ok := s.src.(marketdata.History)
	if !ok {
		return nil, errNoHistory
	}
	d, err := marketdata.TimeframeDuration(tf)
	if err != nil {
		return nil, err
	}
	from := time.UnixMilli(after).Add(-time.Duration(limit+1) * d)
	cs, err := h.CandlesBetween(r.Context(), kind, symbol, tf, from, time.UnixMilli(after))
	if err != nil || len(cs) <= limit {
		return cs, err
	}
	return cs[len(cs)-limit:], nil
}
