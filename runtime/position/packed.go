package position

import (
	"errors"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
)

// Order records and trades are stored in Redis in a compact text form (see orderSep): the
// form's version, then the fields in a fixed order, separated by packSep, the last field
// free to hold any byte. This file writes and reads that form; ordercodec.go and
// tradecodec.go say which fields each record has.
const packSep = "\x1f"

// errCorruptRecord: a stored record in neither its compact form nor JSON.
var errCorruptRecord = errors.New("corrupt record")

// pack joins the version and fields in the compact form; ok is false when a field other
// than the last holds the separator (the caller then writes JSON).
func pack(version string, fields []string) (string, bool) {
	n := len(version)
	for i, f := range fields {
		if i < len(fields)-1 && strings.Contains(f, packSep) {
			return "", false
		}
		n += len(packSep) + len(f)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(version)
	for _, f := range fields {
		b.WriteString(packSep)
		b.WriteString(f)
	}
	return b.String(), true
}

// packed reads the fields of text in the compact form of version with n fields (the
// version not counted); ok is false when text is not in that form (JSON, for one). The
// number and integer readers remember the first bad value in err.
type packed struct {
	f   []string
	err error
}

func unpack(text, version string, n int) (packed, bool) {
	if !strings.HasPrefix(text, version+packSep) {
		return packed{}, false
	}
	f := strings.SplitN(text[len(version)+len(packSep):], packSep, n)
	if len(f) != n {
		return packed{err: errCorruptRecord}, true
	}
	return packed{f: f}, true
}

// num is field i as a decimal ("" is zero).
func (p *packed) num(i int) httpapi.Number {
	if p.f[i] == "" || p.err != nil {
		return httpapi.Number{}
	}
	d, err := decimal.NewFromString(p.f[i])
	if err != nil {
		p.err = errCorruptRecord
	}
	return httpapi.Num(d)
}

// integer is field i as an integer ("" is 0).
func (p *packed) integer(i int) int64 {
	if p.f[i] == "" || p.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(p.f[i], 10, 64)
	if err != nil {
		p.err = errCorruptRecord
	}
	return v
}

// flag is field i as a boolean: "1" or "".
func (p *packed) flag(i int) bool {
	switch p.f[i] {
	case "1":
		return true
	case "":
		return false
	}
	p.err = errCorruptRecord
	return false
}

// numText is n as a field: its exact decimal text, "" for zero when omitZero.
func numText(n httpapi.Number, omitZero bool) string {
	if omitZero && n.IsZero() {
		return ""
	}
	return n.String()
}

// flagText is b as a field.
func flagText(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// intText is v as a field, "" for 0.
func intText(v int64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}
