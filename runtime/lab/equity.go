package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// MaxEquityPoints bounds the equity curve kept per experiment: enough for a chart's width,
// small enough that 30 curves stay a few hundred kilobytes whatever the period.
const MaxEquityPoints = 500

// EquityPoint is one point of an experiment's stored equity curve: the time (Unix ms) and
// the realised equity. The drawdown of analytics.Point is left out: the curve is stored for
// charts only, and every experiment's maximum drawdown is in its metrics.
type EquityPoint struct {
	Time   int64          `json:"t"`
	Equity httpapi.Number `json:"e"`
}

// curveOf is the stored form of a backtest's equity curve, thinned to MaxEquityPoints.
func curveOf(curve []analytics.Point) []EquityPoint {
	kept := Thin(curve, MaxEquityPoints)
	out := make([]EquityPoint, len(kept))
	for i, p := range kept {
		out[i] = EquityPoint{Time: p.Timestamp, Equity: httpapi.Num(p.Equity.Decimal)}
	}
	return out
}

// Thin keeps at most max points of curve (max ≥ 2): the first, the last, and points evenly
// spaced by index between them. Each kept point is the backtest's own, unchanged; a curve
// already short enough is returned as it is.
func Thin(curve []analytics.Point, max int) []analytics.Point {
	n := len(curve)
	if n <= max || max < 2 {
		return curve
	}
	out := make([]analytics.Point, max)
	for i := range max {
		out[i] = curve[i*(n-1)/(max-1)]
	}
	return out
}

// Equity is the equity curves of experiments indexes (Experiment.Index) of the user's job,
// by index, thinned to MaxEquityPoints; an experiment that failed, or is not yet run, has
// none. Another user's job is NOT_FOUND, as a missing one.
func (l *Lab) Equity(ctx context.Context, userID, jobID string, indexes []int) (map[int][]EquityPoint, error) {
	if _, err := readJob(ctx, l.o.Redis, userID, jobID); err != nil {
		return nil, err
	}
	out := make(map[int][]EquityPoint, len(indexes))
	if len(indexes) == 0 {
		return out, nil
	}
	fields := make([]string, len(indexes))
	for i, x := range indexes {
		fields[i] = strconv.Itoa(x)
	}
	vals, err := l.o.Redis.HMGet(ctx, store.LabEquity(userID, jobID), fields...).Result()
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		var curve []EquityPoint
		if err := json.Unmarshal([]byte(s), &curve); err != nil {
			return nil, fmt.Errorf("lab: job %s experiment %d: corrupt equity curve: %w", jobID, indexes[i], err)
		}
		out[indexes[i]] = curve
	}
	return out, nil
}
