package portfolio

import (
	"maps"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
)

// valuation adds up one account's figures in USDT.
type valuation struct {
	balances                     []Balance
	positions                    []Position
	equity, unrealised, realised decimal.Decimal
	excluded                     map[string]bool
}

func newValuation() *valuation { return &valuation{excluded: map[string]bool{}} }

// balance lists a wallet's asset; Total is Free + Locked.
func (v *valuation) balance(b Balance) {
	b.Total = httpapi.Num(b.Free.Add(b.Locked.Decimal))
	v.balances = append(v.balances, b)
}

// value adds every balance's total to equity: USDT at par, another asset at price(asset),
// its ASSET/USDT spot price. An asset the market does not quote in USDT (INVALID_SYMBOL) is
// excluded; any other failure fails the account.
func (v *valuation) value(price func(asset string) (decimal.Decimal, error)) error {
	for _, b := range v.balances {
		if b.Asset == Currency {
			v.equity = v.equity.Add(b.Total.Decimal)
			continue
		}
		if b.Total.IsZero() {
			continue
		}
		px, err := price(b.Asset)
		if errs.CodeOf(err) == errs.InvalidSymbol {
			v.excluded[b.Asset] = true
			continue
		}
		if err != nil {
			return err
		}
		v.equity = v.equity.Add(b.Total.Mul(px))
	}
	return nil
}

// futures adds a futures position's unrealised PnL to equity (wallet balances hold its
// margin but not its PnL).
func (v *valuation) futures(symbol string, pnl decimal.Decimal) {
	if _, q := exchange.SymbolAssets(symbol); q != Currency {
		v.excluded[q] = true
		return
	}
	v.equity = v.equity.Add(pnl)
}

// bots lists the bots' open positions valued at price (position.View: pnl before exit
// fees) and adds their unrealised PnL, and the bots' realised net PnL, each when quoted in
// USDT. A bot's realised PnL is in the quote of the symbol it trades: a bot fixed on a
// symbol quoted in another currency has its realised PnL left out and the currency named.
func (v *valuation) bots(books []*botBook, price func(kind exchange.Kind, symbol string) (decimal.Decimal, error)) error {
	n := 0
	for _, b := range books {
		n += len(b.positions)
	}
	// Sized once: a position's view is large, and a user may hold hundreds.
	v.positions = slices.Grow(v.positions, n)
	for _, b := range books {
		for _, p := range b.positions {
			px, err := price(p.Kind, p.Symbol)
			if err != nil {
				return err
			}
			view := p.View(px)
			v.positions = append(v.positions, Position{BotID: b.bot.ID, View: view})
			if _, q := exchange.SymbolAssets(p.Symbol); q != Currency {
				v.excluded[q] = true
			} else {
				v.unrealised = v.unrealised.Add(view.Pnl.Decimal)
			}
		}
		if _, q := exchange.SymbolAssets(b.bot.Symbol); b.bot.Symbol != "" && q != Currency {
			if !b.realised.IsZero() {
				v.excluded[q] = true
			}
			continue
		}
		v.realised = v.realised.Add(b.realised)
	}
	return nil
}

// finish writes the figures into a.
func (v *valuation) finish(a Account) Account {
	a.Currency, a.Balances, a.Positions = Currency, v.balances, v.positions
	if a.Balances == nil {
		a.Balances = []Balance{}
	}
	if a.Positions == nil {
		a.Positions = []Position{}
	}
	a.Equity, a.UnrealisedPnl, a.RealisedPnl = httpapi.NumPtr(v.equity), httpapi.NumPtr(v.unrealised), httpapi.NumPtr(v.realised)
	a.Excluded = slices.Sorted(maps.Keys(v.excluded))
	if len(a.Excluded) == 0 {
		a.Excluded = nil
	}
	return a
}
