package httpapi

import "github.com/shopspring/decimal"

// Number is a decimal that JSON carries as a number with its exact decimal text (12.5, not
// the string "12.5" shopspring/decimal writes): the spec's numbers (amounts, prices, money,
// risk figures) are numbers for clients, and the text keeps every digit, so a client that
// parses it as a decimal gets the value exactly. It decodes from a number or a string (the
// embedded decimal's UnmarshalJSON), so records written either way read back.
//
// It is the one way a decimal becomes a JSON number: nothing switches shopspring/decimal's
// package-wide MarshalJSONWithoutQuotes, so a plain decimal.Decimal in JSON is a string,
// and every struct field that JSON encodes holds a Number instead
// (TestDecimalFieldsInJSONAreNumbers). Error details carry decimals as json.Number
// (errs.JSONDetails).
type Number struct{ decimal.Decimal }

// Num wraps d.
func Num(d decimal.Decimal) Number { return Number{d} }

// NumPtr is a pointer to d wrapped: an optional number that is present.
func NumPtr(d decimal.Decimal) *Number { return &Number{d} }

// NumOrNil wraps *d; nil stays nil (JSON null, or left out with omitempty).
func NumOrNil(d *decimal.Decimal) *Number {
	if d == nil {
		return nil
	}
	return &Number{*d}
}

// MarshalJSON writes the decimal's text unquoted.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(n.String()), nil }
