package readapi

import (
	"net/http"

	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/httpapi"
)

// CandlesPath serves a symbol's candles.
const CandlesPath = "/api/charts/candles"

// handleCandles is GET /api/charts/candles?symbol=&exchangeId=&timeframe=&limit=&market=:
// the series runtime/candles computes. Anyone may read an exchange's public candles; an
// exchangeId that is not an exchange name is one of the caller's exchange connections, so
// the caller is identified then (no caller, or another user's connection: 404 like an
// unknown exchange; a bad token: 401).
func (a *API) handleCandles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := candles.ParseLimit(q.Get("limit"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	req := candles.Request{Symbol: q.Get("symbol"), ExchangeID: q.Get("exchangeId"),
		Timeframe: q.Get("timeframe"), Limit: limit, Market: q.Get("market")}
	if req.ExchangeID != "" && !candles.IsExchangeName(req.ExchangeID) {
		c, ok, err := a.optionalCaller(w, r)
		if err != nil {
			return
		}
		if ok {
			req.Owner = c.Email
		}
	}
	res, err := a.o.Candles.Get(r.Context(), req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body, err := res.MarshalJSON()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteRawData(w, body)
}
