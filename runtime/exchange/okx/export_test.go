package okx

import "sync/atomic"

// ResetCaches forgets the instruments and clock offsets learned so far, so that a test's
// fake (whose port may be a closed fake's) starts cold.
func ResetCaches() {
	marketCache.Range(func(k, _ any) bool { marketCache.Delete(k); return true })
	clockOffsets.Range(func(_, v any) bool { v.(*atomic.Int64).Store(0); return true })
}
