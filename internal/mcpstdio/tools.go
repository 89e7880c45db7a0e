package mcpstdio

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sigops/sigops/runtime/errs"
)

// The bridge's own tools.
const (
	toolLogin        = "login"
	toolAuthenticate = "authenticate"
	toolSetToken     = "set_token"
	toolLogout       = "logout"
	toolCheckAuth    = "check_auth"
)

var ownNames = []string{toolLogin, toolAuthenticate, toolSetToken, toolLogout, toolCheckAuth}

// checkAuthLocal is what the bridge adds to the hosted check_auth's description.
const checkAuthLocal = "Through sigops-mcp: without a token it answers UNAUTHORIZED; then ask the user to sign in " +
	"with authenticate (browser), login or set_token."

// signedIn is the answer of login, set_token and a completed authenticate.
type signedIn struct {
	Authenticated bool   `json:"authenticated"`
	Method        string `json:"method"`
	ExpiresAt     string `json:"expiresAt,omitempty"`
	Scope         string `json:"scope,omitempty"`
	Tools         int    `json:"tools"`
	Message       string `json:"message"`
}

const signedInSchema = `{"type":"object","properties":{
"authenticated":{"type":"boolean"},
"method":{"type":"string","enum":["login","set_token","authenticate"]},
"expiresAt":{"type":"string","description":"RFC 3339 expiry of the token, when known"},
"scope":{"type":"string","description":"OAuth scope granted (authenticate only)"},
"tools":{"type":"integer","description":"number of hosted tools now available"},
"message":{"type":"string"}},"required":["authenticated","method","tools","message"]}`

const authorizeSchema = `{"type":"object","properties":{
"authorizationUrl":{"type":"string","description":"URL the user opens in a browser"},
"redirectUri":{"type":"string"},
"scope":{"type":"string"},
"expiresAt":{"type":"string","description":"RFC 3339 time after which the callback is no longer awaited"},
"message":{"type":"string"}},"required":["authorizationUrl","redirectUri","scope","expiresAt","message"]}`

const logoutSchema = `{"type":"object","properties":{
"loggedOut":{"type":"boolean"},"revoked":{"type":"boolean","description":"whether the token was also revoked on the server"},
"message":{"type":"string"}},"required":["loggedOut","revoked","message"]}`

func (b *Bridge) ownTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool(toolLogin,
			mcp.WithDescription("Sign in to sigops with the user's email and password (POST /api/auth/login) and hold the "+
				"returned bearer token in this process's memory (never on disk). Prefer authenticate, which signs in in "+
				"the browser without passing the password through the agent; use login only when the user gives the "+
				"credentials for this purpose. Afterwards the hosted tools appear (tools/list_changed). Errors: "+
				"UNAUTHORIZED (wrong email or password), RATE_LIMITED (too many attempts: details.retryAfterSeconds)."),
			mcp.WithString("email", mcp.Required(), mcp.Description("the account's email")),
			mcp.WithString("password", mcp.Required(), mcp.Description("the account's password")),
			mcp.WithRawOutputSchema(json.RawMessage(signedInSchema)),
			mcp.WithTitleAnnotation("Log in"), mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(false),
			mcp.WithIdempotentHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)),
			Handler: b.handleLogin},
		{Tool: mcp.NewTool(toolAuthenticate,
			mcp.WithDescription("Sign in through the browser (OAuth 2.1 with PKCE): answers at once with an authorization "+
				"URL; show it to the user to open, sign in and approve. sigops-mcp receives the browser's redirect on a "+
				"loopback port (waiting up to 5 minutes), exchanges the code and holds the tokens in memory, refreshing "+
				"them by itself; then call check_auth. Never ask the user for the password here. scope: mcp:read (read "+
				"only), mcp:paper (also trade paper bots; the default), mcp:live (also trade live bots with real money). "+
				"Ask for mcp:live only when the user wants live trading, and re-authorize with a wider scope only with "+
				"the user's approval."),
			mcp.WithString("scope", mcp.Description("OAuth scope to request (default mcp:paper)"),
				mcp.Enum("mcp:read", "mcp:paper", "mcp:live"), mcp.DefaultString("mcp:paper")),
			mcp.WithRawOutputSchema(json.RawMessage(authorizeSchema)),
			mcp.WithTitleAnnotation("Sign in with the browser"), mcp.WithReadOnlyHintAnnotation(false),
			mcp.WithDestructiveHintAnnotation(false), mcp.WithIdempotentHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)),
			Handler: b.handleAuthenticate},
		{Tool: mcp.NewTool(toolSetToken,
			mcp.WithDescription("Hold a bearer token the user copied from the sigops dashboard (Settings → API token) in "+
				"memory. The token is checked by listing the hosted tools; a refused token is not kept. Errors: "+
				"UNAUTHORIZED (the token is invalid, expired or revoked)."),
			mcp.WithString("token", mcp.Required(), mcp.Description("the bearer token (a JWT)"), mcp.MinLength(16)),
			mcp.WithRawOutputSchema(json.RawMessage(signedInSchema)),
			mcp.WithTitleAnnotation("Use a dashboard token"), mcp.WithReadOnlyHintAnnotation(false),
			mcp.WithDestructiveHintAnnotation(false), mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			Handler: b.handleSetToken},
		{Tool: mcp.NewTool(toolLogout,
			mcp.WithDescription("Forget the tokens sigops-mcp holds. A browser authorization's refresh token is revoked "+
				"(/api/oauth/revoke) and a login token is revoked (/api/auth/logout); a token given by set_token is only "+
				"forgotten. Afterwards every hosted tool answers UNAUTHORIZED until the user signs in again. Call it only "+
				"when the user asks: an INSUFFICIENT_SCOPE answer is no reason to log out."),
			mcp.WithRawOutputSchema(json.RawMessage(logoutSchema)),
			mcp.WithTitleAnnotation("Log out"), mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(true),
			mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			Handler: b.handleLogout},
		{Tool: mcp.NewTool(toolCheckAuth,
			mcp.WithDescription("Who the user is, the token's scope, tier and wallet. Call it first. "+checkAuthLocal),
			mcp.WithTitleAnnotation("Check authentication"), mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false), mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			Handler: b.handleCheckAuth},
	}
}

