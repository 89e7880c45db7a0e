package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/lab"
)

// labChartTop is how many of the ranked results the equity chart draws: enough to compare
// the leaders, few enough to tell the lines apart.
const labChartTop = 3

// labJobData is the job page's Data.
type labJobData struct {
	Job lab.Job
	// Running: queued or running; the status fragment polls until it is not.
	Running bool
	// Quote is the currency of the money figures (the symbol's quote).
	Quote string
	Rows  []labRow
	// Charted: at least one result has an equity curve to draw.
	Charted bool
	// Fleet: bots can be created here ("Apply as bot"); otherwise the page says bot
	// management is not configured.
	Fleet bool
	// BestIn and BestOut are the best result's in-sample and out-of-sample figures;
	// Folds and Stitched a walk-forward job's.
	BestIn, BestOut *labFigures
	Folds           []labFold
	Stitched        *labFigures
	// Confirm: the overfitting estimate is high, so applying asks for a confirmation.
	Confirm bool
	// Costs says which costs the backtests charged, in words.
	Costs string
}

// labCostsInWords is a job's cost model as the page says it.
func labCostsInWords(r lab.Request) string {
	c := r.Costs
	if c == nil {
		return "a flat 0.1 % fee per fill (the job predates the cost model)"
	}
	var parts []string
	if c.Fees != nil && *c.Fees {
		parts = append(parts, c.Venue+" "+c.FeeTier+" maker and taker fees")
	}
	if c.Slippage != nil && *c.Slippage {
		parts = append(parts, "slippage capped at "+c.SlippageCapPercent+" %")
	}
	if c.Funding != nil && *c.Funding {
		parts = append(parts, "funding")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " · ")
}

// labRow is one ranked experiment as the table shows it. The money figures are the
// backtest's decimals; the ratios are rounded for display only.
type labRow struct {
	lab.Experiment
	labShown
	Params []labParam
	// OOS is the experiment's out-of-sample figures as shown (nil: none).
	OOS *labFigures
	// BotName is the name "Apply as bot" proposes.
	BotName string
}

type labParam struct{ Name, Value string }

// labFigures are one window's figures as the page shows them.
type labFigures struct {
	lab.Figures
	labShown
}

// labShown is a backtest's metrics as the page shows them: the report's display strings,
// the return and the Sharpe ratio rounded for display only.
type labShown struct {
	Formatted analytics.Formatted
	Return    string
	Sharpe    string
}

func labShow(m analytics.Metrics, quote string) labShown {
	return labShown{Formatted: m.Formatted(quote), Return: signed(2, decimal.NewFromFloat(m.TotalPnLPercent)) + " %",
		Sharpe: decimal.NewFromFloat(m.SharpeRatio).StringFixed(2)}
}

func labFiguresOf(f *lab.Figures, quote string) *labFigures {
	if f == nil {
		return nil
	}
	return &labFigures{Figures: *f, labShown: labShow(f.Metrics, quote)}
}

// labFold is one walk-forward fold as shown.
type labFold struct {
	lab.Fold
	N           int
	InSample    *labFigures
	OutOfSample *labFigures
}

// handleLabJob is one of the viewer's jobs: status and progress, then the ranked results,
// the equity curves of the leaders and "Apply as bot".
func (d *Dashboard) handleLabJob(w http.ResponseWriter, r *http.Request) {
	data, err := d.labJob(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "lab_job", Page{Title: "Strategy Lab job", Nav: "lab", Viewer: viewerOf(r),
		Flash: labFlash(r), Data: data})
}

