package dashboard

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/trading"
)

// resultWait is how long a manual order's page waits for the executor's result before it
// shows the order as queued (mcpd's trading tools wait as long).
const resultWait = 3 * time.Second

// recentManual is how many of the bot's recent manual orders the page lists.
const recentManual = 20

// tradeRoutes adds the Manual trading page's routes (under /dashboard).
func (d *Dashboard) tradeRoutes(r chi.Router) {
	r.Get("/trade", d.handleTrade)
	r.Get("/trade/panel", d.handleTradePanel)
	r.Post("/trade/order", d.handleTradeOrder)
	r.Post("/trade/close", d.handleTradeClose)
	r.Post("/trade/close-all", d.handleTradeCloseAll)
}

// tradePage is the Manual trading page's data.
type tradePage struct {
	// Bots are the viewer's bots to pick from; Bot is the picked one (nil: none yet).
	Bots []registry.Bot
	Bot  *registry.Bot
	// Exchange names a live bot's exchange (binance, bybit, okx); empty on paper.
	Exchange string
	// OrderKey and CloseAllKey are the idempotency keys of this render's forms; each
	// position carries its own.
	OrderKey, CloseAllKey string
	Positions             []tradePosition
	Orders                []manualOrder
	Form                  orderForm
	// Outcome is the answer of the order just sent; Confirm asks before a live order.
	Outcome *tradeOutcome
	Confirm *tradeConfirm
	// Preview is what the order would do now (the Preview button, and every confirmation):
	// the executor's own sizing and checks, with nothing placed.
	Preview *executor.Preview
}

// Live reports whether the picked bot trades real money.
func (p tradePage) Live() bool { return p.Bot != nil && p.Bot.Account.Kind == registry.AccountExchange }

// tradePosition is an open position with the key of its Close form.
type tradePosition struct {
	position.View
	Key string
}

// orderForm is the order form's values as typed.
type orderForm struct {
	Side, Type, Symbol, Amount, Price string
}

// manualOrder is one recent manual order and its stored result (Found false: queued).
type manualOrder struct {
	queue.SignalEntry
	Stored result.Stored
	Words  string
}

// tradeOutcome is what became of an order: executed, failed (Words says why) or queued.
type tradeOutcome struct {
	Status   string
	SignalID string
	// Repeat: the form had been sent already; this is the first send's order.
	Repeat bool
	Result result.Result
	Words  string
}

// tradeConfirm is the confirmation of a live order: what it does in words, and the form to
// send again with confirm=yes and the same key.
type tradeConfirm struct {
	Action, Words, Key string
	Form               orderForm
}

// handleTrade is the Manual trading page: the bot picker and, for the picked bot, the order
// forms, its open positions and its recent manual orders.
func (d *Dashboard) handleTrade(w http.ResponseWriter, r *http.Request) {
	d.showTrade(w, r, http.StatusOK, r.URL.Query().Get("bot"), tradePage{Form: orderForm{Side: "buy", Type: "market"}}, "")
}

// showTrade renders the page for bot id (none when empty) around p, with errText above.
func (d *Dashboard) showTrade(w http.ResponseWriter, r *http.Request, status int, id string, p tradePage, errText string) {
	var err error
	if p.Bots, err = d.ownBots(r.Context(), fleetCaller(r).Email, d.o.Now()); err != nil {
		d.failPage(w, r, err)
		return
	}
	if id != "" {
		if err := d.tradeBot(r, id, &p); err != nil {
			d.failPage(w, r, err)
			return
		}
	}
	d.render(w, r, status, "trade", Page{Title: "Manual trading", Nav: "trade", Viewer: viewerOf(r), Error: errText, Data: p})
}

// handleTradePanel is the picked bot's positions and recent orders alone, for the live
// refresh.
func (d *Dashboard) handleTradePanel(w http.ResponseWriter, r *http.Request) {
	var p tradePage
	if err := d.tradeBot(r, r.URL.Query().Get("bot"), &p); err != nil {
		d.failPage(w, r, err)
		return
	}
	d.fragment(w, http.StatusOK, "trade", "trade-panel", Page{Viewer: viewerOf(r), Data: p})
}

