package dashboard

import (
	"net/http"
	"sort"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// chartRoutes adds the chart data of the internal API (under /api/dashboard): what
// static/chart.js draws with lightweight-charts.
func (d *Dashboard) chartRoutes(r chi.Router) {
	r.Get("/bots/{id}/chart", d.handleBotChart)
	r.Get("/bots/{id}/equity", d.handleBotEquity)
}

// CandlesChart is the candles chart's data: the series, the bot's fills as markers and its
// open position's exits as price lines. Prices are JSON numbers with every digit (the
// chart draws them; the page shows figures as text).
type CandlesChart struct {
	Symbol        string        `json:"symbol"`
	Timeframe     string        `json:"timeframe"`
	Candles       []ChartCandle `json:"candles"`
	Markers       []ChartMarker `json:"markers"`
	Lines         []ChartLine   `json:"lines"`
	UsingFallback bool          `json:"usingFallback"`
	// Message says why there is nothing to draw (an any-pair bot with no pair yet).
	Message string `json:"message,omitempty"`
}

// ChartCandle is one candle; Time is its open time in Unix seconds.
type ChartCandle struct {
	Time  int64          `json:"time"`
	Open  httpapi.Number `json:"open"`
	High  httpapi.Number `json:"high"`
	Low   httpapi.Number `json:"low"`
	Close httpapi.Number `json:"close"`
}

// ChartMarker is a fill on the candle it happened in: a buy below the bar pointing up, a
// sell above it pointing down.
type ChartMarker struct {
	Time     int64  `json:"time"`
	Position string `json:"position"`
	Shape    string `json:"shape"`
	Color    string `json:"color"`
	Text     string `json:"text"`
}

// ChartLine is a horizontal price line (a stop-loss or take-profit).
type ChartLine struct {
	Price httpapi.Number `json:"price"`
	Title string         `json:"title"`
	Color string         `json:"color"`
}

// EquityChart is one or more line series of values over time (Unix seconds).
type EquityChart struct {
	Series []ChartSeries `json:"series"`
}

// ChartSeries is one named line.
type ChartSeries struct {
	Name   string       `json:"name"`
	Points []ChartPoint `json:"points"`
}

// ChartPoint is a value at a time (Unix seconds).
type ChartPoint struct {
	Time  int64          `json:"time"`
	Value httpapi.Number `json:"value"`
}

// Marker and line colours: readable on the light and the dark chart background alike.
const (
	colorUp   = "#26a69a"
	colorDown = "#ef5350"
)

// markerOrders is how many of the bot's newest filled orders become markers.
const markerOrders = 200

// handleBotChart is GET /api/dashboard/bots/{id}/chart?timeframe=&symbol=: the candles of
// the bot's pair on its venue, its fills and its open position's exits.
func (d *Dashboard) handleBotChart(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.apiError(w, err)
		return
	}
	q := r.URL.Query()
	tf := q.Get("timeframe")
	if tf == "" {
		tf = defaultChartTimeframe
	}
	// The book's positions, not trading.API.Positions: the exits are all the chart needs,
	// and a valuation would cost a market-data call on every refresh.
	open, err := d.book.List(r.Context(), bot.ID)
	if err != nil {
		d.apiError(w, err)
		return
	}
	symbol := d.chartSymbol(r, bot, q.Get("symbol"), firstSymbol(open))
	if symbol == "" {
		httpapi.WriteJSON(w, http.StatusOK, CandlesChart{Timeframe: tf, Candles: []ChartCandle{}, Markers: []ChartMarker{},
			Lines: []ChartLine{}, Message: "This bot trades any pair: choose one to chart."})
		return
	}
	res, err := d.o.APIs.Candles.Get(r.Context(), candles.Request{Symbol: symbol, ExchangeID: venueID(bot),
		Timeframe: tf, Market: bot.Market, Owner: bot.Owner})
	if err != nil {
		d.apiError(w, err)
		return
	}
	out := CandlesChart{Symbol: res.Symbol, Timeframe: res.Timeframe, UsingFallback: res.UsingFallback,
		Candles: make([]ChartCandle, len(res.Candles)), Markers: []ChartMarker{}, Lines: []ChartLine{}}
	for i, c := range res.Candles {
		out.Candles[i] = ChartCandle{Time: c.Time, Open: httpapi.Num(c.Open), High: httpapi.Num(c.High),
			Low: httpapi.Num(c.Low), Close: httpapi.Num(c.Close)}
	}
	page, err := d.o.APIs.Trading.OrderPage(r.Context(), bot.ID, position.OrderQuery{Limit: markerOrders,
		Statuses: []exchange.OrderStatus{exchange.StatusFilled, exchange.StatusPartiallyFilled}})
	if err != nil {
		d.apiError(w, err)
		return
	}
	out.Markers = chartMarkers(out.Candles, res.Symbol, page.Orders)
	out.Lines = exitLines(res.Symbol, open)
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// venueID is the candles service's exchangeId of the bot's venue: paper, or its exchange
// connection (whose endpoints, testnet included, the service uses).
func venueID(bot registry.Bot) string {
	if bot.Account.Kind == registry.AccountExchange {
		return bot.Account.ID
	}
	return candles.Paper
}

// chartMarkers places each fill of symbol on the candle whose interval holds its last fill
// time: the candle with the latest open time not after it. A fill before the first candle
// is not on the chart; one after the last closed candle (the open one is not in the series)
// goes on the last. Markers come oldest first, as the chart needs them.
func chartMarkers(cs []ChartCandle, symbol string, orders []position.OrderRecord) []ChartMarker {
	out := []ChartMarker{}
	if len(cs) == 0 {
		return out
	}
	for i := len(orders) - 1; i >= 0; i-- { // newest first in the book
		o := orders[i]
		if o.Symbol != symbol || !o.FilledAmount.IsPositive() {
			continue
		}
		at := o.UpdatedAt / 1000
		k := sort.Search(len(cs), func(j int) bool { return cs[j].Time > at }) - 1
		if k < 0 {
			continue
		}
		m := ChartMarker{Time: cs[k].Time, Position: "belowBar", Shape: "arrowUp", Color: colorUp,
			Text: "Buy " + o.FilledAmount.String() + " @ " + o.AvgPrice.String()}
		if o.Side == exchange.SideSell {
			m.Position, m.Shape, m.Color = "aboveBar", "arrowDown", colorDown
			m.Text = "Sell " + o.FilledAmount.String() + " @ " + o.AvgPrice.String()
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Time < out[b].Time })
	return out
}

// exitLines are the stop-loss and take-profit of the open position on symbol.
func exitLines(symbol string, open []position.Position) []ChartLine {
	out := []ChartLine{}
	for _, p := range open {
		if p.Symbol != symbol {
			continue
		}
		if p.StopLoss != nil {
			out = append(out, ChartLine{Price: httpapi.Num(p.StopLoss.Price.Decimal), Title: "Stop-loss", Color: colorDown})
		}
		if p.TakeProfit != nil {
			out = append(out, ChartLine{Price: httpapi.Num(p.TakeProfit.Price.Decimal), Title: "Take-profit", Color: colorUp})
		}
	}
	return out
}

// firstSymbol is the pair of the first open position, "" with none.
func firstSymbol(open []position.Position) string {
	if len(open) == 0 {
		return ""
	}
	return open[0].Symbol
}

// chartSymbol is the pair to chart: the bot's own; for an any-pair bot the one asked for
// (when known), else its open position's (openSymbol), else its most recent order's; ""
// when it has none of these.
func (d *Dashboard) chartSymbol(r *http.Request, bot registry.Bot, asked, openSymbol string) string {
	if bot.Symbol != "" {
		return bot.Symbol
	}
	if asked != "" {
		if s, err := d.o.APIs.Candles.Resolve(asked); err == nil {
			return s
		}
	}
	if openSymbol != "" {
		return openSymbol
	}
	if recent, err := d.o.APIs.Trading.Orders(r.Context(), bot.ID, 1); err == nil && len(recent) > 0 {
		return recent[0].Symbol
	}
	return ""
}

// handleBotEquity is GET /api/dashboard/bots/{id}/equity?period=&startDate=&endDate=: the
// analytics' equity curve of the period (the read API's parameters and refusals).
func (d *Dashboard) handleBotEquity(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.apiError(w, err)
		return
	}
	p := r.URL.Query()
	q, err := analytics.ParseQuery(p.Get("period"), p.Get("startDate"), p.Get("endDate"), "true", d.o.Now())
	if err != nil {
		d.apiError(w, err)
		return
	}
	report, err := d.analytics.Bot(r.Context(), bot, q)
	if err != nil {
		d.apiError(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, EquityChart{Series: []ChartSeries{{Name: "Equity", Points: equityPoints(report.EquityCurve)}}})
}

// equityPoints is the curve in Unix seconds, strictly increasing as the chart needs: of
// points within one second the last is kept.
func equityPoints(curve []analytics.Point) []ChartPoint {
	out := make([]ChartPoint, 0, len(curve))
	for _, p := range curve {
		pt := ChartPoint{Time: p.Timestamp / 1000, Value: p.Equity}
		if n := len(out); n > 0 && out[n-1].Time >= pt.Time {
			out[n-1] = ChartPoint{Time: out[n-1].Time, Value: pt.Value}
			continue
		}
		out = append(out, pt)
	}
	return out
}
