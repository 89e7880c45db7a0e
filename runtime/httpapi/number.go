package httpapi

import "github.com/shopspring/decimal"

// Number is a decimal that JSON carries as a number with its exact decimal text (12.5, not
// the string "12.5" shopspring/decimal writes): the read API's money figures are numbers
// for clients, and the text keeps every digit, so a client that parses it as a decimal
// gets the value exactly. It decodes from a number or a string (the embedded decimal's
// UnmarshalJSON).
type Number struct{ decimal.Decimal }

// Num wraps d.
func Num(d decimal.Decimal) Number { return Number{d} }

// MarshalJSON writes the decimal's text unquoted.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(n.String()), nil }
