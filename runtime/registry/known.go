package registry

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sigops/sigops/runtime/signal"
)

// KnownSymbols keeps the symbol index signals are resolved against (webhookd's intake,
// mcpd's and authd's trading through userapi): a fixed base list (the paper catalogue)
// plus the symbols validated exchange connections recorded in Redis (AddSymbols),
// refreshed in the background so that the hot path never waits on it. It lives beside
// the recorded symbols so that every daemon shares it without depending on another.
type KnownSymbols struct {
	base    []string
	current atomic.Pointer[signal.Symbols]
}

// NewKnownSymbols starts with the base list only.
func NewKnownSymbols(base []string) *KnownSymbols {
	k := &KnownSymbols{base: slices.Clone(base)}
	k.current.Store(signal.NewSymbols(k.base))
	return k
}

// Get is the current index (Options.Symbols).
func (k *KnownSymbols) Get() *signal.Symbols { return k.current.Load() }

// Refresh reads the recorded symbols once.
func (k *KnownSymbols) Refresh(ctx context.Context, reg *Registry) error {
	more, err := reg.Symbols(ctx)
	if err != nil {
		return err
	}
	k.current.Store(signal.NewSymbols(append(slices.Clone(k.base), more...)))
	return nil
}

// Run refreshes every period until ctx ends; a failed refresh keeps the last index.
func (k *KnownSymbols) Run(ctx context.Context, reg *Registry, period time.Duration, log *slog.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if err := k.Refresh(ctx, reg); err != nil && ctx.Err() == nil {
			log.Warn("cannot refresh the known symbols; keeping the last list", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
