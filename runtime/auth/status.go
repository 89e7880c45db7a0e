package auth

import (
	"context"
	"encoding/json"
	"time"
)

// StatusToken is the token block of the Authentication status: OAuth bearers only.
type StatusToken struct {
	ClientID   string `json:"clientId"`
	ClientName string `json:"clientName"`
	Scope      string `json:"scope"`
	ExpiresAt  string `json:"expiresAt"`
}

// StatusTier is the tier block of the Authentication status.
type StatusTier struct {
	Name         string       `json:"name"`
	Slug         string       `json:"slug"`
	Capabilities Capabilities `json:"capabilities"`
}

// Status is the spec's Authentication status: GET /api/user/me (authd) and the check_auth
// tool (mcpd) answer it.
type Status struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Email          string     `json:"email"`
	TelegramLinked bool       `json:"telegramLinked"`
	Tier           StatusTier `json:"tier"`
	// StrategyLabBalanceUsd is the wallet balance, exact, with two decimals.
	StrategyLabBalanceUsd json.Number  `json:"strategyLabBalanceUsd"`
	Token                 *StatusToken `json:"token,omitempty"`
}

// NewStatus builds the Authentication status of u; token is nil except for OAuth bearers.
func NewStatus(u User, token *StatusToken) Status {
	return Status{ID: u.ID, Name: u.Name, Email: u.Email, TelegramLinked: u.TelegramLinked,
		Tier:                  StatusTier{Name: u.Tier.Name, Slug: u.Tier.Slug, Capabilities: u.Tier.Capabilities},
		StrategyLabBalanceUsd: json.Number(u.StrategyLabBalanceUsd.StringFixed(2)), Token: token}
}

// StatusOf is the Authentication status of a verified principal: its account, and for an
// OAuth token the client, scope and expiry. The client's name comes from its registration,
// or from the authorization when the client is gone. ErrNotFound: the account is gone.
func StatusOf(ctx context.Context, users *Users, oauth *OAuth, p *Principal) (Status, error) {
	u, err := users.Get(ctx, p.UserID)
	if err != nil {
		return Status{}, err
	}
	if p.Kind != KindOAuth {
		return NewStatus(u, nil), nil
	}
	name := ""
	if c, err := oauth.GetClient(ctx, p.ClientID); err == nil {
		name = c.Name
	} else if a, err := oauth.GetAuthorization(ctx, p.AuthorizationID); err == nil {
		name = a.ClientName
	}
	return NewStatus(u, &StatusToken{ClientID: p.ClientID, ClientName: name, Scope: p.Scope,
		ExpiresAt: p.ExpiresAt.UTC().Format(time.RFC3339)}), nil
}

// ProtectedResourceMetadata is the RFC 9728 document of resource, whose tokens
// authorizationServer ({base_url}) issues; mcpResource ({mcp_url}/mcp) serves MCP 2025-06-18
// clients. authd serves it for the API and the MCP resource, mcpd on the MCP origin.
func ProtectedResourceMetadata(resource, authorizationServer, mcpResource string) map[string]any {
	return map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{authorizationServer},
		"scopes_supported":         SupportedScopes,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "sigops",
		"mcp_resource":             mcpResource,
	}
}
