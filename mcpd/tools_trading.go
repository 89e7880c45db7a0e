package mcpd

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
)

// DefaultResultWait is how long a trading tool waits for the executor's result before it
// answers "queued" with the signal ID to read with get_signal (decision "MCP server" 15).
const DefaultResultWait = 3 * time.Second

// Statuses of a trading tool's answer.
const (
	statusExecuted = "executed"
	statusFailed   = "failed"
	statusQueued   = "queued"
	// statusHeld: the app's policy holds the order for the user's approval.
	statusHeld = "awaiting_approval"
)

// tradeOutput is a trading tool's answer (tradeAnswer).
var tradeOutput = `{
  "type": "object",
  "required": ["signalId", "status"],
  "properties": {
    "signalId": {"type": "string", "description": "the manual signal's id, for get_signal"},
    "status": {"type": "string", "enum": ["executed", "failed", "queued", "awaiting_approval"],
      "description": "executed or failed: result holds the outcome; queued: not executed yet, call get_signal with signalId; awaiting_approval: the user approves it first (approval)"},
    "approval": ` + heldOutput + `,
    "repeat": {"type": "boolean", "description": "the idempotencyKey named an earlier order, whose answer this is; nothing new was placed"},
    "result": ` + signalOutput + `}}`

// tradeAnswer is what a trading tool answers: the signal and, once executed, its result.
type tradeAnswer struct {
	SignalID string         `json:"signalId"`
	Status   string         `json:"status"`
	Repeat   bool           `json:"repeat,omitempty"`
	Result   *result.Result `json:"result,omitempty"`
	Approval *heldAnswer    `json:"approval,omitempty"`
}

// tradeHints is the annotation of a tool that queues a manual signal: it may reach a real
// exchange.
func tradeHints(title string, destructive, idempotent bool) mcp.ToolAnnotation {
	f, t := false, true
	return mcp.ToolAnnotation{Title: title, ReadOnlyHint: &f, DestructiveHint: &destructive,
		IdempotentHint: &idempotent, OpenWorldHint: &t}
}

// scopeNote is the scope sentence of a tool acting on a bot's venue.
const scopeNote = " Needs the mcp:paper scope for a paper bot and mcp:live for a bot on an exchange: call check_auth first " +
	"to see the token's scope. Answers within a few seconds with the executed result (success, the order, or the " +
	"error code), or status queued with the signalId to read with get_signal. Refusals: NOT_FOUND (not one of your " +
	"bots), BOT_DISABLED, EXCHANGE_DISCONNECTED, INSUFFICIENT_SCOPE."

// tradingOptions are what the trading tools' definitions share.
type tradingOptions struct {
	botID, output mcp.ToolOption
	// dryOutput is output, or a dry run's answer (the tools with a dryRun argument).
	dryOutput mcp.ToolOption
}

// symbolOption is a trading tool's symbol argument, described by what.
func symbolOption(required bool, what string) mcp.ToolOption {
	opts := []mcp.PropertyOption{mcp.Description(what + ", in any form a webhook takes (BTC/USDT, BTCUSDT, btc-usdt)")}
	if required {
		opts = append(opts, mcp.Required())
	}
	return mcp.WithString("symbol", opts...)
}

// priceOption is a required positive price argument.
func priceOption(name, what string) mcp.ToolOption {
	return mcp.WithNumber(name, mcp.Required(), mcp.Description(what), positive())
}

// tradingTool is a trading tool of def: paper or live by the bot's venue, audited, counted
// by an app's hourly cap.
func (s *Server) tradingTool(def mcp.Tool, handler server.ToolHandlerFunc) Tool {
	return Tool{Def: def, Scope: auth.ScopePaper, ScopeFor: s.botVenueScope, Venue: true, Trades: true,
		ScopeRule: "mcp:live on a bot trading on an exchange", Changes: true, Handler: handler}
}

// tradingTools are the tools that trade on a bot's venue through the manual-signal API.
func (s *Server) tradingTools() []Tool {
	o := tradingOptions{botID: mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)")),
		output:    mcp.WithRawOutputSchema(json.RawMessage(tradeOutput)),
		dryOutput: mcp.WithRawOutputSchema(json.RawMessage(orDryRun(tradeOutput)))}
	return append([]Tool{s.placeOrderTool(o)}, s.exitTools(o)...)
}

