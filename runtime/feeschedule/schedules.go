package feeschedule

import "github.com/shopspring/decimal"

// The tables below give each rate as the venue prints it, in percent ("0.0200" is
// 0.0200 %), maker first; pct turns it into the exact fraction. A venue's page was not
// always reachable: where a figure comes from a copy of the page, another page or a
// library, the comment says so. Figures were gathered on 2026-12-07.

// schedules is every venue, in the order Venues returns them.
var schedules = []schedule{
	{
		venue: Binance,
		tiers: []string{"regular", "vip1", "vip2", "vip3", "vip4", "vip5", "vip6", "vip7", "vip8", "vip9"},

		// Binance spot ("Spot & Margin" standard rates, without the BNB discount),
		// https://www.binance.com/en/fee/schedule. The page itself is not stored for
		// reading; the figures agree across:
		//   - zb-binance.com/en/posts/binance-vip-fee-comparison (third-party copy of
		//     the VIP 0-9 table, undated, read 2026-12-07): Regular/VIP 0 0.1000/0.1000,
		//     VIP 1 0.0900/0.1000, VIP 2 0.0800/0.1000, VIP 3 0.0420/0.0600;
		//   - the base tier, 0.1 %/0.1 %: QuantConnect/Lean
		//     Common/Orders/Fees/BinanceFeeModel.cs (citing the page above) and ccxt/ccxt
		//     ts/src/binance.ts (fees.trading);
		//   - VIP 1 0.09 %/0.10 %: binance.com/de/square/post/10243260548506.
		// VIP 4 and above are left out: Binance repriced spot VIP 5-8 (and lowered VIP 4's
		// volume requirement) in a promotion from 2024-07-18, announced to end 2024-10-18
		// (cryptoflexs.com report of the announcement), and the copies found disagree on
		// what is in force now.
		spot: table(
			row{"regular", "0.1000", "0.1000"},
			row{"vip1", "0.0900", "0.1000"},
			row{"vip2", "0.0800", "0.1000"},
			row{"vip3", "0.0420", "0.0600"},
		),

		// Binance USDⓈ-M futures, USDT-margined contracts (standard rates, without the
		// BNB discount), https://www.binance.com/en/fee/futureFee. The page is not stored
		// for reading; the figures agree across:
		//   - nautechsystems/nautilus_trader crates/adapters/binance/src/common/fees.rs
		//     (commit 27a8e54, 2026: "the documented USD-M VIP maker and taker rates",
		//     VIP 0-9 exactly as below);
		//   - ccxt/ccxt ts/src/binance.ts fees.linear tiers (2023): the same VIP 1-9, with
		//     the regular taker still at its former 0.0400 %;
		//   - babianfox.com/en/kb/binance-futures-fee (Regular to VIP 6) and
		//     zb-binance.com/en/posts/binance-vip-futures-benefit (VIP 0-9), both
		//     third-party, undated;
		//   - the base tier 0.02 %/0.05 %: huggingface.co/datasets/loweef/crypto-futures-fees
		//     (checked against the page 2026-10-12).
		futures: table(
			row{"regular", "0.0200", "0.0500"},
			row{"vip1", "0.0160", "0.0400"},
			row{"vip2", "0.0140", "0.0350"},
			row{"vip3", "0.0120", "0.0320"},
			row{"vip4", "0.0100", "0.0300"},
			row{"vip5", "0.0080", "0.0270"},
			row{"vip6", "0.0060", "0.0250"},
			row{"vip7", "0.0040", "0.0220"},
			row{"vip8", "0.0020", "0.0200"},
			row{"vip9", "0.0000", "0.0170"},
		),
	},
	{
		venue: Bybit,
		tiers: []string{"vip0", "vip1", "vip2", "vip3", "vip4", "vip5"},

		// Bybit, help-center article "Trading Fee Structure",
		// https://www.bybit.com/en/help-center/article/Trading-Fee-Structure (article
		// 000001634), read from its copy at
		// www.bybitgum.org/en-US/help-center/bybitHC_Article?id=000001634 (undated; the
		// table prints taker before maker). Bybit notes the actual rates may vary by
		// region; these are its base (global) rates. The top "Supreme VIP" row
		// (0.0300/0.0450 spot, 0.0000/0.0300 contracts) is left out, as another copy
		// names it "Premier VIP", and so are the Pro tiers.
		//
		// Spot, crypto pairs. The same VIP 0-5 figures in ikablog.com/8762.html
		// (third-party); the base 0.1 %/0.1 % also in QuantConnect/Lean
		// Common/Orders/Fees/BybitFeeModel.cs.
		spot: table(
			row{"vip0", "0.1000", "0.1000"},
			row{"vip1", "0.0675", "0.0800"},
			row{"vip2", "0.0650", "0.0775"},
			row{"vip3", "0.0625", "0.0750"},
			row{"vip4", "0.0500", "0.0600"},
			row{"vip5", "0.0400", "0.0500"},
		),
		// "Perpetual & Futures Contracts Trading" (USDT perpetuals included). The base
		// 0.02 %/0.055 % also in QuantConnect/Lean Common/Orders/Fees/BybitFuturesFeeModel.cs
		// and huggingface.co/datasets/loweef/crypto-futures-fees (checked against the
		// article 2026-10-16).
		futures: table(
			row{"vip0", "0.0200", "0.0550"},
			row{"vip1", "0.0180", "0.0400"},
			row{"vip2", "0.0160", "0.0375"},
			row{"vip3", "0.0140", "0.0350"},
			row{"vip4", "0.0120", "0.0320"},
			row{"vip5", "0.0100", "0.0320"},
		),
	},
	{
		venue: OKX,
		tiers: []string{"lv1", "vip1", "vip2", "vip3", "vip4", "vip5", "vip6", "vip7", "vip8"},

		// OKX spot, https://www.okx.com/fees ("Spot"), read from its copy at
		// okx-proxy.tokenize-dev.com/fees (undated; the version with one regular tier,
		// "Lvl 1", and VIP tiers by assets or 30-day volume); scallope.com/5703.html
		// (third-party) prints the same VIP 1-8. An older copy of okx.com/fees lists
		// regular tiers Lv1-Lv5 by OKB holding (Lv1 0.080/0.100 as here) and higher VIP
		// rates (VIP 1 0.060/0.080); that version is superseded, and OKB-holding tiers
		// are not modelled anyway. Negative makers are rebates.
		spot: table(
			row{"lv1", "0.080", "0.100"},
			row{"vip1", "0.045", "0.050"},
			row{"vip2", "0.040", "0.045"},
			row{"vip3", "0.030", "0.040"},
			row{"vip4", "0.020", "0.035"},
			row{"vip5", "0.000", "0.030"},
			row{"vip6", "-0.002", "0.025"},
			row{"vip7", "-0.005", "0.020"},
			row{"vip8", "-0.005", "0.015"},
		),
		// OKX USDT-margined perpetuals, https://www.okx.com/fees ("Futures"): only the
		// base tier could be confirmed, 0.020 %/0.050 %, from
		// huggingface.co/datasets/loweef/crypto-futures-fees (checked against the page
		// 2026-10-16), ccxt/ccxt's okx description (fees.swap maker 0.00020, taker
		// 0.00050) and third-party guides (prjmp.com/7007.html). No stored copy of the
		// futures tab's VIP rows was found, and secondary sources disagree on them, so
		// they are left out.
		futures: table(
			row{"lv1", "0.020", "0.050"},
		),
	},
}

// row is one tier's published rates, in percent.
type row struct {
	tier, makerPct, takerPct string
}

func table(rows ...row) map[string]Rates {
	out := make(map[string]Rates, len(rows))
	for _, r := range rows {
		out[r.tier] = Rates{Maker: pct(r.makerPct), Taker: pct(r.takerPct)}
	}
	return out
}

// pct is a published percentage as an exact fraction: "0.0200" is 0.0002.
func pct(s string) decimal.Decimal {
	return decimal.RequireFromString(s).Shift(-2)
}
