package authd

import (
	"net/http"

	"github.com/sigops/sigops/runtime/auth"
)

// StdioCommand is the local stdio MCP client's binary and StdioModule the Go package that
// builds it; the server card names both.
const (
	StdioCommand = "sigops-mcp"
	StdioModule  = "github.com/sigops/sigops/cmd/sigops-mcp"
)

// handleASMetadata is RFC 8414 authorization server metadata.
func (s *Server) handleASMetadata(w http.ResponseWriter, _ *http.Request) {
	b := s.o.BaseURL
	writeJSONCached(w, map[string]any{
		"issuer":                                         b,
		"authorization_endpoint":                         b + "/api/oauth/authorize",
		"token_endpoint":                                 b + "/api/oauth/token",
		"registration_endpoint":                          b + "/api/oauth/register",
		"revocation_endpoint":                            b + "/api/oauth/revoke",
		"response_types_supported":                       []string{auth.ResponseTypeCode},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{auth.GrantCode, auth.GrantRefresh},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{auth.AuthMethodNone, auth.AuthMethodBasic, auth.AuthMethodPost},
		"revocation_endpoint_auth_methods_supported":     []string{auth.AuthMethodNone, auth.AuthMethodBasic, auth.AuthMethodPost},
		"scopes_supported":                               auth.SupportedScopes,
		"authorization_response_iss_parameter_supported": true,
	})
}

// handlePRMetadata is RFC 9728 protected resource metadata for resource; mcp_resource
// serves MCP 2025-06-18 clients.
func (s *Server) handlePRMetadata(resource string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeJSONCached(w, auth.ProtectedResourceMetadata(resource, s.o.BaseURL, s.mcpResource))
	}
}

// handleServerCard is the MCP server card (SEP-1649): the hosted streamable-http endpoint,
// how to authenticate, and the local stdio client sigops-mcp (cmd/sigops-mcp), which
// desktop agents start as a command and which bridges to the hosted endpoint.
func (s *Server) handleServerCard(w http.ResponseWriter, _ *http.Request) {
	writeJSONCached(w, map[string]any{
		"$schema":         "https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json",
		"version":         "1.0",
		"protocolVersion": "2025-06-18",
		"serverInfo": map[string]any{
			"name": "sigops", "title": "sigops trading automation", "version": s.o.Version,
		},
		"description": "Automated crypto trading: signal bots, paper and live trading, analytics and the Strategy Lab.",
		"transport":   map[string]any{"type": "streamable-http", "endpoint": s.mcpResource},
		"capabilities": map[string]any{
			"tools": map[string]any{"listChanged": false},
		},
		"authentication": map[string]any{
			"required":              true,
			"schemes":               []string{"oauth2", "bearer"},
			"authorization_servers": []string{s.o.BaseURL},
			"resource":              s.mcpResource,
			// The MCP resource's own document, the one mcpd's 401 challenge names.
			"resource_metadata": s.o.MCPURL + "/.well-known/oauth-protected-resource",
			"scopes":            auth.SupportedScopes,
		},
		"tools": "dynamic",
		"packages": []map[string]any{{
			"registryType": "go",
			"identifier":   StdioModule,
			"version":      s.o.Version,
			"install":      "go install " + StdioModule + "@latest",
			"transport":    map[string]any{"type": "stdio"},
			"command":      StdioCommand,
			"args":         []string{"--base-url", s.o.BaseURL},
			"packageArguments": []map[string]any{{
				"type": "named", "name": "--base-url", "value": s.o.BaseURL,
				"description": "{base_url} of this sigops (the server card and the authorization server)",
			}},
		}},
	})
}

func writeJSONCached(w http.ResponseWriter, body any) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = jsonEncode(w, body)
}