// signIn holds t, registers the hosted tools it sees and answers how many there are. A
// token the hosted server refuses is not kept.
func (b *Bridge) signIn(ctx context.Context, t token, expiresAt string) (*mcp.CallToolResult, error) {
	b.setToken(t)
	n, err := b.syncTools(ctx)
	if err != nil {
		if e, ok := errs.As(err); ok && e.Code == errs.Unauthorized {
			return errorResult(e), nil
		}
		b.log.Warn("list hosted tools", "error", err)
		return b.hostedError("tools/list", err), nil
	}
	return structuredResult(signedIn{Authenticated: true, Method: t.via, ExpiresAt: expiresAt, Scope: t.scope, Tools: n,
		Message: "signed in; the hosted sigops tools are available (call check_auth for the account)"})
}

func (b *Bridge) handleLogin(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	email, password := strings.TrimSpace(req.GetString("email", "")), req.GetString("password", "")
	if email == "" || password == "" {
		return errorResult(errs.New(errs.InvalidParameter, "email and password are required")), nil
	}
	tok, exp, err := b.login(ctx, email, password)
	if err != nil {
		return b.hostedError(toolLogin, err), nil
	}
	b.log.Info("signed in", "via", viaLogin)
	return b.signIn(ctx, token{via: viaLogin, access: tok}, exp)
}

func (b *Bridge) handleSetToken(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	tok := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(req.GetString("token", "")), "Bearer "))
	if len(tok) < 16 || strings.ContainsAny(tok, " \t\r\n") {
		return errorResult(errs.New(errs.InvalidParameter, "token must be the bearer token copied from the dashboard")), nil
	}
	b.log.Info("token set", "via", viaSet)
	return b.signIn(ctx, token{via: viaSet, access: tok}, "")
}

func (b *Bridge) handleLogout(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.cancelPending()
	t := b.forget()
	revoked := false
	msg := "no token was held"
	if t.access != "" {
		msg = "the token is forgotten"
		if t.via != viaSet {
			rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err := b.revoke(rctx, t)
			cancel()
			if err != nil {
				b.log.Warn("revoke on logout", "error", err)
				msg += "; revoking it on the server failed, it lapses at its expiry"
			} else {
				revoked = true
				msg += " and revoked on the server"
			}
		}
	}
	b.log.Info("logged out", "revoked", revoked)
	return structuredResult(map[string]any{"loggedOut": true, "revoked": revoked, "message": msg})
}

func (b *Bridge) handleCheckAuth(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if b.current().access == "" {
		if p := b.pendingAuth(); p != nil {
			return errorResult(errs.New(errs.Unauthorized, "browser sign-in pending: the user has not finished at %s yet; "+
				"call check_auth again once they approved", p.url).WithDetails(map[string]any{"authorizationUrl": p.url})), nil
		}
		return errorResult(errNoToken), nil
	}
	return b.callHosted(ctx, req), nil
}

// structuredResult is v as structured content plus the same JSON as text.
func structuredResult(v any) (*mcp.CallToolResult, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(text))}, StructuredContent: json.RawMessage(text)}, nil
}
