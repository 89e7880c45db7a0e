package mcpd_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
)

// BenchmarkCheckAuth is one tools/call of check_auth with an OAuth token over HTTPS through
// the whole chain: token check (verifier cache 1 ns, so Redis each time), tier read, rate
// limit, scope check, mcp-go, the cached status.
func BenchmarkCheckAuth(b *testing.B) {
	f := newFixture(b)
	ts := f.serve(b, func(o *mcpd.Options) { o.RateLimit = 1 << 30 })
	u := f.user(b, "ada@example.com", auth.TierPro)
	tok, _ := f.oauthToken(b, u, "client-1", auth.ScopeRead, testResource)
	hc := ts.Client()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+mcpd.Path, strings.NewReader(callBody("check_auth")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20250618)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		res, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		// Drained, so the TLS connection is reused as a client's would be.
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatal(res.Status)
		}
	}
}
