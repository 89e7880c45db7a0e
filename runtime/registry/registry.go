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
	// fieldWebhookOld and fieldOwnerOld note, in the bot's hash, the webhook hash and owner a
	// projection replaced until it has deleted that route and left that owner's set: a crash
	// in between leaves them for the next projection (or removal) to finish.
	fieldWebhookOld = "webhookOld"
	fieldOwnerOld   = "ownerOld"
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
	// decoded keeps the last decoded projection of each bot Get read, so a reader that
	// reads the same bot on every request (mcpd's tools, the read API) decodes its JSON
	// once per change of the projection, not once per request.
	decoded Decoded
}

// New returns a Registry on rdb.
func New(rdb redis.UniversalClient) *Registry { return &Registry{rdb: rdb} }

// Client is the Redis the registry projects into, where the bots' runtime state (their
// risk counters among it) lives beside their projection.
func (r *Registry) Client() redis.UniversalClient { return r.rdb }

// Project writes bot and routes webhookHash to it. The keys involved live in different Redis
// Cluster slots (the route in its own, the owner's and all bots' sets in theirs, the bot's
// hash in its partition's), so it is a sequence of single-slot steps, ordered so that a
// crash between any two leaves a state that routes no webhook to the wrong bot and that the
// next Project (every reconcile runs one) completes. The switch is the webhook field of the
// bot's hash: the intake admits a signal only when the bot its route leads to names that
// webhook hash (runtime/intake).
//
//  1. finish what an interrupted projection left noted in the bot's hash (settle);
//  2. route webhookHash to the bot, unless it routes to another live bot (ErrWebhookInUse).
//     The new URL does not work yet: the bot's hash does not name it;
//  3. add the bot to its owner's set and to the set of all bots;
//  4. the switch: write the bot's hash with webhookHash, noting the webhook hash and owner it
//     replaces. From here the new URL works and a regenerated one answers INVALID_WEBHOOK;
//  5. settle: delete the replaced route (while it still leads to this bot), take the bot
//     out of the replaced owner's set, and clear the notes.
//
// A follower (bot.CopyFrom) is listed in its master's followers set (store.CopyFollowers):
// it leaves the set of a master it no longer copies before the switch (so that master's
// fills stop feeding it at once) and joins its master's set after the switch (so the fan-out
// never finds it before its projection names that master). A crash after the switch leaves
// the join to the next Project, which always makes it.
func (r *Registry) Project(ctx context.Context, bot Bot, webhookHash string) error {
	return r.ProjectRecorded(ctx, bot, webhookHash, nil, time.Now())
}

// ProjectRecorded is Project that also writes back the runtime state the SignalBot's status
// records (rec, nil for none) when Redis has lost it, in the step that writes the bot's
// hash: the runtime pause (pause.go, "Recorded pauses") and the risk counters.
func (r *Registry) ProjectRecorded(ctx context.Context, bot Bot, webhookHash string, rec *Recorded, now time.Time) error {
	if bot.ID == "" || webhookHash == "" {
		return fmt.Errorf("project bot: empty id or webhook hash")
	}
	data, err := json.Marshal(bot)
	if err != nil {
		return err
	}
	botKey, hookKey := store.Bot(bot.ID), store.Webhook(webhookHash)
	var notes *redis.SliceCmd
	var route *redis.SliceCmd
	var prev func() (Bot, error)
	if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		notes = p.HMGet(ctx, botKey, fieldWebhookOld, fieldOwnerOld)
		route = p.HMGet(ctx, hookKey, fieldBot, fieldDeletedAt)
		prev = GetLater(ctx, p, bot.ID)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if old, err := prev(); err == nil && old.CopyFrom != nil && (bot.CopyFrom == nil || bot.CopyFrom.MasterID != old.CopyFrom.MasterID) {
		if err := r.rdb.SRem(ctx, store.CopyFollowers(old.CopyFrom.MasterID), bot.ID).Err(); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := r.settle(ctx, bot.ID, notes.Val()); err != nil {
		return err
	}
	if v := route.Val(); asString(v[0]) != bot.ID || asString(v[1]) != "" {
		if err := r.route(ctx, bot.ID, hookKey); err != nil {
			return err
		}
	}
	if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, store.OwnerBots(bot.Owner), bot.ID)
		p.SAdd(ctx, store.AllBots(), bot.ID)
		return nil
	}); err != nil {
		return err
	}
	args := append([]any{fieldWebhook, webhookHash, fieldOwner, bot.Owner, fieldWebhookOld, fieldOwnerOld},
		recordedArgs(rec, now)...)
	args = append(args, store.BotEvents(), bot.ID)
	args = append(args, recordedCountersArgs(rec)...)
	args = append(append(args, fieldConfig, data), gateFields(bot)...)
	replaced, err := switchScript.Run(ctx, r.rdb, []string{botKey, store.RiskCounters(bot.ID)}, args...).Slice()
	if err != nil {
		return err
	}
	if err := r.indexStrategy(ctx, bot); err != nil {
		return err
	}
	if bot.CopyFrom != nil {
		if err := r.rdb.SAdd(ctx, store.CopyFollowers(bot.CopyFrom.MasterID), bot.ID).Err(); err != nil {
			return err
		}
	}
	return r.settle(ctx, bot.ID, replaced)
}

