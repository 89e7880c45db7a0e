package readapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
)

// handleAnalytics is GET /api/botsvc/bots/{botId}/analytics: the bot's trading analytics
// over a period (runtime/analytics; parameters: analytics.ParseQuery).
func (a *API) handleAnalytics(w http.ResponseWriter, r *http.Request) {
	c, _ := CallerFrom(r.Context())
	bot, err := a.ownedBot(r.Context(), c, chi.URLParam(r, "botId"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	p := r.URL.Query()
	q, err := analytics.ParseQuery(p.Get("period"), p.Get("startDate"), p.Get("endDate"), p.Get("includeEquity"), a.o.Now())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	report, err := a.o.Analytics.Bot(r.Context(), bot, q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteData(w, report)
}
