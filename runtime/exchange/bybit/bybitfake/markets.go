package bybitfake

import (
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// instrument is a symbol of the fake catalogue, with Bybit's filters.
type instrument struct {
	category, symbol, base, quote, settle string
	contractType, status                  string
	tick                                  string
	// spot
	basePrecision, minAmt string
	// linear
	qtyStep, minNotional, maxLeverage string
	minQty, maxQty                    string
}

// The catalogue: real-looking filters (BTCUSDT spot tick 0.01, basePrecision 0.000001;
// linear BTCUSDT tick 0.10, qtyStep 0.001), and instruments the adapter must leave out
// (not Trading, dated futures).
var catalogue = []instrument{
	{category: "spot", symbol: "BTCUSDT", base: "BTC", quote: "USDT", status: "Trading", tick: "0.01",
		basePrecision: "0.000001", minQty: "0.000048", maxQty: "71.73956243", minAmt: "1"},
	{category: "spot", symbol: "ETHUSDT", base: "ETH", quote: "USDT", status: "Trading", tick: "0.01",
		basePrecision: "0.00001", minQty: "0.00062", maxQty: "1229.2336343", minAmt: "1"},
	{category: "spot", symbol: "DOGEUSDT", base: "DOGE", quote: "USDT", status: "Trading", tick: "0.00001",
		basePrecision: "0.1", minQty: "4.1", maxQty: "4000000", minAmt: "1"},
	{category: "spot", symbol: "OLDUSDT", base: "OLD", quote: "USDT", status: "Closed", tick: "0.0001",
		basePrecision: "0.01", minQty: "1", maxQty: "100000", minAmt: "1"},

	{category: "linear", symbol: "BTCUSDT", base: "BTC", quote: "USDT", settle: "USDT", contractType: "LinearPerpetual",
		status: "Trading", tick: "0.10", qtyStep: "0.001", minQty: "0.001", maxQty: "1190.000", minNotional: "5", maxLeverage: "100.00"},
	{category: "linear", symbol: "ETHUSDT", base: "ETH", quote: "USDT", settle: "USDT", contractType: "LinearPerpetual",
		status: "Trading", tick: "0.01", qtyStep: "0.01", minQty: "0.01", maxQty: "7240.00", minNotional: "5", maxLeverage: "100.00"},
	{category: "linear", symbol: "DOGEUSDT", base: "DOGE", quote: "USDT", settle: "USDT", contractType: "LinearPerpetual",
		status: "Trading", tick: "0.00001", qtyStep: "1", minQty: "1", maxQty: "16270000", minNotional: "5", maxLeverage: "75.00"},
	{category: "linear", symbol: "BTCPERP", base: "BTC", quote: "USDC", settle: "USDC", contractType: "LinearPerpetual",
		status: "Trading", tick: "0.5", qtyStep: "0.001", minQty: "0.001", maxQty: "1190.000", minNotional: "5", maxLeverage: "100.00"},
	{category: "linear", symbol: "BTCUSDT-26JUN26", base: "BTC", quote: "USDT", settle: "USDT", contractType: "LinearFutures",
		status: "Trading", tick: "0.50", qtyStep: "0.001", minQty: "0.001", maxQty: "500.000", minNotional: "5", maxLeverage: "50.00"},
	{category: "linear", symbol: "OLDUSDT", base: "OLD", quote: "USDT", settle: "USDT", contractType: "LinearPerpetual",
		status: "Settling", tick: "0.0001", qtyStep: "1", minQty: "1", maxQty: "100000", minNotional: "5", maxLeverage: "25.00"},
}

func findInstrument(category, symbol string) *instrument {
	for i := range catalogue {
		if catalogue[i].category == category && catalogue[i].symbol == symbol {
			return &catalogue[i]
		}
	}
	return nil
}

func (in *instrument) json() map[string]any {
	if in.category == "spot" {
		return map[string]any{"symbol": in.symbol, "baseCoin": in.base, "quoteCoin": in.quote, "innovation": "0",
			"status": in.status, "marginTrading": "utaOnly", "stTag": "0",
			"lotSizeFilter": map[string]string{"basePrecision": in.basePrecision, "quotePrecision": "0.00000001",
				"minOrderQty": in.minQty, "maxOrderQty": in.maxQty, "minOrderAmt": in.minAmt, "maxOrderAmt": "2000000"},
			"priceFilter":    map[string]string{"tickSize": in.tick},
			"riskParameters": map[string]string{"priceLimitRatioX": "0.01", "priceLimitRatioY": "0.02"}}
	}
	return map[string]any{"symbol": in.symbol, "contractType": in.contractType, "status": in.status,
		"baseCoin": in.base, "quoteCoin": in.quote, "settleCoin": in.settle, "launchTime": "1585526400000",
		"deliveryTime": "0", "deliveryFeeRate": "", "priceScale": strconv.Itoa(places(in.tick)),
		"leverageFilter": map[string]string{"minLeverage": "1", "maxLeverage": in.maxLeverage, "leverageStep": "0.01"},
		"priceFilter":    map[string]string{"minPrice": in.tick, "maxPrice": "1999999.80", "tickSize": in.tick},
		"lotSizeFilter": map[string]string{"maxOrderQty": in.maxQty, "minOrderQty": in.minQty, "qtyStep": in.qtyStep,
			"postOnlyMaxOrderQty": in.maxQty, "maxMktOrderQty": in.maxQty, "minNotionalValue": in.minNotional},
		"unifiedMarginTrade": true, "fundingInterval": 480, "copyTrading": "both", "upperFundingRate": "0.00375",
		"lowerFundingRate": "-0.00375", "isPreListing": false}
}

func places(s string) int {
	if _, frac, ok := strings.Cut(s, "."); ok {
		return len(frac)
	}
	return 0
}

func (s *Server) instrumentsInfo(q map[string]string, _ []byte) (any, *failure) {
	cat := q["category"]
	if cat != "spot" && cat != "linear" {
		return nil, fail(10001, "params error: category invalid")
	}
	var list []map[string]any
	for i := range catalogue {
		in := &catalogue[i]
		if in.category == cat && (q["symbol"] == "" || q["symbol"] == in.symbol) {
			list = append(list, in.json())
		}
	}
	next := ""
	if cat == "linear" {
		limit := 500
		if n, err := strconv.Atoi(q["limit"]); err == nil && n > 0 {
			limit = min(n, 1000)
		}
		if s.pageLimit > 0 {
			limit = min(limit, s.pageLimit)
		}
		start, _ := strconv.Atoi(q["cursor"])
		start = min(max(start, 0), len(list))
		end := min(start+limit, len(list))
		if end < len(list) {
			next = strconv.Itoa(end)
		}
		list = list[start:end]
	}
	if list == nil {
		list = []map[string]any{}
	}
	return map[string]any{"category": cat, "list": list, "nextPageCursor": next}, nil
}

func (s *Server) tickers(q map[string]string, _ []byte) (any, *failure) {
	cat := q["category"]
	in := findInstrument(cat, q["symbol"])
	if in == nil {
		return nil, fail(10001, "params error: symbol invalid")
	}
	p, ok := s.prices[in.symbol]
	if !ok {
		p = decimal.Zero
	}
	tick := decimal.RequireFromString(in.tick)
	return map[string]any{"category": cat, "list": []map[string]string{{
		"symbol": in.symbol, "lastPrice": p.String(), "bid1Price": p.Sub(tick).String(), "ask1Price": p.Add(tick).String(),
		"bid1Size": "1", "ask1Size": "1", "prevPrice24h": p.String(), "price24hPcnt": "0", "volume24h": "1000",
		"turnover24h": p.Mul(decimal.NewFromInt(1000)).String(),
	}}}, nil
}
