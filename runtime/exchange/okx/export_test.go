package okx

// ResetCaches forgets the instruments and clock offsets learned so far, so that a test's
// fake (whose port may be a closed fake's) starts cold.
func ResetCaches() {
	marketCache.Reset()
	clockOffsets.Reset()
}