// handleLabProgress is the job's status fragment, polled every second while the job runs.
// Lab jobs are not announced on the live-event stream (results of bots are), hence the
// polling. Once the job is finished an htmx poll reloads the page, whose charts draw on
// load.
func (d *Dashboard) handleLabProgress(w http.ResponseWriter, r *http.Request) {
	data, err := d.labJob(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if !data.Running && isHTMX(r) {
		w.Header().Set("HX-Refresh", "true")
	}
	d.fragment(w, http.StatusOK, "lab_job", "job", Page{Viewer: viewerOf(r), Data: data})
}

// labJob reads the viewer's job {id}; another user's job is NOT_FOUND, as a missing one.
func (d *Dashboard) labJob(r *http.Request) (labJobData, error) {
	job, err := d.o.APIs.Lab.Job(r.Context(), viewerOf(r).User.ID, chi.URLParam(r, "id"))
	if err != nil {
		return labJobData{}, err
	}
	data := labJobData{Job: job, Running: job.State == lab.StateQueued || job.State == lab.StateRunning,
		Quote: quoteOf(job.Request.Symbol), Fleet: d.o.APIs.Fleet != nil, Costs: labCostsInWords(job.Request)}
	if job.Result == nil {
		return data, nil
	}
	for _, x := range job.Result.Experiments {
		row := labRow{Experiment: x, BotName: labBotName(job, x.Index)}
		for _, rg := range job.Request.Family.Ranges() {
			row.Params = append(row.Params, labParam{rg.Name, strconv.FormatFloat(x.Params.Get(rg.Name), 'f', -1, 64)})
		}
		if x.Metrics != nil {
			data.Charted = true
			row.labShown = labShow(*x.Metrics, data.Quote)
		}
		row.OOS = labFiguresOf(x.OutOfSample, data.Quote)
		data.Rows = append(data.Rows, row)
	}
	res := job.Result
	if b := res.Best; b != nil {
		data.BestIn, data.BestOut = labFiguresOf(b.InSample, data.Quote), labFiguresOf(b.OutOfSample, data.Quote)
	}
	if wf := res.WalkForward; wf != nil {
		for i, f := range wf.Folds {
			data.Folds = append(data.Folds, labFold{Fold: f, N: i + 1, InSample: labFiguresOf(&f.InSample, data.Quote),
				OutOfSample: labFiguresOf(&f.OutOfSample, data.Quote)})
		}
		data.Stitched = labFiguresOf(&wf.OutOfSample, data.Quote)
	}
	data.Confirm = job.OverfitHigh()
	return data, nil
}

// quoteOf is the quote currency of BASE/QUOTE.
func quoteOf(symbol string) string {
	if _, q, ok := strings.Cut(symbol, "/"); ok {
		return q
	}
	return symbol
}

// labBotName is the bot name "Apply as bot" proposes for experiment index of job: a
// DNS-1123 name that says where the parameters came from.
func labBotName(job lab.Job, index int) string {
	id := job.ID
	if len(id) > 8 {
		id = id[:8]
	}
	return "lab-" + strings.ToLower(string(job.Request.Family)) + "-" + strings.ToLower(id) + "-" + strconv.Itoa(index)
}

// handleLabApply creates a paper bot with the strategy and parameters of one result
// (form field index: the experiment's index) through fleet, and goes to its page.
func (d *Dashboard) handleLabApply(w http.ResponseWriter, r *http.Request) {
	jobID := chi.URLParam(r, "id")
	name := strings.TrimSpace(r.PostFormValue("name"))
	index, convErr := strconv.Atoi(r.PostFormValue("index"))
	args := map[string]any{"jobId": jobID, "index": r.PostFormValue("index"), "name": name}
	if d.o.APIs.Fleet == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Not available", "Bot management is not configured on this server.")
		return
	}
	bot, err := func() (string, error) {
		if convErr != nil {
			return "", labInvalid("index", "must be the number of one of the job's experiments")
		}
		job, err := d.o.APIs.Lab.Job(r.Context(), viewerOf(r).User.ID, jobID)
		if err != nil {
			return "", err
		}
		if job.OverfitHigh() && r.PostFormValue("confirmOverfitting") != "on" {
			return "", labInvalid("confirmOverfitting", "this job's overfitting estimate is high: confirm that you expect the out-of-sample figures, not the in-sample ones")
		}
		spec, err := fleet.LabSpec(job, index)
		if err != nil {
			return "", err
		}
		if name == "" {
			name = labBotName(job, index)
			args["name"] = name
		}
		created, err := d.o.APIs.Fleet.Create(r.Context(), fleetCaller(r), name, spec)
		if err != nil {
			return "", err
		}
		return string(created.UID), nil
	}()
	d.recordAction(r, "apply_strategy", args, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/bots/"+url.PathEscape(bot)+"?done=lab-applied")
}

// labAPIRoutes adds the Strategy Lab's chart data (under /api/dashboard).
func (d *Dashboard) labAPIRoutes(r chi.Router) {
	r.Get("/lab/jobs/{id}/equity", d.handleLabEquity)
}

// chartPoint and chartSeries are the equity chart's JSON (chart.js's contract): numbers
// for the chart only, every figure shown as text stays a decimal.
type chartPoint struct {
	Time  int64   `json:"time"`
	Value float64 `json:"value"`
}

type chartSeries struct {
	Name   string       `json:"name"`
	Points []chartPoint `json:"points"`
}

// handleLabEquity is the equity curves of the job's labChartTop best results that ran, in
// rank order.
func (d *Dashboard) handleLabEquity(w http.ResponseWriter, r *http.Request) {
	uid, id := viewerOf(r).User.ID, chi.URLParam(r, "id")
	job, err := d.o.APIs.Lab.Job(r.Context(), uid, id)
	if err != nil {
		d.apiError(w, err)
		return
	}
	var top []lab.Experiment
	if job.Result != nil {
		for _, x := range job.Result.Experiments {
			if x.Error == nil && len(top) < labChartTop {
				top = append(top, x)
			}
		}
	}
	idx := make([]int, len(top))
	for i, x := range top {
		idx[i] = x.Index
	}
	curves, err := d.o.APIs.Lab.Equity(r.Context(), uid, id, idx)
	if err != nil {
		d.apiError(w, err)
		return
	}
	out := struct {
		Series []chartSeries `json:"series"`
	}{Series: []chartSeries{}}
	for _, x := range top {
		s := chartSeries{Name: "#" + strconv.Itoa(x.Rank) + " (experiment " + strconv.Itoa(x.Index) + ")", Points: []chartPoint{}}
		for _, p := range curves[x.Index] {
			pt := chartPoint{Time: p.Time / 1000, Value: p.Equity.InexactFloat64()}
			// The chart needs strictly increasing times: of points in the same second the
			// last, the equity after everything booked in it, stands.
			if n := len(s.Points); n > 0 && s.Points[n-1].Time >= pt.Time {
				s.Points[n-1].Value = pt.Value
				continue
			}
			s.Points = append(s.Points, pt)
		}
		out.Series = append(out.Series, s)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}
