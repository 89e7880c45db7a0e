package executor

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
)

// Preview is what executing a signal now would do, found by the executor's own admission,
// planning and sizing run with nothing written, sent or queued: a dry run, the sized order
// a connected app's notional limits are checked against, and what the user is asked to
// approve all come from here, so that they are the order the executor would place.
type Preview struct {
	// Legs are the plan's steps in order, each sized and priced (empty when a check
	// refused the signal before it was planned).
	Legs []PreviewLeg `json:"legs"`
	// Checks are the executor's checks in the order it runs them, each with its verdict;
	// the first that fails is the refusal, and the checks after it are not run.
	Checks []Check `json:"checks"`
	// Refusal is the failed check's error (nil: the signal would be placed).
	Refusal *errs.Error `json:"-"`
}

// PreviewLeg is one step of a previewed plan.
type PreviewLeg struct {
	// name is the plan's leg name ("" is the main leg): Admitted keys the amounts by it.
	name string
	// Op is open, add (a DCA level), reduce (a close, whole or partial) or protect (a
	// stop-loss or take-profit price set on the open position; no order).
	Op     string             `json:"op"`
	Symbol string             `json:"symbol"`
	Side   exchange.Side      `json:"side,omitempty"`
	Type   exchange.OrderType `json:"type,omitempty"`
	// Amount is the base amount, rounded to the market's step as it would be sent.
	Amount httpapi.Number `json:"amount"`
	// ReferencePrice is the limit price, or the market price now (a market order fills
	// near it); a protect leg's trigger price.
	ReferencePrice httpapi.Number `json:"referencePrice"`
	// Notional is Amount × ReferencePrice in the quote currency.
	Notional httpapi.Number `json:"notional"`
	// Fee is the account's fee rate on Notional; Margin what an entry takes from the free
	// balance (the notional on spot, notional / leverage on futures; zero for a reduce).
	Fee        httpapi.Number `json:"fee"`
	Margin     httpapi.Number `json:"margin"`
	Leverage   int            `json:"leverage,omitempty"`
	ReduceOnly bool           `json:"reduceOnly,omitempty"`
}

// Entry reports whether the leg opens or adds to a position (what notional limits count).
func (l PreviewLeg) Entry() bool { return l.Op == opOpen || l.Op == opAdd }

// Check is one of the executor's checks and its verdict.
type Check struct {
	// Name is bot (it exists, is enabled and not paused, the daily-loss pause included),
	// account (it opens and lists its markets), plan (symbol, side, open position, DCA
	// sequence, exit prices), size (rounding, the market's minimums, the balance) or
	// exposure (the bot's maxExposure).
	Name    string    `json:"name"`
	Passed  bool      `json:"passed"`
	Code    errs.Code `json:"code,omitempty"`
	Message string    `json:"message,omitempty"`
}

// Names of the checks.
const (
	CheckBot      = "bot"
	CheckAccount  = "account"
	CheckPlan     = "plan"
	CheckSize     = "size"
	CheckExposure = "exposure"
)

// EntryNotional is the notional of the preview's entry legs (reduces and protects add
// nothing).
func (p Preview) EntryNotional() decimal.Decimal {
	sum := decimal.Zero
	for _, l := range p.Legs {
		if l.Entry() {
			sum = sum.Add(l.Notional.Decimal)
		}
	}
	return sum
}

// Admitted is the preview's entry amounts by leg name, for Envelope.Admitted: queued with
// the signal, they make the executor place the amounts previewed.
func (p Preview) Admitted() map[string]httpapi.Number {
	var out map[string]httpapi.Number
	for _, l := range p.Legs {
		if l.Entry() {
			if out == nil {
				out = map[string]httpapi.Number{}
			}
			out[l.name] = httpapi.Num(l.Amount.Decimal)
		}
	}
	return out
}

