// Package route decides where an event goes: to its user (a bot's owner), then to each of
// the user's channels that wants it: their linked Telegram chat when their preferences
// want the event, and each webhook destination (not disabled) whose selection names its
// kind.
package route

import (
	"context"
	"errors"
	"time"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/expiring"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/registry"
)

// Fresh is how long a user's settings and a bot's owner are reused: a change of
// preferences reaches events read this long after it at most.
const Fresh = 2 * time.Second

// Owner is a bot's user and name (ok false: the bot is gone, and so is its event).
type Owner func(ctx context.Context, botID string) (user, name string, ok bool, err error)

// Router routes events. It is one goroutine's (the feed's).
type Router struct {
	Settings *settings.Store
	Owner    Owner
	Now      func() time.Time

	owners *expiring.Cache[owner]
	users  *expiring.Cache[channels]
}

type owner struct {
	user, name string
	ok         bool
}

// channels are one user's settings as routing needs them.
type channels struct {
	prefs    notify.Prefs
	chat     bool
	webhooks []settings.Webhook
}

func (r *Router) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Route is e's rows: one per channel of its user that wants it.
func (r *Router) Route(ctx context.Context, e notify.Event) ([]outbox.Row, error) {
	if r.owners == nil {
		r.owners, r.users = expiring.New[owner](100000), expiring.New[channels](100000)
	}
	now := r.now()
	if e.User == "" {
		o, err := r.ownerOf(ctx, e.BotID, now)
		if err != nil || !o.ok {
			return nil, err
		}
		e.User, e.Bot = o.user, o.name
	}
	c, err := r.channelsOf(ctx, e.User, now)
	if err != nil {
		return nil, err
	}
	var rows []outbox.Row
	if c.chat && c.prefs.Wants(e) {
		rows = append(rows, outbox.Row{Channel: outbox.Telegram, User: e.User, Event: e})
	}
	for _, w := range c.webhooks {
		if w.DisabledAt == nil && w.Wants(e.Kind) {
			rows = append(rows, outbox.Row{Channel: outbox.WebhookChannel(w.ID), User: e.User, Event: e})
		}
	}
	return rows, nil
}

func (r *Router) ownerOf(ctx context.Context, bot string, now time.Time) (owner, error) {
	if o, ok := r.owners.Get(bot, now); ok {
		return o, nil
	}
	var o owner
	var err error
	if o.user, o.name, o.ok, err = r.Owner(ctx, bot); err != nil {
		return o, err
	}
	r.owners.Put(bot, o, now.Add(Fresh), now)
	return o, nil
}

func (r *Router) channelsOf(ctx context.Context, user string, now time.Time) (channels, error) {
	if c, ok := r.users.Get(user, now); ok {
		return c, nil
	}
	var c channels
	var err error
	if c.prefs, err = r.Settings.Prefs(ctx, user); err != nil {
		return c, err
	}
	if _, c.chat, err = r.Settings.Chat(ctx, user); err != nil {
		return c, err
	}
	if c.webhooks, err = r.Settings.Webhooks(ctx, user); err != nil {
		return c, err
	}
	r.users.Put(user, c, now.Add(Fresh), now)
	return c, nil
}

// OwnerOf is the Owner of the running service: the bot's projection names its owner's
// email, and that account is the user (a bot gone, or an owner without an account, has no
// one to tell).
func OwnerOf(bots *registry.Registry, users *auth.Users) Owner {
	return func(ctx context.Context, id string) (string, string, bool, error) {
		b, err := bots.Get(ctx, id)
		if errors.Is(err, registry.ErrNotFound) {
			return "", "", false, nil
		}
		if err != nil {
			return "", "", false, err
		}
		u, err := users.ByEmail(ctx, b.Owner)
		if errors.Is(err, auth.ErrNotFound) {
			return "", "", false, nil
		}
		if err != nil {
			return "", "", false, err
		}
		return u.ID, b.Name, true, nil
	}
}
