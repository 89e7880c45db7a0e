package risk_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

var noon = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestAfterTrade(t *testing.T) {
	l := risk.Limits{DailyLossLimit: testkit.D("50"), MaxConsecutiveLosses: 3}
	var c risk.Counters
	if p := c.AfterTrade(testkit.D("-20"), noon, l); p != nil || c.ConsecutiveLosses != 1 {
		t.Fatalf("%+v %+v", p, c)
	}
	if p := c.AfterTrade(testkit.D("10"), noon, l); p != nil || c.ConsecutiveLosses != 0 || !c.DayPnl.Equal(testkit.D("-10")) {
		t.Fatalf("%+v %+v", p, c)
	}
	if p := c.AfterTrade(testkit.D("0"), noon, l); p != nil || c.ConsecutiveLosses != 0 {
		t.Fatal("break-even counted as a loss")
	}
	// −10 − 39.99 = −49.99: just under the limit.
	if p := c.AfterTrade(testkit.D("-39.99"), noon, l); p != nil {
		t.Fatalf("paused at %s", c.DayPnl)
	}
	p := c.AfterTrade(testkit.D("-0.01"), noon, l) // exactly 50
	if p == nil || p.Reason != registry.PauseRisk || !p.Until.Equal(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("pause = %+v", p)
	}
	// A new UTC day starts a new daily total; the run of losses goes on.
	next := noon.Add(24 * time.Hour)
	if !c.DailyLossUsed(next).IsZero() {
		t.Fatal("yesterday's loss counted today")
	}
	p = c.AfterTrade(testkit.D("-1"), next, l) // third loss in a row
	if p == nil || c.ConsecutiveLosses != 3 || !c.DayPnl.Equal(testkit.D("-1")) {
		t.Fatalf("pause = %+v, counters %+v", p, c)
	}
}

func TestScoreAndLevels(t *testing.T) {
	cases := []struct {
		ratios []float64
		score  int
		level  string
	}{
		{[]float64{0, 0, 0}, 1, "low"},
		{[]float64{0.25, 0, 0}, 2, "low"},             // 0.175 + 0.025 = 0.2 → 1 + 1.8
		{[]float64{0.5, 0, 0}, 4, "moderate"},         // 0.35 + 0.05 = 0.4 → 1 + 3.6
		{[]float64{0.5, 0.5, 0.5}, 5, "high"},         // 0.5 → 1 + 4.5
		{[]float64{0, 1, 0}, 8, "extreme"},            // a limit reached: 0.8 → 1 + 7.2
		{[]float64{1, 1, 1}, 10, "extreme"},           // everything at its limit
		{[]float64{2, -1, 0}, 8, "extreme"},           // clamped
		{[]float64{0.75, 0.6, 0.2}, 7, "high"},        // 0.525 + 0.155 = 0.68 → 1 + 6.12
		{[]float64{0.3, 0.3, 0.3}, 3, "moderate"},     // 0.3 → 1 + 2.7
		{[]float64{0.9, 0.9, 0.9}, 9, "extreme"},      // 0.9 → 1 + 8.1
		{[]float64{0.6, 0.0, 0.0}, 5, "high"},         // 0.42 + 0.06 = 0.48 → 1 + 4.32
		{[]float64{0.1, 0.0, 0.0}, 1, "low"},          // 0.08 → 1 + 0.72
		{[]float64{0.2, 0.2, 0.0}, 2, "low"},          // 0.14 + 0.04 = 0.18 → 1 + 1.62
		{[]float64{0.4, 0.4, 0.4}, 4, "moderate"},     // 0.4 → 1 + 3.6
		{[]float64{0.7, 0.7, 0.7}, 7, "high"},         // 0.7 → 1 + 6.3
		{[]float64{0.78, 0.78, 0.78}, 8, "extreme"},   // 0.78 → 1 + 7.02
		{[]float64{0.111, 0.111, 0.111}, 1, "low"},    // 0.999 → 1
		{[]float64{0.1112, 0.1112, 0.1112}, 2, "low"}, // 1.0008 → 2
	}
	for _, c := range cases {
		s := risk.Score(c.ratios...)
		if s != c.score || risk.Level(s) != c.level {
			t.Errorf("Score(%v) = %d %s, want %d %s", c.ratios, s, risk.Level(s), c.score, c.level)
		}
	}
}

func TestMetrics(t *testing.T) {
	l := risk.Limits{MaxExposure: testkit.D("0.5"), DailyLossLimit: testkit.D("100"), MaxConsecutiveLosses: 4}
	c := risk.Counters{Day: "2026-11-21", DayPnl: testkit.D("-50"), ConsecutiveLosses: 2}
	m := risk.Metrics("bot-1", l, c, testkit.D("0.25"), noon)
	// ratios 0.5, 0.5, 0.5 → 5 high
	if m.BotID != "bot-1" || m.RiskScore != 5 || m.RiskLevel != "high" || m.ConsecutiveLosses != 2 || m.MaxConsecutiveLosses != 4 {
		t.Fatalf("%+v", m)
	}
	if !m.DailyLossUsed.Equal(testkit.D("50")) || !m.CurrentExposure.Equal(testkit.D("0.25")) || !m.MaxExposureAllowed.Equal(testkit.D("0.5")) {
		t.Fatalf("%+v", m)
	}
	// No limits: exposure against all of equity, losses against a run of 10.
	m = risk.Metrics("bot-1", risk.Limits{}, risk.Counters{}, testkit.D("0"), noon)
	if m.RiskScore != 1 || m.RiskLevel != "low" || !m.MaxExposureAllowed.Equal(testkit.D("1")) {
		t.Fatalf("%+v", m)
	}
}

