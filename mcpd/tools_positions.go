package mcpd

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/position"
)

// positionSchema is one open position (position.View) at the current market price.
const positionSchema = `{
  "type": "object",
  "required": ["id", "symbol", "side", "size", "entryPrice", "currentPrice", "pnl", "pnlPercent", "leverage", "margin", "createdAt"],
  "properties": {
    "id": {"type": "string"}, "symbol": {"type": "string"}, "side": {"type": "string", "enum": ["long", "short"]},
    "size": {"type": "number"}, "entryPrice": {"type": "number"},
    "currentPrice": {"type": "number", "description": "0 when no market price could be read; pnl is then 0 too"},
    "pnl": {"type": "number", "description": "unrealised, before exit fees, quote currency"},
    "pnlPercent": {"type": "number", "description": "pnl over the margin, percent"},
    "leverage": {"type": "integer"}, "margin": {"type": "number"},
    "liquidationPrice": {"type": "number"}, "stopLoss": {"type": "number"}, "takeProfit": {"type": "number"},
    "createdAt": {"type": "string", "format": "date-time"}}}`

var listPositionsOutput = `{"type": "object", "required": ["positions"], "properties": {
  "positions": {"type": "array", "items": ` + positionSchema + `},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`

// positionTools are list_positions and get_position.
func (s *Server) positionTools() []Tool {
	botID := mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)"))
	return []Tool{
		{Def: mcp.NewTool("list_positions", append([]mcp.ToolOption{
			mcp.WithDescription("A bot's open positions valued at the current market price (unrealised P&L), " +
				"ordered by position id, a page at a time: pass nextCursor as cursor to read on."),
			mcp.WithToolAnnotation(readOnly("List positions")), botID,
			mcp.WithRawOutputSchema(json.RawMessage(listPositionsOutput))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listPositions},
		{Def: mcp.NewTool("get_position",
			mcp.WithDescription("A bot's open position on one symbol, valued at the current market price."),
			mcp.WithToolAnnotation(readOnly("Get position")), botID,
			mcp.WithString("symbol", mcp.Required(), mcp.Description("the position's symbol as list_positions shows it, e.g. BTC/USDT")),
			mcp.WithRawOutputSchema(json.RawMessage(positionSchema))),
			Scope: auth.ScopeRead, Handler: s.getPosition},
	}
}

func (s *Server) listPositions(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_positions", err), nil
	}
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("list_positions", err), nil
	}
	open, err := s.o.Trading.Positions(ctx, bot.ID)
	if err != nil {
		return s.toolError("list_positions", err), nil
	}
	open, next := paginate(open, func(v position.View) string { return v.ID }, p)
	return structured(struct {
		Positions  []position.View `json:"positions"`
		NextCursor string          `json:"nextCursor,omitempty"`
	}{open, next})
}

func (s *Server) getPosition(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	symbol := req.GetString("symbol", "")
	if symbol == "" {
		return s.toolError("get_position", errs.New(errs.InvalidParameter,
			"symbol is required: the symbol of one of the bot's open positions (list_positions lists them)")), nil
	}
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("get_position", err), nil
	}
	open, err := s.o.Trading.Positions(ctx, bot.ID)
	if err != nil {
		return s.toolError("get_position", err), nil
	}
	for _, v := range open {
		if v.Symbol == symbol {
			return structured(v)
		}
	}
	return s.toolError("get_position", errs.New(errs.PositionNotFound,
		"the bot has no open position on %s; list_positions lists its open positions", symbol)), nil
}
