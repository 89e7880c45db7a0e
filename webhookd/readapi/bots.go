package readapi

import (
	"context"

	"github.com/sigops/sigops/runtime/registry"
)

// ownedBot is the caller's bot botID, or registry.ErrBotNotFound (the answer mcpd gives too).
func (a *API) ownedBot(ctx context.Context, c Caller, botID string) (registry.Bot, error) {
	return registry.Owned(ctx, a.o.Bots, botID, c.Email)
}