// Preview previews env (a signal or manual order as it would be queued) on the bot's
// account now. Only reads: the same first round trip as an execution, the account's
// balance and prices, the bot's book. An infrastructure failure (Redis, an unreachable
// exchange) is returned as the error; a refusal is a failed check in the Preview. A
// reversal's entry is sized from the balance before its close frees anything, so it is
// never larger than the one the executor would size.
func (e *Executor) Preview(ctx context.Context, env queue.Envelope) (Preview, error) {
	var pv Preview
	now := e.now()
	pre := e.begin(ctx, env, now)
	if pre.err != nil {
		return pv, pre.err
	}
	bot, err := e.admit(ctx, env, pre, now)
	if pv.verdict(CheckBot, err) {
		return pv, infra(err)
	}
	j, err := e.jobFor(ctx, env, pre, now, bot)
	if pv.verdict(CheckAccount, err) {
		return pv, infra(err)
	}
	if _, ok := manualCancel(env); ok {
		return pv, nil
	}
	p, err := e.plan(ctx, j)
	if pv.verdict(CheckPlan, err) {
		return pv, infra(err)
	}
	for _, l := range p.Legs {
		pl, err := e.previewLeg(ctx, j, l)
		name := CheckSize
		if ee, ok := errs.As(err); ok && ee.Details["maxExposure"] != nil {
			pv.verdict(CheckSize, nil)
			name = CheckExposure
		}
		if pv.verdict(name, err) {
			return pv, infra(err)
		}
		pv.Legs = append(pv.Legs, pl)
	}
	pv.verdict(CheckSize, nil)
	pv.verdict(CheckExposure, nil)
	return pv, nil
}

// previewLeg sizes and prices one leg as buildRequest does (protect legs: their trigger).
func (e *Executor) previewLeg(ctx context.Context, j *job, l leg) (PreviewLeg, error) {
	pl := PreviewLeg{name: l.Name, Op: l.Op, Symbol: l.Symbol, Type: l.Type}
	if l.Op == opProtect {
		pl.Type = exchange.TakeProfit
		a := l.TakeProfit
		if l.StopLoss != nil {
			pl.Type, a = exchange.StopLoss, l.StopLoss
		}
		if a != nil {
			pl.ReferencePrice = httpapi.Num(a.Value.Decimal)
		}
		return pl, nil
	}
	req, err := e.buildRequest(ctx, j, l, "")
	if err != nil {
		return pl, err
	}
	m := j.markets[l.Symbol]
	price, err := e.refPrice(ctx, j, m, l.Price)
	if err != nil {
		return pl, err
	}
	pl.Side, pl.Amount, pl.Leverage, pl.ReduceOnly, pl.ReferencePrice = req.Side, httpapi.Num(req.Amount), req.Leverage, req.ReduceOnly, httpapi.Num(price)
	pl.Notional = httpapi.Num(req.Amount.Mul(price))
	pl.Fee = httpapi.Num(position.Fee(pl.Notional.Decimal, j.acct.FeeRate))
	if pl.Entry() {
		pl.Margin = httpapi.Num(position.InitialMargin(pl.Notional.Decimal, max(req.Leverage, 1)))
	}
	return pl, nil
}

// verdict records check name's verdict from err and reports whether it failed (or could
// not be decided: an infrastructure error, which Preview returns).
func (p *Preview) verdict(name string, err error) bool {
	for _, c := range p.Checks {
		if c.Name == name {
			return false
		}
	}
	if err == nil {
		p.Checks = append(p.Checks, Check{Name: name, Passed: true})
		return false
	}
	if ee, ok := errs.As(err); ok {
		p.Checks = append(p.Checks, Check{Name: name, Code: ee.Code, Message: ee.Message})
		p.Refusal = ee
	}
	return true
}

// infra is err when it is not a refusal (a coded error), for Preview to return.
func infra(err error) error {
	if _, ok := errs.As(err); ok {
		return nil
	}
	return err
}
