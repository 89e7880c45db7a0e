package mcpd_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
)

// These tests hold the scope holes a read-through found closed; each failed before its fix.

// A key the scope check does not read cannot reach the handler under another spelling:
// "AcknowledgeCost" was read as mcp:read by the scope check and as acknowledgeCost by
// encoding/json in the handler, which charged the wallet. Arguments are now checked
// strictly against the tool's input schema, so the unknown key is refused, and the
// wallet is untouched.
func TestScopeReadsTheArgumentsTheHandlerActsOn(t *testing.T) {
	f := newTradeFixture(t)
	body := `{"family":"emaCrossover","symbol":"BTC/USDT","timeframe":"1h","from":"2026-10-01T00:00:00Z",` +
		`"to":"2026-10-08T00:00:00Z","experiments":3,"AcknowledgeCost":true}`
	res, b := post(t, f.ts, f.readTok, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate_strategy","arguments":`+body+`}}`)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `INVALID_PARAMETER`) || !strings.Contains(string(b), `AcknowledgeCost`) {
		t.Fatalf("AcknowledgeCost with mcp:read: %d %s", res.StatusCode, b)
	}
	if jobs, _, err := f.lab.Jobs(t.Context(), f.ada.ID, "", 10); err != nil || len(jobs) != 0 {
		t.Fatalf("a job was queued: %v %v", jobs, err)
	}
	if bal, err := f.lab.Balance(t.Context(), f.ada.ID); err != nil || bal.String() != "10" {
		t.Fatalf("wallet %s %v, want 10", bal, err)
	}
	// A value of the wrong JSON type is refused the same way, naming the parameter.
	if text := toolErr(t, f.live, "generate_strategy", map[string]any{"family": "emaCrossover", "symbol": "BTC/USDT",
		"timeframe": "1h", "from": "2026-10-01T00:00:00Z", "to": "2026-10-08T00:00:00Z", "experiments": 3,
		"acknowledgeCost": "true"}); !strings.Contains(text, `"parameter":"acknowledgeCost"`) {
		t.Fatalf("acknowledgeCost as a string: %s", text)
	}
}

// Arguments that are not an object named no tool to the scope check, which then asked for
// no scope: mcp:read reached refill_paper_account (mcp:paper). The tool's static scope now
// applies, and inside the call the arguments are refused.
func TestUnparseableArgumentsGetTheToolsScope(t *testing.T) {
	f := newTradeFixture(t)
	for _, args := range []string{`"acct-ada"`, `["acct-ada"]`, `7`} {
		res, b := post(t, f.ts, f.readTok, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refill_paper_account","arguments":`+args+`}}`)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Header.Get("WWW-Authenticate"), `scope="mcp:paper"`) {
			t.Fatalf("arguments %s with mcp:read: %d %s", args, res.StatusCode, b)
		}
		// With the scope, the call reaches the tool's argument check, which refuses them.
		res, b = post(t, f.ts, f.paperTok, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refill_paper_account","arguments":`+args+`}}`)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `INVALID_PARAMETER`) {
			t.Fatalf("arguments %s with mcp:paper: %d %s", args, res.StatusCode, b)
		}
	}
	// A batch with one malformed element still needs the scope of its other calls.
	batch := `[7,{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"refill_paper_account","arguments":{"accountId":"acct-ada"}}}]`
	if res, b := post(t, f.ts, f.readTok, batch); res.StatusCode != http.StatusForbidden {
		t.Fatalf("batch with a malformed element: %d %s", res.StatusCode, b)
	}
}

// A paper bot whose fills are copied to the user's exchange bot reaches real money: its
// venue scope is mcp:live. mcp:paper traded it before the fix.
func TestCopiedPaperBotNeedsLive(t *testing.T) {
	f := newBotFixture(t)
	signalBot(t, f, "m1", "ada@example.com", registry.AccountPaper)
	signalBot(t, f, "m2", "ada@example.com", registry.AccountPaper)
	master, err := f.reg.Get(t.Context(), "m1")
	if err != nil {
		t.Fatal(err)
	}
	follower := f.project(t, "f1", "ada@example.com")
	follower.Account = registry.Account{Kind: registry.AccountExchange, Name: "binance", ID: "xc-1"}
	follower.CopyFrom = &registry.CopyFrom{MasterID: master.ID, Ratio: "1"}
	if err := f.reg.Project(t.Context(), follower, "hash-f1"); err != nil {
		t.Fatal(err)
	}
	// Another owner's live follower of a copyable bot does not raise ada's scope.
	lone, err := f.reg.Get(t.Context(), "m2")
	if err != nil {
		t.Fatal(err)
	}
	lone.Copyable = true
	if err := f.reg.Project(t.Context(), lone, "hash-m2"); err != nil {
		t.Fatal(err)
	}
	other := f.project(t, "b9", "bob@example.com")
	other.Account = registry.Account{Kind: registry.AccountExchange, Name: "bybit", ID: "xc-9"}
	other.CopyFrom = &registry.CopyFrom{MasterID: lone.ID, Ratio: "1"}
	if err := f.reg.Project(t.Context(), other, "hash-b9"); err != nil {
		t.Fatal(err)
	}
	paperTok, _ := f.oauthToken(t, f.adaUser, "agent-paper", auth.ScopePaper, testResource)
	ff := &fleetFixture{botFixture: f}
	ff.forbidden(t, paperTok.Token, "send_signal", `{"botId":"m1","action":"buy"}`, auth.ScopeLive)
	ff.forbidden(t, paperTok.Token, "close_all_positions", `{"botId":"m1"}`, auth.ScopeLive)
	// The follower stops copying: the master is paper again.
	follower.CopyFrom = nil
	if err := f.reg.Project(t.Context(), follower, "hash-f1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m1", "m2"} {
		res, b := post(t, f.ts, paperTok.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_signal","arguments":{"botId":"`+id+`","action":"close"}}}`)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(b), "Signal queued") {
			t.Fatalf("%s with mcp:paper: %d %s", id, res.StatusCode, b)
		}
	}
}
