package marketdata

import (
	"hash/fnv"
	"math"
	"math/bits"
)

// The simulated price path is a standard Brownian motion B sampled at integer tick indices
// and built top-down as a dyadic Brownian bridge (Lévy's construction) over [0, 2^walkDepth]:
// B(0) = 0, B(2^walkDepth) ~ N(0, 2^walkDepth), and every dyadic midpoint is the mean of its
// interval's end values plus an independent N(0, len/4) displacement. Each displacement's
// random number is a hash of (salt, midpoint index): a dyadic point is the midpoint of
// exactly one interval, so the index alone names the node. B at any index therefore is a pure
// function of (salt, index), costs one descent of at most walkDepth levels, and consecutive
// indices share all but a few levels of their descents (path caches them), so sampling a run
// of nearby points costs about two hashes per point.
const (
	walkDepth  = 48
	walkMax    = int64(1)<<walkDepth - 1
	walkCenter = int64(1) << (walkDepth - 1) // tick 0 (the Start time) sits in the middle
)

var (
	rootScale  = math.Sqrt(float64(int64(1) << walkDepth))
	levelScale [walkDepth]float64 // std of the midpoint displacement of a level-l interval
)

func init() {
	for l := range levelScale {
		levelScale[l] = math.Sqrt(float64(int64(1)<<(walkDepth-l))) / 2
	}
}

// path evaluates B for one salt, remembering the last descent.
type path struct {
	salt uint64
	n    int   // levels valid in lo/vlo/vhi
	last int64 // index of the last evaluation
	lo   [walkDepth + 1]int64
	vlo  [walkDepth + 1]float64
	vhi  [walkDepth + 1]float64
}

// at is B(m) for 0 <= m <= walkMax.
func (p *path) at(m int64) float64 {
	l := 0
	if p.n == 0 {
		p.lo[0], p.vlo[0], p.vhi[0] = 0, 0, rootScale*gauss(p.salt, walkMax+1)
		p.n = 1
	} else {
		// Levels 0..l contain both m and the last index.
		l = walkDepth - bits.Len64(uint64(m^p.last))
		if l > p.n-1 {
			l = p.n - 1
		}
	}
	for {
		lo := p.lo[l]
		if m == lo {
			p.n, p.last = l+1, m
			return p.vlo[l]
		}
		mid := lo + int64(1)<<(walkDepth-1-l)
		vmid := 0.5*(p.vlo[l]+p.vhi[l]) + levelScale[l]*gauss(p.salt, mid)
		if m < mid {
			p.lo[l+1], p.vlo[l+1], p.vhi[l+1] = lo, p.vlo[l], vmid
		} else {
			p.lo[l+1], p.vlo[l+1], p.vhi[l+1] = mid, vmid, p.vhi[l]
		}
		l++
	}
}

// gauss is a deterministic, approximately standard normal number for (salt, i): the
// Irwin-Hall sum of the four 16-bit quarters of a 64-bit hash, rescaled to variance 1. Its
// tails stop at ±3.46, which suits a price path (no absurd single-tick jumps).
func gauss(salt uint64, i int64) float64 {
	h := hash64(salt, uint64(i))
	s := h&0xffff + h>>16&0xffff + h>>32&0xffff + h>>48
	return (float64(s) - 2*65535) * gaussNorm
}

// 1/std of the sum of four uniforms on {0..65535}: var = 4·(65536²-1)/12.
var gaussNorm = 1 / math.Sqrt(4*(65536.0*65536.0-1)/12)

// unit is a deterministic number in [0, 1).
func unit(salt uint64, i int64) float64 {
	return float64(hash64(salt, uint64(i))>>11) / (1 << 53)
}

func hash64(salt, i uint64) uint64 { return mix64(salt ^ (i * 0x9e3779b97f4a7c15)) }

// mix64 is the SplitMix64 finalizer: a bijection with good avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// symbolSalt names a symbol's path; stable across processes and releases (no maphash).
func symbolSalt(seed int64, symbol string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(symbol))
	return mix64(h.Sum64() ^ mix64(uint64(seed)+0x632be59bd9b4e019))
}

// reflectBand folds x into [-a, a] by reflection at both edges (a triangle wave), so a
// reflected Brownian motion keeps its local volatility everywhere but never leaves the band.
// a <= 0 leaves x unbounded.
func reflectBand(x, a float64) float64 {
	if a <= 0 || (x >= -a && x <= a) {
		return x
	}
	period := 4 * a
	u := x + a
	u -= math.Floor(u/period) * period // in [0, 4a)
	if u <= 2*a {
		return u - a
	}
	return 3*a - u
}
