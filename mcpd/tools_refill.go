package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
)

const refillOutput = `{
  "type": "object",
  "required": ["accountId", "balance", "initialBalance", "currency", "lastRefillAt", "nextRefillAt"],
  "properties": {
    "accountId": {"type": "string"},
    "balance": {"type": "number", "description": "the free balance after the refill: the initial balance"},
    "equity": {"type": "number", "description": "balance plus the margin of open futures positions"},
    "initialBalance": {"type": "number"}, "currency": {"type": "string"},
    "lastRefillAt": {"type": "string", "format": "date-time"},
    "nextRefillAt": {"type": "string", "format": "date-time", "description": "the earliest time of the next refill (24 hours on)"}}}`

// refillAnswer is refill_paper_account's answer.
type refillAnswer struct {
	AccountID      string         `json:"accountId"`
	Balance        httpapi.Number `json:"balance"`
	Equity         httpapi.Number `json:"equity"`
	InitialBalance httpapi.Number `json:"initialBalance"`
	Currency       string         `json:"currency"`
	LastRefillAt   time.Time      `json:"lastRefillAt"`
	NextRefillAt   time.Time      `json:"nextRefillAt"`
}

// refillTools is refill_paper_account.
func (s *Server) refillTools() []Tool {
	f, t := false, true
	return []Tool{{Def: mcp.NewTool("refill_paper_account",
		mcp.WithDescription("Reset one of your paper accounts' free balance to its initial balance, at most once every 24 "+
			"hours. Open positions stay open. Needs the mcp:paper scope: call check_auth first. Costs nothing. Refusals: "+
			"RATE_LIMITED inside the cooldown (details.nextRefillAt says when a refill is allowed), NOT_FOUND (not one of "+
			"your paper accounts), INVALID_PARAMETER."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{Title: "Refill paper account", ReadOnlyHint: &f, DestructiveHint: &t,
			IdempotentHint: &f, OpenWorldHint: &f}),
		mcp.WithString("accountId", mcp.Required(), mcp.Description("the paper account's id (get_portfolio lists them)")),
		mcp.WithRawOutputSchema(json.RawMessage(refillOutput))),
		Scope: auth.ScopePaper, Changes: true, Handler: s.refill}}
}

func (s *Server) refill(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const name = "refill_paper_account"
	id := req.GetString("accountId", "")
	if id == "" {
		return s.toolError(name, errs.New(errs.InvalidParameter, "accountId is required: the id of one of your paper accounts")), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError(name, err), nil
	}
	st, err := s.o.PaperAccounts.RefillOwned(ctx, id, owner, s.o.Now())
	var cool *paper.CooldownError
	switch {
	case errors.Is(err, paper.ErrNotFound):
		return s.toolError(name, errs.New(errs.NotFound, "paper account not found")), nil
	case errors.As(err, &cool):
		next := cool.NextAllowed.UTC()
		e := errs.New(errs.RateLimited, "a paper account is refilled at most once every 24 hours; the next refill is allowed at %s",
			next.Format(time.RFC3339)).WithDetails(map[string]any{"nextRefillAt": next.Format(time.RFC3339)})
		e.RetryAfter = next.Sub(s.o.Now())
		return s.toolError(name, e), nil
	case err != nil:
		return s.toolError(name, err), nil
	}
	return structured(refillAnswer{AccountID: id, Balance: httpapi.Num(st.Balance), Equity: httpapi.Num(st.Equity), InitialBalance: httpapi.Num(st.InitialBalance),
		Currency: st.Currency, LastRefillAt: st.LastRefillAt.UTC(), NextRefillAt: st.LastRefillAt.Add(paper.RefillCooldown).UTC()})
}
