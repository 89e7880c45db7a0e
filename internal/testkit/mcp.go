package testkit

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// PostMCP sends one raw JSON-RPC message to an MCP endpoint (url, e.g. a test server's
// /mcp) with hc and the bearer token (none when empty), at protocol 2025-06-18, and
// returns the response and its body: the HTTP status and headers that mcp-go's client
// does not show (401 and 403 challenges, 429).
func PostMCP(t testing.TB, hc *http.Client, url, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20250618)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}
