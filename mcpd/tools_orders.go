package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/history"
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
      "reason": {"type": "string", "enum": ["signal", "reversal", "stop_loss", "take_profit", "liquidation", "manual", "copy"],
        "description": "copy: a follower's close copying its master's"},
      "openedAt": {"type": "integer", "description": "Unix ms"}, "closedAt": {"type": "integer", "description": "Unix ms"}}}},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"},
  "historyFrom": {"type": "string", "format": "date-time", "description": "the history retention's cutoff: trades closed before it are counted only in get_bot_analytics; absent when the bot's list holds every trade"}}}`

// ordersOutput is a page of orders.
var ordersOutput = `{"type": "object", "required": ["orders"], "properties": {
  "orders": {"type": "array", "items": ` + orderSchema + `},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`

// openStatuses are the statuses of an order still working on the exchange.
var openStatuses = []exchange.OrderStatus{exchange.StatusOpen, exchange.StatusPartiallyFilled}

// orderTools are get_order, list_orders, list_open_orders and list_trades.
func (s *Server) orderTools() []Tool {
	botID := mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)"))
	return []Tool{
		{Def: mcp.NewTool("get_order",
			mcp.WithDescription("One of a bot's orders by its clientOrderId: status, fills, average price, fee, and "+
				"why it was rejected. Orders are kept in the bot's history, however old."),
			mcp.WithToolAnnotation(readOnly("Get order")), botID,
			mcp.WithString("clientOrderId", mcp.Required(), mcp.Description("the order's clientOrderId")),
			mcp.WithRawOutputSchema(json.RawMessage(orderSchema))),
			Scope: auth.ScopeRead, Handler: s.getOrder},
		{Def: mcp.NewTool("list_orders", append([]mcp.ToolOption{
			mcp.WithDescription("A bot's orders, newest first, a page at a time (pass nextCursor as cursor to read on): " +
				"status, fills, average price, fee, and why a rejected order was rejected; the bot's whole order " +
				"history. Errors: NOT_FOUND (no such bot of yours), INVALID_PARAMETER (limit, status, or a cursor " +
				"whose order is no longer kept: list again without a cursor)."),
			mcp.WithToolAnnotation(readOnly("List orders")), botID,
			mcp.WithString("status", mcp.Description("only orders in this status"),
				mcp.Enum("pending", "open", "partially_filled", "filled", "cancelled", "rejected", "expired")),
			mcp.WithRawOutputSchema(json.RawMessage(ordersOutput))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listOrders},
		{Def: mcp.NewTool("list_open_orders", append([]mcp.ToolOption{
			mcp.WithDescription("Orders still working on the exchange (status open or partially_filled, e.g. a GTC " +
				"limit order) of one bot, or of all your bots when botId is omitted; newest first within a bot, " +
				"bots in id order, a page at a time. Errors: NOT_FOUND (botId is not one of your bots), INVALID_PARAMETER."),
			mcp.WithToolAnnotation(readOnly("List open orders")),
			mcp.WithString("botId", mcp.Description("one of your bots (list_bots lists them); omit for all")),
			mcp.WithRawOutputSchema(json.RawMessage(ordersOutput))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listOpenOrders},
		{Def: mcp.NewTool("list_trades", append([]mcp.ToolOption{
			mcp.WithDescription("A bot's realised trades (each partial or full close of a position) with gross and " +
				"net P&L and fees, oldest first from the bot's first trade, a page at a time: pass nextCursor as " +
				"cursor to read on. historyFrom, when present, is where the kept trades start (a server without " +
				"the history archive); analytics cover every trade."),
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
	rec, err := s.o.Trading.Order(ctx, bot.ID, id)
	if err != nil {
		return s.toolError("get_order", err), nil
	}
	if rec == nil {
		return s.toolError("get_order", errs.New(errs.NotFound, "the bot has no order %s", id)), nil
	}
	return structured(rec)
}

func (s *Server) listTrades(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_trades", err), nil
	}
	q := history.TradeQuery{Limit: p.limit}
	if p.after != "" {
		c, err := history.ParseTradeCursor(p.after)
		if err != nil {
			return s.toolError("list_trades", errs.New(errs.InvalidParameter, "cursor is not one this tool returned")), nil
		}
		q.After = &c
	}
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("list_trades", err), nil
	}
	page, err := s.o.Trading.Trades(ctx, bot.ID, q)
	if err != nil {
		return s.toolError("list_trades", err), nil
	}
	from, compacted, err := s.o.Trading.HistoryFrom(ctx, bot.ID)
	if err != nil {
		return s.toolError("list_trades", err), nil
	}
	out := struct {
		Trades      []position.Trade `json:"trades"`
		NextCursor  string           `json:"nextCursor,omitempty"`
		HistoryFrom *time.Time       `json:"historyFrom,omitempty"`
	}{Trades: page.Trades}
	if out.Trades == nil {
		out.Trades = []position.Trade{}
	}
	if page.Next != nil {
		out.NextCursor = cursorOf(page.Next.String())
	}
	if compacted {
		out.HistoryFrom = &from
	}
	return structured(out)
}

// orderStatusArg reads the optional status argument.
func orderStatusArg(req mcp.CallToolRequest) ([]exchange.OrderStatus, error) {
	v, ok := req.GetArguments()["status"]
	if !ok || v == nil || v == "" {
		return nil, nil
	}
	st, _ := v.(string)
	switch exchange.OrderStatus(st) {
	case exchange.StatusPending, exchange.StatusOpen, exchange.StatusPartiallyFilled, exchange.StatusFilled,
		exchange.StatusCancelled, exchange.StatusRejected, exchange.StatusExpired:
		return []exchange.OrderStatus{exchange.OrderStatus(st)}, nil
	}
	return nil, errs.New(errs.InvalidParameter,
		"status must be one of pending, open, partially_filled, filled, cancelled, rejected, expired")
}

// cursorGone answers a cursor whose order has left the bot's list.
var cursorGone = errs.New(errs.InvalidParameter, "the cursor's order is no longer listed; list again without a cursor")

func (s *Server) listOrders(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_orders", err), nil
	}
	statuses, err := orderStatusArg(req)
	if err != nil {
		return s.toolError("list_orders", err), nil
	}
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("list_orders", err), nil
	}
	page, err := s.o.Trading.OrderPage(ctx, bot.ID, position.OrderQuery{After: p.after, Limit: p.limit, Statuses: statuses})
	if errors.Is(err, position.ErrCursorGone) {
		err = cursorGone
	}
	if err != nil {
		return s.toolError("list_orders", err), nil
	}
	return ordersAnswer(page.Orders, cursorOf(page.Next))
}

// ordersAnswer is a page of orders; orders is never null.
func ordersAnswer(orders []position.OrderRecord, next string) (*mcp.CallToolResult, error) {
	if orders == nil {
		orders = []position.OrderRecord{}
	}
	return structured(struct {
		Orders     []position.OrderRecord `json:"orders"`
		NextCursor string                 `json:"nextCursor,omitempty"`
	}{orders, next})
}

// listOpenOrders reads the open orders of one bot, or of each of the caller's bots in ID
// order. Its cursor is the bot ID and client order ID of the last order served.
func (s *Server) listOpenOrders(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_open_orders", err), nil
	}
	var bots []string
	if id, _ := req.GetArguments()["botId"].(string); id != "" {
		bot, err := s.ownedBot(ctx, req)
		if err != nil {
			return s.toolError("list_open_orders", err), nil
		}
		bots = []string{bot.ID}
	} else {
		owner, err := s.owner(ctx)
		if err != nil {
			return s.toolError("list_open_orders", err), nil
		}
		mine, err := s.o.Bots.AllOwned(ctx, owner)
		if err != nil {
			return s.toolError("list_open_orders", err), nil
		}
		for _, b := range mine {
			bots = append(bots, b.ID)
		}
		slices.Sort(bots)
	}
	afterBot, afterOrder, _ := strings.Cut(p.after, "\n")
	var out []position.OrderRecord
	next := ""
	for _, id := range bots {
		if id < afterBot {
			continue
		}
		q := position.OrderQuery{Limit: p.limit - len(out), Statuses: openStatuses}
		if id == afterBot {
			q.After = afterOrder
		}
		page, err := s.o.Trading.OrderPage(ctx, id, q)
		if errors.Is(err, position.ErrCursorGone) {
			err = cursorGone
		}
		if err != nil {
			return s.toolError("list_open_orders", err), nil
		}
		out = append(out, page.Orders...)
		if page.Next != "" {
			next = id + "\n" + page.Next
			break
		}
		if len(out) == p.limit {
			// The page is full at a bot's last open order: the next page starts after it,
			// which may turn out empty.
			if last := out[len(out)-1]; id != bots[len(bots)-1] {
				next = id + "\n" + last.ClientOrderID
			}
			break
		}
	}
	return ordersAnswer(out, cursorOf(next))
}
