package dashboard

import (
	"cmp"
	"context"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"
	"golang.org/x/sync/errgroup"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
)

// overviewRoutes adds the Overview page's routes (under /dashboard).
func (d *Dashboard) overviewRoutes(r chi.Router) {
	r.Get("/", d.handleOverview)
	r.Get("/fragments/overview/{name}", d.handleOverviewFragment)
}

// OverviewActivity is how many of the newest signals, across the viewer's bots, the
// Overview lists.
const OverviewActivity = 20

// OverviewPositions is how many open positions the Overview lists: those with the most at
// stake. Every position counts in the totals; a bot's page lists all of its own.
const OverviewPositions = 100

// overviewPeriods are the periods the equity curve offers (analytics' values).
var overviewPeriods = []string{analytics.Period7d, analytics.Period30d, analytics.Period90d, analytics.PeriodAll}

// overviewParts name what one render reads: the whole page reads everything, a live
// fragment only what it shows.
type overviewParts uint8

const (
	partPnL overviewParts = 1 << iota
	partPositions
	partBots
	partActivity
	partAll = partPnL | partPositions | partBots | partActivity
)

// overviewFragments are the live fragments by URL name: the template each renders and the
// parts it reads.
var overviewFragments = map[string]struct {
	tmpl  string
	parts overviewParts
}{
	"pnl":       {"ov-pnl", partPnL},
	"positions": {"ov-positions", partPositions},
	"bots":      {"ov-bots", partBots},
	"activity":  {"ov-activity", partActivity},
}

// overviewData is what overview.html shows.
type overviewData struct {
	// Bots are the viewer's bots by name, with their runtime pauses applied.
	Bots []registry.Bot
	// Period is the equity curve's period (analytics' value), Periods the choices.
	Period  string
	Periods []analytics.Period
	// Portfolio is the viewer's portfolio (GET /api/user/portfolio's figures).
	Portfolio portfolio.Portfolio
	// Issues are the accounts left out of the totals, in words.
	Issues []string
	// Today is the realised PnL of today's trades (UTC), Total the realised PnL of all
	// trades plus the unrealised PnL of the open positions (Portfolio.Totals).
	Today, Total decimal.Decimal
	Curve        analytics.Curve
	Chart        curveChart
	// Positions are the OverviewPositions open positions with the largest unrealised PnL
	// either way, of OpenPositions; PositionRows are their table rows.
	Positions     []overviewPosition
	PositionRows  template.HTML
	OpenPositions int
	// BotRows are the rows of the bots table (Bots with their pause and resume forms).
	BotRows  template.HTML
	Activity []overviewActivity
}

// Empty reports a viewer without bots: the page says what to do first.
func (o overviewData) Empty() bool { return len(o.Bots) == 0 }

// overviewPosition is an open position as its table row shows it: the figures are
// formatted once here (a flat row of strings renders several times faster than
// html/template's reflection through the nested position types, and a user may hold
// hundreds of positions).
type overviewPosition struct {
	BotID, BotName, Account string
	// Side carries the leverage of a leveraged position ("short 5×").
	Symbol, Side string
	// Size, Entry, Mark ("no price" without one), StopLoss and TakeProfit ("none") are
	// exact; PnL is signed to two places with its percentage of the margin, exact in
	// PnLExact; PnLClass is up, down or "".
	Size, Entry, Mark, StopLoss, TakeProfit string
	PnL, PnLExact, PnLClass                 string
}

func positionRow(p portfolio.Position, botName, account string) overviewPosition {
	row := overviewPosition{BotID: p.BotID, BotName: cmp.Or(botName, p.BotID), Account: account, Symbol: p.Symbol,
		Side: string(p.Side), Size: p.Size.String(), Entry: p.EntryPrice.String(), Mark: "no price", StopLoss: "none",
		TakeProfit: "none", PnL: signed(2, p.Pnl.Decimal) + " (" + signed(2, p.PnlPercent.Decimal) + " %)", PnLExact: p.Pnl.String(),
		PnLClass: pnlClass(p.Pnl.Decimal)}
	if p.Leverage > 1 {
		row.Side += " " + strconv.Itoa(p.Leverage) + "×"
	}
	if p.CurrentPrice.IsPositive() {
		row.Mark = p.CurrentPrice.String()
	}
	if p.StopLoss != nil {
		row.StopLoss = p.StopLoss.String()
	}
	if p.TakeProfit != nil {
		row.TakeProfit = p.TakeProfit.String()
	}
	return row
}

