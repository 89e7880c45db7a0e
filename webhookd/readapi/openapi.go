package readapi

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the document, kept beside the code and checked against the routers by
// the tests.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIPath serves the OpenAPI 3.1 document of the public REST surface.
const OpenAPIPath = "/api/openapi.json"

// handleOpenAPI serves the document.
func (a *API) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDocument)
}
