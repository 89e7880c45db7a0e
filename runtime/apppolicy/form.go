package apppolicy

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/registry"
)

// FromForm reads a policy from the fields the consent page and Connected apps share:
// orders_per_hour (absent: the default), order_notional and day_notional (USDT; absent:
// the default, blank: no cap), bots_mode ("chosen" with one "bot" field per bot ID, else
// every bot), live ("yes") and approval ("all", "above" with approve_above in USDT, or
// "none"; absent: the default, every live entry). The bots are checked to be owner's (registry);
// refusals are INVALID_PARAMETER with a message a person can act on.
func FromForm(ctx context.Context, form url.Values, reg *registry.Registry, owner string) (Policy, error) {
	p := DefaultPolicy()
	p.Live = form.Get("live") == "yes"
	if v := strings.TrimSpace(form.Get("orders_per_hour")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			n = 0
		}
		p.OrdersPerHour = n
	}
	for _, f := range []struct {
		field, name string
		to          *decimal.Decimal
	}{{"order_notional", "orderNotional", &p.OrderNotional.Decimal}, {"day_notional", "dayNotional", &p.DayNotional.Decimal}} {
		v, ok := form[f.field]
		if !ok {
			continue // a form without the field (an older page): the default
		}
		text := strings.TrimSpace(strings.Join(v, ""))
		if text == "" {
			*f.to = decimal.Zero // left blank: no cap
			continue
		}
		d, err := decimal.NewFromString(text)
		if err != nil {
			return p, errs.New(errs.InvalidParameter, "%s must be an amount in USDT, like 100 or 250.5, or blank for no limit", f.name).
				WithDetails(map[string]any{"parameter": f.name})
		}
		*f.to = d
	}
	switch form.Get("approval") {
	case "all":
		p.Approve, p.ApproveAbove = true, httpapi.Num(decimal.Zero)
	case "above":
		d, err := decimal.NewFromString(strings.TrimSpace(form.Get("approve_above")))
		if err != nil || !d.IsPositive() {
			return p, errs.New(errs.InvalidParameter, "the approval threshold must be an amount in USDT above 0, like 50").
				WithDetails(map[string]any{"parameter": "approveAbove"})
		}
		p.Approve, p.ApproveAbove = true, httpapi.Num(d)
	case "none":
		p.Approve = false
	}
	if form.Get("bots_mode") == "chosen" {
		p.Bots = form["bot"]
		if len(p.Bots) == 0 {
			return p, errs.New(errs.InvalidParameter, "choose at least one bot, or allow all of them").
				WithDetails(map[string]any{"parameter": "bots"})
		}
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	if len(p.Bots) > 0 {
		owned, err := reg.OwnedBots(ctx, owner, p.Bots)
		if err != nil {
			return p, err
		}
		if len(owned) != len(p.Bots) {
			return p, errs.New(errs.InvalidParameter, "a bot chosen is not one of yours").WithDetails(map[string]any{"parameter": "bots"})
		}
	}
	return p, nil
}

// Words is the policy as a person reads it in Connected apps and on the consent page.
func (p Policy) Words(names map[string]string) []string {
	bots := "all your bots"
	if len(p.Bots) > 0 {
		list := make([]string, len(p.Bots))
		for i, id := range p.Bots {
			if n, ok := names[id]; ok {
				list[i] = n
			} else {
				list[i] = id + " (gone)"
			}
		}
		bots = "only " + strings.Join(list, ", ")
	}
	venue := "paper accounts only"
	if p.Live {
		venue = "real money on your exchange accounts, when its scope is mcp:live"
	}
	words := []string{"Bots: " + bots, "Trades on: " + venue,
		"At most " + strconv.Itoa(p.OrdersPerHour) + " orders an hour (closing is never refused)"}
	if p.Live {
		words = append(words, "Real money in one order (or one Strategy Lab charge): "+capWords(p.OrderNotional.Decimal)+
			"; in one UTC day: "+capWords(p.DayNotional.Decimal)+" (closing is never refused)", "Your approval: "+p.approvalWords())
	}
	return words
}

// approvalWords says which live entries wait for the user's approval.
func (p Policy) approvalWords() string {
	switch {
	case !p.Approve:
		return "not asked; its live entries are placed at once"
	case p.ApproveAbove.IsZero():
		return "asked for every live entry before it is placed (you approve it in the dashboard)"
	}
	return "asked for live entries above " + p.ApproveAbove.String() + " USDT before they are placed (you approve them in the dashboard)"
}

// ApprovalMode is the approval radio's value on the forms: all, above or none.
func (p Policy) ApprovalMode() string {
	switch {
	case !p.Approve:
		return "none"
	case p.ApproveAbove.IsZero():
		return "all"
	}
	return "above"
}

// capWords is a notional cap as a person reads it.
func capWords(d decimal.Decimal) string {
	if d.IsZero() {
		return "no limit"
	}
	return "at most " + d.String() + " USDT"
}

// OrderCap and DayCap are the caps as the forms show them: blank for no cap.
func (p Policy) OrderCap() string { return capField(p.OrderNotional.Decimal) }

// DayCap: see OrderCap.
func (p Policy) DayCap() string { return capField(p.DayNotional.Decimal) }

func capField(d decimal.Decimal) string {
	if d.IsZero() {
		return ""
	}
	return d.String()
}
