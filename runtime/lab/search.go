package lab

import (
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/strategy"
)

// maxDraws bounds the random draws of one search: a draw that breaks a cross-field rule or
// repeats an earlier set is drawn again, and every family's grid is far larger than
// MaxExperiments, so the bound is never reached in practice; past it a search returns
// fewer sets rather than looping.
const maxDraws = 100_000

// ParameterSets is the seeded random search of a job: n parameter sets of family, the
// first the family's defaults (strategy.Family.Defaults), the others drawn uniformly from
// each parameter's Step grid within its Range (PCG seeded by seed and the family), redrawn
// when they break a cross-field rule (strategy.Spec.Validate) or repeat an earlier set. The
// same family, n and seed give the same sets, on any machine.
func ParameterSets(family strategy.Family, n int, seed int64) []strategy.Params {
	if n <= 0 || !family.Valid() {
		return nil
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(family))
	rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	ranges := family.Ranges()
	out := []strategy.Params{family.Defaults()}
	seen := map[strategy.Params]bool{out[0]: true}
	for draws := 0; len(out) < n && draws < maxDraws; draws++ {
		var p strategy.Params
		for _, r := range ranges {
			p.Set(r.Name, gridValue(r, rng))
		}
		if seen[p] || (strategy.Spec{Family: family, Timeframe: "1h", Symbol: "BTC/USDT", Params: p}).Validate() != nil {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// gridValue draws one point of r's grid, Min + k × Step, computed in decimal from the
// shortest texts of Min and Step so that a value is the grid's exact decimal (2.3, never
// 2.3000000000000003) and reads back as the same float64.
func gridValue(r strategy.Range, rng *rand.Rand) float64 {
	lo := decimal.RequireFromString(strconv.FormatFloat(r.Min, 'f', -1, 64))
	step := decimal.RequireFromString(strconv.FormatFloat(r.Step, 'f', -1, 64))
	hi := decimal.RequireFromString(strconv.FormatFloat(r.Max, 'f', -1, 64))
	points := hi.Sub(lo).Div(step).Floor().IntPart() + 1
	v := lo.Add(step.Mul(decimal.NewFromInt(rng.Int64N(points))))
	f, _ := v.Float64()
	return f
}
