// Package result is the outcome of one signal as the executor stores it under the signalId
// and as webhookd, the API and MCP return it: the spec's Order result, or a failure with its
// code. Money and amounts are httpapi.Number: decimals written as JSON numbers with their
// exact text, as the spec's numbers are.
package result

import (
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// Result is what happened to a signal.
type Result struct {
	SignalID string `json:"signalId"`
	BotID    string `json:"botId"`
	Success  bool   `json:"success"`
	// Message is the confirmation text on success.
	Message string `json:"message,omitempty"`
	// Code, Error and Details describe a failure (spec: Webhook / API failure response).
	Code    errs.Code      `json:"code,omitempty"`
	Error   string         `json:"error,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	// Order is the order placed, when one was.
	Order *Order `json:"order,omitempty"`
	// Timestamp is when the result was decided, ms since epoch.
	Timestamp int64 `json:"timestamp"`
}

// Stored is what a read of a signal's stored result finds. Found is false while there is
// none: the signal has not finished yet, or its result has expired.
type Stored struct {
	Result Result
	Found  bool
}

// Order is the spec's Order result.
type Order struct {
	Success      bool           `json:"success"`
	OrderID      string         `json:"orderId"`
	Status       string         `json:"status"`
	Symbol       string         `json:"symbol"`
	Side         string         `json:"side"`
	Type         string         `json:"type"`
	Amount       httpapi.Number `json:"amount"`
	FilledAmount httpapi.Number `json:"filledAmount"`
	AvgPrice     httpapi.Number `json:"avgPrice"`
	Fee          httpapi.Number `json:"fee"`
	Timestamp    int64          `json:"timestamp"`
}

// Failure builds a failed result from a typed error; untyped errors become INTERNAL_ERROR
// with a generic message, so internal details never reach a client.
func Failure(signalID, botID string, err error, now int64) Result {
	r := Result{SignalID: signalID, BotID: botID, Code: errs.CodeOf(err), Timestamp: now}
	if e, ok := errs.As(err); ok {
		r.Error, r.Details = e.Message, errs.JSONDetails(e.Details)
	} else {
		r.Error = "internal error"
	}
	return r
}
