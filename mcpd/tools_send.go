package mcpd

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
)

// SignalWaitBound is how long send_signal with wait true waits for the executor's result
// before it answers that the signal is queued (decision "MCP server" 14). No platform
// timeout bounds an agent, unlike TradingView's 3 s for the webhook; a minute-long hold
// would tie up the replica, so 10 s.
const SignalWaitBound = 10 * time.Second

// MaxIdempotencyKey is the longest idempotencyKey send_signal takes, in bytes.
const MaxIdempotencyKey = 255

// sendArgs are send_signal's arguments that are not webhook payload fields.
var sendArgs = []string{"botId", "idempotencyKey", "wait", dryRunArg}

const sendSignalOutput = `{"type": "object", "required": ["success", "message", "signalId", "timestamp"], "properties": {
  "success": {"type": "boolean"},
  "message": {"type": "string", "description": "Signal queued, Signal executed, Awaiting approval, or Duplicate signal; the first one stands"},
  "signalId": {"type": "string", "description": "for get_signal; a duplicate answers the first signal's"},
  "timestamp": {"type": "integer", "description": "ms since epoch"},
  "order": {"type": "object", "description": "the order placed, when the result is known and one was"},
  "approval": ` + heldOutput + `}}`

// sendTools is send_signal.
func (s *Server) sendTools() []Tool {
	amount := "a decimal string: an amount (\"0.01\") or a percentage (\"10%\")"
	return []Tool{{Def: mcp.NewTool("send_signal",
		mcp.WithDescription("Send a trading signal to one of your bots, exactly as its webhook would: the same "+
			"checks (bot paused, disabled or deleted, webhook disabled, missing symbol), rate limit and duplicate "+
			"rules, and the same queue to the executor. Needs mcp:paper for a paper bot, mcp:live for a live one "+
			"(it trades real money): call check_auth first. Free: no wallet charge; a live bot's exchange charges "+
			"its own fees. Pass idempotencyKey to make a retry safe: the same key within 24 h answers the first "+
			"signal and never places a second order. wait true waits up to "+SignalWaitBound.String()+" for the "+
			"result (else answers queued: read it with get_signal). Errors: NOT_FOUND, BOT_PAUSED, BOT_DISABLED, "+
			"BOT_DELETED, EXCHANGE_DISCONNECTED, WEBHOOK_DISABLED, MISSING_SYMBOL, RATE_LIMITED, INVALID_JSON, "+
			"INVALID_ACTION, INVALID_SYMBOL, INVALID_AMOUNT, INVALID_PRICE, DCA_INVALID_LEVEL, INVALID_PARAMETER, "+
			"INSUFFICIENT_SCOPE, SERVICE_UNAVAILABLE (storage nearly full: nothing accepted, retry later), and with wait the executor's (INSUFFICIENT_BALANCE, EXCHANGE_ERROR, ...)."),
		mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)")),
		mcp.WithString("action", mcp.Required(), mcp.Enum("buy", "sell", "close", "close_long", "close_short"),
			mcp.Description("buy or sell opens or adds; close, close_long and close_short exit")),
		mcp.WithString("symbol", mcp.MaxLength(64), mcp.Description("the pair (BTC/USDT, BTCUSDT, ...); required for buy and sell unless the bot has a fixed symbol")),
		mcp.WithString("size", mcp.Description("order size, "+amount+"; default the bot's positionSize")),
		mcp.WithString("price", mcp.Description("limit price, a decimal string; omit for a market order")),
		mcp.WithNumber("leverage", mcp.Min(1), mcp.Max(125), mcp.Description("whole number, futures only; default the bot's")),
		mcp.WithString("stopLoss", mcp.Description("a price or a percentage from entry (\"2%\")")),
		mcp.WithString("takeProfit", mcp.Description("a price or a percentage from entry (\"5%\")")),
		mcp.WithString("comment", mcp.MaxLength(200)),
		mcp.WithBoolean("dca", mcp.Description("a dollar-cost-averaging entry (the bot must allow DCA)")),
		mcp.WithNumber("dcaLevel", mcp.Min(1), mcp.Description("whole number; 1 is the initial entry")),
		mcp.WithString("idempotencyKey", mcp.MaxLength(MaxIdempotencyKey), mcp.Description("a key of your choosing: the same key again answers the first signal")),
		mcp.WithBoolean("wait", mcp.Description("wait up to "+SignalWaitBound.String()+" for the executor's result (default false)")),
		dryRunOption(),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{Title: "Send signal", ReadOnlyHint: ptr(false), DestructiveHint: ptr(true),
			IdempotentHint: ptr(false), OpenWorldHint: ptr(true)}),
		mcp.WithRawOutputSchema(json.RawMessage(orDryRun(sendSignalOutput)))),
		Scope: auth.ScopePaper, ScopeFor: s.botVenueScope, Venue: true, ScopeRule: "mcp:live on an exchange bot",
		Trades: true, Exit: exitSignal, Draft: s.draftSignal, OnHold: s.heldSignal, Changes: true, Handler: s.sendSignal}}
}

