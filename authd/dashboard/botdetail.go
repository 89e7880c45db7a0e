package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
)

// botDetailRoutes adds the Bot detail page, its live fragments and its webhook actions
// (under /dashboard). The Bots page owns /bots itself and the bot's pause, resume, edit and
// delete actions.
func (d *Dashboard) botDetailRoutes(r chi.Router) {
	r.Get("/bots/{id}", d.handleBotDetail)
	r.Get("/bots/{id}/status", d.handleBotStatus)
	r.Get("/bots/{id}/position", d.handleBotPosition)
	r.Get("/bots/{id}/signals", d.handleBotSignals)
	r.Get("/bots/{id}/trades.csv", d.handleTradesCSV)
	r.Get("/bots/{id}/webhook", d.handleWebhookReveal)
	r.Post("/bots/{id}/webhook/regenerate", d.handleWebhookRegenerate)
}

// botDetail is the Bot detail page's Data.
type botDetail struct {
	Bot registry.Bot
	// Venue is "Paper" or the exchange connection's name; Live is true on an exchange.
	Venue string
	Live  bool
	// Pair is the bot's fixed symbol or "any pair".
	Pair string

	Chart     chartPanel
	Positions []position.View
	// PositionsError is why the positions could not be read (in words).
	PositionsError string

	Analytics analyticsPanel
	Risk      *risk.BotMetrics
	RiskError string
	RiskClass string
	// RiskExposure and RiskMaxExposure are the exposure fractions as percentages, exact.
	RiskExposure    string
	RiskMaxExposure string

	Signals signalPage
	Trades  tradesPanel
	Webhook webhookPanel
}

// chartPanel is the candles chart's picker and data source.
type chartPanel struct {
	Timeframe  string
	Timeframes []pickLink
	// Symbol is the pair charted; AnyPair offers a picker (the bot names none).
	Symbol  string
	AnyPair bool
	Symbols []string
	Src     string
}

// pickLink is one choice of a picker: its label, the link and whether it is the current one.
type pickLink struct {
	Label   string
	URL     string
	Current bool
}

// analyticsPanel is the analytics of the chosen period.
type analyticsPanel struct {
	Periods    []pickLink
	Period     string
	StartDate  string
	EndDate    string
	Report     *analytics.Report
	Metrics    []metric
	Error      string
	EquitySrc  string
	Equity     bool
	PeriodText string
}

// metric is one figure as shown: a label, its text and its CSS class (up, down or none).
type metric struct {
	Label string
	Value string
	Class string
}

// chartTimeframes are the timeframes the page offers (the candles service knows more).
var chartTimeframes = []string{"1m", "5m", "15m", "1h", "4h", "1d"}

const defaultChartTimeframe = "1h"

// detailOwner is the viewer as bot owner: the canonical e-mail the registry keeps.
func detailOwner(r *http.Request) string { return emails.Canonical(viewerOf(r).User.Email) }

// detailCaller is the viewer as fleet's caller.
func detailCaller(r *http.Request) fleet.Caller {
	u := viewerOf(r).User
	return fleet.Caller{UserID: u.ID, Email: emails.Canonical(u.Email)}
}

// detailBot is the viewer's bot named by the path, with its runtime pause applied: another
// user's bot answers registry.ErrBotNotFound exactly like a missing one.
func (d *Dashboard) detailBot(r *http.Request) (registry.Bot, error) {
	bot, err := registry.Owned(r.Context(), d.bots, chi.URLParam(r, "id"), detailOwner(r))
	if err != nil {
		return registry.Bot{}, err
	}
	bots := []registry.Bot{bot}
	if err := d.bots.WithPauses(r.Context(), bots, d.o.Now()); err != nil {
		return registry.Bot{}, err
	}
	return bots[0], nil
}

func (d *Dashboard) handleBotDetail(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.renderBotDetail(w, r, http.StatusOK, bot, webhookPanel{}, "")
}

// renderBotDetail builds and writes the whole page; wh is the webhook panel's state (hidden
// unless revealed or asked to confirm), pageErr a refusal shown above the content.
func (d *Dashboard) renderBotDetail(w http.ResponseWriter, r *http.Request, status int, bot registry.Bot, wh webhookPanel, pageErr string) {
	data := d.buildBotDetail(r, bot)
	data.Webhook = d.webhookState(bot, wh)
	if data.Analytics.Error != "" && status == http.StatusOK {
		status = http.StatusBadRequest
	}
	if pageErr == "" {
		pageErr = data.Analytics.Error
	}
	d.render(w, r, status, "botdetail", Page{Title: bot.Name, Nav: "bots", Viewer: viewerOf(r),
		Flash: botDoneWords[r.URL.Query().Get("done")], Error: pageErr, Data: data})
}

