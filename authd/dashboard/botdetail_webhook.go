package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// webhookPanel is the webhook section of the page. The URL is a secret: it is in the page
// only after the owner asked for it (Reveal), never in the page as first served.
type webhookPanel struct {
	BotID    string
	Revealed bool
	URL      string
	// Confirm asks whether to regenerate (the first step of Regenerate).
	Confirm bool
	// Error is a refusal in words (bot management not configured, URL not made yet, GitOps).
	Error string
	// Message is the TradingView alert message for the bot.
	Message string
	// RevealURL and RegenerateURL are the actions' paths.
	RevealURL     string
	RegenerateURL string
}

// noFleet is the answer of the webhook actions when authd runs without bot management.
const noFleet = "Bot management is not configured on this server (authd runs without --bot-actions): " +
	"the webhook URL cannot be read or regenerated here."

func (d *Dashboard) webhookState(bot registry.Bot, wh webhookPanel) webhookPanel {
	wh.BotID = bot.ID
	wh.Message = tradingViewMessage()
	base := "/dashboard/bots/" + url.PathEscape(bot.ID) + "/webhook"
	wh.RevealURL, wh.RegenerateURL = base, base+"/regenerate"
	return wh
}

// tradingViewAlert is the webhook body a TradingView strategy alert sends, with
// TradingView's placeholders: the order's action (buy or sell) and the chart's ticker. It
// has no price (a price makes a limit order) and no size (the bot's positionSize applies);
// the comment keeps the alert's order id and close price for the signal log.
type tradingViewAlert struct {
	Action  string `json:"action"`
	Symbol  string `json:"symbol"`
	Comment string `json:"comment"`
}

// tradingViewMessage is the alert message to paste into TradingView.
func tradingViewMessage() string {
	b, _ := json.MarshalIndent(tradingViewAlert{Action: "{{strategy.order.action}}", Symbol: "{{ticker}}",
		Comment: "{{strategy.order.id}} at {{close}}"}, "", "  ")
	return string(b)
}

// handleWebhookReveal is GET /dashboard/bots/{id}/webhook: the page (or, to htmx, the
// webhook section) with the URL shown. Only the owner's bot: another's answers 404.
func (d *Dashboard) handleWebhookReveal(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	wh := webhookPanel{}
	if d.o.APIs.Fleet == nil {
		wh.Error = noFleet
	} else {
		u, err := d.o.APIs.Fleet.WebhookURL(r.Context(), detailCaller(r), bot.ID)
		d.recordAction(r, "get_webhook_url", map[string]string{"botId": bot.ID}, err)
		if err != nil {
			wh.Error = d.inWords(r, err)
		} else {
			wh.Revealed, wh.URL = true, u
		}
	}
	d.webhookAnswer(w, r, http.StatusOK, bot, wh, "")
}

// handleWebhookRegenerate is POST /dashboard/bots/{id}/webhook/regenerate: without
// confirm=yes it asks first; with it, fleet regenerates (a GitOps bot is refused) and the
// page says the new URL is being made.
func (d *Dashboard) handleWebhookRegenerate(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if d.o.APIs.Fleet == nil {
		d.webhookAnswer(w, r, http.StatusServiceUnavailable, bot, webhookPanel{Error: noFleet}, noFleet)
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		d.webhookAnswer(w, r, http.StatusOK, bot, webhookPanel{Confirm: true}, "")
		return
	}
	err = d.o.APIs.Fleet.RegenerateWebhook(r.Context(), detailCaller(r), bot.ID)
	d.recordAction(r, "regenerate_webhook", map[string]string{"botId": bot.ID}, err)
	if err != nil {
		var e *errs.Error
		if !errors.As(err, &e) {
			d.failPage(w, r, err)
			return
		}
		words := ErrorInWords(e)
		d.webhookAnswer(w, r, e.Code.HTTPStatus(), bot, webhookPanel{Error: words}, words)
		return
	}
	redirect(w, r, "/dashboard/bots/"+url.PathEscape(bot.ID)+"?done=webhook-regenerated#webhook")
}

// webhookAnswer is the webhook section alone to htmx, or the whole page.
func (d *Dashboard) webhookAnswer(w http.ResponseWriter, r *http.Request, status int, bot registry.Bot, wh webhookPanel, pageErr string) {
	if isHTMX(r) {
		data := botDetail{Bot: bot, Webhook: d.webhookState(bot, wh)}
		d.fragment(w, status, "botdetail", "bd-webhook", Page{Viewer: viewerOf(r), Data: data})
		return
	}
	d.renderBotDetail(w, r, status, bot, wh, pageErr)
}
