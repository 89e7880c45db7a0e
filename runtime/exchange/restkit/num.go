package restkit

import (
	"strings"

	"github.com/shopspring/decimal"
)

// Num is a venue's decimal string ("0.01", "" for none), kept as text until parsed
// exactly; a bare JSON number and null are taken as text too. Bybit and OKX both answer
// every amount and price this way, and both adapters need the same leniency: an absent or
// empty field is zero, never an error.
type Num string

// UnmarshalJSON takes a string, a bare number or null ("").
func (n *Num) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" {
		s = ""
	}
	*n = Num(s)
	return nil
}

// Dec parses n; "" and text that is not a decimal are zero.
func (n Num) Dec() decimal.Decimal {
	if n == "" {
		return decimal.Zero
	}
	d, err := decimal.NewFromString(string(n))
	if err != nil {
		return decimal.Zero
	}
	return d
}
