// Package signal is the trading signal: the webhook body's fields with their types and
// aliases (spec: Webhook signal), parsed into one validated model shared by webhookd, the
// queue and the executor.
package signal

import (
	"github.com/sigops/sigops/runtime/httpapi"
)

// Action is a normalised action.
type Action string

// Actions and their aliases (case-insensitive on the wire).
const (
	Buy        Action = "buy"         // alias long
	Sell       Action = "sell"        // alias short
	Close      Action = "close"       // aliases exit, flatten
	CloseLong  Action = "close_long"  // alias exit_long
	CloseShort Action = "close_short" // alias exit_short
)

var actionAliases = map[string]Action{
	"buy": Buy, "long": Buy,
	"sell": Sell, "short": Sell,
	"close": Close, "exit": Close, "flatten": Close,
	"close_long": CloseLong, "exit_long": CloseLong,
	"close_short": CloseShort, "exit_short": CloseShort,
}

// IsEntry is true for buy and sell, which need a symbol and open or add to positions.
func (a Action) IsEntry() bool { return a == Buy || a == Sell }

// MaxCommentLength is the spec's limit, in characters.
const MaxCommentLength = 200

// Signal is one validated trading signal. Optional fields are zero when absent.
type Signal struct {
	Action Action `json:"action"`
	// Symbol is as sent (trimmed); Resolve turns it into BASE/QUOTE with a market list.
	Symbol string `json:"symbol,omitempty"`
	// Price is the limit price; nil means a market order.
	Price *httpapi.Number `json:"price,omitempty"`
	// Size is the order size; nil means the bot's positionSize.
	Size *Amount `json:"size,omitempty"`
	// Leverage is 0 when absent (the bot's leverage applies); ignored on spot.
	Leverage int `json:"leverage,omitempty"`
	// StopLoss and TakeProfit are absolute prices or percentages from entry.
	StopLoss   *Amount `json:"stopLoss,omitempty"`
	TakeProfit *Amount `json:"takeProfit,omitempty"`
	Comment    string  `json:"comment,omitempty"`
	DCA        bool    `json:"dca,omitempty"`
	// DCALevel is 1 (the initial entry) when absent.
	DCALevel int `json:"dcaLevel,omitempty"`
}

// Amount is a value that is either absolute or a percentage ("10%").
type Amount struct {
	Value   httpapi.Number `json:"value"`
	Percent bool           `json:"percent,omitempty"`
}

// String writes the amount as a user wrote it: "10%" or "0.5".
func (a Amount) String() string {
	if a.Percent {
		return a.Value.String() + "%"
	}
	return a.Value.String()
}