// overviewActivity is a recent signal of one of the viewer's bots with its outcome.
type overviewActivity struct {
	queue.BotSignal
	BotName string
	Result  result.Stored
}

// handleOverview is the Overview page: total equity with its curve and drawdowns, PnL, open
// positions, the bots with pause and resume, and the newest signals; each part is a live
// fragment that the page fetches again when one of the viewer's bots changes.
func (d *Dashboard) handleOverview(w http.ResponseWriter, r *http.Request) {
	data, err := d.overview(r, partAll)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "overview", Page{Title: "Overview", Nav: "overview", Viewer: viewerOf(r),
		Flash: botDoneWords[r.URL.Query().Get("done")], Data: data})
}

// handleOverviewFragment is one live fragment of the Overview (GET
// /dashboard/fragments/overview/{pnl,positions,bots,activity}).
func (d *Dashboard) handleOverviewFragment(w http.ResponseWriter, r *http.Request) {
	f, ok := overviewFragments[chi.URLParam(r, "name")]
	if !ok {
		d.errorPage(w, r, http.StatusNotFound, "Not found", "There is no such part of the overview.")
		return
	}
	data, err := d.overview(r, f.parts)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.fragment(w, http.StatusOK, "overview", f.tmpl, Page{Title: "Overview", Nav: "overview", Viewer: viewerOf(r),
		Flash: botDoneWords[r.URL.Query().Get("done")], Data: data})
}

// overview reads the parts of the viewer's overview. Every read is pipelined across the
// bots: the round trips do not grow with their number. The bots come first (their IDs
// name everything else); the portfolio is read beside them.
func (d *Dashboard) overview(r *http.Request, parts overviewParts) (overviewData, error) {
	now := d.o.Now()
	out := overviewData{}
	out.Period, out.Periods = overviewPeriodOf(r)
	q, err := analytics.ParseQuery(out.Period, "", "", "true", now)
	if err != nil {
		return overviewData{}, err
	}
	combined, err := d.readOverview(r.Context(), viewerOf(r).User.Email, now, q, parts, &out)
	if err != nil {
		return overviewData{}, err
	}
	names := make(map[string]string, len(out.Bots))
	for _, b := range out.Bots {
		names[b.ID] = b.Name
	}
	for i := range out.Activity {
		out.Activity[i].BotName = names[out.Activity[i].BotID]
	}
	out.listPositions(names)
	out.PositionRows = positionRows(out.Positions)
	if parts&partBots != 0 {
		out.BotRows = botRows(out.Bots, viewerOf(r).CSRF)
	}
	if parts&partPnL != 0 {
		t := out.Portfolio.Totals
		out.Today = combined.Today
		out.Total = t.RealisedPnl.Add(t.UnrealisedPnl.Decimal)
		out.Curve = combined.Curve(t.Equity.Decimal)
		out.Chart = chartOf(out.Curve.Points)
	}
	return out, nil
}

// overviewPeriodOf is the equity curve's period the request asks for (30 days unless it
// names one of overviewPeriods), and the periods the page offers.
func overviewPeriodOf(r *http.Request) (string, []analytics.Period) {
	period := cmp.Or(r.URL.Query().Get("period"), analytics.Period30d)
	if !slices.Contains(overviewPeriods, period) {
		period = analytics.Period30d
	}
	var offered []analytics.Period
	for _, p := range analytics.Periods() {
		if slices.Contains(overviewPeriods, p.Value) {
			offered = append(offered, p)
		}
	}
	return period, offered
}

