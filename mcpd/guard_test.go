package mcpd_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
)

// venueTool needs mcp:paper, or mcp:live when its venue argument is "live"; it changes
// something, so its calls are audited; amount "0" fails with INVALID_AMOUNT.
var venueTool = mcpd.Tool{
	Def:   mcp.NewTool("test_venue", mcp.WithString("venue"), mcp.WithString("amount"), mcp.WithString("apiSecret")),
	Scope: auth.ScopePaper, Changes: true, ScopeRule: "mcp:live when venue is live",
	ScopeFor: func(_ context.Context, _ string, args map[string]any) (string, error) {
		if args["venue"] == "live" {
			return auth.ScopeLive, nil
		}
		// Below Scope: counts as Scope.
		return auth.ScopeRead, nil
	},
	Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.GetArguments()["amount"] == "0" {
			return mcp.NewToolResultError(`{"code":"INVALID_AMOUNT","message":"amount must be positive"}`), nil
		}
		return mcp.NewToolResultText("done"), nil
	}}

func TestScopeForAndAudit(t *testing.T) {
	f := newFixture(t)
	journal := audit.New(f.rdb, audit.Options{Now: f.clk.Now})
	ts := f.serve(t, func(o *mcpd.Options) { o.Tools = append(o.Tools, venueTool); o.Audit = journal })
	u := f.user(t, "ada@example.com", auth.TierPro)
	client, _, err := f.oauth.RegisterClient(t.Context(), auth.ClientMetadata{ClientName: "Desk agent",
		RedirectURIs: []string{"http://127.0.0.1/callback"}, TokenEndpointAuthMethod: "none"})
	if err != nil {
		t.Fatal(err)
	}
	read, _ := f.oauthToken(t, u, client.ID, auth.ScopeRead, testResource)
	paper, _ := f.oauthToken(t, u, client.ID, auth.ScopePaper, testResource)
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_venue","arguments":` + args + `}}`
	}

	// The lowest answer of ScopeFor is raised to Scope: mcp:read is refused mcp:paper.
	res, body := post(t, ts, read.Token, call(`{"venue":"paper"}`))
	if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Header.Get("WWW-Authenticate"), `scope="mcp:paper"`) {
		t.Fatalf("mcp:read on paper: %d %s %q", res.StatusCode, body, res.Header.Get("WWW-Authenticate"))
	}
	// The venue decides: mcp:paper is served on paper and refused on live with scope mcp:live.
	if res, body := post(t, ts, paper.Token, call(`{"venue":"paper","apiSecret":"s3cr3t"}`)); res.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), "done") {
		t.Fatalf("mcp:paper on paper: %d %s", res.StatusCode, body)
	}
	res, body = post(t, ts, paper.Token, call(`{"venue":"live"}`))
	if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Header.Get("WWW-Authenticate"), `scope="mcp:live"`) {
		t.Fatalf("mcp:paper on live: %d %s", res.StatusCode, body)
	}
	// A batch needs the highest of its calls.
	if res, _ := post(t, ts, paper.Token, "["+call(`{"venue":"paper"}`)+","+call(`{"venue":"live"}`)+"]"); res.StatusCode != http.StatusForbidden {
		t.Fatalf("batch with a live call: %d", res.StatusCode)
	}
	// A bearer JWT is not limited by scope.
	c, _ := mcpClient(t, f.bearer(t, u).Token, "", ts)
	if out, text := toolResult(t, c, "test_venue", map[string]any{"venue": "live", "amount": "0"}); !out.IsError ||
		!strings.Contains(text, "INVALID_AMOUNT") {
		t.Fatalf("bearer on live: %s", text)
	}

	// Two calls reached the tool and both are in the journal, newest first, refusals not
	// (they changed nothing and never reached it); the secret argument is redacted.
	entries, _, err := journal.List(t.Context(), u.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d audit entries, want 2: %+v", len(entries), entries)
	}
	failed, ok := entries[0], entries[1]
	if failed.Tool != "test_venue" || failed.Outcome.OK || failed.Outcome.Code != errs.InvalidAmount ||
		failed.Outcome.Message != "amount must be positive" || failed.ClientID != "" || failed.Channel != audit.ChannelMCP {
		t.Fatalf("failed call's entry %+v", failed)
	}
	if !ok.Outcome.OK || ok.ClientID != client.ID || ok.ClientName != "Desk agent" || strings.Contains(string(ok.Arguments), "s3cr3t") ||
		!strings.Contains(string(ok.Arguments), audit.Redacted) || !strings.Contains(string(ok.Arguments), `"venue":"paper"`) {
		t.Fatalf("paper call's entry %+v args %s", ok, ok.Arguments)
	}
}
