package mcpd

import (
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sigops/sigops/runtime/auth"
)

// Tool is one MCP tool: its definition (name, description, input and output schemas,
// annotations), the scope a call needs and its handler.
type Tool struct {
	Def mcp.Tool
	// Scope is the OAuth scope a call needs: auth.ScopeRead, ScopePaper or ScopeLive
	// (hierarchical: mcp:live covers the others). Bearer JWTs are not limited by scope.
	Scope   string
	Handler server.ToolHandlerFunc
}

// Registry holds the tools by name; the scope check reads it before mcp-go handles a call.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[t.Def.Name]; ok {
		return fmt.Errorf("mcpd: tool %q registered twice", t.Def.Name)
	}
	r.tools[t.Def.Name] = t
	return nil
}

// Scope is the scope the named tool needs; false for an unknown tool.
func (r *Registry) Scope(name string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t.Scope, ok
}

// Names lists the registered tools.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	return out
}