// placeOrderTool is place_order.
func (s *Server) placeOrderTool(o tradingOptions) Tool {
	place := s.tradingTool(mcp.NewTool("place_order",
		mcp.WithDescription("Place a market or limit order on a bot's venue, as the dashboard's manual order does. "+
			"An order opposite to the bot's open position reduces it (never past zero); on its side it adds; "+
			"otherwise it opens a position, with stopLoss and takeProfit as its exits (absent: the bot's defaults). "+
			"Pass an idempotencyKey to retry safely: the same key answers the first order and places nothing new."+
			scopeNote+" Also INVALID_SYMBOL, INVALID_AMOUNT, INVALID_PRICE, INVALID_ACTION, BOT_PAUSED (entries on a "+
			"paused bot), INVALID_PARAMETER (an idempotencyKey reused for a different order); in the result "+
			"INSUFFICIENT_BALANCE, EXCHANGE_ERROR."),
		mcp.WithToolAnnotation(tradeHints("Place order", false, false)), o.botID,
		mcp.WithString("side", mcp.Required(), mcp.Enum("buy", "sell"), mcp.Description("buy or sell")),
		mcp.WithString("type", mcp.Required(), mcp.Enum("market", "limit"), mcp.Description("market, or limit with price")),
		symbolOption(false, "the pair; absent: the bot's fixed pair"),
		mcp.WithNumber("amount", positive(),
			mcp.Description("the amount in base currency (0.01 BTC); a decimal string is accepted for more than 15 significant "+
				"digits. Absent: the bot's positionSize, for an order that opens or adds (one that reduces needs an amount)")),
		mcp.WithNumber("price", positive(), mcp.Description("the limit price (type limit only)")),
		mcp.WithNumber("stopLoss", positive(), mcp.Description("stop-loss price of the position the order opens")),
		mcp.WithNumber("takeProfit", positive(), mcp.Description("take-profit price of the position the order opens")),
		mcp.WithString("idempotencyKey", mcp.MaxLength(255),
			mcp.Description("your key for this order: a repeat within 24 hours answers the first order and places nothing")),
		dryRunOption(), o.dryOutput), s.placeOrder)
	place.Draft = s.draftOrder
	place.OnHold = func(a approval.Approval) (*mcp.CallToolResult, error) {
		return structured(tradeAnswer{SignalID: a.SignalID, Status: statusHeld, Approval: heldOf(a)})
	}
	// An order may reduce the open position, which only the executor knows: for the
	// hourly cap it is an entry.
	place.Exit = func(map[string]any) bool { return false }
	return place
}

// exitTools are the tools that protect, close or withdraw: every call is an exit.
func (s *Server) exitTools(o tradingOptions) []Tool {
	stop := s.tradingTool(mcp.NewTool("set_stop_loss",
		mcp.WithDescription("Set the stop-loss price of a bot's open position on symbol: when the market reaches it the "+
			"position is closed at market. It must be on the protecting side of the current price (below it for a long)."+
			scopeNote+" Also INVALID_SYMBOL, INVALID_PRICE; in the result POSITION_NOT_FOUND, INVALID_PRICE (wrong side)."),
		mcp.WithToolAnnotation(tradeHints("Set stop-loss", false, true)), o.botID,
		symbolOption(true, "the position's pair"), priceOption("price", "the stop-loss trigger price"), o.output),
		s.protect("set_stop_loss", exchange.StopLoss))
	take := s.tradingTool(mcp.NewTool("set_take_profit",
		mcp.WithDescription("Set the take-profit price of a bot's open position on symbol: when the market reaches it "+
			"the position is closed at market. It must be on the profitable side of the current price (above it for a long)."+
			scopeNote+" Also INVALID_SYMBOL, INVALID_PRICE; in the result POSITION_NOT_FOUND, INVALID_PRICE (wrong side)."),
		mcp.WithToolAnnotation(tradeHints("Set take-profit", false, true)), o.botID,
		symbolOption(true, "the position's pair"), priceOption("price", "the take-profit trigger price"), o.output),
		s.protect("set_take_profit", exchange.TakeProfit))
	closePos := s.tradingTool(mcp.NewTool("close_position",
		mcp.WithDescription("Close a bot's open position on symbol at market: all of it, or percent of it. The close "+
			"applies to what is open when it executes."+scopeNote+
			" Also INVALID_SYMBOL, INVALID_AMOUNT (percent); in the result POSITION_NOT_FOUND, EXCHANGE_ERROR."),
		mcp.WithToolAnnotation(tradeHints("Close position", true, false)), o.botID,
		symbolOption(true, "the position's pair"),
		mcp.WithNumber("percent", positive(), mcp.Max(100), mcp.Description("the part to close, above 0 and at most 100 (default 100)")),
		dryRunOption(), o.dryOutput), s.closePosition)
	closePos.Draft = s.draftClose
	closeAll := s.tradingTool(mcp.NewTool("close_all_positions",
		mcp.WithDescription("Close every open position of a bot at market, one order per symbol."+scopeNote+
			" In the result POSITION_NOT_FOUND when nothing is open, EXCHANGE_ERROR."),
		mcp.WithToolAnnotation(tradeHints("Close all positions", true, false)), o.botID, o.output), s.closeAll)
	cancel := s.tradingTool(mcp.NewTool("cancel_order",
		mcp.WithDescription("Cancel a bot's order still open on its exchange (a resting limit order), by its "+
			"clientOrderId (get_order shows it). The order record becomes cancelled, keeping any partial fill."+
			scopeNote+" In the result INVALID_ACTION when the order is not open (filled, cancelled, rejected, expired; "+
			"a paper bot's orders fill at once, so they are never open), NOT_FOUND for an order the bot does not hold, "+
			"EXCHANGE_ERROR."),
		mcp.WithToolAnnotation(tradeHints("Cancel order", true, true)), o.botID,
		mcp.WithString("orderId", mcp.Required(), mcp.MaxLength(64), mcp.Description("the order's clientOrderId")),
		o.output), s.cancelOrder)
	return []Tool{stop, take, closePos, closeAll, cancel}
}

