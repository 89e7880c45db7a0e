package readapi

import (
	"net/http"

	"github.com/sigops/sigops/runtime/httpapi"
)

// PortfolioPath is the caller's portfolio.
const PortfolioPath = "/api/user/portfolio"

// handlePortfolio is GET /api/user/portfolio: the caller's paper accounts and exchange
// connections with their balances, positions, equity and PnL (runtime/portfolio; the body
// is described in docs/decisions.md, "Portfolio").
func (a *API) handlePortfolio(w http.ResponseWriter, r *http.Request) {
	c, _ := CallerFrom(r.Context())
	p, err := a.o.Portfolio.Of(r.Context(), c.Email)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteData(w, p)
}
