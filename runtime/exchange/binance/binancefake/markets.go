package binancefake

import (
	"strings"

	"github.com/shopspring/decimal"
)

// mkt is a symbol of the fake with Binance's filter values (spot and USDⓈ-M as listed in
// 2025-2026).
type mkt struct {
	symbol, base, quote string
	status              string
	contract            string // futures contractType
	tick, minPrice      decimal.Decimal
	step, minQty        decimal.Decimal
	minNotional         decimal.Decimal
	pricePrec, qtyPrec  int // futures pricePrecision / quantityPrecision
}

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

var spotMarkets = []mkt{
	{symbol: "BTCUSDT", base: "BTC", quote: "USDT", status: "TRADING", tick: d("0.01"), minPrice: d("0.01"),
		step: d("0.00001"), minQty: d("0.00001"), minNotional: d("5")},
	{symbol: "ETHUSDT", base: "ETH", quote: "USDT", status: "TRADING", tick: d("0.01"), minPrice: d("0.01"),
		step: d("0.0001"), minQty: d("0.0001"), minNotional: d("5")},
	{symbol: "DOGEUSDT", base: "DOGE", quote: "USDT", status: "TRADING", tick: d("0.00001"), minPrice: d("0.00001"),
		step: d("1"), minQty: d("1"), minNotional: d("1")},
	{symbol: "LUNAUSDT", base: "LUNA", quote: "USDT", status: "BREAK", tick: d("0.0001"), minPrice: d("0.0001"),
		step: d("0.01"), minQty: d("0.01"), minNotional: d("5")},
}

var futMarkets = []mkt{
	{symbol: "BTCUSDT", base: "BTC", quote: "USDT", status: "TRADING", contract: "PERPETUAL", tick: d("0.10"),
		minPrice: d("556.80"), step: d("0.001"), minQty: d("0.001"), minNotional: d("100"), pricePrec: 2, qtyPrec: 3},
	{symbol: "ETHUSDT", base: "ETH", quote: "USDT", status: "TRADING", contract: "PERPETUAL", tick: d("0.01"),
		minPrice: d("39.86"), step: d("0.001"), minQty: d("0.001"), minNotional: d("20"), pricePrec: 2, qtyPrec: 3},
	{symbol: "DOGEUSDT", base: "DOGE", quote: "USDT", status: "TRADING", contract: "PERPETUAL", tick: d("0.000010"),
		minPrice: d("0.002440"), step: d("1"), minQty: d("1"), minNotional: d("5"), pricePrec: 6, qtyPrec: 0},
	{symbol: "BTCUSDT_260626", base: "BTC", quote: "USDT", status: "TRADING", contract: "CURRENT_QUARTER", tick: d("0.10"),
		minPrice: d("576.30"), step: d("0.001"), minQty: d("0.001"), minNotional: d("5"), pricePrec: 1, qtyPrec: 3},
	{symbol: "LUNAUSDT", base: "LUNA", quote: "USDT", status: "SETTLING", contract: "PERPETUAL", tick: d("0.0001"),
		minPrice: d("0.0001"), step: d("1"), minQty: d("1"), minNotional: d("5"), pricePrec: 4, qtyPrec: 0},
}

func spotMarket(symbol string) *mkt {
	for i := range spotMarkets {
		if spotMarkets[i].symbol == symbol {
			return &spotMarkets[i]
		}
	}
	return nil
}

func futMarket(symbol string) *mkt {
	for i := range futMarkets {
		if futMarkets[i].symbol == symbol {
			return &futMarkets[i]
		}
	}
	return nil
}

func f8(v decimal.Decimal) string { return v.StringFixed(8) }

var rateLimits = []map[string]any{
	{"rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE", "intervalNum": 1, "limit": 6000},
	{"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": 100},
	{"rateLimitType": "ORDERS", "interval": "DAY", "intervalNum": 1, "limit": 200000},
}

