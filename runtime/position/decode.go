package position

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
)

// DecodePosition reads a position's stored record (the JSON the executor writes with
// StagePosition) into exactly the Position json.Unmarshal makes of it, without reflection:
// a portfolio decodes every open position of every bot of a user on each read, and
// encoding/json's reflective walk was most of that.
//
// The record's usual shape (the known fields, strings without escapes, numbers, null,
// fields it does not know skipped) is read here. Anything else — an escape in a string, a
// key that matches a field only case-insensitively, a value of another type, or text that
// is not JSON — is handed to json.Unmarshal, whose answer (value or error) it returns, so
// that an odd record reads as it always did. TestDecodePositionIsJSON holds the two equal.
func DecodePosition(text string) (Position, error) {
	var p Position
	d := decoder{s: text}
	if d.position(&p) && d.end() {
		return p, nil
	}
	p = Position{}
	err := json.Unmarshal([]byte(text), &p)
	return p, err
}

// decoder walks a record's text. Each method returns false when the text is not of the
// shape it reads; DecodePosition then asks encoding/json instead.
type decoder struct {
	s string
	i int
}

// maxSkipDepth bounds the nesting of an unknown field's value walked here; a deeper one is
// left to encoding/json.
const maxSkipDepth = 32

func (d *decoder) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next is the next byte after any spaces (0 at the end).
func (d *decoder) next() byte {
	d.ws()
	if d.i >= len(d.s) {
		return 0
	}
	return d.s[d.i]
}

func (d *decoder) eat(c byte) bool {
	if d.next() != c {
		return false
	}
	d.i++
	return true
}

// end reports whether only spaces are left.
func (d *decoder) end() bool {
	d.ws()
	return d.i == len(d.s)
}

// object reads an object, calling field with each key (the decoder then before the value).
func (d *decoder) object(field func(key string) bool) bool {
	if !d.eat('{') {
		return false
	}
	if d.eat('}') {
		return true
	}
	for {
		key, ok := d.str()
		if !ok || !d.eat(':') || !field(key) {
			return false
		}
		switch d.next() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string without escapes or control characters, as valid UTF-8: its text is
// then the string itself.
func (d *decoder) str() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for ; d.i < len(d.s); d.i++ {
		switch c := d.s[d.i]; {
		case c == '"':
			v := d.s[start:d.i]
			d.i++
			return v, ascii || utf8.ValidString(v)
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// null reads null.
func (d *decoder) null() bool {
	if d.next() != 'n' || !strings.HasPrefix(d.s[d.i:], "null") {
		return false
	}
	d.i += len("null")
	return true
}

// number reads a number as JSON writes it and returns its text.
func (d *decoder) number() (string, bool) {
	d.ws()
	start := d.i
	if d.i < len(d.s) && d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.digits() == 0:
		return "", false
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			return "", false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return "", false
		}
	}
	return d.s[start:d.i], true
}

func (d *decoder) digits() int {
	start := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// text reads a string field: a string, or null that leaves it as it is.
func (d *decoder) text(v *string) bool {
	if d.null() {
		return true
	}
	s, ok := d.str()
	if ok {
		*v = s
	}
	return ok
}

// integer reads an integer field: digits (json.Unmarshal refuses a fraction or an exponent
// there), or null that leaves it as it is.
func (d *decoder) integer(v *int64) bool {
	if d.null() {
		return true
	}
	lit, ok := d.number()
	if !ok || strings.ContainsAny(lit, ".eE") {
		return false
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return false
	}
	*v = n
	return true
}

func (d *decoder) int(v *int) bool {
	n := int64(*v)
	if !d.integer(&n) || int64(int(n)) != n {
		return false
	}
	*v = int(n)
	return true
}

// decimal reads an httpapi.Number as its UnmarshalJSON does (shopspring/decimal's): a
// number, a string holding one, or null that leaves it as it is.
func (d *decoder) decimal(v *httpapi.Number) bool {
	var lit string
	switch d.next() {
	case 'n':
		return d.null()
	case '"':
		s, ok := d.str()
		if !ok || s == "" {
			return false
		}
		lit = s
	default:
		s, ok := d.number()
		if !ok {
			return false
		}
		lit = s
	}
	n, err := decimal.NewFromString(lit)
	if err != nil {
		return false
	}
	*v = httpapi.Num(n)
	return true
}

// skip walks any JSON value of a field that is not read.
func (d *decoder) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch c := d.next(); {
	case c == '{':
		return d.object(func(string) bool { return d.skip(depth + 1) })
	case c == '[':
		d.i++
		if d.eat(']') {
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			if d.eat(']') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == '"':
		_, ok := d.str()
		return ok
	case c == 't', c == 'f', c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(d.s[d.i:], lit) {
				d.i += len(lit)
				return true
			}
		}
		return false
	default:
		_, ok := d.number()
		return ok
	}
}

// unknown skips the value of a key no field has. A key that matches a field but for case
// is not unknown to encoding/json (it matches case-insensitively): false.
func (d *decoder) unknown(key string, fields ...string) bool {
	for i := range len(key) {
		if key[i] >= utf8.RuneSelf {
			return false // a non-ASCII key may fold to a field's (K, ſ)
		}
	}
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return false
		}
	}
	return d.skip(0)
}

var positionFields = []string{"id", "botId", "symbol", "kind", "side", "size", "cost", "margin", "leverage", "entryFees",
	"stopLoss", "takeProfit", "dcaLevel", "openedBy", "createdAt", "updatedAt"}

func (d *decoder) position(p *Position) bool {
	return d.object(func(key string) bool {
		switch key {
		case "id":
			return d.text(&p.ID)
		case "botId":
			return d.text(&p.BotID)
		case "symbol":
			return d.text(&p.Symbol)
		case "kind":
			return d.text((*string)(&p.Kind))
		case "side":
			return d.text((*string)(&p.Side))
		case "size":
			return d.decimal(&p.Size)
		case "cost":
			return d.decimal(&p.Cost)
		case "margin":
			return d.decimal(&p.Margin)
		case "leverage":
			return d.int(&p.Leverage)
		case "entryFees":
			return d.decimal(&p.EntryFees)
		case "stopLoss":
			return d.exit(&p.StopLoss)
		case "takeProfit":
			return d.exit(&p.TakeProfit)
		case "dcaLevel":
			return d.int(&p.DCALevel)
		case "openedBy":
			return d.text(&p.OpenedBy)
		case "createdAt":
			return d.integer(&p.CreatedAt)
		case "updatedAt":
			return d.integer(&p.UpdatedAt)
		}
		return d.unknown(key, positionFields...)
	})
}

var exitFields = []string{"price", "percent", "closePercent"}

// exit reads a stop-loss or take-profit: null clears it; an object is read into the exit
// already there, as encoding/json does when a key repeats.
func (d *decoder) exit(e **Exit) bool {
	if d.null() {
		*e = nil
		return true
	}
	if d.next() != '{' {
		return false
	}
	if *e == nil {
		*e = &Exit{}
	}
	x := *e
	return d.object(func(key string) bool {
		switch key {
		case "price":
			return d.decimal(&x.Price)
		case "percent":
			return d.decimal(&x.Percent)
		case "closePercent":
			return d.decimal(&x.ClosePercent)
		}
		return d.unknown(key, exitFields...)
	})
}
