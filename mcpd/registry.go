package mcpd

import (
	"context"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/queue"
)

// Tool is one MCP tool: its definition (name, description, input and output schemas,
// annotations), the scope a call needs and its handler.
type Tool struct {
	Def mcp.Tool
	// Scope is the OAuth scope every call needs: auth.ScopeRead, ScopePaper or ScopeLive
	// (hierarchical: mcp:live covers the others). Bearer JWTs are not limited by scope.
	Scope string
	// ScopeFor, when set, is the scope this call needs given the caller and its arguments:
	// an action on a paper bot needs mcp:paper and the same action on an exchange bot
	// mcp:live. It is read before mcp-go sees the call (the HTTP 403) and again inside the
	// call (the venue may change in between). An answer below Scope counts as Scope. A
	// bot that is missing or another user's must answer Scope, so that the tool's own
	// NOT_FOUND answers alike for both; an error is a failure to read (Redis).
	ScopeFor func(ctx context.Context, userID string, args map[string]any) (string, error)
	// ScopeRule says in words when ScopeFor asks for more than Scope, for the docs table
	// ("mcp:live on an exchange bot"); required with ScopeFor.
	ScopeRule string
	// Venue marks a tool whose ScopeFor is the venue an action reaches (mcp:live: an
	// exchange account, real money): a connected app's policy may keep it on paper.
	Venue bool
	// CreatesBot marks a tool that makes a new bot: an app whose policy names chosen bots
	// may not call it.
	CreatesBot bool
	// Trades marks a tool that places, protects, closes or cancels orders: a connected
	// app's policy counts its calls against the app's orders per hour.
	Trades bool
	// Exit, on a tool that Trades, reports whether a call only reduces or protects a
	// position or withdraws an order: counted, and never refused by the hourly cap, so that
	// an app can always get the user flat. nil: every call is one.
	Exit func(args map[string]any) bool
	// Draft, on a tool that Trades, builds the envelope a call with these arguments would
	// queue, without queueing it (the bot it names must be the caller's): what a dry run
	// previews (dryRun true; the tool then declares dryRunOption) and what a connected
	// app's notional caps are checked against. nil: the tool has no dry run.
	Draft func(ctx context.Context, args map[string]any) (queue.Envelope, error)
	// OnHold, on a tool with a Draft that places entries, answers a call the app's policy
	// holds for the user's approval (runtime/approval), in the tool's own output shape.
	OnHold func(a approval.Approval) (*mcp.CallToolResult, error)
	// Spends, on a tool that charges the user's wallet, is what a call with these
	// arguments charges (zero: nothing): a connected app's notional caps count it.
	Spends func(args map[string]any) (decimal.Decimal, error)
	// RaisesSize, on a tool that changes bot settings, reports whether a call raises the
	// size or leverage of the entries the bot places (creating a bot raises them from
	// nothing): an app under a per-order cap may not, on an exchange account.
	RaisesSize func(ctx context.Context, userID string, args map[string]any) (bool, error)
	// Changes marks a tool that changes something: every call is written to the caller's
	// audit journal with its arguments (secrets removed) and outcome.
	Changes bool
	Handler server.ToolHandlerFunc
	// args is Def's input schema compiled strictly (args.go); Add sets it.
	args *jsonschema.Schema
}

// scopeOf is the scope a call of t with args needs; args must be the checked arguments
// (checkedArgs), the same map the handler reads.
func (t Tool) scopeOf(ctx context.Context, userID string, args map[string]any) (string, error) {
	if t.dryRun(args) {
		// A dry run reads: it changes, queues and counts nothing.
		return auth.ScopeRead, nil
	}
	return t.actionScope(ctx, userID, args)
}

// actionScope is the scope the action of a call of t with args needs, dry run or not.
func (t Tool) actionScope(ctx context.Context, userID string, args map[string]any) (string, error) {
	if t.ScopeFor == nil {
		return t.Scope, nil
	}
	need, err := t.ScopeFor(ctx, userID, args)
	if err != nil {
		return "", err
	}
	if auth.ScopeLevel(need) < auth.ScopeLevel(t.Scope) {
		return t.Scope, nil
	}
	return need, nil
}

// Registry holds the tools by name; the scope check reads it before mcp-go handles a call.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	// order is the registration order: the docs table lists the tools in it, by group.
	order []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]Tool{}} }

// Add registers t. A tool without a name, handler or known scope, or a second tool of the
// same name, is refused: a tool with no scope would be callable by every token.
func (r *Registry) Add(t Tool) error {
	if t.Def.Name == "" || t.Handler == nil {
		return fmt.Errorf("mcpd: tool %q needs a name and a handler", t.Def.Name)
	}
	if auth.ScopeLevel(t.Scope) == 0 || t.Scope == auth.ScopeLegacy {
		return fmt.Errorf("mcpd: tool %q: scope %q is not one of %v", t.Def.Name, t.Scope, auth.SupportedScopes)
	}
	if (t.ScopeFor == nil) != (t.ScopeRule == "") {
		return fmt.Errorf("mcpd: tool %q: ScopeFor and ScopeRule go together", t.Def.Name)
	}
	sch, err := compileArgs(t.Def)
	if err != nil {
		return fmt.Errorf("mcpd: tool %q: input schema: %w", t.Def.Name, err)
	}
	t.args = sch
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[t.Def.Name]; ok {
		return fmt.Errorf("mcpd: tool %q registered twice", t.Def.Name)
	}
	r.tools[t.Def.Name] = t
	r.order = append(r.order, t.Def.Name)
	return nil
}

// Get is the named tool; false for an unknown tool.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// List is the registered tools in registration order.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, len(r.order))
	for i, n := range r.order {
		out[i] = r.tools[n]
	}
	return out
}
