package webhookd

import (
	"net/http"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/result"
)

// successBody is the spec's webhook success response, plus the order when one was placed.
type successBody struct {
	Success   bool          `json:"success"`
	Message   string        `json:"message"`
	SignalID  string        `json:"signalId"`
	Timestamp int64         `json:"timestamp"`
	Order     *result.Order `json:"order,omitempty"`
}

// failureBody is the spec's failure response.
type failureBody = httpapi.Failure

func writeJSON(w http.ResponseWriter, status int, body any) { httpapi.WriteJSON(w, status, body) }

// writeError answers a typed error with its status; RATE_LIMITED carries Retry-After.
func writeError(w http.ResponseWriter, err *errs.Error, signalID string, now time.Time) {
	httpapi.WriteError(w, err, signalID, now)
}

// writeResult answers the executor's result.
func writeResult(w http.ResponseWriter, res result.Result) {
	if res.Success {
		msg := res.Message
		if msg == "" {
			msg = "Signal executed"
		}
		writeJSON(w, http.StatusOK, successBody{Success: true, Message: msg, SignalID: res.SignalID, Timestamp: res.Timestamp, Order: res.Order})
		return
	}
	writeJSON(w, res.Code.HTTPStatus(), failureBody{Error: res.Error, Code: res.Code, Details: res.Details,
		SignalID: res.SignalID, Timestamp: res.Timestamp})
}

// writeNotFound is decision 1 in docs/decisions.md's 404 for a path that is not a webhook ID; the
// spec gives it no code.
func writeNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, failureBody{Error: "not found", Timestamp: time.Now().UnixMilli()})
}
