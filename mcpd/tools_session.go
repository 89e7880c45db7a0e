package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
)

// statusTTL is how long check_auth reuses a token's Authentication status, all but the
// Strategy Lab wallet: an agent may call it before every step, and the account rarely
// changes. Whether the token is still live is checked on every request regardless
// (authenticate).
const statusTTL = 30 * time.Second

// checkAuthOutput is check_auth's output schema: the Authentication status.
const checkAuthOutput = `{
  "type": "object",
  "required": ["id", "name", "email", "telegramLinked", "tier", "strategyLabBalanceUsd"],
  "properties": {
    "id": {"type": "string"},
    "name": {"type": "string"},
    "email": {"type": "string"},
    "telegramLinked": {"type": "boolean"},
    "tier": {
      "type": "object",
      "required": ["name", "slug", "capabilities"],
      "properties": {
        "name": {"type": "string"},
        "slug": {"type": "string"},
        "capabilities": {
          "type": "object",
          "required": ["allowLiveTrading", "allowAIBuilder", "allowNewsTrading", "allowMcpServer"],
          "properties": {
            "allowLiveTrading": {"type": "boolean"},
            "allowAIBuilder": {"type": "boolean"},
            "allowNewsTrading": {"type": "boolean"},
            "allowMcpServer": {"type": "boolean"}
          }
        }
      }
    },
    "strategyLabBalanceUsd": {"type": "number", "description": "Strategy Lab wallet in USD, two decimals"},
    "token": {
      "type": "object",
      "description": "the OAuth access token of this request; absent for a bearer JWT",
      "required": ["clientId", "clientName", "scope", "expiresAt"],
      "properties": {
        "clientId": {"type": "string"},
        "clientName": {"type": "string"},
        "scope": {"type": "string"},
        "expiresAt": {"type": "string", "format": "date-time"}
      }
    }
  }
}`

// hostedSessionNote is what the local client's session tools answer on the hosted server.
const hostedSessionNote = "This hosted MCP server authenticates every request by its Authorization bearer token " +
	"(an OAuth access token or an API token); there is no session to log in to, change or log out of, and " +
	"nothing was changed. Use check_auth to see who the token speaks for."

// sessionNoteOutput is what the session tools answer: the note, as structured content too.
const sessionNoteOutput = `{"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}`

// sessionTools are check_auth and the local client's session tools, which the hosted
// server answers without changing anything.
func (s *Server) sessionTools() []Tool {
	noop := func(name, title, desc string, opts ...mcp.ToolOption) Tool {
		opts = append([]mcp.ToolOption{mcp.WithDescription(desc), mcp.WithToolAnnotation(readOnly(title)),
			mcp.WithRawOutputSchema(json.RawMessage(sessionNoteOutput))}, opts...)
		return Tool{Def: mcp.NewTool(name, opts...), Scope: auth.ScopeRead,
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return structured(struct {
					Message string `json:"message"`
				}{hostedSessionNote})
			}}
	}
	return []Tool{
		{Def: mcp.NewTool("check_auth",
			mcp.WithDescription("Who this connection is authenticated as: the account, its tier and capabilities, the "+
				"Strategy Lab balance and, for an OAuth token, the client, scope and expiry."),
			mcp.WithToolAnnotation(readOnly("Check authentication")),
			mcp.WithRawOutputSchema(json.RawMessage(checkAuthOutput))),
			Scope: auth.ScopeRead, Handler: s.checkAuth},
		noop("login", "Log in", "On the hosted server the bearer token authenticates each request: this changes nothing.",
			mcp.WithString("email", mcp.Description("ignored on the hosted server")),
			mcp.WithString("password", mcp.Description("ignored on the hosted server; not stored or checked"))),
		noop("authenticate", "Authenticate", "On the hosted server the bearer token authenticates each request: this changes nothing."),
		noop("set_token", "Set API token", "On the hosted server the bearer token authenticates each request: this changes nothing.",
			mcp.WithString("token", mcp.Description("ignored on the hosted server"))),
		noop("logout", "Log out", "On the hosted server the bearer token authenticates each request: this changes nothing; "+
			"revoke the token in the dashboard's Connected Apps or API tokens to end access."),
	}
}

// checkAuth answers the Authentication status of the request's token.
func (s *Server) checkAuth(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, errors.New("mcpd: no principal in the request context")
	}
	now := s.o.Now()
	st, ok := s.status.Get(p.JTI, now)
	if !ok {
		var err error
		if st, err = auth.StatusOf(ctx, s.o.Users, s.o.OAuth, p); err != nil {
			s.o.Logger.Error("check_auth", "err", err)
			return mcp.NewToolResultError("the account could not be read; try again"), nil
		}
		s.status.Put(p.JTI, st, now.Add(statusTTL), now)
	} else {
		// The wallet is money that generate_strategy charges between two calls: it is read
		// on every call, the rest of the status is reused.
		bal, err := s.o.Users.Wallets.Balance(ctx, p.UserID)
		if err != nil {
			s.o.Logger.Error("check_auth", "err", err)
			return mcp.NewToolResultError("the account could not be read; try again"), nil
		}
		st.StrategyLabBalanceUsd = json.Number(bal.StringFixed(2))
	}
	text, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(st, string(text)), nil
}

// statusCacheMax bounds the statuses mcpd keeps per token ID (Server.status).
const statusCacheMax = 10_000
