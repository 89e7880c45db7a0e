package mcpd_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/strategy"
)

func TestStrategyJobTools(t *testing.T) {
	f := newFixture(t)
	lb := lab.New(lab.Options{Redis: f.rdb, Wallets: f.users.Wallets, Users: f.users, Now: f.clk.Now})
	ts := f.serve(t, func(o *mcpd.Options) { o.Lab = lb })
	ada := f.user(t, "ada@example.com", auth.TierPro)
	bob := f.user(t, "bob@example.com", auth.TierPro)
	ctx := t.Context()
	queue := func(u auth.User, experiments int) lab.Job {
		t.Helper()
		seed := int64(7)
		out, err := lb.Generate(ctx, lab.Caller{UserID: u.ID, Email: u.Email}, lab.Request{Family: strategy.EMACrossover,
			Symbol: "BTC/USDT", Market: "spot", Timeframe: "1m", From: f.clk.Now().Add(-10 * time.Hour), To: f.clk.Now(),
			Experiments: experiments, Seed: &seed, AcknowledgeCost: true})
		if err != nil || out.Job == nil {
			t.Fatal(out, err)
		}
		return *out.Job
	}
	for _, u := range []auth.User{ada, bob} {
		if _, err := f.users.Wallets.Credit(ctx, u.ID, testkit.D("20")); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []lab.Job
	for i := 1; i <= 3; i++ {
		jobs = append(jobs, queue(ada, i))
		f.clk.Advance(time.Second)
	}
	bobs := queue(bob, 1)
	adaTok, _ := f.oauthToken(t, ada, "agent", auth.ScopeRead, testResource)
	adaC, _ := mcpClient(t, adaTok.Token, "", ts)
	bobC, _ := mcpClient(t, f.bearer(t, bob).Token, "", ts)

	// 2 experiments × 0.50 USD = 1.00 charged.
	got := toolOK[lab.Job](t, adaC, "get_strategy_job", map[string]any{"jobId": jobs[1].ID})
	want, _ := lb.Job(ctx, ada.ID, jobs[1].ID)
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) || !got.CostUsd.Equal(testkit.D("1")) || got.State != lab.StateQueued {
		t.Fatalf("job:\n got %s\nwant %s", gj, wj)
	}
	type page struct {
		Jobs       []lab.Job
		NextCursor *string
	}
	p1 := toolOK[page](t, adaC, "list_strategy_jobs", map[string]any{"limit": 2})
	if len(p1.Jobs) != 2 || p1.Jobs[0].ID != jobs[2].ID || p1.Jobs[1].ID != jobs[1].ID || p1.NextCursor == nil {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := toolOK[page](t, adaC, "list_strategy_jobs", map[string]any{"limit": 2, "cursor": *p1.NextCursor})
	if len(p2.Jobs) != 1 || p2.Jobs[0].ID != jobs[0].ID || p2.NextCursor != nil || !p2.Jobs[0].CostUsd.Equal(testkit.D("0.5")) {
		t.Fatalf("page 2: %+v", p2)
	}
	// bob's job answers ada as an unknown one does.
	for _, id := range []string{bobs.ID, "no-such-job"} {
		// The Lab quotes at most 32 characters of the ID asked for.
		want := `{"code":"NOT_FOUND","message":"no job \"` + id[:min(32, len(id))] + `\""}`
		if text := toolErr(t, adaC, "get_strategy_job", map[string]any{"jobId": id}); text != want {
			t.Fatalf("%s: %s", id, text)
		}
	}
	if p := toolOK[page](t, bobC, "list_strategy_jobs", nil); len(p.Jobs) != 1 || p.Jobs[0].ID != bobs.ID {
		t.Fatalf("bob: %+v", p)
	}
}
