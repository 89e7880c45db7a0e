package registry

import (
	"context"
	"errors"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
)

// ErrBotNotFound is the one answer of the read API and mcpd for a bot that does not exist,
// was deleted, or is another user's: the same code and message after the same single read,
// so that neither the answer nor the work done tells a caller which bot IDs exist.
var ErrBotNotFound = errs.New(errs.NotFound, "bot not found")

// Getter reads projected bots; *Registry is one.
type Getter interface {
	Get(ctx context.Context, id string) (Bot, error)
}

// Owned is owner's bot id read through g, or ErrBotNotFound when it is missing or another
// owner's (owner: an email, compared in canonical form).
func Owned(ctx context.Context, g Getter, id, owner string) (Bot, error) {
	bot, err := g.Get(ctx, id)
	return OwnedRead(bot, err, owner)
}

// OwnedRead is Owned's answer for a bot already read (with its read's error), for a caller
// that read it in a pipeline with other things.
func OwnedRead(bot Bot, err error, owner string) (Bot, error) {
	if errors.Is(err, ErrNotFound) {
		return Bot{}, ErrBotNotFound
	}
	if err != nil {
		return Bot{}, err
	}
	if !emails.Same(bot.Owner, owner) {
		return Bot{}, ErrBotNotFound
	}
	return bot, nil
}

// AllOwned are all of owner's projected bots, in no particular order: the owner index and
// then the bots in one pipelined round trip (OwnedBots drops an ID the index lists for a
// moment after its bot moved to another owner or went away).
func (r *Registry) AllOwned(ctx context.Context, owner string) ([]Bot, error) {
	ids, err := r.OwnerBots(ctx, owner)
	if err != nil {
		return nil, err
	}
	return r.OwnedBots(ctx, owner, ids)
}

// OwnedBots are owner's projected bots with the given IDs, in that order, through one
// pipelined round trip; IDs that are missing (deleted since they were listed) or another
// owner's are left out.
func (r *Registry) OwnedBots(ctx context.Context, owner string, ids []string) ([]Bot, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := r.rdb.Pipeline()
	reads := make([]func() (Bot, error), len(ids))
	for i, id := range ids {
		reads[i] = GetLater(ctx, pipe, id)
	}
	// Errors are per command; each decoder reports its own.
	_, _ = pipe.Exec(ctx)
	out := make([]Bot, 0, len(ids))
	for _, read := range reads {
		b, err := read()
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if emails.Same(b.Owner, owner) {
			out = append(out, b)
		}
	}
	return out, nil
}
