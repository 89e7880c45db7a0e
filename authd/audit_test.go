package authd

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
)

func TestAuditJournalReadsTheCallersOwn(t *testing.T) {
	h := newHarness(t)
	ada := h.user("ada@example.com", auth.TierPro)
	bob := h.user("bob@example.com", auth.TierPro)
	j := audit.New(h.rdb, audit.Options{Now: h.clk.Now})
	record := func(u auth.User, tool string, outcome audit.Outcome) {
		t.Helper()
		if err := j.Record(t.Context(), audit.Entry{UserID: u.ID, ClientID: "c1", ClientName: "Desk agent", Channel: audit.ChannelMCP,
			Tool: tool, Arguments: json.RawMessage(`{"botId":"b1","apiSecret":"s3cr3t"}`), Outcome: outcome}); err != nil {
			t.Fatal(err)
		}
		h.clk.Advance(1000)
	}
	record(ada, "pause_bot", audit.Outcome{OK: true})
	record(bob, "delete_bot", audit.Outcome{OK: true})
	record(ada, "place_order", audit.OutcomeOf(errs.New(errs.InsufficientBalance, "not enough USDT")))

	get := func(query string, set func(*http.Request), c *http.Client) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, h.base+"/api/user/audit"+query, nil)
		if set != nil {
			set(req)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	st, login, _ := h.apiLogin("ada@example.com", testPassword)
	if st != http.StatusOK {
		t.Fatalf("login %d %v", st, login)
	}
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+login["token"].(string)) }

	// Ada's two entries, newest first, one per page; Bob's never.
	st, page := get("?limit=1", bearer, h.ts.Client())
	entries, _ := page["entries"].([]any)
	if st != http.StatusOK || len(entries) != 1 || page["nextCursor"] == nil || page["retentionDays"] != float64(90) {
		t.Fatalf("first page %d %v", st, page)
	}
	first := entries[0].(map[string]any)
	if first["tool"] != "place_order" || first["ok"] != false || first["code"] != "INSUFFICIENT_BALANCE" ||
		first["message"] != "not enough USDT" || first["clientName"] != "Desk agent" || first["channel"] != "mcp" {
		t.Fatalf("newest entry %v", first)
	}
	if args := first["arguments"].(map[string]any); args["apiSecret"] != audit.Redacted || args["botId"] != "b1" {
		t.Fatalf("arguments %v", args)
	}
	st, page = get("?limit=1&cursor="+page["nextCursor"].(string), bearer, h.ts.Client())
	entries, _ = page["entries"].([]any)
	if st != http.StatusOK || len(entries) != 1 || entries[0].(map[string]any)["tool"] != "pause_bot" || page["nextCursor"] != nil {
		t.Fatalf("second page %d %v", st, page)
	}

	// The session cookie reads the same journal.
	b := h.browser()
	b.login("ada@example.com", testPassword)
	if st, page := get("", nil, b.c); st != http.StatusOK || len(page["entries"].([]any)) != 2 {
		t.Fatalf("with the session cookie %d %v", st, page)
	}
	// Refusals: no credentials, a bad token, a bad limit, a bad cursor.
	if st, _ := get("", nil, h.ts.Client()); st != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d", st)
	}
	if st, _ := get("", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, h.ts.Client()); st != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", st)
	}
	if st, m := get("?limit=500", bearer, h.ts.Client()); st != http.StatusBadRequest || m["code"] != "INVALID_PARAMETER" {
		t.Fatalf("limit 500: %d %v", st, m)
	}
	if st, m := get("?cursor=x", bearer, h.ts.Client()); st != http.StatusBadRequest || m["code"] != "INVALID_PARAMETER" {
		t.Fatalf("bad cursor: %d %v", st, m)
	}
}
