package mcpd

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// guarded wraps t's handler with what every call of it needs besides its own work: the
// arguments checked strictly against the tool's input schema (args.go), the scope read
// again inside the call from those same arguments (a bot may have changed venue since the
// HTTP check, and the HTTP check may have fallen back to the tool's static scope), the
// audit record of a tool that changes something, and the call counter. The handler gets
// the checked arguments and nothing else.
func (s *Server) guarded(t Tool) server.ToolHandlerFunc {
	name := t.Def.Name
	return s.metrics.counted(name, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, ok := auth.PrincipalFrom(ctx)
		if !ok {
			return nil, errors.New("mcpd: a tool call without a principal")
		}
		args, err := t.checkedArgs(req.Params.Arguments)
		if err != nil {
			return s.toolError(name, err), nil
		}
		s.canonicalSymbol(args)
		req.Params.Arguments = args
		if p.Kind != auth.KindAPI {
			need, err := t.scopeOf(ctx, p.UserID, args)
			if err != nil {
				return s.toolError(name, err), nil
			}
			if !p.Allows(need) {
				return s.toolError(name, errs.New(errs.InsufficientScope,
					"this call needs the %s scope and the token holds %q; ask the user to authorize %s (do not log out without their approval)",
					need, p.Scope, need)), nil
			}
			if t.dryRun(args) {
				return s.answerDryRun(ctx, t, p, args)
			}
			// A connected app's call that needs more than mcp:read (trading, changing bots,
			// spending) is admitted by the user's rules for their apps: the kill switch, then
			// the app's policy (bots, venue, orders per hour, notional), in one atomic round
			// trip, on every replica alike. A live entry is sized first, by the executor's
			// own code, and queued with the amounts admitted.
			if p.Kind == auth.KindOAuth && auth.ScopeLevel(need) > auth.ScopeLevel(auth.ScopeRead) {
				call := admission(t, p, need, args)
				m, err := s.measured(ctx, t, p, args, &call)
				if err == nil {
					err = s.o.AppPolicies.Admit(ctx, call)
				} else if perr := s.o.AppPolicies.Check(ctx, call); perr != nil {
					// The user's rules answer first: a call they refuse anyway is refused
					// by them, whatever sizing it found (a round trip on this path only).
					err = perr
				}
				var held *apppolicy.ApprovalNeeded
				if errors.As(err, &held) && t.OnHold != nil {
					res, err := s.hold(ctx, t, p, args, call, m, held)
					if err != nil {
						return s.toolError(name, err), nil
					}
					s.record(ctx, p, name, req, res, nil)
					return res, nil
				}
				if err != nil {
					res := s.toolError(name, err)
					// A refusal is journaled: what an app tried and was stopped from doing
					// is what its user most wants to see.
					if _, coded := errs.As(err); coded && t.Changes {
						s.record(ctx, p, name, req, res, nil)
					}
					return res, nil
				}
				ctx = withAdmitted(ctx, m.admitted)
			}
		} else if t.dryRun(args) {
			return s.answerDryRun(ctx, t, p, args)
		}
		res, err := t.Handler(ctx, req)
		if t.Changes {
			s.record(ctx, p, name, req, res, err)
		}
		return res, err
	})
}

// admission is what the app policy needs to know of a call of t by p with args, which
// needs scope need.
func admission(t Tool, p *auth.Principal, need string, args map[string]any) apppolicy.Call {
	c := apppolicy.Call{UserID: p.UserID, ClientID: p.ClientID, CreatesBot: t.CreatesBot,
		Live: t.Venue && need == auth.ScopeLive, Order: t.Trades}
	c.BotID, _ = args["botId"].(string)
	if t.Trades {
		c.Exit = t.Exit == nil || t.Exit(args)
	}
	return c
}

// canonicalSymbol rewrites a symbol argument in any form the webhook accepts (BTCUSDT,
// btc-usdt, BINANCE:BTCUSDT.P) to its canonical BASE/QUOTE, with the resolver webhookd and
// send_signal use, so that every tool takes the symbol an agent traded with and answers in
// one form. A symbol the resolver does not know stays as written, for the tool to answer.
func (s *Server) canonicalSymbol(args map[string]any) {
	raw, ok := args["symbol"].(string)
	if !ok || raw == "" {
		return
	}
	if c, err := s.o.Symbols().Resolve(raw); err == nil {
		args["symbol"] = c
	}
}