func (s *Server) placeOrder(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const name = "place_order"
	args := req.GetArguments()
	bot, r, err := s.orderRequest(ctx, args)
	if err != nil {
		return s.toolError(name, err), nil
	}
	key, _ := args["idempotencyKey"].(string)
	userID := ""
	if key != "" {
		p, ok := auth.PrincipalFrom(ctx)
		if !ok {
			return s.toolError(name, errs.New(errs.Unauthorized, "no caller")), nil
		}
		userID = p.UserID
	}
	placed, err := s.o.Trading.PlaceAdmitted(ctx, bot.ID, userID, key, r, admittedFrom(ctx))
	return s.answerTrade(ctx, name, placed.SignalID, placed.Repeat, err)
}

// orderRequest is place_order's order of args on the caller's bot they name.
func (s *Server) orderRequest(ctx context.Context, args map[string]any) (registry.Bot, order.Request, error) {
	r := order.Request{Type: exchange.OrderType(stringArg(args, "type")), Side: exchange.Side(stringArg(args, "side")),
		Symbol: stringArg(args, "symbol")}
	if r.Type != exchange.Market && r.Type != exchange.Limit {
		return registry.Bot{}, r, errs.New(errs.InvalidParameter, "type must be market or limit")
	}
	var err error
	for _, d := range []struct {
		name string
		code errs.Code
		to   **httpapi.Number
	}{{"amount", errs.InvalidAmount, &r.Amount}, {"price", errs.InvalidPrice, &r.Price},
		{"stopLoss", errs.InvalidPrice, &r.StopLoss}, {"takeProfit", errs.InvalidPrice, &r.TakeProfit}} {
		v, err := decimalArg(args, d.name, d.code)
		if err != nil {
			return registry.Bot{}, r, err
		}
		*d.to = httpapi.NumOrNil(v)
	}
	key, _ := args["idempotencyKey"].(string)
	if v, ok := args["idempotencyKey"]; ok && v != nil && (key == "" || len(key) > 255) {
		return registry.Bot{}, r, errs.New(errs.InvalidParameter, "idempotencyKey must be a string of 1 to 255 characters")
	}
	bot, err := s.ownedBotArg(ctx, args)
	if err != nil {
		return bot, r, err
	}
	if r.Symbol == "" {
		r.Symbol = bot.Symbol
	}
	return bot, r, nil
}

// draftOrder is place_order's Draft.
func (s *Server) draftOrder(ctx context.Context, args map[string]any) (queue.Envelope, error) {
	bot, r, err := s.orderRequest(ctx, args)
	if err != nil {
		return queue.Envelope{}, err
	}
	return s.o.Trading.Draft(ctx, bot.ID, r)
}

// stringArg is the string argument name of args ("" when absent).
func stringArg(args map[string]any, name string) string {
	v, _ := args[name].(string)
	return v
}

