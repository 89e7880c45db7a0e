// Package marketdatafake is a fake of Binance's and Bybit's public kline endpoints for
// tests: an HTTP handler answering GET /api/v3/klines, /fapi/v1/klines (Binance: rows
// oldest first, numbers for times, strings for prices) and /v5/market/kline (Bybit: a
// retCode envelope, rows newest first, every field a string) and Bybit's /v5/market/tickers,
// and OKX's /api/v5/market/history-candles and /api/v5/market/ticker (okx.go), with the
// data of a marketdata.Provider (a Simulated market on the test's clock); and the three
// venues' funding histories, /fapi/v1/fundingRate, /v5/market/funding/history and
// /api/v5/public/funding-rate-history (funding.go), from the source's
// marketdata.FundingHistory. It counts the kline and funding requests it answers, and can
// be told to fail (5xx), to leave candles or settlements out or to repeat them, as real
// venues sometimes do. A request with a time range is answered from the source's
// marketdata.History.
package marketdatafake

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
)

// Server is the fake. Its zero value is not usable: use New.
type Server struct {
	src marketdata.Provider

	calls atomic.Int64
	down  atomic.Bool
	// delay, when set, is waited before answering (a slow venue).
	delay atomic.Int64

	mu   sync.Mutex
	drop map[int64]bool // open times (ms) left out of every answer
	dup  map[int64]bool // open times (ms) answered twice
}

// New serves src's candles.
func New(src marketdata.Provider) *Server {
	return &Server{src: src, drop: map[int64]bool{}, dup: map[int64]bool{}}
}

// Calls is the number of kline and funding requests answered (failures included).
func (s *Server) Calls() int64 { return s.calls.Load() }

// SetDown makes every answer a 503 (true) or normal again (false).
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// SetDelay makes every answer wait d first.
func (s *Server) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Drop leaves the candle opening at t, and the funding settlement at t, out of every answer
// (no trade in that interval).
func (s *Server) Drop(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop[t.UnixMilli()] = true
}

// Duplicate answers the candle opening at t, and the funding settlement at t, twice.
func (s *Server) Duplicate(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dup[t.UnixMilli()] = true
}

var bybitIntervals = map[string]string{
	"1": "1m", "5": "5m", "15": "15m", "30": "30m", "60": "1h", "240": "4h", "D": "1d", "W": "1w",
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if s.serveFunding(w, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/v5/") {
		s.serveOKX(w, r)
		return
	}
	q := r.URL.Query()
	var kind exchange.Kind
	var tf string
	bybit := false
	switch r.URL.Path {
	case "/api/v3/klines":
		kind, tf = exchange.Spot, q.Get("interval")
	case "/fapi/v1/klines":
		kind, tf = exchange.Futures, q.Get("interval")
	case "/v5/market/tickers":
		if s.down.Load() {
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
			return
		}
		s.bybitTicker(w, r)
		return
	case "/v5/market/kline":
		bybit = true
		tf = bybitIntervals[q.Get("interval")]
		switch q.Get("category") {
		case "spot":
			kind = exchange.Spot
		case "linear":
			kind = exchange.Futures
		default:
			writeJSON(w, http.StatusOK, map[string]any{"retCode": 10001, "retMsg": "params error: category invalid", "result": map[string]any{}})
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	s.calls.Add(1)
	if s.down.Load() {
		http.Error(w, "upstream down", http.StatusServiceUnavailable)
		return
	}
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit < 1 || limit > 1000 {
		if bybit {
			writeJSON(w, http.StatusOK, map[string]any{"retCode": 10001, "retMsg": "params error: limit invalid", "result": map[string]any{}})
		} else {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": -1100, "msg": "Illegal characters found in parameter 'limit'."})
		}
		return
	}
	pair := q.Get("symbol")
	symbol := pair
	if strings.HasSuffix(pair, "USDT") {
		symbol = strings.TrimSuffix(pair, "USDT") + "/USDT"
	}
	cs, err := s.candles(r, kind, symbol, tf, limit, bybit)
	if err != nil {
		switch {
		case bybit:
			writeJSON(w, http.StatusOK, map[string]any{"retCode": 10001, "retMsg": "Not supported symbols", "result": map[string]any{}})
		default:
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": -1121, "msg": "Invalid symbol."})
		}
		return
	}
	s.mu.Lock()
	rows := make([][]any, 0, len(cs)+len(s.dup))
	for _, c := range cs {
		if s.drop[c.Timestamp] {
			continue
		}
		n := 1
		if s.dup[c.Timestamp] {
			n = 2
		}
		for range n {
			if bybit {
				rows = append(rows, []any{strconv.FormatInt(c.Timestamp, 10), c.Open.String(), c.High.String(),
					c.Low.String(), c.Close.String(), c.Volume.String(), c.Volume.Mul(c.Close).String()})
			} else {
				rows = append(rows, []any{c.Timestamp, c.Open.String(), c.High.String(), c.Low.String(),
					c.Close.String(), c.Volume.String(), c.Timestamp + 1, "0", 1, "0", "0", "0"})
			}
		}
	}
	s.mu.Unlock()
	if !bybit {
		writeJSON(w, http.StatusOK, rows)
		return
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 { // Bybit: newest first
		rows[i], rows[j] = rows[j], rows[i]
	}
	writeJSON(w, http.StatusOK, map[string]any{"retCode": 0, "retMsg": "OK",
		"result":     map[string]any{"category": q.Get("category"), "symbol": pair, "list": rows},
		"retExtInfo": map[string]any{}, "time": time.Now().UnixMilli()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// bybitTicker answers /v5/market/tickers with src's price as lastPrice.
func (s *Server) bybitTicker(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind := exchange.Spot
	if q.Get("category") == "linear" {
		kind = exchange.Futures
	}
	pair := q.Get("symbol")
	p, err := s.src.Price(r.Context(), kind, strings.TrimSuffix(pair, "USDT")+"/USDT")
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"retCode": 10001, "retMsg": "Not supported symbols", "result": map[string]any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"retCode": 0, "retMsg": "OK", "result": map[string]any{
		"category": q.Get("category"), "list": []map[string]any{{"symbol": pair, "lastPrice": p.String()}}}})
}

// candles answers a request's candles: the newest limit, or, with a range (Binance's
// startTime and endTime, Bybit's start and end; open times, both included), the range's
// first limit (Binance) or last limit (Bybit, which pages backward) from the source's
// marketdata.History.
func (s *Server) candles(r *http.Request, kind exchange.Kind, symbol, tf string, limit int, bybit bool) ([]marketdata.Candle, error) {
	q := r.URL.Query()
	startKey, endKey := "startTime", "endTime"
	if bybit {
		startKey, endKey = "start", "end"
	}
	if q.Get(startKey) == "" && q.Get(endKey) == "" {
		return s.src.Candles(r.Context(), kind, symbol, tf, limit)
	}
	h, ok := s.src.(marketdata.History)
	if !ok {
		return nil, errors.New("the fake's source keeps no history")
	}
	start, err1 := strconv.ParseInt(q.Get(startKey), 10, 64)
	end, err2 := strconv.ParseInt(q.Get(endKey), 10, 64)
	if err1 != nil || err2 != nil {
		return nil, errors.New("bad range")
	}
	cs, err := h.CandlesBetween(r.Context(), kind, symbol, tf, time.UnixMilli(start), time.UnixMilli(end+1))
	if err != nil || len(cs) <= limit {
		return cs, err
	}
	if bybit {
		return cs[len(cs)-limit:], nil
	}
	return cs[:limit], nil
}
