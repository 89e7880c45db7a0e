package testkit

import "github.com/shopspring/decimal"

// D is the decimal written as s; a malformed literal panics, which in a test is a bug in
// the test itself.
func D(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// DP is D as a pointer, for optional fields.
func DP(s string) *decimal.Decimal { v := D(s); return &v }
