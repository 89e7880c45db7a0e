package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
)

// signalOutput is a signal's stored result (result.Result).
const signalOutput = `{
  "type": "object",
  "required": ["signalId", "botId", "success", "timestamp"],
  "properties": {
    "signalId": {"type": "string"}, "botId": {"type": "string"}, "success": {"type": "boolean"},
    "message": {"type": "string"},
    "code": {"type": "string", "description": "the error code of a failed signal"},
    "error": {"type": "string"}, "details": {"type": "object"},
    "order": {"type": "object", "description": "the order placed, when one was"},
    "timestamp": {"type": "integer", "description": "Unix ms when the result was decided (of an approval: when it was asked for)"},
    "state": {"type": "string", "enum": ["executed", "failed", "queued", "awaiting_approval", "rejected", "expired", "refused"],
      "description": "executed or failed: the result; the others: an order a connected app's policy held for the user's approval, waiting, rejected, expired (never executed), refused by the policy when approved, or approved and queued"},
    "approval": ` + heldOutput + `}}`

// listSignalsOutput is a page of signalItem.
const listSignalsOutput = `{"type": "object", "required": ["signals"], "properties": {
  "signals": {"type": "array", "items": {"type": "object",
    "required": ["signalId", "source", "receivedAt", "success", "decidedAt", "latencyMs"],
    "properties": {
      "signalId": {"type": "string"},
      "source": {"type": "string", "enum": ["webhook", "manual", "strategy", "copy", "watcher"]},
      "action": {"type": "string", "description": "the signal's action, or a manual order's type"},
      "receivedAt": {"type": "integer", "description": "Unix ms when the signal was accepted"},
      "success": {"type": "boolean"}, "message": {"type": "string"},
      "code": {"type": "string", "description": "the error code of a failed signal"}, "error": {"type": "string"},
      "order": {"type": "object", "description": "the order placed, when one was"},
      "decidedAt": {"type": "integer", "description": "Unix ms when the result was decided"},
      "latencyMs": {"type": "integer", "description": "decidedAt - receivedAt"}}}},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`

// signalTools are get_signal and list_signals.
func (s *Server) signalTools() []Tool {
	return []Tool{
		{Def: mcp.NewTool("get_signal",
			mcp.WithDescription("The result of a signal or manual order by its signalId: success, the order "+
				"placed, or the error code and message. Results are kept in the bot's history; a signal still "+
				"being executed has none yet, so call again in a few seconds."),
			mcp.WithToolAnnotation(readOnly("Get signal result")),
			mcp.WithString("signalId", mcp.Required(), mcp.Description("the signalId a webhook or order answered")),
			mcp.WithRawOutputSchema(json.RawMessage(signalOutput))),
			Scope: auth.ScopeRead, Handler: s.getSignal},
		{Def: mcp.NewTool("list_signals", append([]mcp.ToolOption{
			mcp.WithDescription("A bot's recent signals (webhook, manual, strategy, copy, stop-loss/take-profit watcher), " +
				"newest first, a page at a time (pass nextCursor as cursor to read on), each with its result: success " +
				"or the error code, the order placed, when it was accepted and decided and the latency between. " +
				"The bot's newest 1000 signals of the last 24 hours are kept; a signal refused at the webhook or still " +
				"executing is not listed (get_signal reads one by id). Errors: NOT_FOUND (no such bot of yours), " +
				"INVALID_PARAMETER (limit, cursor)."),
			mcp.WithToolAnnotation(readOnly("List signals")),
			mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)")),
			mcp.WithRawOutputSchema(json.RawMessage(listSignalsOutput))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listSignals},
	}
}

// signalItem is one listed signal: its index entry and its result.
type signalItem struct {
	SignalID   string         `json:"signalId"`
	Source     string         `json:"source"`
	Action     string         `json:"action,omitempty"`
	ReceivedAt int64          `json:"receivedAt"`
	Success    bool           `json:"success"`
	Message    string         `json:"message,omitempty"`
	Code       errs.Code      `json:"code,omitempty"`
	Error      string         `json:"error,omitempty"`
	Order      *result.Order  `json:"order,omitempty"`
	DecidedAt  int64          `json:"decidedAt"`
	LatencyMs  int64          `json:"latencyMs"`
	Details    map[string]any `json:"details,omitempty"`
}

// signalKey orders signals newest first (then by ID): the inverted acceptance time.
func signalKey(e queue.SignalEntry) string {
	return fmt.Sprintf("%020d/%s", math.MaxInt64-e.ReceivedAt, e.SignalID)
}

// listSignals pages the bot's signal index and reads the page's results. A signal whose
// result has expired since is left out of the page.
func (s *Server) listSignals(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_signals", err), nil
	}
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("list_signals", err), nil
	}
	entries, err := s.o.Trading.RecentSignals(ctx, bot.ID)
	if err != nil {
		return s.toolError("list_signals", err), nil
	}
	entries, next := paginate(entries, signalKey, p)
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.SignalID
	}
	results, err := s.o.Trading.Results(ctx, ids)
	if err != nil {
		return s.toolError("list_signals", err), nil
	}
	items := make([]signalItem, 0, len(entries))
	for i, e := range entries {
		st := results[i]
		if !st.Found || st.Result.BotID != bot.ID {
			continue
		}
		r := st.Result
		items = append(items, signalItem{SignalID: e.SignalID, Source: e.Source, Action: e.Action, ReceivedAt: e.ReceivedAt,
			Success: r.Success, Message: r.Message, Code: r.Code, Error: r.Error, Details: r.Details, Order: r.Order,
			DecidedAt: r.Timestamp, LatencyMs: r.Timestamp - e.ReceivedAt})
	}
	return structured(struct {
		Signals    []signalItem `json:"signals"`
		NextCursor string       `json:"nextCursor,omitempty"`
	}{items, next})
}

