package signal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// MaxLeverage is the highest leverage a signal may ask for (Binance's USDⓈ-M maximum).
const MaxLeverage = 125

// wire is the body as sent: flexible fields keep their raw JSON and are read by hand,
// because charting platforms send numbers as strings and strings as numbers.
type wire struct {
	Action     *string         `json:"action"`
	Symbol     json.RawMessage `json:"symbol"`
	Price      json.RawMessage `json:"price"`
	Size       json.RawMessage `json:"size"`
	Leverage   json.RawMessage `json:"leverage"`
	StopLoss   json.RawMessage `json:"stopLoss"`
	TakeProfit json.RawMessage `json:"takeProfit"`
	Comment    json.RawMessage `json:"comment"`
	DCA        json.RawMessage `json:"dca"`
	DCALevel   json.RawMessage `json:"dcaLevel"`
}

// Parse reads a webhook body. Every failure is an *errs.Error with the spec's code:
// INVALID_JSON for malformed JSON, a missing action or a field of the wrong type,
// INVALID_ACTION for an unknown action, INVALID_AMOUNT / INVALID_PRICE for sizes and
// prices out of range, DCA_INVALID_LEVEL for a level below 1. Unknown fields are ignored.
func Parse(body []byte) (Signal, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return Signal{}, errs.New(errs.InvalidJSON, "body must be a JSON object")
	}
	var w wire
	if err := json.Unmarshal(body, &w); err != nil {
		return Signal{}, errs.New(errs.InvalidJSON, "malformed JSON: %s", jsonProblem(err))
	}
	if w.Action == nil || strings.TrimSpace(*w.Action) == "" {
		return Signal{}, errs.New(errs.InvalidJSON, "missing required field action")
	}
	var s Signal
	act, ok := actionAliases[strings.ToLower(strings.TrimSpace(*w.Action))]
	if !ok {
		return Signal{}, errs.New(errs.InvalidAction, "unknown action %q: use buy, sell, close, close_long or close_short", clip(*w.Action, 40))
	}
	s.Action = act

	var err error
	if s.Symbol, err = stringField("symbol", w.Symbol); err != nil {
		return Signal{}, err
	}
	s.Symbol = strings.TrimSpace(s.Symbol)
	if len(s.Symbol) > 64 {
		return Signal{}, errs.New(errs.InvalidSymbol, "symbol is too long")
	}
	price, err := priceField("price", w.Price)
	if err != nil {
		return Signal{}, err
	}
	s.Price = httpapi.NumOrNil(price)
	if s.Size, err = amountField("size", w.Size, errs.InvalidAmount, true); err != nil {
		return Signal{}, err
	}
	if s.StopLoss, err = amountField("stopLoss", w.StopLoss, errs.InvalidPrice, false); err != nil {
		return Signal{}, err
	}
	if s.TakeProfit, err = amountField("takeProfit", w.TakeProfit, errs.InvalidPrice, false); err != nil {
		return Signal{}, err
	}
	lev, err := intField("leverage", w.Leverage)
	if err != nil {
		return Signal{}, err
	}
	if lev != nil {
		if *lev < 1 || *lev > MaxLeverage {
			return Signal{}, errs.New(errs.InvalidAmount, "leverage must be between 1 and %d", MaxLeverage)
		}
		s.Leverage = *lev
	}
	if s.Comment, err = stringField("comment", w.Comment); err != nil {
		return Signal{}, err
	}
	if n := utf8.RuneCountInString(s.Comment); n > MaxCommentLength {
		return Signal{}, errs.New(errs.InvalidJSON, "comment is %d characters; the limit is %d", n, MaxCommentLength)
	}
	if s.DCA, err = boolField("dca", w.DCA); err != nil {
		return Signal{}, err
	}
	level, err := intField("dcaLevel", w.DCALevel)
	if err != nil {
		return Signal{}, err
	}
	s.DCALevel = 1
	if level != nil {
		if *level < 1 {
			return Signal{}, errs.New(errs.DCAInvalidLevel, "dcaLevel must be 1 or more")
		}
		s.DCALevel = *level
	}
	return s, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// stringField accepts a JSON string (a number is refused: a symbol or comment is text).