// indexStrategy keeps the partition's set of strategy bots (store.StrategyBots) in step
// with the projection. It runs after the switch: the runner reads the projection of every
// bot in the set and skips one without a strategy, so the set may lead the projection or
// lag it for the moment between the two steps, and the next Project repairs a crash there.
func (r *Registry) indexStrategy(ctx context.Context, bot Bot) error {
	key := store.StrategyBots(store.PartitionOf(bot.ID))
	if bot.Strategy != nil {
		return r.rdb.SAdd(ctx, key, bot.ID).Err()
	}
	return r.rdb.SRem(ctx, key, bot.ID).Err()
}

// StrategyBots lists the bots of a partition that run a strategy (possibly including one
// whose projection has just dropped its strategy, or is gone: the caller reads each).
func StrategyBots(ctx context.Context, rdb redis.UniversalClient, partition int) ([]string, error) {
	return rdb.SMembers(ctx, store.StrategyBots(partition)).Result()
}

// BotIDs lists every projected bot (the one set of all bots: a single-key read, no SCAN).
func BotIDs(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	return rdb.SMembers(ctx, store.AllBots()).Result()
}

// switchScript writes a bot's hash (KEYS[1]) and notes what it replaces, and writes back a
// runtime pause Redis lost (restoreLua, pause.go "Recorded pauses") and risk counters Redis
// lost or holds older (KEYS[2], store.VersionedHashLua) in the same step, so that no signal
// is admitted by a re-created hash before its pause and its counters are back. ARGV: the
// webhook field and hash, the owner field and owner, the two note fields (1-6), the
// recorded pause (7-11, recordedArgs), the events channel and the bot ID (12-13), the
// recorded counters (14-16 and their n pairs, recordedCountersArgs), then the other
// field/value pairs. Returns the replaced webhook hash and owner (empty when unchanged), as
// noted.
var switchScript = redis.NewScript(`
local prev = redis.call('HMGET', KEYS[1], ARGV[1], ARGV[3])
local out = {'', ''}
if prev[1] and prev[1] ~= ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[5], prev[1])
  out[1] = prev[1]
end
if prev[2] and prev[2] ~= ARGV[4] then
  redis.call('HSET', KEYS[1], ARGV[6], prev[2])
  out[2] = prev[2]
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], unpack(ARGV, 17 + tonumber(ARGV[16])))
` + restoreLua + store.VersionedHashLua(2, 14) + `
if restored == 1 then redis.call('PUBLISH', ARGV[12], ARGV[13]) end
return out
`)

// route points the route hookKey at bot id, replacing whatever was there (a tombstone of a
// restored ID included) unless it leads to another live bot.
func (r *Registry) route(ctx context.Context, id, hookKey string) error {
	return r.retry(ctx, func(tx *redis.Tx) error {
		v, err := tx.HMGet(ctx, hookKey, fieldBot, fieldDeletedAt).Result()
		if err != nil {
			return err
		}
		if other := asString(v[0]); other != "" && other != id && asString(v[1]) == "" {
			return ErrWebhookInUse
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, hookKey)
			p.HSet(ctx, hookKey, fieldBot, id)
			return nil
		})
		return err
	}, hookKey)
}

// settle finishes a projection's clean-up noted in the bot's hash: notes are the replaced
// webhook hash and owner (HMGET of fieldWebhookOld and fieldOwnerOld, or switchScript's
// answer). Each step can be repeated.
func (r *Registry) settle(ctx context.Context, id string, notes []any) error {
	oldHook, oldOwner := asString(notes[0]), asString(notes[1])
	if oldHook == "" && oldOwner == "" {
		return nil
	}
	if oldHook != "" {
		if err := dropRouteScript.Run(ctx, r.rdb, []string{store.Webhook(oldHook)}, fieldBot, id).Err(); err != nil {
			return err
		}
	}
	if oldOwner != "" {
		if err := r.rdb.SRem(ctx, store.OwnerBots(oldOwner), id).Err(); err != nil {
			return err
		}
	}
	return r.rdb.HDel(ctx, store.Bot(id), fieldWebhookOld, fieldOwnerOld).Err()
}

