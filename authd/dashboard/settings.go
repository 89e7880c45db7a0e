package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// settingsRoutes adds the Settings page's routes (under /dashboard).
func (d *Dashboard) settingsRoutes(r chi.Router) {
	// authd still serves /dashboard/settings and Connected Apps itself. NOT MOVED YET.
}

// handleSettings is the Settings page. NOT BUILT YET: a placeholder.
func (d *Dashboard) handleSettings(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "settings", Page{Title: "Settings", Nav: "settings", Viewer: viewerOf(r)})
}