func TestCheckExposure(t *testing.T) {
	l := risk.Limits{MaxExposure: testkit.D("0.5")}
	// used 3000 + 2000 of (5000 free + 3000 used) = 0.625 > 0.5
	err := risk.CheckExposure(l, testkit.D("3000"), testkit.D("2000"), testkit.D("5000"))
	if e, ok := errs.As(err); !ok || e.Code != errs.InvalidAmount || !e.Details["exposure"].(decimal.Decimal).Equal(testkit.D("0.625")) {
		t.Fatalf("err = %v", err)
	}
	if err := risk.CheckExposure(l, testkit.D("3000"), testkit.D("1000"), testkit.D("5000")); err != nil { // exactly 0.5
		t.Fatal(err)
	}
	if err := risk.CheckExposure(risk.Limits{}, testkit.D("3000"), testkit.D("9000"), testkit.D("5000")); err != nil {
		t.Fatal("no limit refused")
	}
}

func TestLimitsOf(t *testing.T) {
	l, err := risk.LimitsOf(registry.Risk{MaxExposure: "0.3", DailyLossLimit: "250.5", MaxConsecutiveLosses: 4})
	if err != nil || !l.MaxExposure.Equal(testkit.D("0.3")) || !l.DailyLossLimit.Equal(testkit.D("250.5")) || l.MaxConsecutiveLosses != 4 {
		t.Fatal(l, err)
	}
	if _, err := risk.LimitsOf(registry.Risk{MaxExposure: "lots"}); err == nil {
		t.Fatal("bad maxExposure accepted")
	}
}

func TestRecordErrorPausesAtTheFifth(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	rdb.HSet(ctx, store.Bot("b"), "config", "{}")
	sub := rdb.Subscribe(ctx, store.BotEvents())
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		if p, err := risk.RecordError(ctx, rdb, "b", noon); p != nil || err != nil {
			t.Fatalf("error %d paused: %v %v", i, p, err)
		}
	}
	p, err := risk.RecordError(ctx, rdb, "b", noon)
	if err != nil || p == nil || p.Reason != registry.PauseErrors || !p.Until.IsZero() {
		t.Fatalf("fifth error: %+v %v", p, err)
	}
	if m, err := sub.ReceiveMessage(ctx); err != nil || m.Payload != "b" {
		t.Fatalf("event: %v %v", m, err)
	}
	got, err := registry.New(rdb).ReadPause(ctx, "b", noon.Add(365*24*time.Hour))
	if err != nil || got == nil || got.Reason != registry.PauseErrors {
		t.Fatalf("pause = %+v %v", got, err)
	}
}

// A resumed bot gets MaxConsecutiveErrors more tries: the fifth error reset the count.
func TestRecordErrorCountsAgainAfterAPause(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	rdb.HSet(ctx, store.Bot("b"), "config", "{}")
	for i := 1; i <= risk.MaxConsecutiveErrors; i++ {
		if _, err := risk.RecordError(ctx, rdb, "b", noon); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := reg.Resume(ctx, "b", registry.Pause{Reason: registry.PauseErrors}); !ok || err != nil {
		t.Fatalf("resume = %v %v", ok, err)
	}
	for i := 1; i < risk.MaxConsecutiveErrors; i++ {
		if p, err := risk.RecordError(ctx, rdb, "b", noon); p != nil || err != nil {
			t.Fatalf("error %d after the resume paused: %v %v", i, p, err)
		}
	}
	if p, _ := risk.RecordError(ctx, rdb, "b", noon); p == nil {
		t.Fatal("the fifth error after the resume did not pause")
	}
}

// An error of a deleted bot is counted but pauses nothing: the bot's hash is not re-created.
func TestRecordErrorOfADeletedBot(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	for i := 1; i <= risk.MaxConsecutiveErrors; i++ {
		if p, err := risk.RecordError(ctx, rdb, "gone", noon); p != nil || err != nil {
			t.Fatalf("error %d: %v %v", i, p, err)
		}
	}
	if n := rdb.Exists(ctx, store.Bot("gone")).Val(); n != 0 {
		t.Fatal("the bot's hash was re-created")
	}
}

func TestPurgeRemovesTheCounters(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	if _, err := risk.RecordError(ctx, rdb, "b", noon); err != nil {
		t.Fatal(err)
	}
	if err := risk.Purge(ctx, rdb, "b"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, store.RiskCounters("b")).Val(); n != 0 {
		t.Fatal("risk counters left")
	}
}
