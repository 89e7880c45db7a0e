package mcpd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/position"
)

// orderSchema is one order as the bot's book keeps it (position.OrderRecord).
const orderSchema = `{
  "type": "object",
  "required": ["orderId", "clientOrderId", "botId", "symbol", "kind", "side", "type", "status", "amount", "filledAmount", "avgPrice", "fee", "createdAt", "updatedAt"],
  "properties": {
    "orderId": {"type": "string", "description": "the exchange's id"},
    "clientOrderId": {"type": "string", "description": "sigops's id, for get_order"},
    "signalId": {"type": "string"}, "botId": {"type": "string"}, "leg": {"type": "string"},
    "symbol": {"type": "string"}, "kind": {"type": "string"}, "side": {"type": "string"}, "type": {"type": "string"},
    "status": {"type": "string", "enum": ["pending", "open", "partially_filled", "filled", "cancelled", "rejected", "expired"]},
    "amount": {"type": "number"}, "price": {"type": "number"}, "filledAmount": {"type": "number"},
    "avgPrice": {"type": "number"}, "fee": {"type": "number"}, "feeAsset": {"type": "string"},
    "reduceOnly": {"type": "boolean"}, "leverage": {"type": "integer"},
    "code": {"type": "string", "description": "why a rejected order was rejected"}, "error": {"type": "string"},
    "createdAt": {"type": "integer", "description": "Unix ms"}, "updatedAt": {"type": "integer", "description": "Unix ms"}}}`

var listTradesOutput = `{"type": "object", "required": ["trades"], "properties": {
  "trades": {"type": "array", "items": {"type": "object",
    "required": ["id", "positionId", "botId", "symbol", "side", "size", "entryPrice", "exitPrice", "pnl", "fees", "netPnl", "closed", "reason", "openedAt", "closedAt"],
    "properties": {
      "id": {"type": "string"}, "positionId": {"type": "string"}, "botId": {"type": "string"}, "signalId": {"type": "string"},
      "symbol": {"type": "string"}, "kind": {"type": "string"}, "side": {"type": "string"},
      "size": {"type": "number"}, "entryPrice": {"type": "number"}, "exitPrice": {"type": "number"}, "leverage": {"type": "integer"},
      "pnl": {"type": "number", "description": "gross price P&L, quote currency"},
      "fees": {"type": "number"}, "netPnl": {"type": "number", "description": "pnl - fees"},
      "closed": {"type": "boolean", "description": "this realisation closed the position"},
      "reason": {"type": "string", "enum": ["signal", "reversal", "stop_loss", "take_profit", "liquidation", "manual"]},
      "openedAt": {"type": "integer", "description": "Unix ms"}, "closedAt": {"type": "integer", "description": "Unix ms"}}}},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`

// orderTools are get_order and list_trades.
func (s *Server) orderTools() []Tool {
	botID := mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)"))
	return []Tool{
		{Def: mcp.NewTool("get_order",
			mcp.WithDescription("One of a bot's orders by its clientOrderId: status, fills, average price, fee, and "+
				"why it was rejected. Orders are kept for the bot's newest 5000."),
			mcp.WithToolAnnotation(readOnly("Get order")), botID,
			mcp.WithString("clientOrderId", mcp.Required(), mcp.Description("the order's clientOrderId")),
			mcp.WithRawOutputSchema(json.RawMessage(orderSchema))),
			Scope: auth.ScopeRead, Handler: s.getOrder},
		{Def: mcp.NewTool("list_trades", append([]mcp.ToolOption{
			mcp.WithDescription("A bot's realised trades (each partial or full close of a position) with gross and " +
				"net P&L and fees, oldest first, a page at a time: pass nextCursor as cursor to read on."),
			mcp.WithToolAnnotation(readOnly("List trades")), botID,
			mcp.WithRawOutputSchema(json.RawMessage(listTradesOutput))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listTrades},
	}
}

func (s *Server) getOrder(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("clientOrderId", "")
	if id == "" {
		return s.toolError("get_order", errs.New(errs.InvalidParameter, "clientOrderId is required: the order's clientOrderId")), nil
	}
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("get_order", err), nil
	}
	rec, err := s.o.Book.Order(ctx, bot.ID, id)
	if err != nil {
		return s.toolError("get_order", err), nil
	}
	if rec == nil {
		return s.toolError("get_order", errs.New(errs.NotFound, "the bot has no order %s", id)), nil
	}
	return structured(rec)
}

// tradeKey orders trades by close time, then ID: oldest first, and unique.
func tradeKey(t position.Trade) string { return fmt.Sprintf("%020d/%s", t.ClosedAt, t.ID) }

func (s *Server) listTrades(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_trades", err), nil
	}
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("list_trades", err), nil
	}
	trades, err := s.o.Trading.Trades(ctx, bot.ID)
	if err != nil {
		return s.toolError("list_trades", err), nil
	}
	trades, next := paginate(trades, tradeKey, p)
	return structured(struct {
		Trades     []position.Trade `json:"trades"`
		NextCursor string           `json:"nextCursor,omitempty"`
	}{trades, next})
}
