// Package overfit estimates how much a search's best backtest owes to luck: the
// probability of backtest overfitting (PBO) by combinatorially symmetric cross-validation
// (CSCV), from Bailey, Borwein, López de Prado and Zhu, "The Probability of Backtest
// Overfitting", Journal of Computational Finance 20(4), 2017.
//
// The returns of N strategies over the same T days are cut into S blocks of consecutive
// days. For every way of choosing S/2 blocks as the in-sample half (the rest is the
// out-of-sample half), the strategy with the best in-sample Sharpe ratio is found, and its
// rank among the N on the out-of-sample half is taken as a fraction ω = rank / (N + 1). The
// logit λ = ln(ω / (1 − ω)) is at most 0 when that strategy did no better than the median
// out of sample; PBO is the share of the choices where it did so. A search whose best
// in-sample result keeps its place out of sample has a PBO near 0; one whose winner is
// chance has one near or above 0.5.
package overfit

import (
	"math"
	"math/bits"
	"slices"
)

// MaxBlocks is the most blocks the days are cut into: C(16, 8) = 12,870 halvings.
const MaxBlocks = 16

// MinBlockDays is the fewest days a block holds: the number of blocks is the largest even
// number up to MaxBlocks that leaves each block at least this many days.
const MinBlockDays = 4

// daysPerYear annualises the Sharpe ratio, as runtime/analytics does (crypto trades every
// calendar day); it does not change any rank.
const daysPerYear = 365

// Estimate is a PBO estimate.
type Estimate struct {
	// Probability is PBO: the share of halvings in which the in-sample best ranked at or
	// below the median out of sample, 0 to 1.
	Probability float64 `json:"probability"`
	// Strategies, Days and Blocks are N, T (the days used: the last Blocks × whole blocks
	// of them) and S.
	Strategies int `json:"strategies"`
	Days       int `json:"days"`
	Blocks     int `json:"blocks"`
	// Combinations is C(S, S/2), the halvings evaluated.
	Combinations int `json:"combinations"`
	// MedianLogit is the median λ over the halvings: negative when the in-sample best is
	// typically below the out-of-sample median.
	MedianLogit float64 `json:"medianLogit"`
}

// blockStats are one strategy's sums over one block: enough for the Sharpe ratio of any
// union of blocks (mean and sample variance from the sums).
type blockStats struct{ n, sum, sq float64 }

// PBO estimates the probability of backtest overfitting of returns[i], strategy i's daily
// returns (every strategy the same length, the same days). ok is false when there are
// fewer than 2 strategies or too few days for 4 blocks of MinBlockDays: no estimate.
// Ties are broken by index (the in-sample best is the first of equals) and count half
// out of sample, so the estimate is a function of the returns alone.
func PBO(returns [][]float64) (Estimate, bool) {
	n := len(returns)
	if n < 2 {
		return Estimate{}, false
	}
	t := len(returns[0])
	for _, r := range returns {
		t = min(t, len(r))
	}
	s := min(MaxBlocks, t/MinBlockDays) &^ 1
	if s < 4 {
		return Estimate{}, false
	}
	size := t / s
	used := size * s
	stats := make([][]blockStats, n)
	for i, r := range returns {
		r = r[len(r)-used:] // the latest days: the first ones left over are dropped
		stats[i] = make([]blockStats, s)
		for b := range s {
			st := &stats[i][b]
			for _, x := range r[b*size : (b+1)*size] {
				st.n++
				st.sum += x
				st.sq += x * x
			}
		}
	}
	totals := make([]blockStats, n)
	for i := range n {
		totals[i] = sumOf(stats[i], 1<<s-1)
	}
	var logits []float64
	below := 0
	is, oos := make([]float64, n), make([]float64, n)
	// Every choice of S/2 blocks as the in-sample half, a halving and its mirror both (as
	// in the paper: each is a different question, which strategy wins on which half).
	for mask := range uint32(1) << s {
		if bits.OnesCount32(mask) != s/2 {
			continue
		}
		for i := range n {
			in := sumOf(stats[i], mask)
			out := blockStats{totals[i].n - in.n, totals[i].sum - in.sum, totals[i].sq - in.sq}
			is[i], oos[i] = in.sharpe(), out.sharpe()
		}
		best := 0
		for i := 1; i < n; i++ {
			if is[i] > is[best] {
				best = i
			}
		}
		w := relativeRank(oos, best)
		l := math.Log(w / (1 - w))
		logits = append(logits, l)
		if l <= 0 {
			below++
		}
	}
	return Estimate{Probability: float64(below) / float64(len(logits)), Strategies: n, Days: used, Blocks: s,
		Combinations: len(logits), MedianLogit: median(logits)}, true
}

// sumOf adds the blocks in mask.
func sumOf(blocks []blockStats, mask uint32) blockStats {
	var t blockStats
	for m := mask; m != 0; m &= m - 1 {
		st := blocks[bits.TrailingZeros32(m)]
		t.n += st.n
		t.sum += st.sum
		t.sq += st.sq
	}
	return t
}

// sharpe is the annualised Sharpe ratio (mean over sample standard deviation × √365) of
// the days summed in t; 0 with no variation.
func (t blockStats) sharpe() float64 {
	if t.n < 2 {
		return 0
	}
	mean := t.sum / t.n
	v := (t.sq - t.sum*mean) / (t.n - 1)
	if v <= 1e-24 {
		return 0
	}
	return mean / math.Sqrt(v) * math.Sqrt(daysPerYear)
}

// relativeRank is ω of strategy best on perf: its rank from 1 (worst) to N, ties with
// others counted half, over N + 1, so strictly between 0 and 1.
func relativeRank(perf []float64, best int) float64 {
	rank := 1.0
	for i, p := range perf {
		switch {
		case i == best:
		case p < perf[best]:
			rank++
		case p == perf[best]:
			rank += 0.5
		}
	}
	return rank / float64(len(perf)+1)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
