package paper

import (
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
)

// The paper catalogue: the simulated market's symbols, spot and futures alike, with the
// spec's precision table (BTC/USDT 2 and 5 decimals, ETH/USDT 2 and 4, DOGE/USDT 5 and 0)
// and the large venues' precision for the rest. Every market needs at least 5 USDT of
// notional to open or add (closing is never refused for being small).
var catalogue = []struct {
	base, tick, step string
}{
	{"BTC", "0.01", "0.00001"},
	{"ETH", "0.01", "0.0001"},
	{"DOGE", "0.00001", "1"},
	{"SOL", "0.01", "0.001"},
	{"BNB", "0.01", "0.001"},
	{"XRP", "0.0001", "0.1"},
}

// Quote is the quote currency of every paper market.
const Quote = "USDT"

// MinNotional is the smallest opening order, in quote currency.
var MinNotional = decimal.NewFromInt(5)

var markets = func() map[exchange.Kind][]exchange.MarketInfo {
	out := map[exchange.Kind][]exchange.MarketInfo{}
	for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		for _, c := range catalogue {
			step := decimal.RequireFromString(c.step)
			out[kind] = append(out[kind], exchange.MarketInfo{
				Symbol: c.base + "/" + Quote, Base: c.base, Quote: Quote, Kind: kind,
				TickSize: decimal.RequireFromString(c.tick), StepSize: step,
				MinQty: step, MinNotional: MinNotional,
			})
		}
	}
	return out
}()

// Markets is the paper catalogue of a kind (a copy).
func Markets(kind exchange.Kind) []exchange.MarketInfo {
	return append([]exchange.MarketInfo(nil), markets[kind]...)
}

// Market finds one paper market.
func Market(kind exchange.Kind, symbol string) (exchange.MarketInfo, bool) {
	for _, m := range markets[kind] {
		if m.Symbol == symbol {
			return m, true
		}
	}
	return exchange.MarketInfo{}, false
}

// Symbols lists the catalogue's symbols (BASE/QUOTE), the same for spot and futures: what
// webhookd resolves signal symbols against before queueing.
func Symbols() []string {
	out := make([]string, 0, len(catalogue))
	for _, c := range catalogue {
		out = append(out, c.base+"/"+Quote)
	}
	return out
}
