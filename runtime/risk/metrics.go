package risk

import (
	"math"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
)

// BotMetrics is the spec's Bot risk metrics.
type BotMetrics struct {
	BotID                string         `json:"botId"`
	CurrentExposure      httpapi.Number `json:"currentExposure"`
	MaxExposureAllowed   httpapi.Number `json:"maxExposureAllowed"`
	DailyLossLimit       httpapi.Number `json:"dailyLossLimit"`
	DailyLossUsed        httpapi.Number `json:"dailyLossUsed"`
	ConsecutiveLosses    int            `json:"consecutiveLosses"`
	MaxConsecutiveLosses int            `json:"maxConsecutiveLosses"`
	RiskScore            int            `json:"riskScore"`
	RiskLevel            string         `json:"riskLevel"`
}

// Risk levels (decision 9).
const (
	LevelLow      = "low"
	LevelModerate = "moderate"
	LevelHigh     = "high"
	LevelExtreme  = "extreme"
)

// defaultLossRun is the run of losses counted as "full" when the bot sets no maximum.
const defaultLossRun = 10

// Metrics computes a bot's risk metrics. exposure is the fraction of equity its open
// positions use (see CheckExposure). Without a maxExposure, maxExposureAllowed is 1 (all
// of equity).
//
// The score combines three use ratios, each clamped to [0, 1]: exposure over
// maxExposureAllowed, daily loss used over the daily limit (0 without a limit), and
// consecutive losses over their maximum (over 10 without one):
//
//	score = 1 + floor(9 × (0.7 × max + 0.3 × mean))
//
// so a bot with nothing at risk scores 1, a bot that has reached one limit (and so is
// paused) scores at least 8 (extreme), and all three at their limits scores 10.
func Metrics(botID string, l Limits, c Counters, exposure decimal.Decimal, now time.Time) BotMetrics {
	m := BotMetrics{
		BotID: botID, CurrentExposure: httpapi.Num(exposure.Round(6)), MaxExposureAllowed: httpapi.Num(l.MaxExposure),
		DailyLossLimit: httpapi.Num(l.DailyLossLimit), DailyLossUsed: httpapi.Num(c.DailyLossUsed(now)),
		ConsecutiveLosses: c.ConsecutiveLosses, MaxConsecutiveLosses: l.MaxConsecutiveLosses,
	}
	if !m.MaxExposureAllowed.IsPositive() {
		m.MaxExposureAllowed = httpapi.Num(decimal.NewFromInt(1))
	}
	ratios := []float64{ratio(exposure, m.MaxExposureAllowed.Decimal), 0, 0}
	if l.DailyLossLimit.IsPositive() {
		ratios[1] = ratio(m.DailyLossUsed.Decimal, l.DailyLossLimit)
	}
	run := l.MaxConsecutiveLosses
	if run <= 0 {
		run = defaultLossRun
	}
	ratios[2] = ratio(decimal.NewFromInt(int64(c.ConsecutiveLosses)), decimal.NewFromInt(int64(run)))
	m.RiskScore = Score(ratios...)
	m.RiskLevel = Level(m.RiskScore)
	return m
}

// Score maps use ratios in [0, 1] to 1-10 (see Metrics).
func Score(ratios ...float64) int {
	if len(ratios) == 0 {
		return 1
	}
	maxR, sum := 0.0, 0.0
	for _, r := range ratios {
		r = math.Max(0, math.Min(1, r))
		maxR = math.Max(maxR, r)
		sum += r
	}
	x := 0.7*maxR + 0.3*sum/float64(len(ratios))
	s := 1 + int(math.Floor(9*x+1e-9))
	return max(1, min(10, s))
}

// Level names a score: low 1-2, moderate 3-4, high 5-7, extreme 8-10.
func Level(score int) string {
	switch {
	case score <= 2:
		return LevelLow
	case score <= 4:
		return LevelModerate
	case score <= 7:
		return LevelHigh
	}
	return LevelExtreme
}

func ratio(a, b decimal.Decimal) float64 {
	if !b.IsPositive() {
		return 0
	}
	f, _ := a.Div(b).Float64()
	return math.Max(0, math.Min(1, f))
}
