package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/feeschedule"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/wallet"
)

// labRoutes adds the Strategy Lab page's routes (under /dashboard): the form and its cost
// review, the jobs and the wallet ledger (lab.go); one job, its progress and applying a
// result as a bot (lab_job.go).
func (d *Dashboard) labRoutes(r chi.Router) {
	r.Get("/lab", d.handleLab)
	r.Post("/lab/estimate", d.handleLabEstimate)
	r.Post("/lab/jobs", d.handleLabRun)
	r.Get("/lab/jobs/{id}", d.handleLabJob)
	r.Get("/lab/jobs/{id}/progress", d.handleLabProgress)
	r.Post("/lab/jobs/{id}/apply", d.handleLabApply)
}

// Page sizes of the lists under the form.
const (
	labJobsPage   = 20
	labLedgerPage = 20
)

// labInputTime is the form's period format: a datetime-local input's value, read as UTC.
const labInputTime = "2006-01-02T15:04"

// labForm is the Strategy Lab form's fields as typed, so that a refused form comes back
// filled in as it was sent.
type labForm struct {
	Family, Symbol, Market, Timeframe, From, To, Experiments, MinTrades string
	InitialBalance, PositionSize, Leverage, StopLoss, TakeProfit, Seed  string
	OutOfSamplePercent, WalkForwardFolds                                string
	// The cost model: Costs is "1" when the form carried its fields, whose checkboxes are
	// then "on" or absent (off); a post without it leaves every cost at the Lab's default.
	Costs, Venue, FeeTier, Fees, Slippage, SlippageCap, Funding string
}

// labVenue is a venue of the cost model's choice and its fee tiers, base first.
type labVenue struct {
	Name  string
	Tiers []string
}

func labVenues() []labVenue {
	var out []labVenue
	for _, v := range feeschedule.Venues() {
		out = append(out, labVenue{Name: string(v), Tiers: feeschedule.Tiers(v)})
	}
	return out
}

// labData is the Strategy Lab page's Data.
type labData struct {
	// Allowed: the viewer's tier includes the Strategy Lab; otherwise Refusal says why and
	// the form is hidden.
	Allowed bool
	Refusal string
	Form    labForm
	// The form's choices: what the Lab accepts (families, the paper catalogue's symbols,
	// timeframes, 1 to MaxExperiments experiments at UnitCost each, the venues whose fees
	// it charges and their tiers).
	Venues         []labVenue
	Families       []strategy.Family
	Symbols        []string
	Timeframes     []string
	MaxExperiments int
	UnitCost       decimal.Decimal
	Balance        decimal.Decimal
	// Estimate is the reviewed cost (after "Review cost"); Run is the request its run
	// button sends, the seed included, so the job run is the one whose cost was shown.
	Estimate *lab.Estimate
	Run      labForm
	Jobs     []lab.Job
	JobsNext string
	Ledger   []wallet.Entry
	// LedgerNext is the cursor of the ledger's next page; LedgerAfter that of this page.
	LedgerNext  string
	LedgerAfter string
	JobsAfter   string
}

// handleLab is the Strategy Lab page: the form (a tier with the Lab), the jobs and the
// wallet's ledger.
func (d *Dashboard) handleLab(w http.ResponseWriter, r *http.Request) {
	d.labPage(w, r, http.StatusOK, defaultLabForm(d.o.Now()), nil, "")
}

// defaultLabForm is the form as first shown: the family's defaults are experiment 0, so
// ten experiments of the week before the current hour, on one-hour candles, show the
// baseline against nine alternatives.
func defaultLabForm(now time.Time) labForm {
	to := now.UTC().Truncate(time.Hour)
	return labForm{Family: string(strategy.EMACrossover), Symbol: "BTC/USDT", Market: "spot", Timeframe: "1h",
		From: to.AddDate(0, 0, -7).Format(labInputTime), To: to.Format(labInputTime), Experiments: "10",
		Costs: "1", Venue: string(lab.DefaultVenue), Fees: "on", Slippage: "on", SlippageCap: lab.DefaultSlippageCapPercent, Funding: "on"}
}

