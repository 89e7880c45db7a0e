package marketdatafake

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
)

// The venues' funding-history endpoints, answered from the source's
// marketdata.FundingHistory. Each check below is a rule the venue publishes, quoted beside
// it from its API documentation:
//
//   - Binance: developers.binance.com, USDⓈ-M futures, market data, "Get Funding Rate History".
//   - Bybit: bybit-exchange.github.io/docs/v5/market/history-fund-rate.
//   - OKX: www.okx.com/docs-v5, public data, "Get funding rate history".
//
// Where a venue documents an answer the fake does not model (Binance's every-symbol answer),
// the fake refuses rather than invent one: it never accepts what the venue would refuse,
// and refuses only what its clients never send. The refusals' messages are the fake's
// words in the venue's error shape; the venues document that they refuse, not the words.
const (
	binanceFundingPath = "/fapi/v1/fundingRate"
	bybitFundingPath   = "/v5/market/funding/history"
	okxFundingPath     = "/api/v5/public/funding-rate-history"
)

// okxFundingRetention is how far back OKX answers: "This endpoint can retrieve data from
// the last 3 months."
const okxFundingRetention = 90 * 24 * time.Hour

var errNoFunding = errors.New("the fake's source keeps no funding history")

// serveFunding answers the funding endpoints (counted in Calls); false for another path.
func (s *Server) serveFunding(w http.ResponseWriter, r *http.Request) bool {
	var serve func(http.ResponseWriter, *http.Request, url.Values)
	switch r.URL.Path {
	case binanceFundingPath:
		serve = s.binanceFunding
	case bybitFundingPath:
		serve = s.bybitFunding
	case okxFundingPath:
		serve = s.okxFunding
	default:
		return false
	}
	s.calls.Add(1)
	if s.down.Load() {
		http.Error(w, "upstream down", http.StatusServiceUnavailable)
		return true
	}
	serve(w, r, r.URL.Query())
	return true
}

