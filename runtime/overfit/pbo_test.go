package overfit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// block is four days of returns around level: level ± a spread, so that a block has a
// variance and a sign.
func block(level float64) []float64 {
	return []float64{level + 0.001, level - 0.001, level + 0.002, level - 0.002}
}

func days(levels ...float64) []float64 {
	var out []float64
	for _, l := range levels {
		out = append(out, block(l)...)
	}
	return out
}

// A strategy better than the other in every block wins in-sample and ranks 2 of 2 out of
// sample in all six halvings of four blocks: ω = 2/3, λ = ln 2 > 0, PBO 0.
func TestPersistentWinnerIsNotOverfit(t *testing.T) {
	e, ok := PBO([][]float64{days(0.01, 0.012, 0.011, 0.013), days(0.001, 0.002, -0.001, 0.0)})
	if !ok {
		t.Fatal("no estimate")
	}
	if e.Probability != 0 || e.Blocks != 4 || e.Days != 16 || e.Combinations != 6 || e.Strategies != 2 {
		t.Fatalf("estimate %+v, want PBO 0 over 6 halvings of 4 blocks of 16 days", e)
	}
	if math.Abs(e.MedianLogit-math.Ln2) > 1e-12 {
		t.Fatalf("median logit %v, want ln 2", e.MedianLogit)
	}
}

// A wins the first two blocks, B the last two. Choosing blocks {0,1} in-sample picks A,
// which ranks 1 of 2 on {2,3} (ω = 1/3, λ = −ln 2); {2,3} picks B, likewise. The four
// mixed halvings tie in-sample (A is taken, the first of equals) and tie out of sample
// (ω = 1/2, λ = 0, at the median: counted). PBO = 6/6 = 1; median λ = 0.
func TestAlternatingWinnerIsOverfit(t *testing.T) {
	e, ok := PBO([][]float64{days(0.01, 0.01, -0.01, -0.01), days(-0.01, -0.01, 0.01, 0.01)})
	if !ok {
		t.Fatal("no estimate")
	}
	if e.Probability != 1 || e.MedianLogit != 0 {
		t.Fatalf("estimate %+v, want PBO 1 and median logit 0", e)
	}
}

// Thirty strategies of pure noise: the in-sample best is chance, so about half the
// halvings put it below the median (seeded, so the figure is fixed; the bound is the
// binomial spread of a fair estimate). One strategy with a real edge among them: PBO near 0.
func TestNoiseAndEdge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	noise := make([][]float64, 30)
	for i := range noise {
		noise[i] = make([]float64, 160)
		for d := range noise[i] {
			noise[i][d] = rng.NormFloat64() * 0.01
		}
	}
	e, ok := PBO(noise)
	if !ok || e.Blocks != 16 || e.Combinations != 12870 {
		t.Fatalf("estimate %+v (ok %v), want 16 blocks and 12,870 halvings", e, ok)
	}
	if e.Probability < 0.3 || e.Probability > 0.7 {
		t.Fatalf("PBO of pure noise %v, want about 0.5", e.Probability)
	}
	for d := range noise[3] {
		noise[3][d] += 0.01
	}
	e, _ = PBO(noise)
	if e.Probability > 0.05 {
		t.Fatalf("PBO with one strategy of a real edge %v, want near 0", e.Probability)
	}
}

func TestTooLittleData(t *testing.T) {
	if _, ok := PBO([][]float64{days(0.01, 0.02, 0.01, 0.02)}); ok {
		t.Fatal("one strategy gave an estimate")
	}
	if _, ok := PBO([][]float64{make([]float64, 15), make([]float64, 15)}); ok {
		t.Fatal("15 days (fewer than 4 blocks of 4) gave an estimate")
	}
}

func BenchmarkPBO(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rs := make([][]float64, 30)
	for i := range rs {
		rs[i] = make([]float64, 365)
		for d := range rs[i] {
			rs[i][d] = rng.NormFloat64() * 0.01
		}
	}
	for b.Loop() {
		PBO(rs)
	}
}