// record writes a changing call to the caller's audit journal. A journal that cannot be
// written is logged and the call's answer stands: the change has happened, and failing
// the call would make an agent retry it.
func (s *Server) record(ctx context.Context, p *auth.Principal, tool string, req mcp.CallToolRequest, res *mcp.CallToolResult, callErr error) {
	args, err := json.Marshal(req.GetArguments())
	if err != nil {
		args = nil
	}
	e := audit.Entry{UserID: p.UserID, ClientID: p.ClientID, Channel: audit.ChannelMCP, Tool: tool,
		Arguments: args, Outcome: outcomeOf(res, callErr)}
	if p.Kind == auth.KindOAuth && p.ClientID != "" {
		if c, err := s.o.OAuth.GetClient(ctx, p.ClientID); err == nil {
			e.ClientName = c.Name
		}
	}
	if err := s.o.Audit.Record(context.WithoutCancel(ctx), e); err != nil {
		s.metrics.auditFailures.Inc()
		s.o.Logger.Error("mcpd: audit record failed", "tool", tool, "user", p.UserID, "err", err)
	}
}

// outcomeOf is the audit outcome of a call: its Go error, or the code and message of an
// error result (toolError's JSON text).
func outcomeOf(res *mcp.CallToolResult, err error) audit.Outcome {
	if err != nil || res == nil {
		return audit.OutcomeOf(err)
	}
	if !res.IsError {
		return audit.Outcome{OK: true}
	}
	var body struct {
		Code    errs.Code `json:"code"`
		Message string    `json:"message"`
	}
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok && json.Unmarshal([]byte(t.Text), &body) == nil && body.Code != "" {
			return audit.Outcome{Code: body.Code, Message: body.Message}
		}
	}
	return audit.Outcome{Code: errs.InternalError, Message: audit.InternalMessage}
}

// botVenueScope is the ScopeFor of a tool that acts on the bot named by its botId
// argument: mcp:live when the action can reach an exchange account (the bot's own, or a
// follower of the caller's that copies its fills, as projected or as the SignalBot says
// now: reachesExchange), mcp:paper otherwise. A missing argument, or a bot that is missing
// or another user's, asks for mcp:paper, and the tool answers INVALID_PARAMETER or
// NOT_FOUND itself.
func (s *Server) botVenueScope(ctx context.Context, userID string, args map[string]any) (string, error) {
	id, _ := args["botId"].(string)
	if id == "" {
		return auth.ScopePaper, nil
	}
	owner, err := s.ownerOf(ctx, userID)
	if err != nil {
		return "", err
	}
	bot, err := registry.Owned(ctx, s.o.Bots, id, owner)
	if errors.Is(err, registry.ErrBotNotFound) {
		return auth.ScopePaper, nil
	}
	if err != nil {
		return "", err
	}
	live, err := s.reachesExchange(ctx, userID, owner, bot)
	if err != nil {
		return "", err
	}
	if live {
		return auth.ScopeLive, nil
	}
	return auth.ScopePaper, nil
}

// reachesExchange is fleet.ReachesExchange with the server's Fleet (nil: the projections
// decide).
func (s *Server) reachesExchange(ctx context.Context, userID, owner string, bot registry.Bot) (bool, error) {
	return fleet.ReachesExchange(ctx, s.o.Fleet, s.o.Bots, fleet.Caller{UserID: userID, Email: owner}, bot)
}

// venueScope is the scope an action on an account of kind needs: a live exchange is
// mcp:live, a paper account mcp:paper.
func venueScope(kind string) string {
	if kind == registry.AccountExchange {
		return auth.ScopeLive
	}
	return auth.ScopePaper
}

// ownerOf is the email (canonical form) of userID: bots and accounts name their owner by
// it.
func (s *Server) ownerOf(ctx context.Context, userID string) (string, error) {
	if id, ok := ctx.Value(identityKey{}).(requestIdentity); ok && id.userID == userID {
		return id.Email, nil
	}
	u, err := s.o.Users.Get(ctx, userID)
	if err != nil {
		return "", err
	}
	return emails.Canonical(u.Email), nil
}
