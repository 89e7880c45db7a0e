package readapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/httpapi"
)

// handleRisk is GET /api/botsvc/bots/{botId}/risk: the bot's risk metrics
// (runtime/trading.API.RiskMetricsOf, decision 9's score), computed on the bot read for the
// ownership check, so a bot deleted in between still answers as read, never 403.
func (a *API) handleRisk(w http.ResponseWriter, r *http.Request) {
	c, _ := CallerFrom(r.Context())
	bot, err := a.ownedBot(r.Context(), c, chi.URLParam(r, "botId"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	m, err := a.o.Trading.RiskMetricsOf(r.Context(), bot)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteData(w, m)
}
