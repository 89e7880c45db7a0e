package testkit

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
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

// MCPClient is mcp-go's streamable HTTP client for the MCP endpoint url with the bearer
// token, its requests sent through rt, started and initialized at protocol version (empty:
// the newest both sides speak) as client name; it is closed when t ends.
func MCPClient(t testing.TB, rt http.RoundTripper, url, token, version, name string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: rt}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, InitializeMCP(t, c, version, name, 10*time.Second)
}

// InitializeMCP starts c (which hands the transport's notifications to its handlers) and
// initializes it at protocol version as client name, within the bound.
func InitializeMCP(t testing.TB, c *client.Client, version, name string, within time.Duration) *mcp.InitializeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
