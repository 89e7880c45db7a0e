package dashboard

import "github.com/go-chi/chi/v5"

// chartRoutes adds the chart data of the internal API (under /api/dashboard). NOT BUILT YET.
func (d *Dashboard) chartRoutes(r chi.Router) {}