// getSignal answers the caller's signal result. One answer covers a signal with no result
// (still executing, expired, never sent) and another user's or a deleted bot's, so that
// nobody learns which signal IDs exist.
func (s *Server) getSignal(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("signalId", "")
	if id == "" {
		return s.toolError("get_signal", errs.New(errs.InvalidParameter, "signalId is required: the signalId a webhook or order answered")), nil
	}
	notFound := errs.New(errs.NotFound, "no result for signal %s: it is still being executed (call again in a few seconds), "+
		"its result has expired (kept 24 hours), or it is not one of your bots' signals", id)
	st, err := s.o.Trading.Result(ctx, id)
	if err != nil {
		return s.toolError("get_signal", err), nil
	}
	if !st.Found {
		// An order held for the caller's approval has no result until it executes; the
		// approval is the caller's own (it is stored under their user).
		if p, ok := auth.PrincipalFrom(ctx); ok {
			a, err := s.o.Approvals.Get(ctx, p.UserID, id)
			if err == nil {
				return structured(heldSignalAnswer(a))
			}
			if _, coded := errs.As(err); !coded {
				return s.toolError("get_signal", err), nil
			}
		}
		return s.toolError("get_signal", notFound), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_signal", err), nil
	}
	if _, err := registry.Owned(ctx, s.o.Bots, st.Result.BotID, owner); errors.Is(err, registry.ErrBotNotFound) {
		return s.toolError("get_signal", notFound), nil
	} else if err != nil {
		return s.toolError("get_signal", err), nil
	}
	state := statusExecuted
	if !st.Result.Success {
		state = statusFailed
	}
	return structured(signalAnswer{Result: st.Result, State: state})
}

// signalAnswer is get_signal's answer: a result, or an approval's state.
type signalAnswer struct {
	result.Result
	State    string      `json:"state"`
	Approval *heldAnswer `json:"approval,omitempty"`
}

// heldSignalAnswer is get_signal's answer for an order held for approval: approved and
// queued (no result yet), or waiting, rejected, expired or refused (never executed).
func heldSignalAnswer(a approval.Approval) signalAnswer {
	out := signalAnswer{Result: result.Result{SignalID: a.SignalID, BotID: a.BotID, Timestamp: a.CreatedAt}, State: a.State,
		Approval: heldOf(a)}
	switch a.State {
	case approval.Approved:
		out.State, out.Message = statusQueued, "approved by the user and queued"
	case approval.AwaitingApproval:
		out.Message = "waiting for the user's approval"
	case approval.Refused:
		out.Code, out.Error = errs.PolicyLimit, "not executed: approved, then refused by the app's policy: "+a.Error
	default:
		out.Error = "not executed: the order was " + a.State
	}
	return out
}
