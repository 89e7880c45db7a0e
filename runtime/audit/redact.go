package audit

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"
)

const (
	// Redacted replaces the value of a secret key, whatever its type.
	Redacted = "[redacted]"
	// TruncatedMarker ends stored arguments cut at the size cap; what precedes it is a
	// prefix of the redacted JSON, so it no longer parses.
	TruncatedMarker = "...[truncated]"
	// Unparseable is stored for arguments that are not JSON: without a structure, secrets
	// cannot be told apart from the rest, so nothing of them is kept.
	Unparseable = `"[arguments are not JSON]"`
	// DefaultMaxArguments caps the stored arguments of one entry (bytes).
	DefaultMaxArguments = 4096
)

// secretWords are matched against a key lower-cased with '_', '-' and '.' removed, as
// substrings: apiKey, api_key and X-Api-Key all read "apikey"; refresh_token,
// access_token and idToken all contain "token".
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey",
	"privatekey", "authorization", "codeverifier", "cookie", "credential", "webhook",
	"signature", "seed", "mnemonic",
}

// IsSecretKey reports whether a JSON object key names a secret (case-insensitive).
func IsSecretKey(key string) bool {
	k := strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// isSecretValue catches secrets under innocent keys: a webhook URL (its path carries the
// webhook ID, decision 1) and an Authorization header value.
func isSecretValue(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "/api/webhooks/") || strings.HasPrefix(l, "bearer ") ||
		strings.HasPrefix(l, "basic ")
}

// RedactArguments returns the arguments as compact JSON with the value of every secret key
// replaced by Redacted, at any depth and inside arrays, capped at max bytes (a prefix ending
// in TruncatedMarker). Numbers keep their exact text, so amounts are not rounded through
// float64. Input that is not JSON becomes Unparseable; empty input becomes "{}".
func RedactArguments(raw []byte, max int) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Unparseable
	}
	if _, err := dec.Token(); err != io.EOF { // anything after the value
		return Unparseable
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(redact(v)); err != nil {
		return Unparseable
	}
	return capText(strings.TrimSuffix(buf.String(), "\n"), max)
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if IsSecretKey(k) {
				t[k] = Redacted
			} else {
				t[k] = redact(x)
			}
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = redact(x)
		}
		return t
	case string:
		if isSecretValue(t) {
			return Redacted
		}
		return t
	default:
		return v
	}
}

// capText cuts s to at most max bytes, on a rune boundary, ending in TruncatedMarker.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(TruncatedMarker)
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + TruncatedMarker
}