// ownedBot is the viewer's bot id with its runtime pause applied; another user's answers
// NOT_FOUND like a missing one (registry.Owned, as mcpd's tools check).
func (d *Dashboard) ownedBot(r *http.Request, id string) (registry.Bot, error) {
	bot, err := registry.Owned(r.Context(), d.bots, id, fleetCaller(r).Email)
	if err != nil {
		return bot, err
	}
	one := []registry.Bot{bot}
	if err := d.bots.WithPauses(r.Context(), one, d.o.Now()); err != nil {
		return bot, err
	}
	return one[0], nil
}

// tradeBot fills p with bot id's state: the bot, its exchange, its positions (each with a
// Close key), its recent manual orders and new keys for the forms.
func (d *Dashboard) tradeBot(r *http.Request, id string, p *tradePage) error {
	bot, err := d.ownedBot(r, id)
	if err != nil {
		return err
	}
	p.Bot = &bot
	if p.Live() {
		p.Exchange = bot.Account.Name
		if c, err := credentials.NewConnections(d.o.Redis).Get(r.Context(), bot.Account.ID); err == nil {
			p.Exchange = c.Exchange
		}
	}
	p.OrderKey, p.CloseAllKey = uuid.NewString(), uuid.NewString()
	tr := d.o.APIs.Trading
	open, err := tr.Positions(r.Context(), bot.ID)
	if err != nil {
		return err
	}
	for _, v := range open {
		p.Positions = append(p.Positions, tradePosition{View: v, Key: uuid.NewString()})
	}
	recent, err := tr.RecentSignals(r.Context(), bot.ID)
	if err != nil {
		return err
	}
	var ids []string
	for _, s := range recent {
		if s.Source == queue.SourceManual && len(p.Orders) < recentManual {
			p.Orders = append(p.Orders, manualOrder{SignalEntry: s})
			ids = append(ids, s.SignalID)
		}
	}
	stored, err := tr.Results(r.Context(), ids)
	if err != nil {
		return err
	}
	for i := range p.Orders {
		p.Orders[i].Stored = stored[i]
		if st := stored[i]; st.Found && !st.Result.Success {
			p.Orders[i].Words = resultWords(st.Result)
		}
	}
	return nil
}

// resultWords is a failed result in words (the code's meaning, the message, the code).
func resultWords(res result.Result) string {
	return ErrorInWords(errs.New(res.Code, "%s", res.Error))
}

// readOrderForm reads the order form's values.
func (d *Dashboard) readOrderForm(r *http.Request) orderForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return orderForm{Side: v("side"), Type: v("type"), Symbol: d.formSymbol(v("symbol")), Amount: v("amount"), Price: v("price")}
}

// formSymbol is a form's symbol in its canonical BASE/QUOTE: every form the webhook takes
// (BTCUSDT, btc-usdt, BINANCE:BTCUSDT.P) resolved by the same index as webhookd and mcpd;
// one it does not know stays as written (upper-cased), for the order's own check.
func (d *Dashboard) formSymbol(raw string) string {
	if raw != "" && d.o.APIs.Symbols != nil {
		if c, err := d.o.APIs.Symbols().Resolve(raw); err == nil {
			return c
		}
	}
	return strings.ToUpper(raw)
}

// formDecimal is an optional positive decimal of the form, refused with code.
func formDecimal(s, name string, code errs.Code) (*decimal.Decimal, error) {
	if s == "" {
		return nil, nil
	}
	v, err := decimal.NewFromString(s)
	if err != nil || !v.IsPositive() {
		return nil, errs.New(code, "%s must be a number above 0", name)
	}
	return &v, nil
}