func (s *Server) spotInfo(*call) (any, *apiErr) {
	var syms []map[string]any
	for _, m := range spotMarkets {
		syms = append(syms, map[string]any{
			"symbol": m.symbol, "status": m.status, "baseAsset": m.base, "baseAssetPrecision": 8,
			"quoteAsset": m.quote, "quotePrecision": 8, "quoteAssetPrecision": 8,
			"baseCommissionPrecision": 8, "quoteCommissionPrecision": 8,
			"orderTypes":     []string{"LIMIT", "LIMIT_MAKER", "MARKET", "STOP_LOSS", "STOP_LOSS_LIMIT", "TAKE_PROFIT", "TAKE_PROFIT_LIMIT"},
			"icebergAllowed": true, "ocoAllowed": true, "otoAllowed": true,
			"quoteOrderQtyMarketAllowed": true, "allowTrailingStop": true, "cancelReplaceAllowed": true,
			"isSpotTradingAllowed": true, "isMarginTradingAllowed": true,
			"filters": []map[string]any{
				{"filterType": "PRICE_FILTER", "minPrice": f8(m.minPrice), "maxPrice": "1000000.00000000", "tickSize": f8(m.tick)},
				{"filterType": "LOT_SIZE", "minQty": f8(m.minQty), "maxQty": "9000.00000000", "stepSize": f8(m.step)},
				{"filterType": "ICEBERG_PARTS", "limit": 10},
				{"filterType": "MARKET_LOT_SIZE", "minQty": "0.00000000", "maxQty": "100.00000000", "stepSize": "0.00000000"},
				{"filterType": "TRAILING_DELTA", "minTrailingAboveDelta": 10, "maxTrailingAboveDelta": 2000, "minTrailingBelowDelta": 10, "maxTrailingBelowDelta": 2000},
				{"filterType": "PERCENT_PRICE_BY_SIDE", "bidMultiplierUp": "5", "bidMultiplierDown": "0.2", "askMultiplierUp": "5", "askMultiplierDown": "0.2", "avgPriceMins": 5},
				{"filterType": "NOTIONAL", "minNotional": f8(m.minNotional), "applyMinToMarket": true, "maxNotional": "9000000.00000000", "applyMaxToMarket": false, "avgPriceMins": 5},
				{"filterType": "MAX_NUM_ORDERS", "maxNumOrders": 200},
				{"filterType": "MAX_NUM_ALGO_ORDERS", "maxNumAlgoOrders": 5},
			},
			"permissions": []string{}, "permissionSets": [][]string{{"SPOT", "MARGIN"}},
			"defaultSelfTradePreventionMode":  "EXPIRE_MAKER",
			"allowedSelfTradePreventionModes": []string{"EXPIRE_TAKER", "EXPIRE_MAKER", "EXPIRE_BOTH"},
		})
	}
	return map[string]any{"timezone": "UTC", "serverTime": s.now(), "rateLimits": rateLimits,
		"exchangeFilters": []any{}, "symbols": syms}, nil
}

func (s *Server) futuresInfo(*call) (any, *apiErr) {
	var syms []map[string]any
	for _, m := range futMarkets {
		syms = append(syms, map[string]any{
			"symbol": m.symbol, "pair": m.base + m.quote, "contractType": m.contract,
			"deliveryDate": int64(4133404800000), "onboardDate": int64(1569398400000), "status": m.status,
			"maintMarginPercent": "2.5000", "requiredMarginPercent": "5.0000",
			"baseAsset": m.base, "quoteAsset": m.quote, "marginAsset": m.quote,
			"pricePrecision": m.pricePrec, "quantityPrecision": m.qtyPrec, "baseAssetPrecision": 8, "quotePrecision": 8,
			"underlyingType": "COIN", "underlyingSubType": []string{}, "settlePlan": 0,
			"triggerProtect": "0.0500", "liquidationFee": "0.012500", "marketTakeBound": "0.05",
			"filters": []map[string]any{
				{"filterType": "PRICE_FILTER", "minPrice": m.minPrice.String(), "maxPrice": "4529764", "tickSize": m.tick.StringFixed(int32(m.pricePrec))},
				{"filterType": "LOT_SIZE", "stepSize": m.step.String(), "maxQty": "1000", "minQty": m.minQty.String()},
				{"filterType": "MARKET_LOT_SIZE", "stepSize": m.step.String(), "maxQty": "120", "minQty": m.minQty.String()},
				{"filterType": "MAX_NUM_ORDERS", "limit": 200},
				{"filterType": "MAX_NUM_ALGO_ORDERS", "limit": 10},
				{"filterType": "MIN_NOTIONAL", "notional": m.minNotional.String()},
				{"filterType": "PERCENT_PRICE", "multiplierUp": "1.0500", "multiplierDown": "0.9500", "multiplierDecimal": "4"},
			},
			"orderType":   []string{"LIMIT", "MARKET", "STOP", "STOP_MARKET", "TAKE_PROFIT", "TAKE_PROFIT_MARKET", "TRAILING_STOP_MARKET"},
			"timeInForce": []string{"GTC", "IOC", "FOK", "GTX", "GTD"},
		})
	}
	return map[string]any{"timezone": "UTC", "serverTime": s.now(), "futuresType": "U_MARGINED",
		"rateLimits": rateLimits, "exchangeFilters": []any{}, "symbols": syms}, nil
}

// decimals is the number of significant digits after the point ("0.0100" has 2).
func decimals(v string) int {
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			return len(strings.TrimRight(v[i+1:], "0"))
		}
	}
	return 0
}

// multiple reports whether v is a whole multiple of step.
func multiple(v, step decimal.Decimal) bool {
	if !step.IsPositive() {
		return true
	}
	return v.Mod(step).IsZero()
}
