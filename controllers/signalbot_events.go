package controllers

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// botEvents turns runtime pause changes (a bot ID published on store.BotEvents by
// runtime/registry's pause API, whoever paused or resumed the bot) into reconcile requests,
// so status shows a pause within moments instead of at the next resync. It runs as a
// manager Runnable.
type botEvents struct {
	rdb      redis.UniversalClient
	registry *registry.Registry
	out      chan event.GenericEvent
}

func newBotEvents(rdb redis.UniversalClient) *botEvents {
	return &botEvents{rdb: rdb, registry: registry.New(rdb), out: make(chan event.GenericEvent, 1024)}
}

// Start subscribes until ctx ends. A dropped subscription is re-established by go-redis;
// an event lost meanwhile is only a late status update (the intake reads pauses from
// Redis itself, so trading is never affected).
func (b *botEvents) Start(ctx context.Context) error {
	sub := b.rdb.Subscribe(ctx, store.BotEvents())
	defer sub.Close()
	msgs := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			bot, err := b.registry.Get(ctx, m.Payload)
			if errors.Is(err, registry.ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				log.FromContext(ctx).Error(err, "bot event: cannot read the bot", "botId", m.Payload)
				continue
			}
			obj := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: bot.Namespace, Name: bot.Name}}
			select {
			case b.out <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