// protect is the handler of set_stop_loss (typ exchange.StopLoss) and set_take_profit: the
// whole position's exit.
func (s *Server) protect(name string, typ exchange.OrderType) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		price, err := decimalArg(req.GetArguments(), "price", errs.InvalidPrice)
		if err != nil {
			return s.toolError(name, err), nil
		}
		if price == nil {
			return s.toolError(name, errs.New(errs.InvalidPrice, "price is required: the trigger price")), nil
		}
		bot, err := s.ownedBot(ctx, req)
		if err != nil {
			return s.toolError(name, err), nil
		}
		all := decimal.NewFromInt(100)
		r := order.Request{Type: typ, Symbol: req.GetString("symbol", ""), ClosePercent: httpapi.NumOrNil(&all)}
		if typ == exchange.StopLoss {
			r.StopPrice = httpapi.NumOrNil(price)
		} else {
			r.TakeProfitPrice = httpapi.NumOrNil(price)
		}
		id, err := s.o.Trading.PlaceManual(ctx, bot.ID, r)
		return s.answerTrade(ctx, name, id, false, err)
	}
}

func (s *Server) closePosition(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const name = "close_position"
	bot, percent, err := s.closeRequest(ctx, req.GetArguments())
	if err != nil {
		return s.toolError(name, err), nil
	}
	id, err := s.o.Trading.Close(ctx, bot.ID, req.GetString("symbol", ""), percent)
	return s.answerTrade(ctx, name, id, false, err)
}

// closeRequest is close_position's bot and percent of args.
func (s *Server) closeRequest(ctx context.Context, args map[string]any) (registry.Bot, *decimal.Decimal, error) {
	percent, err := decimalArg(args, "percent", errs.InvalidAmount)
	if err != nil {
		return registry.Bot{}, nil, err
	}
	bot, err := s.ownedBotArg(ctx, args)
	return bot, percent, err
}

// draftClose is close_position's Draft.
func (s *Server) draftClose(ctx context.Context, args map[string]any) (queue.Envelope, error) {
	bot, percent, err := s.closeRequest(ctx, args)
	if err != nil {
		return queue.Envelope{}, err
	}
	sym := stringArg(args, "symbol")
	if sym == "" {
		return queue.Envelope{}, errs.New(errs.InvalidSymbol, "symbol required; close_all_positions closes every position")
	}
	return s.o.Trading.Draft(ctx, bot.ID, order.Request{Type: order.Close, Symbol: sym, ClosePercent: httpapi.NumOrNil(percent)})
}

func (s *Server) closeAll(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("close_all_positions", err), nil
	}
	id, err := s.o.Trading.CloseAll(ctx, bot.ID)
	return s.answerTrade(ctx, "close_all_positions", id, false, err)
}

func (s *Server) cancelOrder(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("cancel_order", err), nil
	}
	id, err := s.o.Trading.Cancel(ctx, bot.ID, req.GetString("orderId", ""))
	return s.answerTrade(ctx, "cancel_order", id, false, err)
}

// answerTrade answers a queued manual signal: its result when the executor stores one within
// Options.ResultWait, otherwise status queued.
func (s *Server) answerTrade(ctx context.Context, tool, signalID string, repeat bool, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return s.toolError(tool, err), nil
	}
	out := tradeAnswer{SignalID: signalID, Status: statusQueued, Repeat: repeat}
	st, err := s.o.Trading.WaitResult(ctx, signalID, s.o.ResultWait)
	if err != nil {
		// The signal is queued: answer it, and let the agent read the outcome later.
		s.o.Logger.Warn("mcpd: reading a manual signal's result failed", "tool", tool, "signal", signalID, "err", err)
	}
	if err == nil && st.Found {
		out.Result, out.Status = &st.Result, statusExecuted
		if !st.Result.Success {
			out.Status = statusFailed
		}
	}
	return structured(out)
}

// positive is the schema of a decimal argument above 0 (decimalArg): a JSON number, or a
// decimal string for more digits than a float64 holds.
func positive() mcp.PropertyOption {
	return func(schema map[string]any) {
		schema["type"] = []string{"number", "string"}
		schema["exclusiveMinimum"] = 0
	}
}

// decimalArg reads the optional decimal argument name: a JSON number (read as its shortest
// decimal form, exact up to 15 significant digits) or a decimal string. Anything else, or a
// number that is not positive, is code (INVALID_AMOUNT, INVALID_PRICE).
func decimalArg(args map[string]any, name string, code errs.Code) (*decimal.Decimal, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return nil, nil
	}
	var d decimal.Decimal
	switch x := v.(type) {
	case float64:
		d = decimal.NewFromFloat(x)
	case string:
		var err error
		if d, err = decimal.NewFromString(x); err != nil {
			return nil, errs.New(code, "%s must be a number", name).WithDetails(map[string]any{"parameter": name})
		}
	default:
		return nil, errs.New(code, "%s must be a number", name).WithDetails(map[string]any{"parameter": name})
	}
	if !d.IsPositive() {
		return nil, errs.New(code, "%s must be above 0", name).WithDetails(map[string]any{"parameter": name})
	}
	return &d, nil
}
