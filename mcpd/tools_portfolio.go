package mcpd

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
)

// portfolioOutput is portfolio.Portfolio, the body of GET /api/user/portfolio.
const portfolioOutput = `{
  "type": "object",
  "required": ["accounts", "totals", "asOf"],
  "properties": {
    "accounts": {"type": "array", "description": "paper accounts and exchange connections", "items": {"type": "object",
      "required": ["id", "name", "kind", "currency", "balances", "positions", "equity", "unrealisedPnl", "realisedPnl"],
      "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "kind": {"type": "string", "enum": ["paper", "exchange"]},
        "exchange": {"type": "string", "description": "binance, bybit or okx (exchange connections only)"},
        "currency": {"type": "string"}, "balances": {"type": "array", "items": {"type": "object"}},
        "positions": {"type": "array", "items": {"type": "object"}},
        "equity": {"type": ["number", "null"]}, "unrealisedPnl": {"type": ["number", "null"]},
        "realisedPnl": {"type": ["number", "null"]},
        "excluded": {"type": "array", "items": {"type": "string"}, "description": "assets left out of the figures for want of a USDT price (a balance without an ASSET/USDT market, a position or trade quoted in another currency); absent when none"},
        "error": {"type": "object", "description": "why the account could not be read; its figures are then null and its lists empty; absent when it was read",
          "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}},
    "totals": {"type": "object", "description": "sums over the accounts read without an error, in USDT",
      "required": ["currency", "equity", "unrealisedPnl", "realisedPnl", "complete"],
      "properties": {"currency": {"type": "string"}, "equity": {"type": "number"}, "unrealisedPnl": {"type": "number"},
        "realisedPnl": {"type": "number"}, "complete": {"type": "boolean", "description": "false when an account has an error or excluded assets"}}},
    "asOf": {"type": "string", "format": "date-time"}}}`

// portfolioTools is get_portfolio.
func (s *Server) portfolioTools() []Tool {
	return []Tool{
		{Def: mcp.NewTool("get_portfolio",
			mcp.WithDescription("Your paper accounts and exchange connections with their balances, open positions, "+
				"equity and realised and unrealised P&L, with totals per currency: the dashboard's portfolio. An "+
				"account that could not be read carries an error and no figures."),
			mcp.WithToolAnnotation(readOnly("Get portfolio")),
			mcp.WithRawOutputSchema(json.RawMessage(portfolioOutput))),
			Scope: auth.ScopeRead, Handler: s.getPortfolio},
	}
}

func (s *Server) getPortfolio(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_portfolio", err), nil
	}
	p, err := s.o.Portfolio.Of(ctx, owner)
	if err != nil {
		return s.toolError("get_portfolio", err), nil
	}
	return structured(p)
}
