package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// labRoutes adds the Strategy Lab page's routes (under /dashboard).
func (d *Dashboard) labRoutes(r chi.Router) {
	r.Get("/lab", d.handleLab)
}

// handleLab is the Strategy Lab page. NOT BUILT YET: a placeholder.
func (d *Dashboard) handleLab(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "lab", Page{Title: "Strategy Lab", Nav: "lab", Viewer: viewerOf(r)})
}
