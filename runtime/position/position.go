package position

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
)

// Exit is a stop-loss or take-profit on a position.
type Exit struct {
	// Price triggers the exit.
	Price httpapi.Number `json:"price"`
	// Percent, when positive, is the distance from the average entry the price was set
	// from; the price follows the entry when a DCA level re-averages it.
	Percent httpapi.Number `json:"percent,omitzero"`
	// ClosePercent is the part of the position the exit closes (100 = all).
	ClosePercent httpapi.Number `json:"closePercent"`
}

// Position is one open position of a bot on a symbol.
type Position struct {
	ID     string        `json:"id"`
	BotID  string        `json:"botId"`
	Symbol string        `json:"symbol"`
	Kind   exchange.Kind `json:"kind"`
	Side   Side          `json:"side"`
	// Size is the base amount held.
	Size httpapi.Number `json:"size"`
	// Cost is the sum of the entry notionals (size × price of each entry fill): the
	// average entry price is Cost / Size.
	Cost httpapi.Number `json:"cost"`
	// Margin is the used margin: the reserved initial margin on futures, the cost on spot.
	Margin   httpapi.Number `json:"margin"`
	Leverage int            `json:"leverage"`
	// EntryFees are the entry fees not yet attributed to a trade.
	EntryFees  httpapi.Number `json:"entryFees"`
	StopLoss   *Exit          `json:"stopLoss,omitempty"`
	TakeProfit *Exit          `json:"takeProfit,omitempty"`
	// DCALevel is the last DCA level applied (1 for the initial entry).
	DCALevel int `json:"dcaLevel"`
	// OpenedBy is the signal that opened the position.
	OpenedBy  string `json:"openedBy"`
	CreatedAt int64  `json:"createdAt"` // ms
	UpdatedAt int64  `json:"updatedAt"` // ms
}

// ID of the position opened by a signal's leg: deterministic, so a retried signal makes
// the same position.
func ID(signalID, leg string) string {
	sum := sha256.Sum256([]byte("position\x00" + signalID + "\x00" + leg))
	return "pos-" + hex.EncodeToString(sum[:])[:24]
}

// ClientOrderID is the client order ID of one leg of a signal: "sg-" and 32 hex digits of
// SHA-256, 35 characters (Binance and Bybit take 36). The main leg ("") hashes the signal
// ID alone; other legs (a reversal's close, one close per symbol) hash "signalId#leg".
// A retried signal derives the same IDs, so an exchange never receives a second order.
func ClientOrderID(signalID, leg string) string {
	in := signalID
	if leg != "" {
		in += "#" + leg
	}
	sum := sha256.Sum256([]byte(in))
	return "sg-" + hex.EncodeToString(sum[:])[:32]
}

// Fill is one executed order as the book needs it.
type Fill struct {
	Amount decimal.Decimal
	Price  decimal.Decimal
	Fee    decimal.Decimal
	At     int64 // ms
}

// Notional is amount × price.
func (f Fill) Notional() decimal.Decimal { return f.Amount.Mul(f.Price) }

// Open makes a position from its first fill.
func Open(id, botID, symbol string, kind exchange.Kind, side Side, leverage int, f Fill, signalID string) Position {
	if kind != exchange.Futures || leverage < 1 {
		leverage = 1
	}
	return Position{
		ID: id, BotID: botID, Symbol: symbol, Kind: kind, Side: side,
		Size: httpapi.Num(f.Amount), Cost: httpapi.Num(f.Notional()), Margin: httpapi.Num(InitialMargin(f.Notional(), leverage)),
		Leverage: leverage, EntryFees: httpapi.Num(f.Fee), DCALevel: 1, OpenedBy: signalID,
		CreatedAt: f.At, UpdatedAt: f.At,
	}
}

