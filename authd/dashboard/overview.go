package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// overviewRoutes adds the Overview page's routes (under /dashboard).
func (d *Dashboard) overviewRoutes(r chi.Router) {
	r.Get("/", d.handleOverview)
}

// handleOverview is the Overview page. NOT BUILT YET: a placeholder.
func (d *Dashboard) handleOverview(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "overview", Page{Title: "Overview", Nav: "overview", Viewer: viewerOf(r)})
}