// dropRouteScript deletes a route (KEYS[1]) only while it leads to bot ARGV[2] (ARGV[1] is
// the bot field): by the time a replaced route is deleted, another bot may have taken it.
var dropRouteScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Remove deletes a bot's runtime state and turns its webhook routes into tombstones that
// answer BOT_DELETED for ttl. extraHashes are webhook hashes known from elsewhere (the
// bot's Secret) in case the projection never happened.
//
// Like Project it is a sequence of single-slot steps, and the bot's hash, read first and
// deleted last, records what remains to do: the routes (current, a replaced one not yet
// deleted, extraHashes) become tombstones, the bot leaves its owner's (and a replaced
// owner's) set, the set of all bots and its partition's set of strategy bots, then the hash
// goes. A crash before the end leaves the hash for the next Remove to read again; the
// intake, which checks the hash, keeps admitting the bot's signals until it goes, as it did
// until the removal started.
//
// A follower leaves its master's followers set first, so that no copy is enqueued for it
// from then on; a master's own followers set goes with it.
func (r *Registry) Remove(ctx context.Context, id string, ttl time.Duration, extraHashes ...string) error {
	botKey := store.Bot(id)
	prev, err := r.rdb.HMGet(ctx, botKey, fieldWebhook, fieldOwner, fieldWebhookOld, fieldOwnerOld).Result()
	if err != nil {
		return err
	}
	if old, err := r.Get(ctx, id); err == nil && old.CopyFrom != nil {
		if err := r.rdb.SRem(ctx, store.CopyFollowers(old.CopyFrom.MasterID), id).Err(); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for _, h := range uniqueNonEmpty(append([]string{asString(prev[0]), asString(prev[2])}, extraHashes...)) {
		// Only this bot's own routes (or none) become its tombstones.
		if err := tombstoneScript.Run(ctx, r.rdb, []string{store.Webhook(h)}, fieldBot, id, fieldDeletedAt, now,
			ttl.Milliseconds()).Err(); err != nil {
			return err
		}
	}
	if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range uniqueNonEmpty([]string{asString(prev[1]), asString(prev[3])}) {
			p.SRem(ctx, store.OwnerBots(o), id)
		}
		p.SRem(ctx, store.AllBots(), id)
		p.SRem(ctx, store.StrategyBots(store.PartitionOf(id)), id)
		p.Del(ctx, store.CopyFollowers(id))
		return nil
	}); err != nil {
		return err
	}
	return r.rdb.Del(ctx, botKey).Err()
}

// tombstoneScript marks a route (KEYS[1]) deleted for ARGV[5] ms, unless it leads to another
// bot. ARGV: the bot field and bot ID, the deletedAt field and time.
var tombstoneScript = redis.NewScript(`
local b = redis.call('HGET', KEYS[1], ARGV[1])
if b and b ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`)

// Route is where a webhook hash leads.
type Route struct {
	BotID   string
	Deleted bool
}

// Resolve maps a webhook hash to its bot. ErrNotFound means the ID never existed or was
// regenerated (401 INVALID_WEBHOOK); Deleted means the bot is gone (403 BOT_DELETED).
func (r *Registry) Resolve(ctx context.Context, webhookHash string) (Route, error) {
	return ResolveRoute(ctx, r.rdb, webhookHash)
}

// ResolveRoute is Resolve on any client (runtime/intake's).
func ResolveRoute(ctx context.Context, c redis.HashCmdable, webhookHash string) (Route, error) {
	v, err := c.HMGet(ctx, store.Webhook(webhookHash), fieldBot, fieldDeletedAt).Result()
	if err != nil {
		return Route{}, err
	}
	id := asString(v[0])
	if id == "" {
		return Route{}, ErrNotFound
	}
	return Route{BotID: id, Deleted: asString(v[1]) != ""}, nil
}

// WebhookHashOf is the webhook hash bot id's hash names: the route a signal for the bot
// must come in on (runtime/intake admits a signal only when they match). ErrNotFound when
// the bot is not projected.
func WebhookHashOf(ctx context.Context, c redis.HashCmdable, id string) (string, error) {
	h, err := c.HGet(ctx, store.Bot(id), fieldWebhook).Result()
	if errors.Is(err, redis.Nil) || (err == nil && h == "") {
		return "", ErrNotFound
	}
	return h, err
}

// Get reads one projected bot.
func (r *Registry) Get(ctx context.Context, id string) (Bot, error) {
	return r.decoded.GetLater(ctx, r.rdb, id)()
}

// GetLater is Get queued on c (a pipeline): the decoder to call once the pipeline has run
// decodes through the registry's cache as Get does.
func (r *Registry) GetLater(ctx context.Context, c redis.Cmdable, id string) func() (Bot, error) {
	return r.decoded.GetLater(ctx, c, id)
}

// GetLater queues Get's read on c (a pipeline) and returns the decoder to call once the
// pipeline has run, so that the read can share a round trip with others.
func GetLater(ctx context.Context, c redis.Cmdable, id string) func() (Bot, error) {
	return (*Decoded)(nil).GetLater(ctx, c, id)
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
