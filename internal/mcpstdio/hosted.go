package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sigops/sigops/runtime/errs"
)

// hostedClient is mcp-go's streamable HTTP client for {mcp_url}/mcp; each request carries
// the bridge's current token.
type hostedClient struct {
	c           *client.Client
	initialized bool
}

// rawResult is mcp-go's streamable HTTP transport that also hands the raw JSON result of a
// request to the caller that put a *json.RawMessage in its context: tool definitions and
// structured content reach the agent as the hosted server wrote them, while mcp-go still
// adds what each request carries (the protocol version's _meta and headers).
type rawResult struct{ *transport.StreamableHTTP }

type ctxRaw struct{}

func (r rawResult) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := r.StreamableHTTP.SendRequest(ctx, req)
	if p, ok := ctx.Value(ctxRaw{}).(*json.RawMessage); ok && err == nil && resp != nil {
		*p = resp.Result
	}
	return resp, err
}

type ctxToken struct{}

// errUnauthorized is the hosted server's 401: the token is expired, revoked or unknown.
var errUnauthorized = errors.New("hosted server answered 401")

// scopeError is the hosted server's 403 insufficient_scope.
type scopeError struct{ required, held string }

func (e *scopeError) Error() string { return "insufficient_scope: needs " + e.required }

// httpError is another non-2xx answer of the hosted server outside JSON-RPC.
type httpError struct {
	status int
	f      authFailure
}

func (e *httpError) Error() string { return fmt.Sprintf("hosted server answered HTTP %d", e.status) }

// classify turns the hosted server's HTTP refusals into typed errors before mcp-go reads
// them: mcp-go reports a 403 as text only, and the bridge must name the missing scope.
type classify struct{ next http.RoundTripper }

func (c classify) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 || resp.StatusCode == http.StatusNotFound {
		return resp, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, errUnauthorized
	}
	var body struct {
		Error      string `json:"error"`
		Scope      string `json:"scope"`
		TokenScope string `json:"tokenScope"`
		Code       string `json:"code"`
	}
	_ = json.Unmarshal(raw, &body)
	if resp.StatusCode == http.StatusForbidden && body.Error == "insufficient_scope" {
		return nil, &scopeError{required: body.Scope, held: body.TokenScope}
	}
	if body.Code != "" || resp.StatusCode != http.StatusBadRequest {
		return nil, &httpError{status: resp.StatusCode, f: authFailure{Error: body.Error, Code: body.Code}}
	}
	// A 400 without a service code is JSON-RPC's own answer: mcp-go reads it.
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}

// hostedLink returns the client for the hosted server, initialized for the current token.
func (b *Bridge) hostedLink(ctx context.Context) (*hostedClient, error) {
	ep, err := b.mcpEndpoint(ctx)
	if err != nil {
		return nil, errs.Wrap(err, errs.InternalError, "could not find the hosted MCP server of %s; check --base-url or set --mcp-url", b.o.BaseURL)
	}
	b.mu.Lock()
	h := b.hosted
	b.mu.Unlock()
	if h == nil {
		hc := &http.Client{Transport: classify{next: b.http.Transport}, Timeout: b.http.Timeout}
		tr, err := transport.NewStreamableHTTP(ep, transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaderFunc(func(ctx context.Context) map[string]string {
				tok, _ := ctx.Value(ctxToken{}).(string)
				return map[string]string{"Authorization": "Bearer " + tok}
			}))
		if err != nil {
			return nil, err
		}
		c := client.NewClient(rawResult{tr})
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
		h = &hostedClient{c: c}
		b.mu.Lock()
		if b.hosted == nil {
			b.hosted = h
		}
		h = b.hosted
		b.mu.Unlock()
	}
	return h, nil
}

// send runs call (one request to the hosted server) with the current token. A 401
// refreshes the OAuth token and runs call once more: the server refused the request before
// running it.
func (b *Bridge) send(ctx context.Context, call func(ctx context.Context, c *client.Client) error) error {
	h, err := b.hostedLink(ctx)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		tok, err := b.accessToken(ctx)
		if err != nil {
			return err
		}
		tctx := context.WithValue(ctx, ctxToken{}, tok)
		err = b.initialize(tctx, h)
		if err == nil {
			err = call(tctx, h.c)
		}
		if errors.Is(err, errUnauthorized) && attempt == 0 {
			if _, err := b.refresh(ctx, tok); err != nil {
				return err
			}
			continue
		}
		if errors.Is(err, errUnauthorized) {
			b.forget()
			return errs.New(errs.Unauthorized, "the hosted server refused the token and it has been forgotten: "+
				"call login, authenticate or set_token")
		}
		return err
	}
}

// initialize runs the MCP handshake once per token.
func (b *Bridge) initialize(ctx context.Context, h *hostedClient) error {
	b.mu.Lock()
	done := h.initialized
	b.mu.Unlock()
	if done {
		return nil
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "sigops-mcp", Version: b.o.Version}
	if _, err := h.c.Initialize(ctx, req); err != nil {
		return err
	}
	b.mu.Lock()
	h.initialized = true
	b.mu.Unlock()
	return nil
}