func (d *Dashboard) buildBotDetail(r *http.Request, bot registry.Bot) botDetail {
	ctx := r.Context()
	data := botDetail{Bot: bot, Pair: bot.Symbol}
	if data.Pair == "" {
		data.Pair = "any pair"
	}
	data.Venue, data.Live = venueOf(bot)
	var posErr error
	data.Positions, posErr = d.o.APIs.Trading.Positions(ctx, bot.ID)
	data.PositionsError = d.inWords(r, posErr)
	data.Chart = d.chartPanelOf(r, bot, data.Positions)
	data.Analytics = d.analyticsPanelOf(r, bot)
	if m, err := d.o.APIs.Trading.RiskMetricsOf(ctx, bot); err != nil {
		data.RiskError = d.inWords(r, err)
	} else {
		data.Risk = &m
		data.RiskClass = riskClass(m.RiskLevel)
		data.RiskExposure = fractionPercent(m.CurrentExposure.Decimal)
		data.RiskMaxExposure = "none"
		if bot.Risk.MaxExposure != "" {
			data.RiskMaxExposure = fractionPercent(m.MaxExposureAllowed.Decimal)
		}
	}
	data.Signals = d.signalPageOf(r, bot)
	data.Trades = d.tradesPanelOf(r, bot)
	return data
}

// venueOf names where the bot trades: paper, or its exchange connection (live money).
func venueOf(bot registry.Bot) (string, bool) {
	if bot.Account.Kind == registry.AccountExchange {
		return bot.Account.Name, true
	}
	return "Paper", false
}

// fractionPercent shows a fraction (0.125) as a percentage to its last digit ("12.5 %").
func fractionPercent(f decimal.Decimal) string {
	return f.Mul(decimal.NewFromInt(100)).String() + " %"
}

// riskClass is the badge class of a risk level.
func riskClass(level string) string {
	switch level {
	case risk.LevelLow:
		return "active"
	case risk.LevelModerate:
		return "paused"
	}
	return "disabled"
}

// inWords is err as the page shows it inside a panel: "" for nil, a refusal in words, or
// (logged) that the figures are unavailable.
func (d *Dashboard) inWords(r *http.Request, err error) string {
	if err == nil {
		return ""
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return ErrorInWords(e)
	}
	d.log().Error("dashboard: bot detail", "path", r.URL.Path, "error", err)
	return "Unavailable right now: try again shortly."
}

// detailURL is the page's URL with query q (empty values left out).
func detailURL(botID string, q url.Values) string {
	u := "/dashboard/bots/" + url.PathEscape(botID)
	for k, v := range q {
		if len(v) == 0 || v[0] == "" {
			q.Del(k)
		}
	}
	if s := q.Encode(); s != "" {
		u += "?" + s
	}
	return u
}

