package dashboard_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/store"
)

// A walk-forward job's page shows the split, the overfitting reading, the best result's
// in-sample and out-of-sample figures side by side, every fold's choice and the stitched
// out-of-sample row, each figure the Lab's own.
func TestLabJobShowsOutOfSampleFiguresAndFolds(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "5")
	b := f.loggedIn(u)
	f.labServe(u)
	form := labForm(4)
	form.Set("walkForwardFolds", "2")
	job := f.labDone(u, b.labRun(form).ID)
	res := job.Result
	if job.Request.WalkForwardFolds != 2 || res.WalkForward == nil || res.Best == nil {
		t.Fatalf("job %+v: want a walk-forward result", job.Request)
	}
	_, page := b.get("/dashboard/lab/jobs/" + job.ID)
	text := html.UnescapeString(page)
	for _, want := range []string{`id="lab-validation"`, `id="lab-overfitting"`, "overfitting risk: " + res.Overfitting.Level,
		res.Overfitting.Message, "Walk-forward, 2 folds over 3 windows", `id="lab-folds"`, "Stitched out-of-sample",
		"Out-of-sample (never seen)", "Out-of-sample return"} {
		if !strings.Contains(text, want) {
			t.Fatalf("job page: no %q\n%s", want, page)
		}
	}
	for _, fig := range []*lab.Figures{res.Best.InSample, res.Best.OutOfSample, &res.WalkForward.OutOfSample} {
		if want := fig.Metrics.Formatted("USDT").TotalPnL; !strings.Contains(text, want) {
			t.Fatalf("job page: no total PnL %q of %+v", want, fig.Span)
		}
	}
	for _, fold := range res.WalkForward.Folds {
		if !strings.Contains(page, "<td class=\"num\">"+strconv.Itoa(fold.Chosen)+"</td>") || !strings.Contains(page, fold.OutOfSample.FinalEquity.String()) {
			t.Fatalf("job page: fold choosing %d ending at %s not shown", fold.Chosen, fold.OutOfSample.FinalEquity)
		}
	}
	if strings.Contains(page, "confirmOverfitting") && !res.Overfitting.High {
		t.Fatal("a confirmation asked for without a high overfitting estimate")
	}
}

// With a high overfitting estimate, "Apply as bot" asks for a confirmation: the form has a
// required checkbox, and a post without it is refused in words, creating nothing.
func TestLabApplyAsksForConfirmationWhenOverfittingIsHigh(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "5")
	b := f.loggedIn(u)
	f.labServe(u)
	job := f.labDone(u, b.labRun(labForm(2)).ID)
	// The period is too short for an estimate; the stored result is given a high one, as a
	// job with one would have.
	res := *job.Result
	res.Overfitting = &lab.Overfitting{Level: "high", High: true, Message: "high risk of overfitting (test)"}
	body, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.RDB.HSet(context.Background(), store.LabJob(u.ID, job.ID), "result", body).Err(); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/dashboard/lab/jobs/" + job.ID)
	if !strings.Contains(page, `<input type="checkbox" name="confirmOverfitting" required>`) || !strings.Contains(page, `class="warn"`) {
		t.Fatalf("no confirmation in the apply form\n%s", page)
	}
	x := res.Experiments[0]
	resp, page := b.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {strconv.Itoa(x.Index)}, "name": {"lab-unconfirmed"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "confirmOverfitting") {
		t.Fatalf("apply without the confirmation: status %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {strconv.Itoa(x.Index)}, "name": {"lab-confirmed"},
		"confirmOverfitting": {"on"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("apply with the confirmation: status %d\n%s", resp.StatusCode, page)
	}
}

// The form's cost model reaches the job: bybit's fees without slippage, reviewed, run,
// and the job page says so and itemises the best result's costs, each the Lab's decimal.
func TestLabCostModelFromTheForm(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "5")
	b := f.loggedIn(u)
	_, page := b.get("/dashboard/lab")
	for _, want := range []string{`id="lab-costs"`, `<option value="bybit">`, `<input type="checkbox" name="fees" checked>`,
		`<input type="checkbox" name="slippage" checked>`, `<input type="checkbox" name="funding" checked>`, "vip0"} {
		if !strings.Contains(page, want) {
			t.Fatalf("lab page: no %q", want)
		}
	}
	f.labServe(u)
	form := labForm(2)
	form.Set("costs", "1")
	form.Set("venue", "bybit")
	form.Set("fees", "on") // slippage unchecked: absent
	job := f.labDone(u, b.labRun(form).ID)
	c := job.Request.Costs
	if c == nil || c.Venue != "bybit" || c.FeeTier != "vip0" || !*c.Fees || *c.Slippage || *c.Funding {
		t.Fatalf("the job's costs %+v: want bybit vip0 fees only", c)
	}
	_, page = b.get("/dashboard/lab/jobs/" + job.ID)
	if !strings.Contains(page, `<td id="lab-costs">bybit vip0 maker and taker fees</td>`) {
		t.Fatalf("job page: no cost model in words\n%s", page)
	}
	in := job.Result.Best.InSample.Costs
	if in == nil || !in.Slippage.IsZero() || !strings.Contains(page, "<td class=\"num\">"+in.Fees.String()+"</td>") {
		t.Fatalf("job page: the best's in-sample costs %+v are not shown", in)
	}
}