// labPage renders the page with form; est is a reviewed estimate, refusal a refusal of the
// form in words (status is then the refusal's).
func (d *Dashboard) labPage(w http.ResponseWriter, r *http.Request, status int, form labForm, est *lab.Estimate, refusal string) {
	v := viewerOf(r)
	ctx := r.Context()
	data := labData{Allowed: v.User.Tier.Capabilities.AllowAIBuilder, Form: form, Families: strategy.Families(),
		Symbols: paper.Symbols(), Timeframes: marketdata.Timeframes(), MaxExperiments: lab.MaxExperiments, Venues: labVenues(),
		UnitCost: lab.UnitCostUsd, Estimate: est, JobsAfter: r.URL.Query().Get("jobs"), LedgerAfter: r.URL.Query().Get("ledger")}
	if !data.Allowed {
		data.Refusal = ErrorInWords(errs.New(errs.TierNotAllowed, "The %s tier does not include the Strategy Lab; pro and team do.",
			v.User.Tier.Name))
	}
	if est != nil {
		data.Run = formOfRequest(est.Proceed)
	}
	var err error
	if data.Balance, err = d.o.APIs.Lab.Balance(ctx, v.User.ID); err != nil {
		d.failPage(w, r, err)
		return
	}
	if data.Jobs, data.JobsNext, err = d.o.APIs.Lab.Jobs(ctx, v.User.ID, data.JobsAfter, labJobsPage); err != nil {
		d.failPage(w, r, err)
		return
	}
	if data.Ledger, data.LedgerNext, err = d.o.APIs.Lab.Ledger(ctx, v.User.ID, data.LedgerAfter, labLedgerPage); err != nil {
		d.failPage(w, r, err)
		return
	}
	d.render(w, r, status, "lab", Page{Title: "Strategy Lab", Nav: "lab", Viewer: v, Error: refusal,
		Data: data})
}

// labFlash is the outcome a redirect's ?done= names, in fixed words: a link cannot make the
// page say something else.
func labFlash(r *http.Request) string {
	switch r.URL.Query().Get("done") {
	case "queued":
		return "Job queued and its cost charged to your Strategy Lab wallet. This page follows its progress."
	}
	return ""
}

// handleLabEstimate is "Review cost": the Lab's estimate of the form's job (nothing is
// charged or queued) with the wallet's balance, and the button that runs exactly that job.
func (d *Dashboard) handleLabEstimate(w http.ResponseWriter, r *http.Request) {
	form := labFormOf(r)
	v := viewerOf(r)
	req, err := form.request()
	if err == nil {
		var out lab.Outcome
		// Not the dashboard caller: without an acknowledgement the Lab answers its estimate.
		out, err = d.o.APIs.Lab.Generate(r.Context(), lab.Caller{UserID: v.User.ID, Email: v.User.Email}, req)
		if err == nil && out.Estimate == nil {
			err = errs.New(errs.InternalError, "the Strategy Lab queued a job where an estimate was asked for")
		}
		if err == nil {
			d.labPage(w, r, http.StatusOK, form, out.Estimate, "")
			return
		}
	}
	d.labRefused(w, r, form, err)
}

// handleLabRun runs the reviewed job: the dashboard's caller needs no acknowledgement, its
// review step having shown the cost, and pays the same.
func (d *Dashboard) handleLabRun(w http.ResponseWriter, r *http.Request) {
	form := labFormOf(r)
	v := viewerOf(r)
	req, err := form.request()
	var out lab.Outcome
	if err == nil {
		out, err = d.o.APIs.Lab.Generate(r.Context(), lab.Caller{UserID: v.User.ID, Email: v.User.Email, Dashboard: true}, req)
		if err == nil && out.Job == nil {
			err = errs.New(errs.InternalError, "the Strategy Lab answered an estimate where a job was asked for")
		}
	}
	d.recordAction(r, "generate_strategy", req, err)
	if err != nil {
		d.labRefused(w, r, form, err)
		return
	}
	redirect(w, r, "/dashboard/lab/jobs/"+url.PathEscape(out.Job.ID)+"?done=queued")
}

