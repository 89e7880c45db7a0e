// Package httpapi writes the JSON bodies every HTTP API of the service shares: the failure
// response of the interface (success false, error, code, timestamp, details) and the
// read API's success envelope (success true, data). webhookd's webhook endpoint and its
// read API use it, so that a client sees one failure shape whatever it called.
package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sigops/sigops/runtime/errs"
)

// Failure is the interface's failure response.
type Failure struct {
	Success   bool           `json:"success"`
	Error     string         `json:"error"`
	Code      errs.Code      `json:"code,omitempty"`
	Timestamp int64          `json:"timestamp"`
	Details   map[string]any `json:"details,omitempty"`
	SignalID  string         `json:"signalId,omitempty"`
}

// Data is the read API's success envelope.
type Data struct {
	Success bool `json:"success"`
	Data    any  `json:"data"`
}

// WriteJSON answers body as JSON with status. Responses are never cached by intermediaries:
// they carry account data, and the candles' own freshness is decided by the server's cache.
func WriteJSON(w http.ResponseWriter, status int, body any) {
	jsonHeaders(w)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func jsonHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
}

// WriteRawData answers 200 with the success envelope around data, a JSON value the caller
// encoded itself (a cached answer encoded once and served many times): encoding/json would
// validate and compact such a value again on every request.
func WriteRawData(w http.ResponseWriter, data []byte) {
	jsonHeaders(w)
	w.WriteHeader(http.StatusOK)
	b := make([]byte, 0, len(data)+len(rawDataOpen)+2)
	b = append(b, rawDataOpen...)
	b = append(b, data...)
	b = append(b, "}\n"...)
	_, _ = w.Write(b)
}

// rawDataOpen starts the envelope as Data encodes it.
const rawDataOpen = `{"success":true,"data":`

// WriteData answers 200 with the success envelope around data.
func WriteData(w http.ResponseWriter, data any) {
	WriteJSON(w, http.StatusOK, Data{Success: true, Data: data})
}

// WriteError answers a typed error with its code's status; RATE_LIMITED carries
// Retry-After in whole seconds, rounded up.
func WriteError(w http.ResponseWriter, err *errs.Error, signalID string, now time.Time) {
	if (err.Code == errs.RateLimited || err.Code == errs.ServiceUnavailable) && err.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((err.RetryAfter+time.Second-1)/time.Second), 10))
	}
	WriteJSON(w, err.Code.HTTPStatus(), Failure{Error: err.Message, Code: err.Code, Details: errs.JSONDetails(err.Details),
		SignalID: signalID, Timestamp: now.UnixMilli()})
}
