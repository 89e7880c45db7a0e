package auth

import (
	"fmt"
	"net/http"
	"strings"
)

// OAuth scopes, hierarchical: mcp:read < mcp:paper < mcp:live. ScopeLegacy (tokens issued
// before 0.3.13.0) is treated as mcp:live.
const (
	ScopeRead   = "mcp:read"
	ScopePaper  = "mcp:paper"
	ScopeLive   = "mcp:live"
	ScopeLegacy = "mcp"
)

// SupportedScopes are advertised in the discovery documents, lowest first.
var SupportedScopes = []string{ScopeRead, ScopePaper, ScopeLive}

func scopeLevel(s string) int {
	switch s {
	case ScopeRead:
		return 1
	case ScopePaper:
		return 2
	case ScopeLive, ScopeLegacy:
		return 3
	}
	return 0
}

// ScopeLevel is the highest level a space-separated scope string grants (0: none).
// Unknown entries grant nothing.
func ScopeLevel(scope string) int {
	lvl := 0
	for _, s := range strings.Fields(scope) {
		if l := scopeLevel(s); l > lvl {
			lvl = l
		}
	}
	return lvl
}

// ScopeAllows reports whether the granted scope (space-separated) covers needed, by the
// hierarchy. An unknown needed scope is never allowed.
func ScopeAllows(granted, needed string) bool {
	n := scopeLevel(needed)
	return n > 0 && ScopeLevel(granted) >= n
}

// NormalizeScope validates a requested scope string and returns it as the single highest
// scope it asks for (scopes are hierarchical, so "mcp:read mcp:paper" is "mcp:paper"); the
// legacy "mcp" becomes "mcp:live". Empty in, empty out.
func NormalizeScope(scope string) (string, error) {
	lvl := 0
	for _, s := range strings.Fields(scope) {
		l := scopeLevel(s)
		if l == 0 {
			return "", fmt.Errorf("unknown scope %q", s)
		}
		if l > lvl {
			lvl = l
		}
	}
	if lvl == 0 {
		return "", nil
	}
	return SupportedScopes[lvl-1], nil
}

// WriteInsufficientScope answers 403 insufficient_scope with the required scope (RFC 6750
// §3.1): the WWW-Authenticate challenge names it, and so does the JSON body.
// resourceMetadata is the protected resource metadata URL (RFC 9728 §5.1), or empty.
func WriteInsufficientScope(w http.ResponseWriter, required, resourceMetadata string) {
	WriteInsufficientScopeHeld(w, required, "", resourceMetadata)
}

// WriteInsufficientScopeHeld is WriteInsufficientScope whose body also names the scope the
// token holds (tokenScope), when held is not empty, so that a user sees what to grant.
func WriteInsufficientScopeHeld(w http.ResponseWriter, required, held, resourceMetadata string) {
	desc := "this call needs the scope " + required
	ch := `Bearer error="insufficient_scope", scope="` + required + `", error_description="` + desc + `"`
	if resourceMetadata != "" {
		ch += `, resource_metadata="` + resourceMetadata + `"`
	}
	w.Header().Set("WWW-Authenticate", ch)
	body := map[string]any{"error": "insufficient_scope", "error_description": desc, "scope": required}
	if held != "" {
		body["error_description"] = desc + "; the token holds " + held
		body["tokenScope"] = held
	}
	writeJSONError(w, http.StatusForbidden, body)
}

// WriteUnauthorized answers 401 for a missing or refused bearer token (RFC 6750 §3.1): with
// no token the challenge carries no error code; with one, invalid_token. The body is the
// service's failure shape with code UNAUTHORIZED plus the OAuth error fields.
func WriteUnauthorized(w http.ResponseWriter, tokenPresented bool, resourceMetadata string, now int64) {
	WriteUnauthorizedScope(w, tokenPresented, resourceMetadata, "", now)
}

// WriteUnauthorizedScope is WriteUnauthorized whose challenge also names the scope to ask
// for (RFC 6750 §3; empty: none). A host that follows the MCP authorization spec's scope
// selection asks for the challenge's scope, and without one for every scope the metadata
// lists: the MCP server names the least (mcp:read), and the step-up 403 raises it when a
// tool needs more.
func WriteUnauthorizedScope(w http.ResponseWriter, tokenPresented bool, resourceMetadata, scope string, now int64) {
	ch := `Bearer realm="sigops"`
	desc := "authentication required"
	if tokenPresented {
		desc = "the access token is invalid, expired or revoked"
		ch += `, error="invalid_token", error_description="` + desc + `"`
	}
	if scope != "" {
		ch += `, scope="` + scope + `"`
	}
	if resourceMetadata != "" {
		ch += `, resource_metadata="` + resourceMetadata + `"`
	}
	w.Header().Set("WWW-Authenticate", ch)
	writeJSONError(w, http.StatusUnauthorized, map[string]any{
		"success": false, "error": desc, "code": "UNAUTHORIZED", "timestamp": now,
	})
}
