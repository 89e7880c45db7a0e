package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// botRoutes adds the Bots page's routes (under /dashboard).
func (d *Dashboard) botRoutes(r chi.Router) {
	r.Get("/bots", d.handleBots)
}

// handleBots is the Bots page. NOT BUILT YET: a placeholder.
func (d *Dashboard) handleBots(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "bots", Page{Title: "Bots", Nav: "bots", Viewer: viewerOf(r)})
}
