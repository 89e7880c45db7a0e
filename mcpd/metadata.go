package mcpd

import (
	"net/http"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/httpapi"
)

// handleMetadata is the RFC 9728 protected resource metadata of {mcp_url}/mcp on the MCP
// origin, naming authd ({base_url}) as the authorization server: the document the 401
// challenge points clients to.
func (s *Server) handleMetadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	httpapi.WriteJSON(w, http.StatusOK, auth.ProtectedResourceMetadata(s.resource, s.o.BaseURL, s.resource))
}
