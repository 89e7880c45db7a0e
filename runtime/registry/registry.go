package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Fields of the Redis hashes this package writes.
const (
	fieldConfig    = "config"
	fieldWebhook   = "webhook"
	fieldOwner     = "owner"
	fieldBot       = "bot"
	fieldDeletedAt = "deletedAt"
)

var (
	// ErrNotFound: no bot (or webhook) by that key.
	ErrNotFound = errors.New("not found")
	// ErrWebhookInUse: the webhook ID already routes to another live bot (a copied Secret).
	// Projecting it would let one bot's URL trade on another, so it is refused.
	ErrWebhookInUse = errors.New("webhook ID already belongs to another bot")
)

// maxTxRetries bounds optimistic-transaction retries; a conflict means another writer
// touched the same bot, which with one reconciler per bot is rare.
const maxTxRetries = 10

// Registry reads and writes bots in Redis.
type Registry struct {
	rdb redis.UniversalClient
}

// New returns a Registry on rdb.
func New(rdb redis.UniversalClient) *Registry { return &Registry{rdb: rdb} }

// Project writes bot and routes webhookHash to it, in one transaction: a previous webhook
// hash of the bot stops resolving in the same step, so a regenerated URL dies at once.
func (r *Registry) Project(ctx context.Context, bot Bot, webhookHash string) error {
	if bot.ID == "" || webhookHash == "" {
		return fmt.Errorf("project bot: empty id or webhook hash")
	}
	data, err := json.Marshal(bot)
	if err != nil {
		return err
	}
	botKey, hookKey := store.Bot(bot.ID), store.Webhook(webhookHash)
	return r.retry(ctx, func(tx *redis.Tx) error {
		prev, err := tx.HMGet(ctx, botKey, fieldWebhook, fieldOwner).Result()
		if err != nil {
			return err
		}
		oldHash, oldOwner := asString(prev[0]), asString(prev[1])
		route, err := tx.HMGet(ctx, hookKey, fieldBot, fieldDeletedAt).Result()
		if err != nil {
			return err
		}
		if other := asString(route[0]); other != "" && other != bot.ID && asString(route[1]) == "" {
			return ErrWebhookInUse
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, botKey, append([]any{fieldConfig, data, fieldWebhook, webhookHash, fieldOwner, bot.Owner}, gateFields(bot)...)...)
			// Replace whatever was there (a tombstone of a restored ID included).
			p.Del(ctx, hookKey)
			p.HSet(ctx, hookKey, fieldBot, bot.ID)
			if oldHash != "" && oldHash != webhookHash {
				p.Del(ctx, store.Webhook(oldHash))
			}
			if oldOwner != "" && oldOwner != bot.Owner {
				p.SRem(ctx, store.OwnerBots(oldOwner), bot.ID)
			}
			p.SAdd(ctx, store.OwnerBots(bot.Owner), bot.ID)
			p.SAdd(ctx, store.AllBots(), bot.ID)
			return nil
		})
		return err
	}, botKey, hookKey)
}

// Remove deletes a bot's runtime state and turns its webhook routes into tombstones that
// answer BOT_DELETED for ttl. extraHashes are webhook hashes known from elsewhere (the
// bot's Secret) in case the projection never happened.
func (r *Registry) Remove(ctx context.Context, id string, ttl time.Duration, extraHashes ...string) error {
	botKey := store.Bot(id)
	return r.retry(ctx, func(tx *redis.Tx) error {
		prev, err := tx.HMGet(ctx, botKey, fieldWebhook, fieldOwner).Result()
		if err != nil {
			return err
		}
		hashes := uniqueNonEmpty(append([]string{asString(prev[0])}, extraHashes...))
		var tombstone []string
		for _, h := range hashes {
			// Only this bot's own routes become its tombstones.
			owner, err := tx.HGet(ctx, store.Webhook(h), fieldBot).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if owner == "" || owner == id {
				tombstone = append(tombstone, h)
			}
		}
		now := strconv.FormatInt(time.Now().UnixMilli(), 10)
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, botKey)
			for _, h := range tombstone {
				k := store.Webhook(h)
				p.HSet(ctx, k, fieldBot, id, fieldDeletedAt, now)
				p.Expire(ctx, k, ttl)
			}
			if o := asString(prev[1]); o != "" {
				p.SRem(ctx, store.OwnerBots(o), id)
			}
			p.SRem(ctx, store.AllBots(), id)
			return nil
		})
		return err
	}, botKey)
}

// Route is where a webhook hash leads.
type Route struct {
	BotID   string
	Deleted bool
}

// Resolve maps a webhook hash to its bot. ErrNotFound means the ID never existed or was
// regenerated (401 INVALID_WEBHOOK); Deleted means the bot is gone (403 BOT_DELETED).
func (r *Registry) Resolve(ctx context.Context, webhookHash string) (Route, error) {
	v, err := r.rdb.HMGet(ctx, store.Webhook(webhookHash), fieldBot, fieldDeletedAt).Result()
	if err != nil {
		return Route{}, err
	}
	id := asString(v[0])
	if id == "" {
		return Route{}, ErrNotFound
	}
	return Route{BotID: id, Deleted: asString(v[1]) != ""}, nil
}

// Get reads one projected bot.
func (r *Registry) Get(ctx context.Context, id string) (Bot, error) {
	return GetLater(ctx, r.rdb, id)()
}

// GetLater queues Get's read on c (a pipeline) and returns the decoder to call once the
// pipeline has run, so that the read can share a round trip with others.
func GetLater(ctx context.Context, c redis.Cmdable, id string) func() (Bot, error) {
	cmd := c.HGet(ctx, store.Bot(id), fieldConfig)
	return func() (Bot, error) {
		data, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			return Bot{}, ErrNotFound
		}
		if err != nil {
			return Bot{}, err
		}
		var b Bot
		if err := json.Unmarshal(data, &b); err != nil {
			return Bot{}, fmt.Errorf("bot %s: corrupt projection: %w", id, err)
		}
		return b, nil
	}
}

// Count is the number of projected bots.
func (r *Registry) Count(ctx context.Context) (int64, error) {
	return r.rdb.SCard(ctx, store.AllBots()).Result()
}

// OwnerBots lists the IDs of an owner's bots.
func (r *Registry) OwnerBots(ctx context.Context, owner string) ([]string, error) {
	return r.rdb.SMembers(ctx, store.OwnerBots(owner)).Result()
}

func (r *Registry) retry(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error {
	for i := 0; i < maxTxRetries; i++ {
		err := r.rdb.Watch(ctx, fn, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
	}
	return fmt.Errorf("redis transaction on %v: too much contention", keys)
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

func uniqueNonEmpty(in []string) []string {
	out := in[:0:0]
	seen := map[string]bool{}
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