// binanceFunding answers GET /fapi/v1/fundingRate: an array of {symbol, fundingRate,
// fundingTime, markPrice}, "In ascending order", fundingTime a number, the others strings.
func (s *Server) binanceFunding(w http.ResponseWriter, r *http.Request, q url.Values) {
	fail := func(code int, msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": code, "msg": msg})
	}
	pair := q.Get("symbol")
	if pair == "" { // optional at Binance, which then answers every symbol's: not modelled
		fail(-1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
		return
	}
	limit, ok := limitParam(q, 100, 1000) // limit: "Default 100; max 1000"
	if !ok {
		fail(-1130, "Data sent for parameter 'limit' is not valid.")
		return
	}
	// startTime, endTime: LONG, "Timestamp in ms to get funding rate from INCLUSIVE" and
	// "until INCLUSIVE".
	start, hasStart, ok1 := msParam(q, "startTime")
	end, hasEnd, ok2 := msParam(q, "endTime")
	if !ok1 || !ok2 {
		fail(-1100, "Illegal characters found in parameter 'startTime' or 'endTime'; legal range is '^[0-9]{1,20}$'.")
		return
	}
	symbol := usdtSymbol(pair)
	if !hasEnd {
		end = s.sourceNow(r, symbol)
	}
	// "If startTime and endTime are not sent, the most recent limit datas are returned."
	// "If the number of data between startTime and endTime is larger than limit, return as
	// startTime + limit." With endTime alone (undocumented) the fake answers the newest.
	rs, err := s.settlements(r, symbol, start, end, limit, !hasStart)
	if err != nil {
		if errors.Is(err, marketdata.ErrUnknownSymbol) {
			fail(-1121, "Invalid symbol.")
		} else {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	pricer, _ := s.src.(interface {
		PriceAt(exchange.Kind, string, time.Time) (decimal.Decimal, error)
	})
	rows := make([]map[string]any, 0, len(rs))
	for _, f := range rs {
		mark := ""
		if pricer != nil {
			if p, err := pricer.PriceAt(exchange.Futures, symbol, time.UnixMilli(f.Time)); err == nil {
				mark = p.StringFixed(8)
			}
		}
		rows = append(rows, map[string]any{"symbol": pair, "fundingRate": f.Rate.StringFixed(8),
			"fundingTime": f.Time, "markPrice": mark})
	}
	writeJSON(w, http.StatusOK, rows)
}

// bybitFunding answers GET /v5/market/funding/history: result.list of {symbol,
// fundingRate, fundingRateTimestamp}, every field a string, newest first.
func (s *Server) bybitFunding(w http.ResponseWriter, r *http.Request, q url.Values) {
	fail := func(msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"retCode": 10001, "retMsg": msg, "result": map[string]any{}})
	}
	category := q.Get("category") // required: "Product type. linear,inverse"
	if category != "linear" && category != "inverse" {
		fail("params error: category invalid")
		return
	}
	pair := q.Get("symbol") // required: "Symbol name, like BTCUSDT, uppercase only"
	if pair == "" || pair != strings.ToUpper(pair) {
		fail("params error: symbol invalid")
		return
	}
	limit, ok := limitParam(q, 200, 200) // limit: "[1, 200]. Default: 200"
	if !ok {
		fail("params error: limit invalid")
		return
	}
	start, hasStart, ok1 := msParam(q, "startTime") // integer, "The start timestamp (ms)"
	end, hasEnd, ok2 := msParam(q, "endTime")       // integer, "The end timestamp (ms)"
	switch {
	case !ok1 || !ok2:
		fail("params error: startTime or endTime invalid")
		return
	case hasStart && !hasEnd: // "Passing only startTime returns an error."
		fail("params error: startTime needs endTime")
		return
	}
	symbol := usdtSymbol(pair)
	if !hasEnd { // "Passing neither returns 200 records up till the current time."
		end = s.sourceNow(r, symbol)
	}
	var rs []marketdata.FundingRate
	err := marketdata.ErrUnknownSymbol // the fake's contracts are all linear (USDT)
	if category == "linear" {
		// "Passing only endTime returns 200 records up till endTime": the newest first.
		rs, err = s.settlements(r, symbol, start, end, limit, true)
	}
	if err != nil {
		if errors.Is(err, marketdata.ErrUnknownSymbol) {
			fail("Not supported symbols")
		} else {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	list := make([]map[string]string, 0, len(rs))
	for _, f := range slices.Backward(rs) {
		list = append(list, map[string]string{"symbol": pair, "fundingRate": f.Rate.String(),
			"fundingRateTimestamp": strconv.FormatInt(f.Time, 10)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"retCode": 0, "retMsg": "OK",
		"result":     map[string]any{"category": category, "list": list},
		"retExtInfo": map[string]any{}, "time": time.Now().UnixMilli()})
}

// okxFunding answers GET /api/v5/public/funding-rate-history: data of {instType, instId,
// formulaType, fundingRate, realizedRate, fundingTime, method}, every field a string, newest
// first.
func (s *Server) okxFunding(w http.ResponseWriter, r *http.Request, q url.Values) {
	// instId: required, "e.g. BTC-USD-SWAP, only applicable to SWAP".
	kind, symbol, ok := okxSymbol(q.Get("instId"))
	if !ok || kind != exchange.Futures {
		okxFail(w, "51001", "Instrument ID or Spread ID doesn't exist.")
		return
	}
	limit, ok := limitParam(q, 100, 100) // "The maximum is 100; The default is 100"
	if !ok {
		okxFail(w, "51000", "Parameter limit error")
		return
	}
	// before: "records newer than the requested fundingTime"; after: "records earlier than
	// the requested fundingTime"; fundingTime is ms.
	before, hasBefore, ok1 := msParam(q, "before")
	after, hasAfter, ok2 := msParam(q, "after")
	if !ok1 || !ok2 {
		okxFail(w, "51000", "Parameter before or after error")
		return
	}
	now := s.sourceNow(r, symbol)
	lo, hi := now-okxFundingRetention.Milliseconds(), now // "data from the last 3 months"
	if hasBefore {
		lo = max(lo, before+1)
	}
	if hasAfter {
		hi = min(hi, after-1)
	}
	// Newest first, the newest limit (with before alone too: undocumented).
	rs, err := s.settlements(r, symbol, lo, hi, limit, true)
	if err != nil {
		if errors.Is(err, marketdata.ErrUnknownSymbol) {
			okxFail(w, "51001", "Instrument ID or Spread ID doesn't exist.")
		} else {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	data := make([]map[string]string, 0, len(rs))
	for _, f := range slices.Backward(rs) {
		rate := f.Rate.String()
		data = append(data, map[string]string{"instType": "SWAP", "instId": q.Get("instId"), "formulaType": "withRate",
			"fundingRate": rate, "realizedRate": rate, "fundingTime": strconv.FormatInt(f.Time, 10), "method": "current_period"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": "0", "msg": "", "data": data})
}

// settlements are the source's settlements in [a, b] (ms, both included) with the fake's
// drops and repeats, oldest first: the first limit of them, or the last limit (newest).
func (s *Server) settlements(r *http.Request, symbol string, a, b int64, limit int, newest bool) ([]marketdata.FundingRate, error) {
	h, ok := s.src.(marketdata.FundingHistory)
	if !ok {
		return nil, errNoFunding
	}
	// One read of at most MaxFundingPeriod from the end the answer starts at: more than any
	// limit at hourly settlements.
	span := marketdata.MaxFundingPeriod.Milliseconds()
	if newest {
		a = max(a, b-span+1)
	} else {
		b = min(b, a+span-1)
	}
	a = max(a, 0)
	if a > b {
		if _, err := h.FundingBetween(r.Context(), symbol, time.UnixMilli(0), time.UnixMilli(1)); err != nil {
			return nil, err // still an unknown symbol
		}
		return nil, nil
	}
	rs, err := h.FundingBetween(r.Context(), symbol, time.UnixMilli(a), time.UnixMilli(b+1))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	out := make([]marketdata.FundingRate, 0, len(rs))
	for _, f := range rs {
		switch {
		case s.drop[f.Time]:
		case s.dup[f.Time]:
			out = append(out, f, f)
		default:
			out = append(out, f)
		}
	}
	s.mu.Unlock()
	if len(out) > limit {
		if newest {
			return out[len(out)-limit:], nil
		}
		return out[:limit], nil
	}
	return out, nil
}

// sourceNow is the source's clock (ms), read from its open candle: the last millisecond of
// the minute now is in (a test clock need not be the wall clock's).
func (s *Server) sourceNow(r *http.Request, symbol string) int64 {
	cs, err := s.src.Candles(r.Context(), exchange.Futures, symbol, "1m", 1)
	if err != nil || len(cs) == 0 {
		return time.Now().UnixMilli()
	}
	return cs[len(cs)-1].Timestamp + time.Minute.Milliseconds() - 1
}

// usdtSymbol reads Binance's and Bybit's BTCUSDT as BTC/USDT.
func usdtSymbol(pair string) string {
	if base, ok := strings.CutSuffix(pair, "USDT"); ok && base != "" {
		return base + "/USDT"
	}
	return pair
}

// limitParam reads limit: def when absent, refused outside [1, max].
func limitParam(q url.Values, def, max int) (int, bool) {
	v := q.Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= max
}

// msParam reads an optional timestamp in ms: digits only (an integer), or refused.
func msParam(q url.Values, key string) (v int64, set, ok bool) {
	s := q.Get(key)
	if s == "" {
		return 0, false, true
	}
	if strings.TrimLeft(s, "0123456789") != "" || len(s) > 20 {
		return 0, true, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, true, err == nil
}