// hostedError is err of a hosted call as the agent's error result.
func (b *Bridge) hostedError(tool string, err error) *mcp.CallToolResult {
	var se *scopeError
	var he *httpError
	switch {
	case errors.As(err, &se):
		msg := "this call needs the OAuth scope " + se.required
		if se.held != "" {
			msg += "; the token holds " + se.held
		}
		msg += ". Tell the user; only with the user's approval call authenticate with scope " + se.required +
			" (do not call logout: a new authorization replaces the token)"
		return errorResult(errs.New(errs.InsufficientScope, "%s", msg).
			WithDetails(map[string]any{"requiredScope": se.required, "tokenScope": se.held}))
	case errors.As(err, &he):
		code := errs.Code(he.f.Code)
		if code == "" {
			code = errs.InternalError
		}
		msg := he.f.Error
		if msg == "" {
			msg = fmt.Sprintf("the hosted server answered HTTP %d", he.status)
		}
		return errorResult(errs.New(code, "%s", msg))
	}
	if e, ok := errs.As(err); ok {
		return errorResult(e)
	}
	b.log.Error("hosted call failed", "tool", tool, "error", err)
	return errorResult(errs.New(errs.InternalError, "the hosted sigops server could not be reached or answered an error; try again in a few seconds"))
}

// errorResult is an error tool result with e's error object as text, as the hosted server
// answers its own.
func errorResult(e *errs.Error) *mcp.CallToolResult {
	text, _ := json.Marshal(e.Object())
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent(string(text))}}
}

// listHosted lists the hosted server's tools with their definitions as sent: the schemas
// stay raw JSON, so that the agent sees exactly the hosted server's.
func (b *Bridge) listHosted(ctx context.Context) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	var cursor mcp.Cursor
	for range 100 {
		var raw json.RawMessage
		err := b.send(ctx, func(ctx context.Context, c *client.Client) error {
			req := mcp.ListToolsRequest{}
			req.Params.Cursor = cursor
			_, err := c.ListToolsByPage(context.WithValue(ctx, ctxRaw{}, &raw), req)
			return err
		})
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, err
		}
		for _, rt := range page.Tools {
			var t mcp.Tool
			var schemas struct {
				In  json.RawMessage `json:"inputSchema"`
				Out json.RawMessage `json:"outputSchema"`
			}
			if err := json.Unmarshal(rt, &t); err != nil {
				return nil, err
			}
			if err := json.Unmarshal(rt, &schemas); err != nil {
				return nil, err
			}
			t.InputSchema, t.OutputSchema = mcp.ToolInputSchema{}, mcp.ToolOutputSchema{}
			t.RawInputSchema, t.RawOutputSchema = schemas.In, nil
			if len(schemas.Out) > 0 && string(schemas.Out) != "null" {
				t.RawOutputSchema = schemas.Out
			}
			tools = append(tools, t)
		}
		if page.NextCursor == "" {
			return tools, nil
		}
		cursor = mcp.Cursor(page.NextCursor)
	}
	return nil, errors.New("hosted tools/list: too many pages")
}

// callHosted forwards a tools/call and answers the hosted result unchanged: its content
// as decoded by mcp-go and its structured content as the exact JSON the server sent.
func (b *Bridge) callHosted(ctx context.Context, req mcp.CallToolRequest) *mcp.CallToolResult {
	var raw json.RawMessage
	var res *mcp.CallToolResult
	err := b.send(ctx, func(ctx context.Context, c *client.Client) error {
		var err error
		res, err = c.CallTool(context.WithValue(ctx, ctxRaw{}, &raw), req)
		return err
	})
	if err != nil {
		return b.hostedError(req.Params.Name, err)
	}
	var sc struct {
		Structured json.RawMessage `json:"structuredContent"`
	}
	if json.Unmarshal(raw, &sc) == nil && len(sc.Structured) > 0 && string(sc.Structured) != "null" {
		res.StructuredContent = sc.Structured
	}
	return res
}

// syncTools lists the hosted tools with the current token and registers each under its own
// name, replacing the hosted tools that are gone (tools/list_changed goes to the agent).
// check_auth keeps the bridge's handler with the hosted definition.
func (b *Bridge) syncTools(ctx context.Context) (int, error) {
	hosted, err := b.listHosted(ctx)
	if err != nil {
		return 0, err
	}
	var add []server.ServerTool
	seen := map[string]bool{}
	for _, t := range hosted {
		if t.Name == toolCheckAuth {
			t.Description += " " + checkAuthLocal
			add = append(add, server.ServerTool{Tool: t, Handler: b.handleCheckAuth})
			continue
		}
		if slices.Contains(ownNames, t.Name) {
			continue
		}
		seen[t.Name] = true
		add = append(add, server.ServerTool{Tool: t, Handler: b.forward})
	}
	b.mu.Lock()
	var gone []string
	for name := range b.forwarded {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	b.forwarded = seen
	b.mu.Unlock()
	if len(gone) > 0 {
		b.mcp.DeleteTools(gone...)
	}
	b.mcp.AddTools(add...)
	b.log.Info("hosted tools registered", "tools", len(seen))
	return len(seen), nil
}

// forward is every hosted tool's handler.
func (b *Bridge) forward(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return b.callHosted(ctx, req), nil
}