// Add applies an entry fill in the position's direction: the entry price re-averages by
// size (Cost / Size).
func (p *Position) Add(f Fill) {
	p.Size = httpapi.Num(p.Size.Add(f.Amount))
	p.Cost = httpapi.Num(p.Cost.Add(f.Notional()))
	p.Margin = httpapi.Num(p.Margin.Add(InitialMargin(f.Notional(), p.Leverage)))
	p.EntryFees = httpapi.Num(p.EntryFees.Add(f.Fee))
	p.UpdatedAt = f.At
}

// Reduce applies an exit fill of f.Amount (at most Size) and returns the settlement and
// the realised trade; closed is true when nothing is left.
func (p *Position) Reduce(f Fill, tradeID, signalID, reason string) (Settlement, Trade, bool) {
	qty := decimal.Min(f.Amount, p.Size.Decimal)
	s := Settle(p.Kind, p.Side, p.Size.Decimal, p.Cost.Decimal, p.Margin.Decimal, p.EntryFees.Decimal, qty, f.Price, f.Fee)
	t := Trade{
		ID: tradeID, PositionID: p.ID, BotID: p.BotID, SignalID: signalID, Symbol: p.Symbol,
		Kind: p.Kind, Side: p.Side, Size: httpapi.Num(qty), EntryPrice: httpapi.Num(avg(s.CostShare, qty)), ExitPrice: httpapi.Num(f.Price),
		Leverage: p.Leverage, Pnl: httpapi.Num(s.Gross), Fees: httpapi.Num(s.Fees()), NetPnl: httpapi.Num(s.Net()), Reason: reason,
		OpenedAt: p.CreatedAt, ClosedAt: f.At,
	}
	p.Size = httpapi.Num(p.Size.Sub(qty))
	p.Cost = httpapi.Num(p.Cost.Sub(s.CostShare))
	p.Margin = httpapi.Num(p.Margin.Sub(s.MarginShare))
	p.EntryFees = httpapi.Num(p.EntryFees.Sub(s.FeeShare))
	p.UpdatedAt = f.At
	closed := !p.Size.IsPositive()
	t.Closed = closed
	return s, t, closed
}

// Clone is a copy of p that shares nothing with it: its exits are copied too, so that
// changing the copy's exit prices leaves p as it was.
func (p Position) Clone() Position {
	if p.StopLoss != nil {
		e := *p.StopLoss
		p.StopLoss = &e
	}
	if p.TakeProfit != nil {
		e := *p.TakeProfit
		p.TakeProfit = &e
	}
	return p
}

// EntryPrice is the size-weighted average entry price.
func (p Position) EntryPrice() decimal.Decimal { return avg(p.Cost.Decimal, p.Size.Decimal) }

func avg(cost, size decimal.Decimal) decimal.Decimal {
	if !size.IsPositive() {
		return decimal.Zero
	}
	return cost.Div(size).Round(Places)
}

// Liquidation is the futures liquidation price; zero on spot.
func (p Position) Liquidation() decimal.Decimal {
	if p.Kind != exchange.Futures {
		return decimal.Zero
	}
	return LiquidationPrice(p.Side, p.Size.Decimal, p.Cost.Decimal, p.Margin.Decimal, MaintenanceMarginRate)
}

// Unrealised is the PnL at price, before exit fees.
func (p Position) Unrealised(price decimal.Decimal) decimal.Decimal {
	v := p.Size.Mul(price)
	if p.Side == Long {
		return v.Sub(p.Cost.Decimal)
	}
	return p.Cost.Sub(v)
}

// SetExit sets the stop-loss (stopLoss true) or take-profit from an absolute price or a
// percentage from the average entry, rounded down to the market's tick.
func (p *Position) SetExit(stopLoss bool, value decimal.Decimal, percent bool, closePercent decimal.Decimal, m exchange.MarketInfo) {
	e := &Exit{ClosePercent: httpapi.Num(closePercent)}
	if !e.ClosePercent.IsPositive() {
		e.ClosePercent = httpapi.Num(hundred)
	}
	if percent {
		e.Percent = httpapi.Num(value)
		e.Price = httpapi.Num(m.RoundPrice(PriceFromPercent(p.EntryPrice(), value, p.Side, stopLoss)))
	} else {
		e.Price = httpapi.Num(m.RoundPrice(value))
	}
	if stopLoss {
		p.StopLoss = e
	} else {
		p.TakeProfit = e
	}
}

