package mcpd

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/queue"
)

// Previewer previews a signal as the executor would execute it now; *executor.Executor is
// one (the executor's own planning and sizing, with nothing written).
type Previewer interface {
	Preview(ctx context.Context, env queue.Envelope) (executor.Preview, error)
}

// dryRunArg is the argument that makes a trading tool answer what it would do.
const dryRunArg = "dryRun"

// dryRunOption is the dryRun argument of the tools that have a Draft.
func dryRunOption() mcp.ToolOption {
	return mcp.WithBoolean(dryRunArg, mcp.Description("true: do nothing, and answer what the call would do now: the sized "+
		"and rounded order, its reference price, fees and margin, each of the executor's checks and your app's policy "+
		"with their verdicts. Nothing is queued or counted; the mcp:read scope is enough"))
}

// dryRun reports whether args ask t for a dry run.
func (t Tool) dryRun(args map[string]any) bool {
	d, _ := args[dryRunArg].(bool)
	return d && t.Draft != nil
}

// dryRunOutput is a dry run's answer.
const dryRunOutput = `{"type": "object", "required": ["dryRun", "wouldExecute", "legs", "checks", "policy"], "properties": {
  "dryRun": {"type": "boolean", "const": true},
  "wouldExecute": {"type": "boolean", "description": "every check and the policy pass and no approval is needed: the call would be queued now, and the executor would place legs"},
  "legs": {"type": "array", "description": "the orders the call would place, in order (none when a check refuses)", "items": {
    "type": "object", "required": ["op", "symbol", "amount", "referencePrice", "notional", "fee", "margin"], "properties": {
      "op": {"type": "string", "enum": ["open", "add", "reduce", "protect"]},
      "symbol": {"type": "string"}, "side": {"type": "string"}, "type": {"type": "string"},
      "amount": {"type": "number", "description": "base amount, rounded to the market's step"},
      "referencePrice": {"type": "number", "description": "the limit price, or the market price now; a protect leg's trigger"},
      "notional": {"type": "number", "description": "amount × referencePrice, in the quote currency"},
      "fee": {"type": "number"}, "margin": {"type": "number", "description": "what an entry takes from the free balance"},
      "leverage": {"type": "integer"}, "reduceOnly": {"type": "boolean"}}}},
  "checks": {"type": "array", "description": "the executor's checks in order; the first that fails refuses, and the ones after it are not run", "items": {
    "type": "object", "required": ["name", "passed"], "properties": {
      "name": {"type": "string", "enum": ["bot", "account", "plan", "size", "exposure"]},
      "passed": {"type": "boolean"}, "code": {"type": "string"}, "message": {"type": "string"}}}},
  "policy": {"type": "object", "required": ["passed"], "description": "your app's policy (the user's limits for it): passed, or the POLICY_LIMIT it would answer", "properties": {
    "passed": {"type": "boolean"}, "appliesTo": {"type": "string"}, "code": {"type": "string"}, "message": {"type": "string"},
    "approval": {"type": "string", "description": "present when the policy would hold the call for the user's approval"},
    "details": {"type": "object"}}}}}`

// orDryRun is a tool's output schema that answers either its own shape or a dry run's.
func orDryRun(schema string) string {
	return `{"type": "object", "anyOf": [` + schema + `, ` + dryRunOutput + `]}`
}

// dryRunAnswer is a dry run's answer (dryRunOutput).
type dryRunAnswer struct {
	DryRun       bool                  `json:"dryRun"`
	WouldExecute bool                  `json:"wouldExecute"`
	Legs         []executor.PreviewLeg `json:"legs"`
	Checks       []executor.Check      `json:"checks"`
	Policy       policyVerdict         `json:"policy"`
}

type policyVerdict struct {
	Passed bool `json:"passed"`
	// AppliesTo says why no policy applied: the account's own token.
	AppliesTo string `json:"appliesTo,omitempty"`
	// Approval says the policy would hold the call for the user's approval, and why.
	Approval string         `json:"approval,omitempty"`
	Code     errs.Code      `json:"code,omitempty"`
	Message  string         `json:"message,omitempty"`
	Details  map[string]any `json:"details,omitempty"`
}

// preview drafts t's call with args and previews it: the envelope the call would queue,
// and what executing it now would do.
func (s *Server) preview(ctx context.Context, t Tool, args map[string]any) (queue.Envelope, executor.Preview, error) {
	if s.o.Previews == nil {
		return queue.Envelope{}, executor.Preview{}, errs.New(errs.InternalError, "previews are not configured on this server")
	}
	env, err := t.Draft(ctx, args)
	if err != nil {
		return env, executor.Preview{}, err
	}
	pv, err := s.o.Previews.Preview(ctx, env)
	return env, pv, err
}

