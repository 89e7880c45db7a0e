package store

import (
	"strconv"
	"strings"
)

// SplitStreamID reads a stream entry ID ("ms-seq") as its two numbers, which compare as
// Redis orders the entries; ok is false for anything else.
func SplitStreamID(id string) (ms, seq int64, ok bool) {
	m, s, found := strings.Cut(id, "-")
	a, err1 := strconv.ParseInt(m, 10, 64)
	b, err2 := strconv.ParseInt(s, 10, 64)
	return a, b, found && err1 == nil && err2 == nil
}