func stringField(name string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errs.New(errs.InvalidJSON, "%s must be a string", name)
	}
	return s, nil
}

// scalarText is a string's contents or a number's literal text; other types fail.
func scalarText(name string, raw json.RawMessage) (string, error) {
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errs.New(errs.InvalidJSON, "%s is malformed", name)
		}
		return strings.TrimSpace(s), nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw), nil
	}
	return "", errs.New(errs.InvalidJSON, "%s must be a string or a number", name)
}

// parseDecimal reads a plain decimal: digits with an optional fraction. Exponents, signs,
// NaN and thousands separators are refused so that no value is silently misread.
func parseDecimal(text string) (decimal.Decimal, bool) {
	if text == "" || len(text) > 40 {
		return decimal.Decimal{}, false
	}
	dot := false
	for i, r := range text {
		switch {
		case r >= '0' && r <= '9':
		case r == '.' && !dot && i > 0 && i < len(text)-1:
			dot = true
		default:
			return decimal.Decimal{}, false
		}
	}
	d, err := decimal.NewFromString(text)
	return d, err == nil
}

func priceField(name string, raw json.RawMessage) (*decimal.Decimal, error) {
	if isNull(raw) {
		return nil, nil
	}
	text, err := scalarText(name, raw)
	if err != nil {
		return nil, err
	}
	if text == "" {
		return nil, nil // TradingView sends "" for an empty placeholder: treat as absent
	}
	d, ok := parseDecimal(text)
	if !ok || !d.IsPositive() {
		return nil, errs.New(errs.InvalidPrice, "%s must be a positive number", name)
	}
	return &d, nil
}

// amountField reads "N%" or "N". Percentages of a size are in (0, 100]; a stop-loss or
// take-profit percentage is in (0, 100) for a size-free bound check here (the side decides
// the direction later).
func amountField(name string, raw json.RawMessage, code errs.Code, isSize bool) (*Amount, error) {
	if isNull(raw) {
		return nil, nil
	}
	text, err := scalarText(name, raw)
	if err != nil {
		return nil, err
	}
	if text == "" {
		return nil, nil
	}
	a := Amount{}
	if strings.HasSuffix(text, "%") {
		a.Percent = true
		text = strings.TrimSpace(strings.TrimSuffix(text, "%"))
	}
	d, ok := parseDecimal(text)
	if !ok || !d.IsPositive() {
		return nil, errs.New(code, "%s must be a positive number or percentage", name)
	}
	if a.Percent {
		limit := decimal.NewFromInt(100)
		if d.GreaterThan(limit) || (!isSize && d.Equal(limit)) {
			return nil, errs.New(code, "%s percentage out of range", name)
		}
	}
	a.Value = httpapi.Num(d)
	return &a, nil
}

func intField(name string, raw json.RawMessage) (*int, error) {
	if isNull(raw) {
		return nil, nil
	}
	text, err := scalarText(name, raw)
	if err != nil {
		return nil, err
	}
	if text == "" {
		return nil, nil
	}
	// Accept integral decimals ("10", "10.0", 10) but not fractions.
	d, ok := parseDecimal(strings.TrimPrefix(text, "-"))
	if !ok || !d.IsInteger() || d.GreaterThan(decimal.NewFromInt(1_000_000)) {
		return nil, errs.New(errs.InvalidJSON, "%s must be a whole number", name)
	}
	n := int(d.IntPart())
	if strings.HasPrefix(text, "-") {
		n = -n
	}
	return &n, nil
}

func boolField(name string, raw json.RawMessage) (bool, error) {
	if isNull(raw) {
		return false, nil
	}
	switch strings.ToLower(strings.Trim(string(raw), `"`)) {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, errs.New(errs.InvalidJSON, "%s must be true or false", name)
}

// jsonProblem describes a decoding error without echoing the body (it may hold anything).
func jsonProblem(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return "syntax error at byte " + strconv.FormatInt(e.Offset, 10)
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("field %s has the wrong type", e.Field)
	}
	return "cannot decode"
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
