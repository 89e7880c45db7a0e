package readapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/httpapi"
)

// handleRisk is GET /api/botsvc/bots/{botId}/risk: the bot's risk metrics
// (runtime/trading.API.RiskMetrics, decision 9's score).
func (a *API) handleRisk(w http.ResponseWriter, r *http.Request) {
	c, _ := CallerFrom(r.Context())
	bot, err := a.ownedBot(r.Context(), c, chi.URLParam(r, "botId"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	m, err := a.o.Trading.RiskMetrics(r.Context(), bot.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteData(w, m)
}
