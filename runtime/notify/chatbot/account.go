package chatbot

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// telegramClient names the chat in the audit journal, as the dashboard names itself.
const telegramClient = "Telegram"

// Runtime is the Account of the running service: the same stores the dashboard and mcpd
// use, each action journaled on the user's audit journal (channel telegram).
type Runtime struct {
	Users     *auth.Users
	Approvals *approval.Store
	Audit     *audit.Journal
	Bots      *registry.Registry
	Book      *position.Book
	Analytics *analytics.Analytics
	// Paper gives the free balances of the user's paper accounts (nil: none shown).
	Paper *paper.Accounts
	Now   func() time.Time
}

func (a *Runtime) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Linked implements Account.
func (a *Runtime) Linked(ctx context.Context, user string, linked bool) error {
	return a.Users.SetTelegramLinked(ctx, user, linked)
}

// Decide implements Account: approval.Store's Approve or Reject, journaled.
func (a *Runtime) Decide(ctx context.Context, user, signal string, approve bool) (string, error) {
	var (
		ap  approval.Approval
		err error
	)
	tool, outcome := "reject_order", "rejected"
	if approve {
		tool, outcome = "approve_order", "approved: the order is queued"
		ap, err = a.Approvals.Approve(ctx, user, signal)
	} else {
		ap, err = a.Approvals.Reject(ctx, user, signal)
	}
	a.record(ctx, user, tool, map[string]any{"signalId": signal, "app": ap.ClientName, "bot": ap.BotName}, err)
	if err == nil && ap.State == approval.Refused {
		outcome = "refused by the app's policy: " + ap.Error
	}
	return outcome, err
}

func (a *Runtime) record(ctx context.Context, user, tool string, args any, err error) {
	raw, _ := json.Marshal(args)
	_ = a.Audit.Record(context.WithoutCancel(ctx), audit.Entry{UserID: user, ClientName: telegramClient,
		Channel: audit.ChannelTelegram, Tool: tool, Arguments: raw, Outcome: audit.OutcomeOf(err)})
}

// bots are user's bots with their pauses applied, by name.
func (a *Runtime) bots(ctx context.Context, user string) ([]registry.Bot, error) {
	u, err := a.Users.Get(ctx, user)
	if err != nil {
		return nil, err
	}
	bots, err := a.Bots.AllOwned(ctx, u.Email)
	if err != nil {
		return nil, err
	}
	if err := a.Bots.WithPauses(ctx, bots, a.now()); err != nil {
		return nil, err
	}
	sort.Slice(bots, func(i, j int) bool { return bots[i].Namespace+"/"+bots[i].Name < bots[j].Namespace+"/"+bots[j].Name })
	return bots, nil
}

// Days is each of user's bots' UTC day so far (state, realised PnL from runtime/analytics,
// the dashboard's figure, and open positions) and the day: what /status and the daily
// summary show.
func (a *Runtime) Days(ctx context.Context, user string) ([]notify.BotDay, string, error) {
	q, err := analytics.ParseQuery(analytics.PeriodToday, "", "", "", a.now())
	if err != nil {
		return nil, "", err
	}
	bots, err := a.bots(ctx, user)
	if err != nil {
		return nil, "", err
	}
	days := make([]notify.BotDay, 0, len(bots))
	for _, b := range bots {
		state := b.Availability
		if b.PausedReason != "" {
			state += ": " + b.PausedReason
		}
		pos, err := a.Book.List(ctx, b.ID)
		if err != nil {
			return nil, "", err
		}
		rep, err := a.Analytics.Bot(ctx, b, q)
		if err != nil {
			return nil, "", err
		}
		d := notify.BotDay{Bot: b.Name, State: state, PnL: rep.Metrics.TotalPnL}
		for _, p := range pos {
			d.Open = append(d.Open, fmt.Sprintf("%s %s %s", p.Side, p.Size.String(), p.Symbol))
		}
		days = append(days, d)
	}
	return days, q.To.String(), nil
}

// Summary is user's DailySummary event as of now: their bots' day and their paper
// accounts' free balances (an exchange account's balance needs a call to the exchange,
// and is on the dashboard's portfolio).
func (a *Runtime) Summary(ctx context.Context, user string) (notify.Event, error) {
	days, day, err := a.Days(ctx, user)
	if err != nil {
		return notify.Event{}, err
	}
	e := notify.Event{Kind: notify.DailySummary, User: user, Summary: days, Day: day}
	if a.Paper == nil {
		return e, nil
	}
	u, err := a.Users.Get(ctx, user)
	if err != nil {
		return e, err
	}
	accts, err := a.Paper.ListByOwner(ctx, u.Email)
	for _, ac := range accts {
		e.Balances = append(e.Balances, notify.Balance{Account: ac.Name, Currency: "USDT", Amount: httpapi.Number{Decimal: ac.Balance}})
	}
	return e, err
}

// Status implements Account: the daily summary's text, now.
func (a *Runtime) Status(ctx context.Context, user string) (string, error) {
	e, err := a.Summary(ctx, user)
	if err != nil {
		return "", err
	}
	return notify.Text(notify.Message{Events: []notify.Event{e}}), nil
}

// Pause implements Account: a manual pause of the user's bot named name ("namespace/name"
// when two of the user's bots share a name), journaled as the dashboard's pause_bot.
func (a *Runtime) Pause(ctx context.Context, user, name string) (string, error) {
	bots, err := a.bots(ctx, user)
	if err != nil {
		return "", err
	}
	var found []registry.Bot
	for _, b := range bots {
		if b.Name == name || b.Namespace+"/"+b.Name == name {
			found = append(found, b)
		}
	}
	switch {
	case len(found) == 0:
		err = errs.New(errs.NotFound, "you have no bot named %s", name)
	case len(found) > 1:
		err = errs.New(errs.InvalidParameter, "several of your bots are named %s: give namespace/name", name)
	default:
		_, err = a.Bots.Pause(ctx, found[0].ID, registry.Pause{Reason: registry.PauseManual}, a.now())
	}
	args := map[string]any{"bot": name}
	if len(found) == 1 {
		args["botId"] = found[0].ID
	}
	a.record(ctx, user, "pause_bot", args, err)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s is paused: it takes no new entries. Resume it on the dashboard.", found[0].Name), nil
}