// labRefused shows the form again with the refusal in words, or the failure page for an
// unexpected error.
func (d *Dashboard) labRefused(w http.ResponseWriter, r *http.Request, form labForm, err error) {
	e, ok := errs.As(err)
	if !ok {
		d.failPage(w, r, err)
		return
	}
	d.labPage(w, r, e.Code.HTTPStatus(), form, nil, labErrorInWords(e))
}

// labErrorInWords is ErrorInWords, except for the wallet: the Lab's INSUFFICIENT_BALANCE is
// about the Strategy Lab wallet, not an exchange account's balance.
func labErrorInWords(e *errs.Error) string {
	if e.Code == errs.InsufficientBalance {
		return "Your Strategy Lab wallet does not hold enough for this job: top it up or run fewer experiments. " +
			e.Message + " (" + string(e.Code) + " " + strconv.Itoa(e.Code.Numeric()) + ")"
	}
	return ErrorInWords(e)
}

func labFormOf(r *http.Request) labForm {
	f := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return labForm{Family: f("family"), Symbol: f("symbol"), Market: f("market"), Timeframe: f("timeframe"),
		From: f("from"), To: f("to"), Experiments: f("experiments"), MinTrades: f("minTrades"),
		InitialBalance: f("initialBalance"), PositionSize: f("positionSize"), Leverage: f("leverage"),
		StopLoss: f("stopLoss"), TakeProfit: f("takeProfit"), Seed: f("seed"),
		OutOfSamplePercent: f("outOfSamplePercent"), WalkForwardFolds: f("walkForwardFolds"),
		Costs: f("costs"), Venue: f("venue"), FeeTier: f("feeTier"), Fees: f("fees"), Slippage: f("slippage"),
		SlippageCap: f("slippageCapPercent"), Funding: f("funding")}
}

// costs is the form's cost model; nil when the post did not carry the form's cost fields.
// Funding is asked for on futures only (a spot job has none).
func (f labForm) costs() *lab.Costs {
	if f.Costs != "1" {
		return nil
	}
	on := func(v string) *bool { b := v == "on"; return &b }
	c := &lab.Costs{Venue: f.Venue, FeeTier: f.FeeTier, Fees: on(f.Fees), Slippage: on(f.Slippage), SlippageCapPercent: f.SlippageCap}
	if f.Market == "futures" {
		c.Funding = on(f.Funding)
	}
	return c
}

// request reads the form as the Lab's request; the Lab checks the values (family, symbol,
// bounds), this only their form.
func (f labForm) request() (lab.Request, error) {
	r := lab.Request{Family: strategy.Family(f.Family), Symbol: f.Symbol, Market: f.Market, Timeframe: f.Timeframe,
		InitialBalance: f.InitialBalance, PositionSize: f.PositionSize, StopLoss: f.StopLoss, TakeProfit: f.TakeProfit,
		Costs: f.costs()}
	var err error
	if r.From, err = labTime("from", f.From); err != nil {
		return r, err
	}
	if r.To, err = labTime("to", f.To); err != nil {
		return r, err
	}
	if r.Experiments, err = labInt("experiments", f.Experiments, true); err != nil {
		return r, err
	}
	if r.MinTrades, err = labInt("minTrades", f.MinTrades, false); err != nil {
		return r, err
	}
	if r.Leverage, err = labInt("leverage", f.Leverage, false); err != nil {
		return r, err
	}
	if r.OutOfSamplePercent, err = labInt("outOfSamplePercent", f.OutOfSamplePercent, false); err != nil {
		return r, err
	}
	if r.WalkForwardFolds, err = labInt("walkForwardFolds", f.WalkForwardFolds, false); err != nil {
		return r, err
	}
	if f.Seed != "" {
		s, err := strconv.ParseInt(f.Seed, 10, 64)
		if err != nil || s < 0 {
			return r, labInvalid("seed", "must be a whole number of at least 0")
		}
		r.Seed = &s
	}
	return r, nil
}

