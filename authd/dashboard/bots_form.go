package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/strategy"
)

// createWait is how long a create waits for the operator to project the new bot before
// it answers that the bot appears within moments (mcpd's create_bot waits as long).
const createWait = 3 * time.Second

// botForm is the create and edit form's values as typed, kept to show them again with a
// refusal. Every field maps to one field of the SignalBot spec (api/v1alpha1); empty means
// "not set", which the CRD's default then fills.
type botForm struct {
	Name string
	// Venue is paper or live; PaperAccount and Connection name the account of each.
	Venue, PaperAccount, Connection string
	Market                          string
	// Pair is fixed (Symbol) or any (signals name the symbol).
	Pair, Symbol                           string
	PositionSize, Leverage                 string
	StopLoss, TakeProfit                   string
	DCAEnabled                             bool
	DCAMaxLevels                           string
	MaxExposure, DailyLossLimit, MaxLosses string
	// Strategy is a strategy.Family or empty for none; Params holds the family's
	// parameters by paramField name.
	Strategy, Timeframe, StrategySymbol string
	Params                              map[string]string
	// CopyMaster is a bot ID (one of the viewer's, or a copyable bot) or namespace/name.
	CopyMaster, CopyRatio               string
	Copyable, Reversals, WebhookEnabled bool
	PerMinute, Burst                    string
	DedupeWindow, MaxSignalAge          string
}

// newBotForm is the create form's starting values: a paper bot on the default account with
// the CRD's defaults (reversals and the webhook on).
func newBotForm() botForm {
	return botForm{Venue: "paper", Market: string(tradingv1.MarketSpot), Pair: "fixed", Reversals: true, WebhookEnabled: true,
		Params: map[string]string{}}
}

// paramField is the form field of a strategy family's parameter.
func paramField(f strategy.Family, param string) string { return "p_" + string(f) + "_" + param }

// readBotForm reads the posted form.
func readBotForm(r *http.Request) botForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	on := func(k string) bool { return r.PostFormValue(k) == "on" }
	f := botForm{Name: v("name"), Venue: v("venue"), PaperAccount: v("paper_account"), Connection: v("connection"),
		Market: v("market"), Pair: v("pair"), Symbol: strings.ToUpper(v("symbol")),
		PositionSize: v("position_size"), Leverage: v("leverage"), StopLoss: v("stop_loss"), TakeProfit: v("take_profit"),
		DCAEnabled: on("dca_enabled"), DCAMaxLevels: v("dca_max_levels"),
		MaxExposure: v("max_exposure"), DailyLossLimit: v("daily_loss_limit"), MaxLosses: v("max_consecutive_losses"),
		Strategy: v("strategy"), Timeframe: v("timeframe"), StrategySymbol: strings.ToUpper(v("strategy_symbol")),
		Params:     map[string]string{},
		CopyMaster: v("copy_master"), CopyRatio: v("copy_ratio"),
		Copyable: on("copyable"), Reversals: on("reversals"), WebhookEnabled: on("webhook_enabled"),
		PerMinute: v("per_minute"), Burst: v("burst"), DedupeWindow: v("dedupe_window"), MaxSignalAge: v("max_signal_age")}
	for _, fam := range strategy.Families() {
		for _, p := range fam.Ranges() {
			if s := v(paramField(fam, p.Name)); s != "" {
				f.Params[paramField(fam, p.Name)] = s
			}
		}
	}
	return f
}

