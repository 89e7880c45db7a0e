package registry

import (
	"context"

	"github.com/sigops/sigops/runtime/store"
)

// AddSymbols records symbols (BASE/QUOTE) that a connected exchange trades, so that webhookd,
// which holds no exchange client, accepts them at the door.
func (r *Registry) AddSymbols(ctx context.Context, symbols []string) error {
	if len(symbols) == 0 {
		return nil
	}
	args := make([]any, len(symbols))
	for i, s := range symbols {
		args[i] = s
	}
	return r.rdb.SAdd(ctx, store.KnownSymbols(), args...).Err()
}

// Symbols lists the symbols recorded by AddSymbols.
func (r *Registry) Symbols(ctx context.Context) ([]string, error) {
	return r.rdb.SMembers(ctx, store.KnownSymbols()).Result()
}