func ptr[T any](v T) *T { return &v }

// exitSignal reports whether a signal only closes (close, close_long, close_short).
func exitSignal(args map[string]any) bool {
	a, _ := args["action"].(string)
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(a)), "close")
}

// sendSignal admits the payload through runtime/intake as the webhook does (intake.NewRequest
// and the admission script, by bot ID) and answers the webhook's shape.
func (s *Server) sendSignal(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const tool = "send_signal"
	args := req.GetArguments()
	bot, r, err := s.signalRequest(ctx, args)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	wait, _ := args["wait"].(bool)
	r.Admitted = admittedFrom(ctx)
	var results <-chan result.Result
	if wait && s.o.Waiter != nil {
		ch, cancel := s.o.Waiter.Register(r.SignalID)
		defer cancel()
		results, r.ReplyTo = ch, s.o.Waiter.Channel()
	}
	adm, err := s.o.Intake.AdmitBot(ctx, bot.ID, r)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	switch {
	case adm.Duplicate:
		stored, err := s.o.Trading.Result(ctx, adm.SignalID)
		if err == nil && stored.Found {
			return s.resultAnswer(tool, stored.Result)
		}
		return structured(intake.Duplicate(adm.SignalID, s.o.Now()))
	case results == nil:
		return structured(intake.Queued(adm.SignalID, false, r.ReceivedAt))
	}
	timer := time.NewTimer(SignalWaitBound)
	defer timer.Stop()
	select {
	case res := <-results:
		return s.resultAnswer(tool, res)
	case <-timer.C:
		return structured(intake.Queued(adm.SignalID, true, s.o.Now()))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// signalRequest is the intake request of send_signal's args on the caller's bot they name,
// with its ID placed in the bot's partition.
func (s *Server) signalRequest(ctx context.Context, args map[string]any) (registry.Bot, intake.Request, error) {
	bot, err := s.ownedBotArg(ctx, args)
	if err != nil {
		return bot, intake.Request{}, err
	}
	key, _ := args["idempotencyKey"].(string)
	if v, ok := args["idempotencyKey"]; ok && v != nil && (key == "" || len(key) > MaxIdempotencyKey) {
		return bot, intake.Request{}, errs.New(errs.InvalidParameter, "idempotencyKey: a string of 1 to %d bytes", MaxIdempotencyKey)
	}
	payload := make(map[string]any, len(args))
	for k, v := range args {
		if !slices.Contains(sendArgs, k) {
			payload[k] = v
		}
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return bot, intake.Request{}, errs.New(errs.InvalidJSON, "the signal is not JSON")
	}
	r, err := intake.NewRequest(body, s.o.Symbols(), key, s.o.Now())
	if err != nil {
		return bot, r, err
	}
	// The bot is known: the ID is placed in its partition here, so that the wait is
	// registered under the ID AdmitBot queues (placing a placed ID keeps it).
	r.SignalID = queue.SignalIDFor(bot.ID, r.SignalID)
	return bot, r, nil
}

// draftSignal is send_signal's Draft: the envelope the intake would queue.
func (s *Server) draftSignal(ctx context.Context, args map[string]any) (queue.Envelope, error) {
	bot, r, err := s.signalRequest(ctx, args)
	if err != nil {
		return queue.Envelope{}, err
	}
	return queue.Envelope{SignalID: r.SignalID, BotID: bot.ID, Priority: r.Priority, Source: queue.SourceWebhook,
		Signal: r.Signal, ReceivedAt: r.ReceivedAt.UnixMilli()}, nil
}

// heldSignal is send_signal's answer for a signal held for the user's approval.
func (s *Server) heldSignal(a approval.Approval) (*mcp.CallToolResult, error) {
	return structured(struct {
		Success   bool        `json:"success"`
		Message   string      `json:"message"`
		SignalID  string      `json:"signalId"`
		Timestamp int64       `json:"timestamp"`
		Approval  *heldAnswer `json:"approval"`
	}{true, "Awaiting approval", a.SignalID, a.CreatedAt, heldOf(a)})
}

// resultAnswer is the executor's result as send_signal answers it: the webhook's success
// shape, or an error result with the failure's code, message and details plus the signal ID.
func (s *Server) resultAnswer(tool string, res result.Result) (*mcp.CallToolResult, error) {
	if res.Success {
		return structured(intake.Executed(res))
	}
	details := map[string]any{"signalId": res.SignalID}
	for k, v := range res.Details {
		details[k] = v
	}
	return s.toolError(tool, &errs.Error{Code: res.Code, Message: res.Error, Details: details}), nil
}