func labInvalid(param, msg string) error {
	return errs.New(errs.InvalidParameter, "%s %s", param, msg).WithDetails(map[string]any{"parameter": param})
}

func labTime(param, s string) (time.Time, error) {
	t, err := time.Parse(labInputTime, s)
	if err != nil {
		return t, labInvalid(param, "must be a date and time, YYYY-MM-DDTHH:MM (UTC)")
	}
	return t, nil
}

// labInt reads a whole number; empty is 0 (the Lab's default) unless required.
func labInt(param, s string, required bool) (int, error) {
	if s == "" && !required {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, labInvalid(param, "must be a whole number")
	}
	return n, nil
}

// formOfRequest is the form that sends r again (the run button's hidden fields).
func formOfRequest(r lab.Request) labForm {
	f := labForm{Family: string(r.Family), Symbol: r.Symbol, Market: r.Market, Timeframe: r.Timeframe,
		From: r.From.UTC().Format(labInputTime), To: r.To.UTC().Format(labInputTime),
		Experiments: strconv.Itoa(r.Experiments), InitialBalance: r.InitialBalance, PositionSize: r.PositionSize,
		StopLoss: r.StopLoss, TakeProfit: r.TakeProfit}
	if r.MinTrades != 0 {
		f.MinTrades = strconv.Itoa(r.MinTrades)
	}
	if r.Leverage != 0 {
		f.Leverage = strconv.Itoa(r.Leverage)
	}
	if r.Seed != nil {
		f.Seed = strconv.FormatInt(*r.Seed, 10)
	}
	if r.WalkForwardFolds != 0 {
		f.WalkForwardFolds = strconv.Itoa(r.WalkForwardFolds)
	} else if r.OutOfSamplePercent != 0 {
		f.OutOfSamplePercent = strconv.Itoa(r.OutOfSamplePercent)
	}
	if c := r.Costs; c != nil {
		box := func(b *bool) string {
			if b != nil && *b {
				return "on"
			}
			return ""
		}
		f.Costs, f.Venue, f.FeeTier, f.SlippageCap = "1", c.Venue, c.FeeTier, c.SlippageCapPercent
		f.Fees, f.Slippage, f.Funding = box(c.Fees), box(c.Slippage), box(c.Funding)
	}
	return f
}

// fleetCaller is the viewer as fleet's caller: the user and the canonical e-mail bots are
// owned by.
func fleetCaller(r *http.Request) fleet.Caller {
	u := viewerOf(r).User
	return fleet.Caller{UserID: u.ID, Email: emails.Canonical(u.Email)}
}

// The Strategy Lab's template functions, beside the shared ones (render.go).
func init() {
	funcs["usd"] = func(v any) (string, error) {
		d, err := decOf(v)
		return usd(d), err
	}
	funcs["signedUSD"] = func(v any) (string, error) {
		d, err := decOf(v)
		if d.IsPositive() {
			return "+" + usd(d), err
		}
		return usd(d), err
	}
	funcs["ledgerKind"] = ledgerKind
}

// usd shows a wallet amount with cents, or every digit it has beyond them: a wallet amount
// is never rounded for display.
func usd(v decimal.Decimal) string {
	if v.Equal(v.Round(2)) {
		return v.StringFixed(2)
	}
	return v.String()
}

// ledgerKind is a wallet movement's kind in words.
func ledgerKind(k wallet.Kind) string {
	switch k {
	case wallet.Opening:
		return "Opening balance"
	case wallet.TopUp:
		return "Top-up"
	case wallet.Debit:
		return "Job charged"
	case wallet.Refund:
		return "Refund of failed experiments"
	}
	return string(k)
}