// formOf is the edit form of a stored bot; ownBots resolve a copy master to its ID.
func formOf(bot *tradingv1.SignalBot, ownBots []registry.Bot) botForm {
	s := bot.Spec
	f := botForm{Name: bot.Name, Venue: "paper", Market: string(s.Market), Pair: "fixed", Symbol: s.Symbol,
		PositionSize: s.PositionSize, StopLoss: s.StopLoss, TakeProfit: s.TakeProfit,
		DCAEnabled: s.DCA.Enabled, MaxExposure: s.Risk.MaxExposure, DailyLossLimit: s.Risk.DailyLossLimit,
		Copyable: s.Copyable, Reversals: s.Reversals == nil || *s.Reversals, WebhookEnabled: s.Webhook.Enabled == nil || *s.Webhook.Enabled,
		Params: map[string]string{}}
	if s.ExchangeConnectionRef != nil {
		f.Venue, f.Connection = "live", s.ExchangeConnectionRef.Name
	} else if s.PaperAccountRef != nil {
		f.PaperAccount = s.PaperAccountRef.Name
	}
	if s.Symbol == "" {
		f.Pair = "any"
	}
	num := func(n int32) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(int(n))
	}
	f.Leverage, f.DCAMaxLevels, f.MaxLosses = num(s.Leverage), num(s.DCA.MaxLevels), num(s.Risk.MaxConsecutiveLosses)
	f.PerMinute, f.Burst = num(s.RateLimit.PerMinute), num(s.RateLimit.Burst)
	if s.DedupeWindow != nil {
		f.DedupeWindow = s.DedupeWindow.Duration.String()
	}
	if s.MaxSignalAge != nil {
		f.MaxSignalAge = s.MaxSignalAge.Duration.String()
	}
	if st := s.Strategy; st != nil {
		f.Strategy, f.Timeframe, f.StrategySymbol = string(st.Family), st.Timeframe, st.Symbol
		// The spec's JSON names the family's block and its parameters as strategy.Family and
		// Range do; the raw values keep their exact text.
		var blocks map[string]json.RawMessage
		var params map[string]json.RawMessage
		if data, err := json.Marshal(st); err == nil && json.Unmarshal(data, &blocks) == nil {
			_ = json.Unmarshal(blocks[string(st.Family)], &params)
		}
		for name, raw := range params {
			f.Params[paramField(strategy.Family(st.Family), name)] = strings.Trim(string(raw), `"`)
		}
	}
	if c := s.CopyFrom; c != nil {
		ns := c.BotRef.Namespace
		if ns == "" {
			ns = bot.Namespace
		}
		f.CopyMaster, f.CopyRatio = ns+"/"+c.BotRef.Name, c.Ratio
		for _, b := range ownBots {
			if b.Namespace == ns && b.Name == c.BotRef.Name {
				f.CopyMaster = b.ID
			}
		}
	}
	return f
}

// fieldErrors are a form's refusals by form field.
type fieldErrors map[string]string

// specFields maps the form to the SignalBot spec JSON it stands for: the fields of a
// create (fleet.SpecOf) or, with every empty field null so that it takes its default, the
// merge patch of an edit (fleet.Update). Values the form can check without the API server
// (whole numbers, durations, a symbol for a fixed pair, live trading in the tier, the
// copy master) are refused here by field; bounds and the CRD's rules are the API server's.
func (d *Dashboard) specFields(r *http.Request, f botForm) (map[string]any, fieldErrors) {
	v := specValues{bad: fieldErrors{}}
	out := map[string]any{
		"market": v.str(f.Market), "positionSize": v.str(f.PositionSize), "leverage": v.whole("leverage", f.Leverage),
		"stopLoss": v.str(f.StopLoss), "takeProfit": v.str(f.TakeProfit),
		"dca": map[string]any{"enabled": f.DCAEnabled, "maxLevels": v.whole("dca_max_levels", f.DCAMaxLevels)},
		"risk": map[string]any{"maxExposure": v.str(f.MaxExposure), "dailyLossLimit": v.str(f.DailyLossLimit),
			"maxConsecutiveLosses": v.whole("max_consecutive_losses", f.MaxLosses)},
		"rateLimit":    map[string]any{"perMinute": v.whole("per_minute", f.PerMinute), "burst": v.whole("burst", f.Burst)},
		"dedupeWindow": v.duration("dedupe_window", f.DedupeWindow), "maxSignalAge": v.duration("max_signal_age", f.MaxSignalAge),
		"reversals": f.Reversals, "webhook": map[string]any{"enabled": f.WebhookEnabled}, "copyable": f.Copyable,
		"symbol": nil, "strategy": nil, "copyFrom": nil,
	}
	switch f.Venue {
	case "paper":
		_ = fleet.SetAccount(out, registry.AccountPaper, f.PaperAccount)
	case "live":
		if !liveAllowed(viewerOf(r).User) {
			v.bad["venue"] = tierWords(viewerOf(r).User)
		} else if err := fleet.SetAccount(out, registry.AccountExchange, f.Connection); err != nil {
			v.bad["venue"] = "choose one of your exchange connections"
		}
	default:
		v.bad["venue"] = "choose paper or live"
	}
	switch {
	case f.Pair == "any":
	case f.Symbol == "":
		v.bad["symbol"] = "give the pair the bot trades (BASE/QUOTE, e.g. BTC/USDT), or choose any pair"
	default:
		out["symbol"] = f.Symbol
	}
	if f.Strategy != "" {
		out["strategy"] = v.strategy(f)
	}
	if f.CopyMaster != "" {
		ref, ok := d.copyRef(r, f.CopyMaster)
		if !ok {
			v.bad["copy_master"] = "no bot of yours, and no copyable bot, has this ID; give a bot ID or namespace/name"
		}
		out["copyFrom"] = map[string]any{"botRef": ref, "ratio": v.str(f.CopyRatio)}
	}
	return out, v.bad
}

