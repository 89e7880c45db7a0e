package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// accountRoutes adds the Paper accounts page's routes (under /dashboard).
func (d *Dashboard) accountRoutes(r chi.Router) {
	r.Get("/accounts", d.handleAccounts)
}

// handleAccounts is the Paper accounts page. NOT BUILT YET: a placeholder.
func (d *Dashboard) handleAccounts(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "accounts", Page{Title: "Paper accounts", Nav: "accounts", Viewer: viewerOf(r)})
}
