package auth

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestScopeAllows(t *testing.T) {
	for _, c := range []struct {
		granted, needed string
		want            bool
	}{
		{"mcp:read", "mcp:read", true},
		{"mcp:read", "mcp:paper", false},
		{"mcp:read", "mcp:live", false},
		{"mcp:paper", "mcp:read", true},
		{"mcp:paper", "mcp:paper", true},
		{"mcp:paper", "mcp:live", false},
		{"mcp:live", "mcp:read", true},
		{"mcp:live", "mcp:live", true},
		{"mcp", "mcp:live", true}, // legacy
		{"mcp", "mcp:read", true},
		{"mcp:read mcp:paper", "mcp:paper", true},
		{"", "mcp:read", false},
		{"admin", "mcp:read", false},
		{"mcp:live", "admin", false},
		{"mcp:live", "", false},
	} {
		if got := ScopeAllows(c.granted, c.needed); got != c.want {
			t.Errorf("ScopeAllows(%q, %q) = %v", c.granted, c.needed, got)
		}
	}
}

func TestNormalizeScope(t *testing.T) {
	for in, want := range map[string]string{"": "", "mcp:read": "mcp:read", "mcp:read mcp:paper": "mcp:paper", "mcp": "mcp:live"} {
		if got, err := NormalizeScope(in); err != nil || got != want {
			t.Errorf("NormalizeScope(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := NormalizeScope("mcp:read admin"); err == nil {
		t.Error("unknown scope accepted")
	}
}

func TestWriteInsufficientScope(t *testing.T) {
	w := httptest.NewRecorder()
	WriteInsufficientScope(w, ScopeLive, "https://auth.test/.well-known/oauth-protected-resource")
	if w.Code != 403 {
		t.Fatalf("status %d", w.Code)
	}
	ch := w.Header().Get("WWW-Authenticate")
	for _, part := range []string{`Bearer error="insufficient_scope"`, `scope="mcp:live"`, `resource_metadata="https://auth.test/`} {
		if !strings.Contains(ch, part) {
			t.Errorf("challenge %q lacks %q", ch, part)
		}
	}
	var body map[string]string
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	if body["error"] != "insufficient_scope" || body["scope"] != "mcp:live" {
		t.Fatalf("body %v", body)
	}
}
