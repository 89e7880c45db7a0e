package auth

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// ReasonDowngrade is the runtime pause of a live bot whose owner lost live trading.
const ReasonDowngrade = "Downgrade"

// LiveBotGate pauses and resumes an owner's live bots (Account.Kind "exchange") when the
// owner's tier loses or regains live trading. The pause is the runtime pause of the bot's
// hash (registry.FieldPause = Downgrade, registry.FieldPauseUntil = 0, until lifted), read
// by webhookd's intake and the executor; every change is published on store.BotEvents() so
// the manager mirrors it into the SignalBot's status.
//
// A Downgrade pause replaces any other runtime pause (Errors, Risk): a Risk pause ends by
// itself and an Errors pause can be resumed, and neither may let a live bot trade for an
// owner without live trading. An upgrade lifts only Downgrade pauses.
type LiveBotGate struct{ rdb redis.UniversalClient }

// NewLiveBotGate returns the gate on rdb.
func NewLiveBotGate(rdb redis.UniversalClient) LiveBotGate { return LiveBotGate{rdb: rdb} }

var downgradePauseScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = redis.call('HMGET', KEYS[1], ARGV[1], ARGV[2])
if cur[1] == ARGV[3] and cur[2] == '0' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3], ARGV[2], '0')
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
`)

var downgradeResumeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[3] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
`)

// Pause pauses every live bot of owner (an email) with reason Downgrade and returns the IDs
// it changed. Running it again changes nothing.
func (g LiveBotGate) Pause(ctx context.Context, owner string) ([]string, error) {
	return g.each(ctx, owner, downgradePauseScript)
}

// Resume lifts the Downgrade pause of every live bot of owner and returns the IDs it changed.
func (g LiveBotGate) Resume(ctx context.Context, owner string) ([]string, error) {
	return g.each(ctx, owner, downgradeResumeScript)
}

func (g LiveBotGate) each(ctx context.Context, owner string, script *redis.Script) ([]string, error) {
	reg := registry.New(g.rdb)
	ids, err := reg.OwnerBots(ctx, owner)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, id := range ids {
		bot, err := reg.Get(ctx, id)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return changed, err
		}
		if bot.Account.Kind != registry.AccountExchange {
			continue
		}
		n, err := script.Run(ctx, g.rdb, []string{store.Bot(id)}, registry.FieldPause, registry.FieldPauseUntil,
			ReasonDowngrade, store.BotEvents(), id).Int()
		if err != nil {
			return changed, err
		}
		if n == 1 {
			changed = append(changed, id)
		}
	}
	return changed, nil
}
