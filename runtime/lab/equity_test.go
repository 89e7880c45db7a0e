package lab

import (
	"testing"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/strategy"
)

func TestThinKeepsTheEndsAndEvenlySpacedPoints(t *testing.T) {
	curve := make([]analytics.Point, 10)
	for i := range curve {
		curve[i] = analytics.Point{Timestamp: int64(i), Equity: httpapi.Num(d(itoa(100 + i)))}
	}
	// 10 points to 4: indexes i × (10-1) / (4-1) = 0, 3, 6, 9.
	got := Thin(curve, 4)
	want := []int64{0, 3, 6, 9}
	if len(got) != len(want) {
		t.Fatalf("%d points", len(got))
	}
	for i, p := range got {
		if p.Timestamp != want[i] || !p.Equity.Equal(d(itoa(100+int(want[i])))) {
			t.Fatalf("point %d: %+v, want the curve's point %d", i, p, want[i])
		}
	}
	if got := Thin(curve, 10); len(got) != 10 {
		t.Fatalf("a curve of max points: %d kept", len(got))
	}
}

// Each experiment that ran stores its curve beside its outcome: it starts at the initial
// balance and ends at the final equity, within MaxEquityPoints; failed ones have none.
func TestEquityCurvesOfAFinishedJob(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "10")
	// 3000 one-minute candles: experiment 0 (defaults) runs; the job is small enough to be quick.
	out, err := f.lab.Generate(ctx, c, request(strategy.EMACrossover, 3, 3000, 5))
	if err != nil {
		t.Fatal(err)
	}
	f.engine(t, "eq", nil, all, 2)
	job := f.waitDone(t, c, out.Job.ID)
	idx := []int{}
	for _, x := range job.Result.Experiments {
		idx = append(idx, x.Index)
	}
	curves, err := f.lab.Equity(ctx, c.UserID, job.ID, append(idx, 99))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, x := range job.Result.Experiments {
		curve, ok := curves[x.Index]
		if x.Error != nil {
			if ok {
				t.Fatalf("failed experiment %d has a curve", x.Index)
			}
			continue
		}
		ran++
		if !ok || len(curve) < 2 || len(curve) > MaxEquityPoints {
			t.Fatalf("experiment %d: %d points", x.Index, len(curve))
		}
		// The default initial balance is 10,000; the curve chains the windows (in-sample,
		// then out-of-sample, each run from 10,000), so it ends at 10,000 plus both
		// windows' results.
		end := d("10000")
		for _, w := range x.Windows {
			end = end.Add(w.FinalEquity.Sub(d("10000")))
		}
		if len(x.Windows) != 2 || !x.FinalEquity.Equal(x.Windows[0].FinalEquity.Decimal) {
			t.Fatalf("experiment %d: windows %+v, final equity %v: want two, the ranked one's final equity first", x.Index, x.Windows, x.FinalEquity)
		}
		if !curve[0].Equity.Equal(d("10000")) || !curve[len(curve)-1].Equity.Equal(end) || curve[0].Time >= curve[len(curve)-1].Time {
			t.Fatalf("experiment %d: from %v to %v, want 10000 to %v", x.Index, curve[0].Equity, curve[len(curve)-1].Equity, end)
		}
	}
	if ran == 0 {
		t.Fatal("no experiment ran")
	}
	if _, ok := curves[99]; ok {
		t.Fatal("a curve for an experiment the job does not have")
	}
	other := f.user(t, "other@example.com", auth.TierPro, "0")
	if _, err := f.lab.Equity(ctx, other.UserID, job.ID, idx); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("another user's job: %v", err)
	}
}
