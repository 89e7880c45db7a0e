package analytics

import (
	"cmp"
	"math"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// Report is a bot's analytics over a period (the interface's Bot analytics). Money is
// decimal, written to JSON as numbers with their exact text; rates, percentages, the
// profit factor and the Sharpe ratio are float64, rounded only in Formatted.
type Report struct {
	BotID   string `json:"botId"`
	BotName string `json:"botName"`
	Symbol  string `json:"symbol"`
	// Period is the label of the period reported (Query.Label).
	Period string `json:"period"`
	// StartDate and EndDate are the first and last UTC day reported, both included.
	StartDate string `json:"startDate"`
	EndDate   string `json:"endDate"`
	// StartingEquity is the equity recorded at the bot's first entry; null when unknown
	// (the bot traded before it was recorded): percentages and the Sharpe ratio are then 0.
	StartingEquity *httpapi.Number `json:"startingEquity"`
	Metrics        Metrics         `json:"metrics"`
	Formatted      Formatted       `json:"formatted"`
	// EquityCurve is present only when asked for (Query.Equity): a point per trade on the
	// days whose trades are kept, a point per day on the others (curve.go).
	EquityCurve      []Point  `json:"equityCurve,omitempty"`
	AvailablePeriods []Period `json:"availablePeriods"`
}

// Metrics are the period's figures (docs/decisions.md, "Bot analytics", gives every
// definition and degenerate case).
type Metrics struct {
	TotalTrades   int     `json:"totalTrades"`
	WinningTrades int     `json:"winningTrades"`
	LosingTrades  int     `json:"losingTrades"`
	WinRate       float64 `json:"winRate"`
	// TotalPnL is the sum of the trades' NetPnl; TotalPnLPercent is it over the equity at
	// the period's start, × 100.
	TotalPnL        httpapi.Number `json:"totalPnL"`
	TotalPnLPercent float64        `json:"totalPnLPercent"`
	// AvgWin and AvgLoss (negative) are the mean NetPnl of winners and losers.
	AvgWin       httpapi.Number `json:"avgWin"`
	AvgLoss      httpapi.Number `json:"avgLoss"`
	ProfitFactor float64        `json:"profitFactor"`
	// MaxDrawdown is the largest fall of equity from a peak (a positive amount, 0 for
	// none); MaxDrawdownPercent is it over that peak, × 100.
	MaxDrawdown        httpapi.Number `json:"maxDrawdown"`
	MaxDrawdownPercent float64        `json:"maxDrawdownPercent"`
	SharpeRatio        float64        `json:"sharpeRatio"`
}

// Formatted are display strings of the main figures.
type Formatted struct {
	TotalPnL     string `json:"totalPnL"`     // "+123.45 USDT"
	WinRate      string `json:"winRate"`      // "61.5%"
	ProfitFactor string `json:"profitFactor"` // "1.84"
	MaxDrawdown  string `json:"maxDrawdown"`  // "-42.10 USDT (3.2%)"
}

// Point is the equity at one instant and how far it is below the running peak: a point of
// the equity curve (curve.go says which instants it has).
type Point struct {
	Timestamp int64          `json:"timestamp"` // ms
	Equity    httpapi.Number `json:"equity"`
	Drawdown  httpapi.Number `json:"drawdown"`
}

// ProfitFactorCap is the profit factor of a period with winners and no losers, and the
// largest one reported: a ratio over no loss has no finite value.
const ProfitFactorCap = 999.99

// daysPerYear annualises the daily Sharpe ratio: crypto trades every calendar day.
const daysPerYear = 365

// pointOf is the curve's point of equity at ts (ms), drawdown below the running peak.
func pointOf(ts int64, equity, drawdown decimal.Decimal) Point {
	return Point{Timestamp: ts, Equity: httpapi.Num(equity), Drawdown: httpapi.Num(drawdown)}
}

// minStd is the standard deviation of daily returns below which they count as constant.
const minStd = 1e-12

var hundred = decimal.NewFromInt(100)

// Header names what a report is about.
type Header struct {
	BotID, BotName, Symbol string
}

// ReportOf is the report for q of trades (oldest first, each counted on the UTC day of its
// ClosedAt) begun at startingEquity (nil: unknown), without Redis: the backtester's entry
// point, on the same computation as a live bot's report (Analytics.Bot).
func ReportOf(hdr Header, trades []position.Trade, startingEquity *decimal.Decimal, q Query) Report {
	return report(hdr, history{days: fromTrades(trades), start: startingEquity}, q)
}

// compute is the report of bot's history for q, without Redis.
func compute(bot registry.Bot, h history, q Query) Report {
	return report(Header{BotID: bot.ID, BotName: bot.Name, Symbol: bot.Symbol}, h, q)
}

// report is the report of a history for q.
func report(hdr Header, h history, q Query) Report {
	if q.AllFrom && len(h.days) > 0 {
		q.From = min(h.days[0].date, q.To)
	}
	r := Report{BotID: hdr.BotID, BotName: hdr.BotName, Symbol: hdr.Symbol, Period: q.Label,
		StartDate: q.From.String(), EndDate: q.To.String(), AvailablePeriods: Periods()}
	known := h.start != nil
	equity := decimal.Zero
	if known {
		equity = *h.start
		r.StartingEquity = &httpapi.Number{Decimal: equity}
	}
	i := 0
	for ; i < len(h.days) && h.days[i].date < q.From; i++ {
		equity = equity.Add(h.days[i].day.Net())
	}
	atStart := equity
	var firstTrade Date
	if len(h.days) > 0 {
		firstTrade = h.days[0].date
	}
	var total Day
	var returns []float64
	returnsOK := known
	var c *curve
	if q.Equity {
		c = newCurve(h, q, equity)
	}
	for d := q.From; d <= q.To; d++ {
		var day Day
		if i < len(h.days) && h.days[i].date == d {
			day = h.days[i].day
			i++
		}
		before := equity
		if day.Trades > 0 {
			total = total.Then(day)
			equity = equity.Add(day.Net())
		}
		if len(h.days) > 0 && d >= firstTrade {
			if before.IsPositive() {
				returns = append(returns, day.Net().InexactFloat64()/before.InexactFloat64())
			} else {
				returnsOK = false
			}
		}
		if c != nil {
			c.day(d, day, before, equity)
		}
	}
	if c != nil {
		r.EquityCurve = c.points
	}
	r.Metrics = metricsOf(total, atStart, known)
	if returnsOK {
		r.Metrics.SharpeRatio = sharpe(returns)
	}
	_, quote := exchange.SymbolAssets(hdr.Symbol)
	r.Formatted = formatted(r.Metrics, cmp.Or(quote, "USDT")) // USDT when the bot has no fixed symbol
	return r
}

// metricsOf are the figures of the period's aggregate t, begun at equity atStart (known:
// the starting equity was recorded).
func metricsOf(t Day, atStart decimal.Decimal, known bool) Metrics {
	m := Metrics{TotalTrades: t.Trades, WinningTrades: t.Wins, LosingTrades: t.Losses,
		TotalPnL: httpapi.Num(t.Sum), MaxDrawdown: httpapi.Num(t.DD)}
	if t.Trades > 0 {
		m.WinRate = float64(t.Wins) / float64(t.Trades) * 100
	}
	if t.Wins > 0 {
		m.AvgWin = httpapi.Num(mean(t.GrossProfit, t.Wins))
	}
	if t.Losses > 0 {
		m.AvgLoss = httpapi.Num(mean(t.GrossLoss, t.Losses))
	}
	switch {
	case t.Losses > 0:
		m.ProfitFactor = math.Min(t.GrossProfit.Div(t.GrossLoss.Neg()).InexactFloat64(), ProfitFactorCap)
	case t.Wins > 0:
		m.ProfitFactor = ProfitFactorCap
	}
	if known && atStart.IsPositive() {
		m.TotalPnLPercent = t.Sum.Mul(hundred).Div(atStart).InexactFloat64()
	}
	if base := atStart.Add(t.Peak); known && t.DD.IsPositive() && base.IsPositive() {
		m.MaxDrawdownPercent = t.DD.Mul(hundred).Div(base).InexactFloat64()
	}
	return m
}

// sharpe is the annualised Sharpe ratio of daily returns (risk-free rate 0): mean over
// sample standard deviation × √365; 0 for fewer than two days or no variation.
func sharpe(returns []float64) float64 {
	n := float64(len(returns))
	if len(returns) < 2 {
		return 0
	}
	var sum float64
	for _, r := range returns {
		sum += r
	}
	mean := sum / n
	var ss float64
	for _, r := range returns {
		ss += (r - mean) * (r - mean)
	}
	std := math.Sqrt(ss / (n - 1))
	// Equal returns leave rounding noise in the float sum, far below any real variation.
	if std < minStd {
		return 0
	}
	return mean / std * math.Sqrt(daysPerYear)
}

// mean is sum / n: exact when the quotient terminates (one trade's average is that trade's
// net PnL to its last decimal), otherwise rounded half away from zero to position.Places
// (a third of a cent has no exact decimal).
func mean(sum decimal.Decimal, n int) decimal.Decimal {
	d := decimal.NewFromInt(int64(n))
	if q := sum.DivRound(d, 40); q.Mul(d).Equal(sum) {
		return q
	}
	return sum.DivRound(d, position.Places)
}

// Formatted is m's display strings, money in quote, as a Report shows them.
func (m Metrics) Formatted(quote string) Formatted { return formatted(m, quote) }

// formatted renders the display strings, money in quote.
func formatted(m Metrics, quote string) Formatted {
	pnl := m.TotalPnL.StringFixed(2)
	if m.TotalPnL.Round(2).IsPositive() {
		pnl = "+" + pnl
	}
	dd := m.MaxDrawdown.Neg().StringFixed(2)
	if !m.MaxDrawdown.Round(2).IsPositive() {
		dd = decimal.Zero.StringFixed(2)
	}
	return Formatted{
		TotalPnL:     pnl + " " + quote,
		WinRate:      fixed(m.WinRate, 1) + "%",
		ProfitFactor: fixed(m.ProfitFactor, 2),
		MaxDrawdown:  dd + " " + quote + " (" + fixed(m.MaxDrawdownPercent, 1) + "%)",
	}
}

// fixed is x with places decimals, a half rounded away from zero like the money figures
// (0.625 is "0.63"; fmt's %.2f would round the binary value to even, "0.62").
func fixed(x float64, places int32) string { return decimal.NewFromFloat(x).StringFixed(places) }