// handleTradeOrder places a market or limit buy or sell on the picked bot.
func (d *Dashboard) handleTradeOrder(w http.ResponseWriter, r *http.Request) {
	f := d.readOrderForm(r)
	d.trade(w, r, "place_order", f, func(bot registry.Bot) (order.Request, error) {
		req := order.Request{Type: exchange.OrderType(f.Type), Side: exchange.Side(f.Side), Symbol: f.Symbol}
		if req.Type != exchange.Market && req.Type != exchange.Limit {
			return req, errs.New(errs.InvalidAction, "type must be market or limit")
		}
		if req.Symbol == "" {
			req.Symbol = bot.Symbol
		}
		amount, err := formDecimal(f.Amount, "amount", errs.InvalidAmount)
		if err != nil {
			return req, err
		}
		req.Amount = httpapi.NumOrNil(amount)
		if req.Type == exchange.Limit {
			price, err := formDecimal(f.Price, "price", errs.InvalidPrice)
			req.Price = httpapi.NumOrNil(price)
			return req, err
		}
		return req, nil
	})
}

// handleTradeClose closes the picked bot's position on a symbol (all of it).
func (d *Dashboard) handleTradeClose(w http.ResponseWriter, r *http.Request) {
	f := orderForm{Symbol: d.formSymbol(strings.TrimSpace(r.PostFormValue("symbol")))}
	d.trade(w, r, "close_position", f, func(registry.Bot) (order.Request, error) {
		if f.Symbol == "" {
			return order.Request{}, errs.New(errs.InvalidSymbol, "choose the position's symbol")
		}
		return order.Request{Type: order.Close, Symbol: f.Symbol}, nil
	})
}

// handleTradeCloseAll closes every position of the picked bot.
func (d *Dashboard) handleTradeCloseAll(w http.ResponseWriter, r *http.Request) {
	d.trade(w, r, "close_all_positions", orderForm{}, func(registry.Bot) (order.Request, error) {
		return order.Request{Type: order.Close}, nil
	})
}

// trade runs one manual order of the form (tool names it in the journal): the bot must be
// the viewer's; a live bot's order is confirmed first; the order is placed once under the
// form's idempotency key (trading.PlaceManualOnce: a form sent twice places once and shows
// the first order), and its result is awaited up to resultWait.
func (d *Dashboard) trade(w http.ResponseWriter, r *http.Request, tool string, f orderForm, build func(registry.Bot) (order.Request, error)) {
	id, key := r.PostFormValue("bot"), r.PostFormValue("key")
	bot, err := d.ownedBot(r, id)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	page := tradePage{Form: f}
	req, err := build(bot)
	if err == nil {
		err = req.Validate()
	}
	if err == nil && (key == "" || len(key) > 255) {
		err = errs.New(errs.InvalidParameter, "the form has no order key: reload the page and send it again")
	}
	// Preview: what the order would do now, sized and checked by the executor's own code,
	// placing, counting and journaling nothing.
	if r.PostFormValue("preview") == "yes" {
		if err == nil {
			page.Preview, err = d.previewOrder(r, bot, req)
		}
		if err == nil {
			d.showTrade(w, r, http.StatusOK, bot.ID, page, "")
			return
		}
		d.showRefusal(w, r, bot.ID, page, err)
		return
	}
	// A live order is confirmed first; live is the highest venue the order reaches: the
	// bot's own, or a follower of the viewer's copying its fills (fleet.ReachesExchange).
	if err == nil && r.PostFormValue("confirm") != "yes" {
		var live bool
		if live, err = fleet.ReachesExchange(r.Context(), d.o.APIs.Fleet, d.bots, fleetCaller(r), bot); err == nil && live {
			d.confirmTrade(w, r, tool, bot, req, key, f)
			return
		}
	}
	var placed trading.Placed
	if err == nil {
		placed, err = d.o.APIs.Trading.PlaceManualOnce(r.Context(), bot.ID, viewerOf(r).User.ID, key, req)
	}
	d.recordAction(r, tool, tradeArgs(bot.ID, key, req), err)
	if err != nil {
		d.showRefusal(w, r, bot.ID, page, err)
		return
	}
	out := &tradeOutcome{Status: "queued", SignalID: placed.SignalID, Repeat: placed.Repeat}
	st, werr := d.o.APIs.Trading.WaitResult(r.Context(), placed.SignalID, resultWait)
	if werr != nil {
		// The order is queued: show it as such, and its result in the list later.
		d.log().Warn("dashboard: reading a manual order's result", "signal", placed.SignalID, "error", werr)
	}
	if werr == nil && st.Found {
		out.Result, out.Status = st.Result, "executed"
		if !st.Result.Success {
			out.Status, out.Words = "failed", resultWords(st.Result)
		}
	}
	page.Outcome = out
	page.Form = orderForm{Side: "buy", Type: "market", Symbol: f.Symbol}
	d.showTrade(w, r, http.StatusOK, bot.ID, page, "")
}