// pageQuery is the page's own query (timeframe, symbol, period, dates) with set applied:
// one picker changes its parameter and keeps the others'.
func pageQuery(r *http.Request, set ...string) url.Values {
	in := r.URL.Query()
	q := url.Values{}
	for _, k := range []string{"timeframe", "symbol", "period", "startDate", "endDate"} {
		if v := in.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	for i := 0; i+1 < len(set); i += 2 {
		q.Set(set[i], set[i+1])
	}
	return q
}

func (d *Dashboard) chartPanelOf(r *http.Request, bot registry.Bot, open []position.View) chartPanel {
	tf := r.URL.Query().Get("timeframe")
	if !validTimeframe(tf) {
		tf = defaultChartTimeframe
	}
	p := chartPanel{Timeframe: tf, AnyPair: bot.Symbol == ""}
	for _, t := range chartTimeframes {
		p.Timeframes = append(p.Timeframes, pickLink{Label: t, URL: detailURL(bot.ID, pageQuery(r, "timeframe", t)), Current: t == tf})
	}
	openSymbol := ""
	if len(open) > 0 {
		openSymbol = open[0].Symbol
	}
	p.Symbol = d.chartSymbol(r, bot, r.URL.Query().Get("symbol"), openSymbol)
	if p.AnyPair {
		p.Symbols = d.o.APIs.Candles.Symbols()
	}
	q := url.Values{"timeframe": {tf}}
	// A pair the viewer picked stays; otherwise the data route picks again on every read,
	// so the chart follows an any-pair bot to the pair of its next fill.
	if p.AnyPair && p.Symbol != "" && r.URL.Query().Get("symbol") != "" {
		q.Set("symbol", p.Symbol)
	}
	p.Src = "/api/dashboard/bots/" + url.PathEscape(bot.ID) + "/chart?" + q.Encode()
	return p
}

func validTimeframe(tf string) bool {
	for _, t := range chartTimeframes {
		if t == tf {
			return true
		}
	}
	return false
}

func (d *Dashboard) analyticsPanelOf(r *http.Request, bot registry.Bot) analyticsPanel {
	in := r.URL.Query()
	p := analyticsPanel{Period: in.Get("period"), StartDate: in.Get("startDate"), EndDate: in.Get("endDate")}
	// The read API's own parsing (GET /api/user/bots/{id}/analytics): the same parameters,
	// the same refusals.
	q, err := analytics.ParseQuery(p.Period, p.StartDate, p.EndDate, "", d.o.Now())
	current := p.Period
	if current == "" && p.StartDate == "" && p.EndDate == "" {
		current = analytics.Period30d
	}
	for _, per := range analytics.Periods() {
		p.Periods = append(p.Periods, pickLink{Label: per.Label,
			URL:     detailURL(bot.ID, pageQuery(r, "period", per.Value, "startDate", "", "endDate", "")),
			Current: per.Value == current})
	}
	if err != nil {
		p.Error = "Analytics: " + d.inWords(r, err)
		return p
	}
	report, err := d.analytics.Bot(r.Context(), bot, q)
	if err != nil {
		p.Error = "Analytics: " + d.inWords(r, err)
		return p
	}
	p.Report = &report
	p.PeriodText = report.Period + " (" + report.StartDate + " to " + report.EndDate + ")"
	p.Metrics = metricsOf(report)
	eq := url.Values{}
	for _, k := range []string{"period", "startDate", "endDate"} {
		if v := in.Get(k); v != "" {
			eq.Set(k, v)
		}
	}
	p.EquitySrc = "/api/dashboard/bots/" + url.PathEscape(bot.ID) + "/equity"
	if s := eq.Encode(); s != "" {
		p.EquitySrc += "?" + s
	}
	return p
}

// metricsOf lists every metric of the report as the read API returns it: amounts to their
// last digit, ratios and percentages to two places.
func metricsOf(rep analytics.Report) []metric {
	m := rep.Metrics
	pct := func(f float64) string { return fmt.Sprintf("%.2f %%", f) }
	money := func(label string, v httpapi.Number) metric {
		return metric{Label: label, Value: v.String(), Class: pnlClass(v.Decimal)}
	}
	out := []metric{
		{Label: "Trades", Value: fmt.Sprint(m.TotalTrades)},
		{Label: "Winning trades", Value: fmt.Sprint(m.WinningTrades)},
		{Label: "Losing trades", Value: fmt.Sprint(m.LosingTrades)},
		{Label: "Win rate", Value: rep.Formatted.WinRate},
		money("Total P&L", m.TotalPnL),
		{Label: "Total P&L %", Value: pct(m.TotalPnLPercent), Class: floatClass(m.TotalPnLPercent)},
		money("Average win", m.AvgWin),
		money("Average loss", m.AvgLoss),
		{Label: "Profit factor", Value: rep.Formatted.ProfitFactor},
		{Label: "Max drawdown", Value: m.MaxDrawdown.String()},
		{Label: "Max drawdown %", Value: pct(m.MaxDrawdownPercent)},
		{Label: "Sharpe ratio", Value: fmt.Sprintf("%.2f", m.SharpeRatio), Class: floatClass(m.SharpeRatio)},
	}
	start := "unknown (traded before it was recorded)"
	if rep.StartingEquity != nil {
		start = rep.StartingEquity.String()
	}
	return append(out, metric{Label: "Starting equity", Value: start})
}

func floatClass(f float64) string {
	switch {
	case f > 0:
		return "up"
	case f < 0:
		return "down"
	}
	return ""
}

// handleBotStatus is the live fragment of the header's availability.
func (d *Dashboard) handleBotStatus(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	data := botDetail{Bot: bot}
	d.fragment(w, http.StatusOK, "botdetail", "bd-status", Page{Viewer: viewerOf(r), Data: data})
}

// handleBotPosition is the live fragment of the open positions.
func (d *Dashboard) handleBotPosition(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	data := botDetail{Bot: bot}
	var posErr error
	data.Positions, posErr = d.o.APIs.Trading.Positions(r.Context(), bot.ID)
	data.PositionsError = d.inWords(r, posErr)
	d.fragment(w, http.StatusOK, "botdetail", "bd-position", Page{Viewer: viewerOf(r), Data: data})
}

// handleBotSignals is the live fragment of the signal log (one page of it).
func (d *Dashboard) handleBotSignals(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	data := botDetail{Bot: bot, Signals: d.signalPageOf(r, bot)}
	d.fragment(w, http.StatusOK, "botdetail", "bd-signals", Page{Viewer: viewerOf(r), Data: data})
}