// Reprice moves percentage exits to the current average entry (after a DCA level).
func (p *Position) Reprice(m exchange.MarketInfo) {
	if e := p.StopLoss; e != nil && e.Percent.IsPositive() {
		e.Price = httpapi.Num(m.RoundPrice(PriceFromPercent(p.EntryPrice(), e.Percent.Decimal, p.Side, true)))
	}
	if e := p.TakeProfit; e != nil && e.Percent.IsPositive() {
		e.Price = httpapi.Num(m.RoundPrice(PriceFromPercent(p.EntryPrice(), e.Percent.Decimal, p.Side, false)))
	}
}

// View is the spec's Position.
type View struct {
	ID               string          `json:"id"`
	Symbol           string          `json:"symbol"`
	Side             Side            `json:"side"`
	Size             httpapi.Number  `json:"size"`
	EntryPrice       httpapi.Number  `json:"entryPrice"`
	CurrentPrice     httpapi.Number  `json:"currentPrice"`
	Pnl              httpapi.Number  `json:"pnl"`
	PnlPercent       httpapi.Number  `json:"pnlPercent"`
	Leverage         int             `json:"leverage"`
	Margin           httpapi.Number  `json:"margin"`
	LiquidationPrice *httpapi.Number `json:"liquidationPrice,omitempty"`
	StopLoss         *httpapi.Number `json:"stopLoss,omitempty"`
	TakeProfit       *httpapi.Number `json:"takeProfit,omitempty"`
	CreatedAt        string          `json:"createdAt"`
}

// View renders the position at a current price. pnl is unrealised before exit fees;
// pnlPercent is pnl over the used margin (ROE), two decimals.
func (p Position) View(current decimal.Decimal) View {
	v := View{
		ID: p.ID, Symbol: p.Symbol, Side: p.Side, Size: httpapi.Num(p.Size.Decimal), EntryPrice: httpapi.Num(p.EntryPrice()),
		CurrentPrice: httpapi.Num(current), Leverage: p.Leverage, Margin: httpapi.Num(p.Margin.Decimal),
		CreatedAt: time.UnixMilli(p.CreatedAt).UTC().Format(time.RFC3339Nano),
	}
	if current.IsPositive() {
		v.Pnl = httpapi.Num(p.Unrealised(current))
		if p.Margin.IsPositive() {
			v.PnlPercent = httpapi.Num(v.Pnl.Mul(hundred).Div(p.Margin.Decimal).Round(2))
		}
	}
	if p.Kind == exchange.Futures {
		v.LiquidationPrice = httpapi.NumPtr(p.Liquidation())
	}
	if p.StopLoss != nil {
		v.StopLoss = httpapi.NumPtr(p.StopLoss.Price.Decimal)
	}
	if p.TakeProfit != nil {
		v.TakeProfit = httpapi.NumPtr(p.TakeProfit.Price.Decimal)
	}
	return v
}

// Trade is one realisation: a reduce or close of a position, with its realised PnL.
type Trade struct {
	ID         string         `json:"id"`
	PositionID string         `json:"positionId"`
	BotID      string         `json:"botId"`
	SignalID   string         `json:"signalId"`
	Symbol     string         `json:"symbol"`
	Kind       exchange.Kind  `json:"kind"`
	Side       Side           `json:"side"`
	Size       httpapi.Number `json:"size"`
	EntryPrice httpapi.Number `json:"entryPrice"`
	ExitPrice  httpapi.Number `json:"exitPrice"`
	Leverage   int            `json:"leverage"`
	// Pnl is the gross price PnL; Fees the entry-fee share plus the exit fee; NetPnl = Pnl − Fees.
	Pnl    httpapi.Number `json:"pnl"`
	Fees   httpapi.Number `json:"fees"`
	NetPnl httpapi.Number `json:"netPnl"`
	// Closed is true when this realisation closed the position.
	Closed bool `json:"closed"`
	// Reason is signal, reversal, stop_loss, take_profit, liquidation or manual.
	Reason   string `json:"reason"`
	OpenedAt int64  `json:"openedAt"` // ms
	ClosedAt int64  `json:"closedAt"` // ms
}

