package mcpd

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// The scope is checked again inside every call, a static one too: the HTTP check is one
// reading of the message and mcp-go's is another, and nothing may run on the first's
// word alone. Before the fix a tool without ScopeFor ran here for an mcp:read token.
func TestGuardChecksStaticScopeInsideTheCall(t *testing.T) {
	ran := false
	r := NewRegistry()
	if err := r.Add(Tool{Def: mcp.NewTool("paper_thing", mcp.WithString("id")), Scope: auth.ScopePaper,
		Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran = true
			return mcp.NewToolResultText("done"), nil
		}}); err != nil {
		t.Fatal(err)
	}
	tool, _ := r.Get("paper_thing")
	_, rdb := storetest.New(t)
	s := &Server{o: Options{Logger: slog.New(slog.DiscardHandler), AppPolicies: apppolicy.NewPolicies(rdb, nil)}, metrics: newMetrics()}
	call := func(scope string, args any) *mcp.CallToolResult {
		ctx := auth.WithPrincipal(t.Context(), &auth.Principal{UserID: "u1", Kind: auth.KindOAuth, Scope: scope})
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "paper_thing", args
		res, err := s.guarded(tool)(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call(auth.ScopeRead, map[string]any{"id": "x"})
	if ran || !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "INSUFFICIENT_SCOPE") {
		t.Fatalf("mcp:read ran the tool: %+v", res)
	}
	// Arguments that are not an object are refused before the tool, whatever the scope.
	if res := call(auth.ScopePaper, "x"); ran || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "INVALID_PARAMETER") {
		t.Fatalf("string arguments: %+v", res)
	}
	if res := call(auth.ScopePaper, map[string]any{"id": "x"}); !ran || res.IsError {
		t.Fatalf("mcp:paper: %+v", res)
	}
}
