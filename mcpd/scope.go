package mcpd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// MaxBodyBytes bounds a request body: the largest tool input (a strategy definition) is far
// below it, and the body is read whole before mcp-go sees it.
const MaxBodyBytes = 1 << 20

// rpcCall is the part of a JSON-RPC message the scope check reads, decoded in one pass.
// Arguments stay raw: a message whose arguments are not an object still names its tool,
// whose static scope then applies (an unparseable part must never read as "no tool"). A
// message whose params cannot be read at all calls no tool: mcp-go refuses it.
type rpcCall struct {
	Method string    `json:"method"`
	Params rpcParams `json:"params"`
}

// rpcParams are a tools/call's params.
type rpcParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// checkScope refuses a tools/call whose tool needs more than the token's scope, before
// mcp-go handles it, so that the refusal is the HTTP 403 insufficient_scope of RFC 6750
// §3.1 a client can act on (ask for the scope again), not a tool error inside a 200. The
// body is read whole and handed on unchanged. A body that is not JSON is left to mcp-go,
// which answers the JSON-RPC parse error; an unknown tool too (its "tool not found").
func (s *Server) checkScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				httpapi.WriteJSON(w, http.StatusRequestEntityTooLarge, httpapi.Failure{Error: "request body too large",
					Code: errs.InvalidJSON, Timestamp: s.o.Now().UnixMilli()})
				return
			}
			httpapi.WriteError(w, errs.New(errs.InvalidJSON, "could not read the request body"), "", s.o.Now())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		p, _ := auth.PrincipalFrom(r.Context())
		if p != nil && p.Kind != auth.KindAPI {
			need, ok, err := s.neededScope(r.Context(), p.UserID, body)
			if err != nil {
				s.refuse(w, err)
				return
			}
			if ok && !p.Allows(need) {
				s.metrics.requests.WithLabelValues("insufficient_scope").Inc()
				auth.WriteInsufficientScopeHeld(w, need, p.Scope, s.metadataURL)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// neededScope is the highest scope the tools/call messages of body need (a single message,
// or a batch, which revisions before 2025-06-18 allow) when userID makes them; false when
// it calls no known tool. Bearer JWTs skip it: they are not limited by scope, and a
// per-venue scope would cost them a read for nothing.
func (s *Server) neededScope(ctx context.Context, userID string, body []byte) (string, bool, error) {
	// A batch's elements are read one by one: one malformed element must not hide the
	// others' tools.
	var elems []json.RawMessage
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &elems) != nil {
			return "", false, nil // not JSON: mcp-go answers the parse error
		}
	} else {
		elems = []json.RawMessage{trimmed}
	}
	calls := make([]rpcCall, 0, len(elems))
	for _, e := range elems {
		var c rpcCall
		if json.Unmarshal(e, &c) == nil {
			calls = append(calls, c)
		}
	}
	need, found := "", false
	for _, c := range calls {
		if c.Method != "tools/call" {
			continue
		}
		params := c.Params
		t, ok := s.tools.Get(params.Name)
		if !ok {
			continue
		}
		// Arguments the tool refuses get its static scope here; the call then answers
		// INVALID_PARAMETER from guarded, which checks them the same way.
		sc := t.Scope
		if args, ok := t.checkRaw(params.Arguments); ok {
			var err error
			if sc, err = t.scopeOf(ctx, userID, args); err != nil {
				return "", false, err
			}
		}
		if auth.ScopeLevel(sc) > auth.ScopeLevel(need) {
			need = sc
		}
		found = true
	}
	return need, found, nil
}