// specValues turns form text into spec JSON values, noting a value it refuses in bad by
// its form field; an empty field is null (the default).
type specValues struct {
	bad fieldErrors
}

func (v specValues) str(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (v specValues) whole(field, s string) any {
	if s == "" {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		v.bad[field] = "must be a whole number"
		return nil
	}
	return n
}

func (v specValues) duration(field, s string) any {
	if s == "" {
		return nil
	}
	if _, err := time.ParseDuration(s); err != nil {
		v.bad[field] = "must be a duration such as 30s, 5m or 0s"
		return nil
	}
	return s
}

// strategy is the spec's strategy of the form's family with its parameters, every other
// family null (so an edit that changes family drops the old one's parameters); nil with
// the refusal noted when the family is unknown.
func (v specValues) strategy(f botForm) any {
	fam := strategy.Family(f.Strategy)
	if !fam.Valid() {
		v.bad["strategy"] = "choose one of the strategy families"
		return nil
	}
	params := map[string]any{}
	for _, p := range fam.Ranges() {
		field := paramField(fam, p.Name)
		if p.Integer {
			params[p.Name] = v.whole(field, f.Params[field])
		} else {
			params[p.Name] = v.str(f.Params[field])
		}
	}
	st := map[string]any{"family": f.Strategy, "timeframe": f.Timeframe, "symbol": v.str(f.StrategySymbol)}
	for _, other := range strategy.Families() {
		st[string(other)] = nil
	}
	st[string(fam)] = params
	return st
}

// copyRef is the botRef of a copy master: namespace/name as given, or the bot with that ID
// when it is the viewer's or copyable (the same answer for any other ID, so the form tells
// nothing of other users' bots).
func (d *Dashboard) copyRef(r *http.Request, master string) (map[string]any, bool) {
	if ns, name, ok := strings.Cut(master, "/"); ok {
		return map[string]any{"namespace": ns, "name": name}, ns != "" && name != ""
	}
	b, err := d.bots.Get(r.Context(), master)
	if err != nil || (!emails.Same(b.Owner, fleetCaller(r).Email) && !b.Copyable) {
		return nil, false
	}
	return map[string]any{"namespace": b.Namespace, "name": b.Name}, true
}

// liveAllowed reports whether u's tier includes live trading (decision 12).
func liveAllowed(u auth.User) bool { return u.Tier.Capabilities.AllowLiveTrading }

func tierWords(u auth.User) string {
	return "Your tier (" + u.Tier.Name + ") does not include live trading: choose a paper account, or upgrade to Pro."
}

// specFieldOf maps a field path of the API server's or fleet's refusal to the form field
// it concerns, longest path first.
var specFieldOf = []struct{ path, field string }{
	{"spec.risk.maxConsecutiveLosses", "max_consecutive_losses"}, {"spec.risk.dailyLossLimit", "daily_loss_limit"},
	{"spec.risk.maxExposure", "max_exposure"}, {"spec.rateLimit.perMinute", "per_minute"}, {"spec.rateLimit.burst", "burst"},
	{"spec.copyFrom.ratio", "copy_ratio"}, {"spec.copyFrom", "copy_master"}, {"spec.dca.maxLevels", "dca_max_levels"},
	{"spec.positionSize", "position_size"}, {"spec.dedupeWindow", "dedupe_window"}, {"spec.maxSignalAge", "max_signal_age"},
	{"spec.strategy", "strategy"}, {"spec.leverage", "leverage"}, {"spec.stopLoss", "stop_loss"},
	{"spec.takeProfit", "take_profit"}, {"spec.symbol", "symbol"}, {"spec.market", "market"},
	{"account.name", "venue"}, {"metadata.name", "name"}, {"name", "name"},
}

// placeRefusal puts each cause of an INVALID_PARAMETER refusal ("path: message; ...") next
// to its field; the words of the whole refusal go above the form.
func placeRefusal(bad fieldErrors, e *errs.Error) {
	if e.Code != errs.InvalidParameter {
		return
	}
	for _, part := range strings.Split(e.Message, "; ") {
		for _, m := range specFieldOf {
			if rest, ok := strings.CutPrefix(part, m.path); ok && (rest == "" || rest[0] == ':' || rest[0] == '.' || rest[0] == '[') {
				if bad[m.field] == "" {
					bad[m.field] = strings.TrimLeft(strings.TrimPrefix(rest, ":"), " ")
				}
				break
			}
		}
	}
}

// botFormPage is the create and edit form's data.
type botFormPage struct {
	Form botForm
	// ID is the edited bot's (empty on create).
	ID string
	// ReadOnly: a GitOps bot, shown but not changeable here.
	ReadOnly bool
	Bad      fieldErrors
	// PaperAccounts and Connections are the viewer's accounts a bot made here can trade
	// on: those of their own namespace.
	PaperAccounts []string
	Connections   []credentials.Connection
	LiveAllowed   bool
	TierWords     string
	// Bots are the viewer's bots, masters to copy.
	Bots       []registry.Bot
	Families   []familyView
	Timeframes []string
	// DefaultAccount is the paper account a bot without one trades on (made on first use).
	DefaultAccount string
}

// familyView is a strategy family's parameters on the form.
type familyView struct {
	Name   string
	Params []paramView
}

type paramView struct {
	Field, Name, Value string
	// Default is the family's default, shown as the placeholder; Min and Max the range.
	Default, Min, Max string
}

// formPage assembles the form's data around f.
func (d *Dashboard) formPage(r *http.Request, f botForm, id string, bad fieldErrors) (botFormPage, error) {
	u := viewerOf(r).User
	p := botFormPage{Form: f, ID: id, Bad: bad, LiveAllowed: liveAllowed(u), TierWords: tierWords(u),
		Timeframes: marketdata.Timeframes(), DefaultAccount: fleet.DefaultPaperAccount}
	ns := fleet.NamespaceFor(u.ID)
	owner := fleetCaller(r).Email
	accts, err := d.accounts.ListByOwner(r.Context(), owner)
	if err != nil {
		return p, err
	}
	for _, a := range accts {
		if a.Namespace == ns && a.Name != fleet.DefaultPaperAccount {
			p.PaperAccounts = append(p.PaperAccounts, a.Name)
		}
	}
	// The form's own choice stays choosable, wherever it is (fleet says if it cannot serve).
	if f.PaperAccount != "" && f.PaperAccount != fleet.DefaultPaperAccount && !slices.Contains(p.PaperAccounts, f.PaperAccount) {
		p.PaperAccounts = append(p.PaperAccounts, f.PaperAccount)
	}
	conns, err := credentials.NewConnections(d.o.Redis).ListByOwner(r.Context(), owner)
	if err != nil {
		return p, err
	}
	for _, c := range conns {
		if c.Namespace == ns {
			p.Connections = append(p.Connections, c)
		}
	}
	if p.Bots, err = d.ownBots(r.Context(), fleetCaller(r).Email, d.o.Now()); err != nil {
		return p, err
	}
	for _, fam := range strategy.Families() {
		fv := familyView{Name: string(fam)}
		def := fam.Defaults()
		for _, rg := range fam.Ranges() {
			field := paramField(fam, rg.Name)
			fv.Params = append(fv.Params, paramView{Field: field, Name: rg.Name, Value: f.Params[field],
				Default: fmtParam(def.Get(rg.Name)), Min: fmtParam(rg.Min), Max: fmtParam(rg.Max)})
		}
		p.Families = append(p.Families, fv)
	}
	return p, nil
}

// fmtParam writes a strategy range's bound or default (whole numbers and short decimals
// such as 0.5) as the form shows it.
func fmtParam(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// showForm renders the form page with status.
func (d *Dashboard) showForm(w http.ResponseWriter, r *http.Request, status int, title string, p botFormPage, errText string) {
	d.render(w, r, status, "botform", Page{Title: title, Nav: "bots", Viewer: viewerOf(r), Error: errText, Data: p})
}

func (d *Dashboard) handleNewBot(w http.ResponseWriter, r *http.Request) {
	if d.fleetOf(w, r) == nil {
		return
	}
	p, err := d.formPage(r, newBotForm(), "", nil)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.showForm(w, r, http.StatusOK, "New bot", p, "")
}

// handleCreateBot creates a bot from the form in the viewer's namespace (fleet.Create) and
// waits a moment for its projection; a refusal shows the form again with the values kept.
func (d *Dashboard) handleCreateBot(w http.ResponseWriter, r *http.Request) {
	fl := d.fleetOf(w, r)
	if fl == nil {
		return
	}
	f := readBotForm(r)
	fields, bad := d.specFields(r, f)
	if f.Name == "" {
		bad["name"] = "give the bot a name: lower-case letters, digits, '-' and '.'"
	}
	var err error
	var created *tradingv1.SignalBot
	if len(bad) > 0 {
		err = errs.New(errs.InvalidParameter, "check the fields marked below")
	} else {
		var spec tradingv1.SignalBotSpec
		if spec, err = fleet.SpecOf(fields); err == nil {
			created, err = fl.Create(r.Context(), fleetCaller(r), f.Name, spec)
		}
	}
	d.recordAction(r, "create_bot", map[string]any{"name": f.Name, "spec": fields}, err)
	if err != nil {
		d.formRefused(w, r, "New bot", f, "", bad, err)
		return
	}
	done := "pending"
	if _, ok := fl.WaitProjected(r.Context(), fleetCaller(r), string(created.UID), createWait); ok {
		done = "created"
	}
	redirect(w, r, "/dashboard/bots?done="+done)
}

// formRefused shows the form again with f's values, the refusal err in words above it and
// its causes by field.
func (d *Dashboard) formRefused(w http.ResponseWriter, r *http.Request, title string, f botForm, id string, bad fieldErrors, err error) {
	status, words, ok := refusal(err)
	if !ok {
		d.failPage(w, r, err)
		return
	}
	var e *errs.Error
	if errors.As(err, &e) {
		placeRefusal(bad, e)
	}
	p, ferr := d.formPage(r, f, id, bad)
	if ferr != nil {
		d.failPage(w, r, ferr)
		return
	}
	p.ReadOnly = e != nil && e.Code == errs.ManagedByGitOps
	d.showForm(w, r, status, title, p, words)
}

// editable reads the viewer's bot id for the edit form: its stored spec, and whether a
// GitOps repository manages it.
func (d *Dashboard) editable(r *http.Request, id string) (*tradingv1.SignalBot, error) {
	return d.o.APIs.Fleet.Object(r.Context(), fleetCaller(r), id)
}

func (d *Dashboard) handleEditBot(w http.ResponseWriter, r *http.Request) {
	if d.fleetOf(w, r) == nil {
		return
	}
	id := chi.URLParam(r, "id")
	obj, err := d.editable(r, id)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	own, err := d.ownBots(r.Context(), fleetCaller(r).Email, d.o.Now())
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	p, err := d.formPage(r, formOf(obj, own), id, nil)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	var words string
	if !fleet.IsManaged(obj) {
		p.ReadOnly, words = true, ErrorInWords(fleet.GitOpsRefusal(id))
	}
	d.showForm(w, r, http.StatusOK, "Edit "+obj.Name, p, words)
}

// handleUpdateBot applies the form to the viewer's bot as a merge patch of its spec
// (fleet.Update): every field of the form is sent, an empty one as null so that it takes
// its default, and the fields the form does not show (suspend) stay as they are.
func (d *Dashboard) handleUpdateBot(w http.ResponseWriter, r *http.Request) {
	fl := d.fleetOf(w, r)
	if fl == nil {
		return
	}
	id := chi.URLParam(r, "id")
	f := readBotForm(r)
	fields, bad := d.specFields(r, f)
	var err error
	if len(bad) > 0 {
		err = errs.New(errs.InvalidParameter, "check the fields marked below")
	} else {
		var patch []byte
		if patch, err = json.Marshal(fields); err == nil {
			_, err = fl.Update(r.Context(), fleetCaller(r), id, patch)
		}
	}
	d.recordAction(r, "update_bot", map[string]any{"botId": id, "spec": fields}, err)
	var e *errs.Error
	if errors.As(err, &e) && e.Code == errs.NotFound {
		d.failPage(w, r, err)
		return
	}
	if err != nil {
		if obj, oerr := d.editable(r, id); oerr == nil {
			f.Name = obj.Name
		}
		d.formRefused(w, r, "Edit bot", f, id, bad, err)
		return
	}
	redirect(w, r, "/dashboard/bots?done=updated")
}
