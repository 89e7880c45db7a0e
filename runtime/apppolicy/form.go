package apppolicy

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// FromForm reads a policy from the fields the consent page and Connected apps share:
// orders_per_hour (absent: the default), bots_mode ("chosen" with one "bot" field per bot
// ID, else every bot) and live ("yes"). The bots are checked to be owner's (registry);
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
	return []string{"Bots: " + bots, "Trades on: " + venue, "At most " + strconv.Itoa(p.OrdersPerHour) + " orders an hour (closing is never refused)"}
}
