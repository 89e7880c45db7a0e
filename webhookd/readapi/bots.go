package readapi

import (
	"context"
	"errors"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// errBotNotFound is the one answer for a bot that does not exist, was deleted, or is
// another user's: the same code, message and status, after the same single read, so that
// neither the body nor the work done tells a caller which bot IDs exist.
var errBotNotFound = errs.New(errs.NotFound, "bot not found")

// ownedBot is the caller's bot botID, or errBotNotFound.
func (a *API) ownedBot(ctx context.Context, c Caller, botID string) (registry.Bot, error) {
	bot, err := a.o.Bots.Get(ctx, botID)
	if errors.Is(err, registry.ErrNotFound) {
		return registry.Bot{}, errBotNotFound
	}
	if err != nil {
		return registry.Bot{}, err
	}
	if !emails.Same(bot.Owner, c.Email) {
		return registry.Bot{}, errBotNotFound
	}
	return bot, nil
}