// answerDryRun answers a dry run of t by p with args: the preview, and the verdict of p's
// token scope and app policy on the call, with nothing counted.
func (s *Server) answerDryRun(ctx context.Context, t Tool, p *auth.Principal, args map[string]any) (*mcp.CallToolResult, error) {
	name := t.Def.Name
	need := auth.ScopeLive
	if p.Kind != auth.KindAPI {
		var err error
		if need, err = t.actionScope(ctx, p.UserID, args); err != nil {
			return s.toolError(name, err), nil
		}
	}
	_, pv, err := s.preview(ctx, t, args)
	if err != nil {
		return s.toolError(name, err), nil
	}
	out := dryRunAnswer{DryRun: true, Legs: pv.Legs, Checks: pv.Checks, Policy: policyVerdict{Passed: true}}
	if out.Legs == nil {
		out.Legs = []executor.PreviewLeg{}
	}
	switch {
	case p.Kind != auth.KindAPI && !p.Allows(need):
		out.Policy = policyVerdict{Code: errs.InsufficientScope, Message: "the call needs the " + need +
			" scope and the token holds " + p.Scope + "; ask the user to authorize " + need}
	case p.Kind == auth.KindOAuth:
		call := admission(t, p, need, args)
		if call.Live && !call.Exit {
			call.Notional = httpapi.Num(pv.EntryNotional())
		}
		var held *apppolicy.ApprovalNeeded
		if err := s.o.AppPolicies.Check(ctx, call); errors.As(err, &held) {
			out.Policy.Approval = "the user approves it before it is placed: " + held.Reason()
		} else if err != nil {
			e, ok := errs.As(err)
			if !ok {
				return s.toolError(name, err), nil
			}
			out.Policy = policyVerdict{Code: e.Code, Message: e.Message, Details: errs.JSONDetails(e.Details)}
		}
	default:
		out.Policy.AppliesTo = "the account's own token: no app policy applies"
	}
	out.WouldExecute = pv.Refusal == nil && out.Policy.Passed && out.Policy.Approval == ""
	return structured(out)
}

// admittedKey carries the entry amounts a connected app's policy admitted from guarded to
// the handler, which queues them (queue.Envelope.Admitted).
type admittedKey struct{}

func withAdmitted(ctx context.Context, a map[string]httpapi.Number) context.Context {
	if a == nil {
		return ctx
	}
	return context.WithValue(ctx, admittedKey{}, a)
}

func admittedFrom(ctx context.Context) map[string]httpapi.Number {
	a, _ := ctx.Value(admittedKey{}).(map[string]httpapi.Number)
	return a
}

// measure is what measured found of a call: the amounts to queue, and for a live entry
// the envelope drafted and its preview (what an approval shows and queues).
type measure struct {
	admitted map[string]httpapi.Number
	env      queue.Envelope
	preview  executor.Preview
}

// measured completes call with what the app's notional caps need to know of it: a live
// entry's order, sized now by the executor's own code (whose amounts are queued), a
// wallet charge, or bot settings raised. A call the executor would refuse is answered with
// that refusal (nothing is queued or counted).
func (s *Server) measured(ctx context.Context, t Tool, p *auth.Principal, args map[string]any, call *apppolicy.Call) (measure, error) {
	var m measure
	if t.Spends != nil {
		n, err := t.Spends(args)
		if err != nil {
			return m, err
		}
		call.Notional = httpapi.Num(n)
	}
	if t.RaisesSize != nil && call.Live {
		raises, err := t.RaisesSize(ctx, p.UserID, args)
		if err != nil {
			return m, err
		}
		call.RaisesSize = raises
	}
	if !call.Live || call.Exit || t.Draft == nil {
		return m, nil
	}
	env, pv, err := s.preview(ctx, t, args)
	if err != nil {
		return m, err
	}
	if pv.Refusal != nil {
		return m, pv.Refusal
	}
	call.Notional = httpapi.Num(pv.EntryNotional())
	m.admitted, m.env, m.preview = pv.Admitted(), env, pv
	m.env.Admitted = m.admitted
	return m, nil
}

// hold stores a live entry the app's policy holds for the user's approval (held says why)
// and answers the call at once with the approval: nothing is queued or counted.
func (s *Server) hold(ctx context.Context, t Tool, p *auth.Principal, args map[string]any, call apppolicy.Call, m measure,
	held *apppolicy.ApprovalNeeded) (*mcp.CallToolResult, error) {
	now := s.o.Now()
	bot, err := s.o.Bots.Get(ctx, m.env.BotID)
	if err != nil {
		return nil, err
	}
	a := approval.Approval{SignalID: m.env.SignalID, UserID: p.UserID, ClientID: p.ClientID, BotID: bot.ID, BotName: bot.Name,
		Tool: t.Def.Name, Legs: m.preview.Legs, Notional: httpapi.Num(call.Notional.Decimal), Reason: held.Reason(), Envelope: m.env, Call: call,
		CreatedAt: now.UnixMilli(), ExpiresAt: approval.ExpiryFor(now, bot.MaxSignalAgeMillis).UnixMilli()}
	a.ClientName = p.ClientID
	if c, err := s.o.OAuth.GetClient(ctx, p.ClientID); err == nil {
		a.ClientName = c.Name
	}
	key, _ := args["idempotencyKey"].(string)
	if a, err = s.o.Approvals.Create(ctx, a, key); err != nil {
		return nil, err
	}
	return t.OnHold(a)
}

// heldAnswer is the approval as a tool answers it.
type heldAnswer struct {
	State     string `json:"state"`
	ExpiresAt string `json:"expiresAt"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// heldOf is a's heldAnswer.
func heldOf(a approval.Approval) *heldAnswer {
	msg := "the user approves this order in the sigops dashboard (Approvals) before it is placed; read its state with get_signal"
	return &heldAnswer{State: a.State, ExpiresAt: time.UnixMilli(a.ExpiresAt).UTC().Format(time.RFC3339), Reason: a.Reason, Message: msg}
}

// heldOutput is heldAnswer's schema.
const heldOutput = `{"type": "object", "required": ["state", "expiresAt", "reason", "message"], "description": "the order waits for the user's approval", "properties": {
  "state": {"type": "string", "enum": ["awaiting_approval", "approved", "rejected", "expired", "refused"]},
  "expiresAt": {"type": "string", "description": "RFC 3339: unapproved by then, it expires and never executes"},
  "reason": {"type": "string", "description": "the policy rule that asked for the approval"},
  "message": {"type": "string"}}}`
