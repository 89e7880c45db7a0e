package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// tradeRoutes adds the Manual trading page's routes (under /dashboard).
func (d *Dashboard) tradeRoutes(r chi.Router) {
	r.Get("/trade", d.handleTrade)
}

// handleTrade is the Manual trading page. NOT BUILT YET: a placeholder.
func (d *Dashboard) handleTrade(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "trade", Page{Title: "Manual trading", Nav: "trade", Viewer: viewerOf(r)})
}