// readOverview reads into out the owner's bots and (per parts) the portfolio and their
// recent activity, and returns the bots' combined history over q. The portfolio's parts
// read the owner's books once (portfolio.ReadBooks: the bots, their positions and their
// day aggregates in three round trips); the bot list, the portfolio and the equity curve
// are all computed from that read, and the pauses, the portfolio's accounts and the
// activity are then read side by side.
func (d *Dashboard) readOverview(ctx context.Context, owner string, now time.Time, q analytics.Query,
	parts overviewParts, out *overviewData) (analytics.Combined, error) {
	if parts&(partPnL|partPositions) == 0 {
		return analytics.Combined{}, d.readBotsAndActivity(ctx, owner, now, parts, out)
	}
	books, err := d.o.APIs.Portfolio.ReadBooks(ctx, owner)
	if err != nil {
		return analytics.Combined{}, err
	}
	out.Bots = books.Bots()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		out.Portfolio, err = d.o.APIs.Portfolio.OfBooks(gctx, books)
		return err
	})
	if parts&partBots != 0 {
		g.Go(func() error { return d.bots.WithPauses(gctx, out.Bots, now) })
	}
	if parts&partActivity != 0 {
		g.Go(func() error {
			var err error
			out.Activity, err = d.activity(gctx, botIDs(out.Bots))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return analytics.Combined{}, err
	}
	sortBots(out.Bots)
	if parts&partPnL == 0 {
		return analytics.Combined{}, nil
	}
	return books.Combined(q), nil
}

// readBotsAndActivity reads into out the owner's bots and, per parts, their activity: the
// live fragments that show neither the portfolio nor the curve.
func (d *Dashboard) readBotsAndActivity(ctx context.Context, owner string, now time.Time, parts overviewParts, out *overviewData) error {
	var err error
	if out.Bots, err = d.ownBots(ctx, owner, now); err != nil {
		return err
	}
	if parts&partActivity != 0 {
		out.Activity, err = d.activity(ctx, botIDs(out.Bots))
	}
	return err
}

func botIDs(bots []registry.Bot) []string {
	ids := make([]string, len(bots))
	for i, b := range bots {
		ids[i] = b.ID
	}
	return ids
}

// listPositions fills Issues, OpenPositions and Positions from the portfolio: the
// OverviewPositions positions with the most at stake, named by their bots (names by ID).
func (o *overviewData) listPositions(names map[string]string) {
	// Sort keys are computed once per position, not in every comparison (Abs allocates), and
	// the sort moves pointers, not the positions.
	type shownPosition struct {
		*portfolio.Position
		account, bot, botKey string
		stake                decimal.Decimal
	}
	var open []*shownPosition
	for _, a := range o.Portfolio.Accounts {
		switch {
		case a.Error != nil:
			o.Issues = append(o.Issues, a.Name+" could not be read: "+a.Error.Message+" ("+string(a.Error.Code)+")")
		case len(a.Excluded) > 0:
			o.Issues = append(o.Issues, a.Name+" holds amounts in "+strings.Join(a.Excluded, ", ")+", not converted to USDT")
		}
		for i := range a.Positions {
			p := &a.Positions[i]
			bot := names[p.BotID]
			open = append(open, &shownPosition{p, a.Name, bot, strings.ToLower(bot), p.Pnl.Abs()})
		}
	}
	// The positions with the most at stake first: the largest unrealised PnL either way.
	// A bot holds one position per symbol, so the order is total.
	slices.SortFunc(open, func(a, b *shownPosition) int {
		return cmp.Or(b.stake.Cmp(a.stake), strings.Compare(a.botKey, b.botKey),
			strings.Compare(a.BotID, b.BotID), strings.Compare(a.Symbol, b.Symbol))
	})
	o.OpenPositions = len(open)
	for _, p := range open[:min(len(open), OverviewPositions)] {
		o.Positions = append(o.Positions, positionRow(*p.Position, p.bot, p.account))
	}
}

// ownBots are the owner's bots by name (then namespace), with their runtime pauses.
func (d *Dashboard) ownBots(ctx context.Context, owner string, now time.Time) ([]registry.Bot, error) {
	bots, err := d.bots.AllOwned(ctx, owner)
	if err != nil {
		return nil, err
	}
	if err := d.bots.WithPauses(ctx, bots, now); err != nil {
		return nil, err
	}
	sortBots(bots)
	return bots, nil
}

// sortBots orders bots by name (then namespace and ID), as the page lists them.
func sortBots(bots []registry.Bot) {
	slices.SortFunc(bots, func(a, b registry.Bot) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), strings.Compare(a.Namespace, b.Namespace),
			strings.Compare(a.ID, b.ID))
	})
}

// activity is the newest signals of the bots with their stored results: two round trips.
func (d *Dashboard) activity(ctx context.Context, ids []string) ([]overviewActivity, error) {
	sigs, err := d.o.APIs.Trading.NewestSignals(ctx, ids, OverviewActivity)
	if err != nil {
		return nil, err
	}
	sigIDs := make([]string, len(sigs))
	for i, s := range sigs {
		sigIDs[i] = s.SignalID
	}
	results, err := d.o.APIs.Trading.Results(ctx, sigIDs)
	if err != nil {
		return nil, err
	}
	out := make([]overviewActivity, len(sigs))
	for i, s := range sigs {
		out[i] = overviewActivity{BotSignal: s, Result: results[i]}
	}
	return out, nil
}
