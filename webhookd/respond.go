package webhookd

import (
	"net/http"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/result"
)

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
		writeJSON(w, http.StatusOK, intake.Executed(res))
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
