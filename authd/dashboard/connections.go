package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// connectionRoutes adds the Exchange connections page's routes (under /dashboard).
func (d *Dashboard) connectionRoutes(r chi.Router) {
	r.Get("/connections", d.handleConnections)
}

// handleConnections is the Exchange connections page. NOT BUILT YET: a placeholder.
func (d *Dashboard) handleConnections(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "connections", Page{Title: "Exchange connections", Nav: "connections", Viewer: viewerOf(r)})
}
