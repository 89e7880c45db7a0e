package authd

import (
	"encoding/json"
	"net/http"
)

// failureBody is the spec's failure response.
type failureBody struct {
	Success   bool   `json:"success"`
	Error     string `json:"error"`
	Code      string `json:"code,omitempty"`
	Timestamp int64  `json:"timestamp"`
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// oauthError is an RFC 6749 §5.2 error body.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// writeOAuthError answers a token/registration/revocation error: 401 for invalid_client,
// 400 otherwise, never cached.
func writeOAuthError(w http.ResponseWriter, code, desc string) {
	status := http.StatusBadRequest
	if code == "invalid_client" {
		status = http.StatusUnauthorized
	}
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, oauthError{Error: code, Description: desc})
}

func jsonEncode(w http.ResponseWriter, body any) error { return json.NewEncoder(w).Encode(body) }
