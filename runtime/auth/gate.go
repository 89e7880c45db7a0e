package auth

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/registry"
)

// LiveBotGate pauses and resumes an owner's live bots (Account.Kind "exchange") when the
// owner's tier loses or regains live trading, through the registry's pause API: a Downgrade
// pause until lifted, which replaces any Errors or Risk pause (see registry.Pause), read by
// webhookd's intake and the executor and mirrored by the manager into the SignalBot's status.
// An upgrade lifts only Downgrade pauses.
//
// It acts on one bot at a time (one bot's keys per call) after reading the owner's bot set,
// and each step can be repeated: a run cut short by a crash is finished by running it again
// (SetTier does on every call), and bots already done are left as they are.
type LiveBotGate struct{ reg *registry.Registry }

// NewLiveBotGate returns the gate on rdb.
func NewLiveBotGate(rdb redis.UniversalClient) LiveBotGate {
	return LiveBotGate{reg: registry.New(rdb)}
}

var downgrade = registry.Pause{Reason: registry.PauseDowngrade}

// Pause pauses every live bot of owner (an email) with reason Downgrade and returns the IDs
// it changed. Running it again changes nothing.
func (g LiveBotGate) Pause(ctx context.Context, owner string) ([]string, error) {
	return g.each(ctx, owner, func(id string) (bool, error) {
		return g.reg.Pause(ctx, id, downgrade, time.Now())
	})
}

// Resume lifts the Downgrade pause of every live bot of owner and returns the IDs it changed.
func (g LiveBotGate) Resume(ctx context.Context, owner string) ([]string, error) {
	return g.each(ctx, owner, func(id string) (bool, error) {
		return g.reg.Resume(ctx, id, downgrade)
	})
}

func (g LiveBotGate) each(ctx context.Context, owner string, apply func(id string) (bool, error)) ([]string, error) {
	ids, err := g.reg.OwnerBots(ctx, owner)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, id := range ids {
		bot, err := g.reg.Get(ctx, id)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return changed, err
		}
		if bot.Account.Kind != registry.AccountExchange {
			continue
		}
		ok, err := apply(id)
		if err != nil {
			return changed, err
		}
		if ok {
			changed = append(changed, id)
		}
	}
	return changed, nil
}
