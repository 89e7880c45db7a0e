package testkit

import (
	"testing"

	"github.com/shopspring/decimal"
)

// D is the decimal written as s; a malformed literal panics, which in a test is a bug in
// the test itself.
func D(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// DP is D as a pointer, for optional fields.
func DP(s string) *decimal.Decimal { v := D(s); return &v }

// EqualD reports an error (the test goes on) unless got is the decimal written as want,
// compared by value: "1.50" equals "1.5", as money amounts do.
func EqualD(t testing.TB, what string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(D(want)) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}