// showRefusal shows the trade page of bot around page with err in words (a refusal of the
// Go APIs), or the failure page for anything else.
func (d *Dashboard) showRefusal(w http.ResponseWriter, r *http.Request, bot string, page tradePage, err error) {
	status, words, ok := refusal(err)
	if !ok {
		d.failPage(w, r, err)
		return
	}
	d.showTrade(w, r, status, bot, page, words)
}

// tradeArgs are a manual order's journal arguments (as mcpd's trading tools record them).
func tradeArgs(botID, key string, req order.Request) map[string]any {
	args := map[string]any{"botId": botID, "idempotencyKey": key}
	if req.Type != order.Close {
		args["side"], args["type"] = req.Side, req.Type
	}
	if req.Symbol != "" {
		args["symbol"] = req.Symbol
	}
	if req.Amount != nil {
		args["amount"] = req.Amount.String()
	}
	if req.Price != nil {
		args["price"] = req.Price.String()
	}
	return args
}

// previewOrder is what req on bot would do now: the envelope it would queue (the same
// draft PlaceManualOnce queues), previewed by the executor's own planning and sizing.
func (d *Dashboard) previewOrder(r *http.Request, bot registry.Bot, req order.Request) (*executor.Preview, error) {
	if d.o.APIs.Previews == nil {
		return nil, errs.New(errs.InternalError, "previews are not configured on this server")
	}
	env, err := d.o.APIs.Trading.Draft(r.Context(), bot.ID, req)
	if err != nil {
		return nil, err
	}
	pv, err := d.o.APIs.Previews.Preview(r.Context(), env)
	if err != nil {
		return nil, err
	}
	return &pv, nil
}

// confirmTrade asks before a live order: what it does, on which exchange, with real money.
func (d *Dashboard) confirmTrade(w http.ResponseWriter, r *http.Request, tool string, bot registry.Bot, req order.Request, key string, f orderForm) {
	page := tradePage{Form: f}
	if err := d.tradeBot(r, bot.ID, &page); err != nil {
		d.failPage(w, r, err)
		return
	}
	amount := "the bot's position size (" + bot.PositionSize + ")"
	if req.Amount != nil {
		amount = req.Amount.String()
	}
	words := ""
	action := "/dashboard/trade/order"
	switch tool {
	case "place_order":
		words = strings.ToUpper(string(req.Side)) + " " + amount + " " + req.Symbol
		if req.Price != nil {
			words += " at " + req.Price.String() + " (limit)"
		} else {
			words += " at market"
		}
	case "close_position":
		words, action = "CLOSE your "+req.Symbol+" position", "/dashboard/trade/close"
	default:
		words, action = "CLOSE ALL open positions of "+bot.Name, "/dashboard/trade/close-all"
	}
	venue := " on " + page.Exchange + " with real money."
	if !page.Live() {
		venue = " on the paper bot " + bot.Name + ", whose fills are copied to your bots on an exchange: real money."
	}
	page.Confirm = &tradeConfirm{Action: action, Key: key, Form: f, Words: "You are about to " + words + venue}
	pv, err := d.previewOrder(r, bot, req)
	if err != nil {
		if _, coded := errs.As(err); !coded {
			d.failPage(w, r, err)
			return
		}
		// The order is refused as it stands; the confirmation says so, and sending it
		// answers the refusal.
		pv = nil
	}
	page.Preview = pv
	d.render(w, r, http.StatusOK, "trade", Page{Title: "Confirm the order", Nav: "trade", Viewer: viewerOf(r), Data: page})
}
