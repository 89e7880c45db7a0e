package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// maxDecoded bounds Decoded: past it, the cache starts over (a process that reads more
// bots than this for every signal pays a decode per read again, no more).
const maxDecoded = 100_000

// Decoded remembers the last projection decoded per bot with the bytes it came from, so a
// process that reads a bot's projection for every signal (the executor) decodes its JSON
// once per change instead of once per signal. A read whose bytes differ from the remembered
// ones is decoded and replaces them, so a cached bot is never staler than the read.
type Decoded struct {
	mu   sync.Mutex
	bots map[string]decodedBot
}

type decodedBot struct {
	raw string
	bot Bot
}

// GetLater is registry.GetLater decoding through the cache; a nil cache decodes every read.
func (d *Decoded) GetLater(ctx context.Context, c redis.Cmdable, id string) func() (Bot, error) {
	cmd := c.HGet(ctx, store.Bot(id), fieldConfig)
	return func() (Bot, error) {
		data, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			return Bot{}, ErrNotFound
		}
		if err != nil {
			return Bot{}, err
		}
		return d.decode(id, data)
	}
}

func (d *Decoded) decode(id string, data []byte) (Bot, error) {
	if d == nil {
		return decodeBot(id, data)
	}
	d.mu.Lock()
	e, ok := d.bots[id]
	d.mu.Unlock()
	if ok && e.raw == string(data) {
		return e.bot.clone(), nil
	}
	b, err := decodeBot(id, data)
	if err != nil {
		return Bot{}, err
	}
	d.mu.Lock()
	if d.bots == nil || len(d.bots) >= maxDecoded {
		d.bots = map[string]decodedBot{}
	}
	d.bots[id] = decodedBot{raw: string(data), bot: b.clone()}
	d.mu.Unlock()
	return b, nil
}

// clone copies the bot with its own copies of what its pointers hold, so a caller that
// changes the copy cannot change what the cache hands the next one.
func (b Bot) clone() Bot {
	if b.Strategy != nil {
		s := *b.Strategy
		b.Strategy = &s
	}
	if b.CopyFrom != nil {
		c := *b.CopyFrom
		b.CopyFrom = &c
	}
	return b
}

func decodeBot(id string, data []byte) (Bot, error) {
	var b Bot
	if err := json.Unmarshal(data, &b); err != nil {
		return Bot{}, fmt.Errorf("bot %s: corrupt projection: %w", id, err)
	}
	return b, nil
}