// OrderRecord is a bot's order as the book keeps it.
type OrderRecord struct {
	OrderID       string               `json:"orderId"`
	ClientOrderID string               `json:"clientOrderId"`
	SignalID      string               `json:"signalId"`
	BotID         string               `json:"botId"`
	Leg           string               `json:"leg"`
	Symbol        string               `json:"symbol"`
	Kind          exchange.Kind        `json:"kind"`
	Side          exchange.Side        `json:"side"`
	Type          exchange.OrderType   `json:"type"`
	Status        exchange.OrderStatus `json:"status"`
	Amount        httpapi.Number       `json:"amount"`
	Price         httpapi.Number       `json:"price,omitzero"`
	FilledAmount  httpapi.Number       `json:"filledAmount"`
	AvgPrice      httpapi.Number       `json:"avgPrice"`
	Fee           httpapi.Number       `json:"fee"`
	FeeAsset      string               `json:"feeAsset,omitempty"`
	ReduceOnly    bool                 `json:"reduceOnly,omitempty"`
	Leverage      int                  `json:"leverage,omitempty"`
	// Code and Error say why an order was rejected.
	Code      string `json:"code,omitempty"`
	Error     string `json:"error,omitempty"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
	// Outcome is the result of the signal whose only order this is, when the record holds
	// it instead of a result key of its own (KeptResult); not part of the order's JSON.
	Outcome *Outcome `json:"-"`
}

// Outcome is what a signal's result says beyond its order's record: its message, when it
// was decided, and the order's time as the result shows it (ms).
type Outcome struct {
	Message string
	At      int64
	OrderAt int64
}

// PendingOrder is the record of an order request about to be sent: pending, at ms, until
// the exchange reports the order (ApplyExchange).
func PendingOrder(req exchange.OrderRequest, signalID, botID, leg string, at int64) OrderRecord {
	return OrderRecord{
		ClientOrderID: req.ClientOrderID, SignalID: signalID, BotID: botID, Leg: leg,
		Symbol: req.Symbol, Kind: req.Kind, Side: req.Side, Type: req.Type, Status: exchange.StatusPending,
		Amount: httpapi.Num(req.Amount), Price: httpapi.Num(req.Price), ReduceOnly: req.ReduceOnly, Leverage: req.Leverage,
		CreatedAt: at, UpdatedAt: at,
	}
}

// Transition moves the record to next under decision 10; a terminal status never changes
// and the same status again is a no-op (false, nil).
func (r *OrderRecord) Transition(next exchange.OrderStatus, at int64) (bool, error) {
	if r.Status == next {
		return false, nil
	}
	if !r.Status.CanBecome(next) {
		return false, fmt.Errorf("order %s: status %s cannot become %s", r.ClientOrderID, r.Status, next)
	}
	r.Status, r.UpdatedAt = next, at
	return true, nil
}

// ApplyExchange copies an exchange's report of the order onto the record, moving the status
// through the machine.
func (r *OrderRecord) ApplyExchange(o exchange.Order, at int64) (bool, error) {
	changed, err := r.Transition(o.Status, at)
	if err != nil || !changed {
		return changed, err
	}
	r.OrderID, r.FilledAmount, r.AvgPrice, r.Fee, r.FeeAsset = o.ID, httpapi.Num(o.FilledAmount), httpapi.Num(o.AvgPrice), httpapi.Num(o.Fee), o.FeeAsset
	return true, nil
}
