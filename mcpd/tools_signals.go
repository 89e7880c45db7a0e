package mcpd

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
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
    "timestamp": {"type": "integer", "description": "Unix ms when the result was decided"}}}`

// signalTools is get_signal.
func (s *Server) signalTools() []Tool {
	return []Tool{
		{Def: mcp.NewTool("get_signal",
			mcp.WithDescription("The result of a signal or manual order by its signalId: success, the order "+
				"placed, or the error code and message. Results are kept for 24 hours; a signal still "+
				"being executed has none yet, so call again in a few seconds."),
			mcp.WithToolAnnotation(readOnly("Get signal result")),
			mcp.WithString("signalId", mcp.Required(), mcp.Description("the signalId a webhook or order answered")),
			mcp.WithRawOutputSchema(json.RawMessage(signalOutput))),
			Scope: auth.ScopeRead, Handler: s.getSignal},
	}
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
	return structured(st.Result)
}
